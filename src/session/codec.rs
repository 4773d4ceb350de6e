//! The bytes of `session.json`: parsing them, with errors that name the file and the problem,
//! and writing them as the original PAS-Agent does.

use std::path::Path;

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::model::{Extra, FileState, SCHEMA_VERSION, Session};

/// Pretty JSON (two-space indent), as the original writes it, with `schema_version` set to
/// this build's version.
pub fn to_json(session: &Session) -> serde_json::Result<Vec<u8>> {
    if session.schema_version == SCHEMA_VERSION {
        return serde_json::to_vec_pretty(session);
    }
    let mut s = session.clone();
    s.schema_version = SCHEMA_VERSION;
    serde_json::to_vec_pretty(&s)
}

/// Parses the bytes of a session file.
///
/// Errors, all naming `path` and leaving the file alone:
/// - [`Error::Damaged`] for an empty file, a UTF-8 byte order mark, invalid UTF-8 (with the
///   byte offset), invalid JSON or a wrongly typed field (with serde's line and column);
/// - [`Error::Damaged`] also for values this build cannot write back exactly (see
///   [`super::exact`]): numbers beyond `f64`/`u64`/`i64` precision, duplicate keys;
/// - [`Error::Damaged`] for a `schema_version` that is not exactly a whole number this build
///   knows (`1.0`, `2.0`, `1e3`, `-1`, `0`, `"1"`, `null`: never read as 1), and for a count
///   pas-agent reads (`files_changed_total`, a collapsed entry's `files`) that is not a whole
///   number;
/// - [`Error::Unsupported`] when `schema_version` is newer than [`SCHEMA_VERSION`], checked
///   before the shape so a newer layout is reported as such.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Session> {
    let damaged = |problem: String| Error::Damaged {
        path: path.to_path_buf(),
        problem,
    };
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        return Err(damaged(
            "the file starts with a UTF-8 byte order mark, which JSON does not allow; remove the first three bytes".into(),
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        damaged(format!(
            "the file is not valid UTF-8 (bad byte at offset {})",
            e.valid_up_to()
        ))
    })?;
    if text.trim().is_empty() {
        return Err(damaged("the file is empty".into()));
    }
    if is_conflicted(text) && serde_json::from_str::<serde::de::IgnoredAny>(text).is_err() {
        return Err(Error::Unmerged {
            path: path.to_path_buf(),
        });
    }
    let unsupported = |found: u64| Error::Unsupported {
        path: path.to_path_buf(),
        found,
        supported: SCHEMA_VERSION,
    };
    // The error carries the path of the field being read (`task.remaining[0]`): tracking it
    // costs a good part of the parse, so only a file that fails is read again with it.
    let parsed: std::result::Result<Session, (String, serde_json::Error)> =
        serde_json::from_str::<Session>(text).or_else(|_| {
            let mut de = serde_json::Deserializer::from_str(text);
            match serde_path_to_error::deserialize::<_, Session>(&mut de) {
                Ok(s) => de.end().map(|()| s).map_err(|e| (String::new(), e)),
                Err(e) => Err((e.path().to_string(), e.into_inner())),
            }
        });
    match parsed {
        Ok(s) if s.schema_version > SCHEMA_VERSION => Err(unsupported(s.schema_version.into())),
        Ok(s) if s.schema_version < 1 => Err(damaged(format!(
            "field `schema_version`: {} is not a schema version (this version reads {SCHEMA_VERSION}); pas-agent will not rewrite the file",
            s.schema_version
        ))),
        // Fields this build does not know are written back: refuse what it cannot keep exactly.
        Ok(mut s) => match super::exact::check(text).and_then(|()| counts(&s)) {
            Ok(()) => {
                portable_paths(&mut s);
                Ok(s)
            }
            Err(problem) => Err(damaged(format!(
                "{problem}; pas-agent will not rewrite a file it cannot write back exactly"
            ))),
        },
        Err((path, e)) => {
            #[derive(Deserialize)]
            struct Probe {
                #[serde(default)]
                schema_version: serde_json::Value,
            }
            if let Ok(probe) = serde_json::from_str::<Probe>(text)
                && let Some(v) = probe.schema_version.as_u64()
                && v > u64::from(SCHEMA_VERSION)
            {
                return Err(unsupported(v));
            }
            let hint = if e.is_eof() {
                " (the file looks truncated)"
            } else {
                ""
            };
            // Name the field when the JSON is well formed but a value is wrong.
            let field = if e.is_data() && !path.is_empty() && path != "." {
                format!("field `{path}`: ")
            } else {
                String::new()
            };
            Err(damaged(format!(
                "not a valid session file: {field}{e}{hint}"
            )))
        }
    }
}

/// A stored path in the one form pas-agent records (top-relative, `/`-separated, as git
/// prints it): a path written with backslashes (`sub\dir\f.txt`, by a tool on Windows)
/// becomes `sub/dir/f.txt`, and `./` prefixes, `/./` and doubled separators go. A trailing `/`
/// (a collapsed directory, see [`super::bound`]) stays, and so does a path in git's quoted
/// form (`"caf\351.txt"`, [`crate::git::record_path`]: a name git itself holds with a
/// backslash or bytes that are not UTF-8 is recorded that way, so its backslashes are never
/// separators). `None` when `path` is already in that form.
pub fn portable_path(path: &str) -> Option<String> {
    if path.len() >= 2 && path.starts_with('"') && path.ends_with('"') {
        return None;
    }
    let needs = path.contains('\\')
        || path.starts_with("./")
        || path.contains("//")
        || path.contains("/./")
        || path.ends_with("/.");
    if !needs {
        return None;
    }
    let slashed = path.replace('\\', "/");
    let absolute = slashed.starts_with('/');
    let dir = slashed.ends_with('/');
    let parts: Vec<&str> = slashed
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let mut out = String::with_capacity(slashed.len());
    if absolute {
        out.push('/');
    }
    out.push_str(&parts.join("/"));
    if dir && !parts.is_empty() {
        out.push('/');
    }
    (out != path).then_some(out)
}

/// Every stored path of a file list in [`portable_path`]'s form; when that makes two entries
/// name one file, the first is kept.
pub fn portable_files(files: &mut Vec<crate::model::FileState>) {
    let mut changed = false;
    for f in files.iter_mut() {
        if let Some(p) = portable_path(&f.path) {
            f.path = p;
            changed = true;
        }
        if let crate::model::FileStatus::Renamed { from } = &mut f.status
            && let Some(p) = portable_path(from)
        {
            *from = p;
        }
    }
    if changed {
        let mut seen = std::collections::HashSet::new();
        files.retain(|f| seen.insert(f.path.clone()));
    }
}

/// Puts every path the session stores (file lists of checkpoints and runs, a run's baseline,
/// capture and the files its agent edited) in [`portable_path`]'s form, so that one file is
/// one entry whoever wrote the record.
fn portable_paths(session: &mut Session) {
    for cp in &mut session.checkpoints {
        portable_files(&mut cp.files_changed);
    }
    for run in &mut session.runs {
        portable_run(run);
    }
}

/// A run's stored paths (its files, baseline, capture and the files its agent edited) in
/// [`portable_path`]'s form, as every load gives them.
pub fn portable_run(run: &mut crate::model::Run) {
    portable_files(&mut run.files_changed);
    if let Some(b) = &mut run.baseline {
        portable_files(b);
    }
    if let Some(c) = &mut run.capture
        && let Some(p) = portable_path(c)
    {
        *c = p;
    }
    if let Some(t) = &mut run.transcript {
        for e in &mut t.edits {
            if let Some(p) = portable_path(e) {
                *e = p;
            }
        }
    }
}

/// Checks the counts pas-agent reads from the fields it keeps beside the typed ones:
/// `files_changed_total` of checkpoints and runs, and `files` of collapsed entries (see
/// [`super::bound`]). A typed field is already read exactly by serde (`"duration_ms": 1.0` is
/// a wrong type); these would otherwise be misread as missing.
///
/// Errors: the field (as `checkpoints[2].files_changed_total`) and what it holds.
pub fn counts(session: &Session) -> Result<(), String> {
    fn total(extra: &Extra, at: &str) -> Result<(), String> {
        match extra.get(super::bound::TOTAL_KEY) {
            Some(v) if super::exact::count(v).is_none() => Err(format!(
                "field `{at}.{}`: {v} is not a whole number of files",
                super::bound::TOTAL_KEY
            )),
            _ => Ok(()),
        }
    }
    fn files(list: &[FileState], at: &str) -> Result<(), String> {
        for (i, f) in list.iter().enumerate() {
            if let Some(v) = f.extra.get(super::bound::FILES_KEY)
                && super::exact::count(v).is_none_or(|n| n == 0)
            {
                return Err(format!(
                    "field `{at}[{i}].{}`: {v} is not a whole number of files",
                    super::bound::FILES_KEY
                ));
            }
        }
        Ok(())
    }
    for (i, cp) in session.checkpoints.iter().enumerate() {
        let at = format!("checkpoints[{i}]");
        total(&cp.extra, &at)?;
        files(&cp.files_changed, &format!("{at}.files_changed"))?;
    }
    for (i, run) in session.runs.iter().enumerate() {
        let at = format!("runs[{i}]");
        total(&run.extra, &at)?;
        files(&run.files_changed, &format!("{at}.files_changed"))?;
    }
    Ok(())
}

/// Whether `text` holds a git conflict (see `super::merge::split_conflict`).
pub fn is_conflicted(text: &str) -> bool {
    text.contains("\n<<<<<<<") || text.starts_with("<<<<<<<")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn p() -> PathBuf {
        PathBuf::from("/x/.pas-agent/session.json")
    }

    fn minimal() -> &'static str {
        r#"{"id":"46d89609-104d-4a43-907d-dbca99704a85","project_name":"p","created_at":"2026-09-17T04:30:00Z","updated_at":"2026-09-17T04:39:00Z","task":{}}"#
    }

    #[test]
    fn legacy_file_without_version_loads_as_v1() {
        for raw in ["1.0", "1e0", "2.0", "-1", "\"1\"", "null", "0"] {
            assert!(
                matches!(
                    parse(&p(), with_version(raw).as_bytes()),
                    Err(Error::Damaged { .. })
                ),
                "{raw}"
            );
        }
        let s = parse(&p(), minimal().as_bytes()).unwrap();
        assert_eq!(s.schema_version, 1);
        assert!(s.checkpoints.is_empty());
    }

    #[test]
    fn bad_inputs_are_damaged_with_a_reason() {
        let cases: [(&[u8], &str); 6] = [
            (b"", "empty"),
            (b"  \n", "empty"),
            (b"\xEF\xBB\xBF{}", "byte order mark"),
            (b"{\"id\": \"\xff\"}", "UTF-8"),
            (b"{\"id\": ", "truncated"),
            (b"[1,2]", "not a valid session file"),
        ];
        for (bytes, want) in cases {
            let err = parse(&p(), bytes).unwrap_err();
            assert!(
                matches!(err, Error::Damaged { .. }) && err.to_string().contains(want),
                "{err}"
            );
        }
    }

    #[test]
    fn wrong_type_names_line_and_column() {
        let text = minimal().replace(r#""project_name":"p""#, r#""project_name":5"#);
        let err = parse(&p(), text.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("line 1 column"), "{err}");
    }

    #[test]
    fn wrong_values_name_their_field() {
        let text = minimal().replace("2026-09-17T04:30:00Z", "yesterday");
        let err = parse(&p(), text.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("field `created_at`"), "{err}");
        let text = minimal().replace(r#""task":{}"#, r#""task":{"remaining":[1]}"#);
        let err = parse(&p(), text.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("field `task.remaining[0]`"), "{err}");
    }

    #[test]
    fn newer_version_is_unsupported_even_with_an_unknown_shape() {
        let err = parse(&p(), br#"{"schema_version": 7, "whatever": true}"#).unwrap_err();
        assert!(matches!(err, Error::Unsupported { found: 7, .. }));
        let text = minimal().replacen('{', r#"{"schema_version":2,"#, 1);
        assert!(matches!(
            parse(&p(), text.as_bytes()).unwrap_err(),
            Error::Unsupported { found: 2, .. }
        ));
    }

    fn with_version(raw: &str) -> String {
        minimal().replacen('{', &format!("{{\"schema_version\":{raw},"), 1)
    }

    proptest::proptest! {
        /// Any spelling of a number that is not exactly a whole number (a fraction, an
        /// exponent, a sign, a float equal to 1) is refused, never read as version 1.
        #[test]
        fn a_version_not_spelt_as_an_integer_is_refused(
            int in 0u64..5,
            frac in "[0-9]{1,3}",
            exp in -3i32..4,
            form in 0usize..5,
        ) {
            let raw = match form {
                0 => format!("{int}.{frac}"),
                1 => format!("{int}e{exp}"),
                2 => format!("{int}.{frac}E{exp}"),
                3 => format!("-{}", int + 1),
                _ => format!("{int}.0"),
            };
            let err = parse(&p(), with_version(&raw).as_bytes()).unwrap_err();
            proptest::prop_assert!(matches!(err, Error::Damaged { .. }), "{}: {}", raw, err);
        }

        /// Whole numbers: 1 is read, 0 refused, anything larger a newer version.
        #[test]
        fn a_whole_version_is_known_or_newer(v in 0u64..=u64::MAX) {
            let r = parse(&p(), with_version(&v.to_string()).as_bytes());
            match v {
                0 => proptest::prop_assert!(matches!(r, Err(Error::Damaged { .. })), "0"),
                1 => proptest::prop_assert!(r.is_ok(), "1"),
                _ => proptest::prop_assert!(matches!(r, Err(Error::Unsupported { .. })), "{}", v),
            }
        }

        /// Paths made of the same names with any separators, dot segments and doubled
        /// slashes are one portable path; a portable path stays as it is.
        #[test]
        fn paths_in_any_spelling_have_one_portable_form(
            names in proptest::collection::vec("[a-zA-Z0-9_ .é-]{1,8}", 1..5),
            seps in proptest::collection::vec(proptest::sample::select(vec!["/", "\\", "//", "/./", "\\.\\", "\\/"]), 4),
            lead in proptest::sample::select(vec!["", "./", ".\\"]),
            dir in proptest::bool::ANY,
        ) {
            let names: Vec<String> = names.into_iter().filter(|n| n != "." && n != "..").collect();
            proptest::prop_assume!(!names.is_empty());
            let mut messy = lead.to_string();
            for (i, n) in names.iter().enumerate() {
                if i > 0 {
                    messy.push_str(seps[i % seps.len()]);
                }
                messy.push_str(n);
            }
            let mut clean = names.join("/");
            if dir {
                messy.push('/');
                clean.push('/');
            }
            let got = portable_path(&messy).unwrap_or_else(|| messy.clone());
            proptest::prop_assert_eq!(&got, &clean);
            proptest::prop_assert_eq!(portable_path(&clean), None);
        }
    }

    #[test]
    fn quoted_paths_keep_their_backslashes() {
        assert_eq!(portable_path("\"caf\\351.txt\""), None);
        assert_eq!(portable_path("\"a\\\\b.txt\""), None);
        assert_eq!(portable_path("dir/"), None);
    }

    #[test]
    fn counts_must_be_whole_numbers() {
        let cp = r#""checkpoints":[{"id":"46d89609-104d-4a43-907d-dbca99704a85","timestamp":"2026-09-17T04:30:00Z","message":"m","task_snapshot":{},"files_changed":[{"path":"d/","status":"Untracked","files":FILES}],"files_changed_total":TOTAL}]"#;
        for (files, total, ok) in [
            ("3", "3", true),
            ("3.0", "3", false),
            ("3", "3.0", false),
            ("0", "3", false),
            ("3", "-1", false),
            ("3", "\"3\"", false),
            ("1e1", "3", false),
        ] {
            let text = minimal().replace(
                r#""task":{}"#,
                &format!(
                    r#""task":{{}},{}"#,
                    cp.replace("FILES", files).replace("TOTAL", total)
                ),
            );
            let r = parse(&p(), text.as_bytes());
            assert_eq!(r.is_ok(), ok, "files {files}, total {total}: {r:?}");
        }
    }

    #[test]
    fn unknown_fields_survive_a_round_trip() {
        let text = minimal().replace(
            r#""task":{}"#,
            r#""task":{"mood":"good"},"future":[1,{"a":null}]"#,
        );
        let s = parse(&p(), text.as_bytes()).unwrap();
        let again: serde_json::Value = serde_json::from_slice(&to_json(&s).unwrap()).unwrap();
        assert_eq!(again["future"], serde_json::json!([1, {"a": null}]));
        assert_eq!(again["task"]["mood"], "good");
    }
}
