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

/// The largest run left undecoded by [`parse_recent`], in bytes: a skeleton is about 0.7 KB
/// (1 to 1.5 KB as earlier versions wrote it); a larger run that says its details are in the
/// history file got some back (a merge with a branch that had not moved them) and is decoded,
/// so that the next save moves them again.
pub const MAX_UNDECODED_RUN: usize = 4096;

/// Whether the run whose JSON is `raw` is an old run's skeleton that [`parse_recent`] may
/// leave undecoded: its details are in the history file (as pas-agent writes the marker), it
/// is small ([`MAX_UNDECODED_RUN`]) and nothing in it says `"running"` (so it is not a running
/// run, which every command that changes the session reads).
fn stays_undecoded(raw: &str) -> bool {
    use memchr::memmem::find;
    raw.len() <= MAX_UNDECODED_RUN
        && find(raw.as_bytes(), b"\"details_in_history\": true").is_some()
        && find(raw.as_bytes(), b"\"running\"").is_none()
}

/// Parses the bytes of a session file as [`parse`] does, but leaves its leading old runs'
/// skeletons ([`stays_undecoded`]) undecoded: they are kept as the file holds them and written
/// back byte for byte ([`crate::model::Runs`]). For commands that never read old runs
/// (`update`, `checkpoint`, `export`, the hooks), on a file whose values were all checked
/// before (`store::parse_recent_if_checked`): their cost then does not grow with the number of
/// runs. The rest of the file is read and checked as [`parse`] reads it.
///
/// Errors: those of [`parse`], found on the whole file (so a message names the line where the
/// problem is).
pub fn parse_recent(path: &Path, bytes: &[u8]) -> Result<Session> {
    let Some((rest, old)) = split_old_runs(bytes) else {
        return parse(path, bytes);
    };
    match parse(path, rest.as_bytes()) {
        Ok(mut s) => {
            let list = std::mem::take(&mut s.runs).into_decoded();
            s.runs = crate::model::Runs::with_undecoded(old, list);
            Ok(s)
        }
        Err(_) => parse(path, bytes),
    }
}

/// How many runs a session file holds, and run `number` (1-based; `None` when out of range)
/// decoded and checked as [`parse`] would ([`decode_run`]), without decoding anything else:
/// for `runs N`, whose cost then does not grow with the session. The rest of the file is only
/// scanned (it must be JSON, and of a schema version this build reads). `None` when the file
/// does not read that way or the run does not pass: [`parse`] then says why.
pub fn one_run(bytes: &[u8], number: usize) -> Option<(usize, Option<crate::model::Run>)> {
    #[derive(Deserialize)]
    struct Runs<'a> {
        #[serde(default)]
        schema_version: Option<u64>,
        #[serde(borrow, default)]
        runs: Vec<&'a serde_json::value::RawValue>,
    }
    let text = std::str::from_utf8(bytes).ok()?;
    let file: Runs<'_> = serde_json::from_str(text).ok()?;
    if file
        .schema_version
        .is_some_and(|v| v != u64::from(SCHEMA_VERSION))
    {
        return None;
    }
    let run = match number.checked_sub(1).and_then(|i| file.runs.get(i)) {
        Some(raw) => Some(decode_run(raw.get())?),
        None => None,
    };
    Some((file.runs.len(), run))
}

/// The text of a session file without its leading runs that [`stays_undecoded`], and those
/// runs as they were; `None` when there are none or the file does not read as an object with
/// one `runs` array (then [`parse`] reads it, and says what is wrong).
fn split_old_runs(bytes: &[u8]) -> Option<(String, Vec<Box<serde_json::value::RawValue>>)> {
    #[derive(Deserialize)]
    struct Split<'a> {
        #[serde(borrow, default)]
        runs: Vec<&'a serde_json::value::RawValue>,
    }
    let text = std::str::from_utf8(bytes).ok()?;
    let split: Split<'_> = serde_json::from_str(text).ok()?;
    let k = split
        .runs
        .iter()
        .take_while(|r| stays_undecoded(r.get()))
        .count();
    if k == 0 {
        return None;
    }
    // The runs borrow from `text`: their offsets in it.
    let at = |s: &str| (s.as_ptr() as usize).checked_sub(text.as_ptr() as usize);
    let start = at(split.runs[0].get())?;
    // Up to the first decoded run, or the end of the last old one (the array is then empty).
    let end = match split.runs.get(k) {
        Some(next) => at(next.get())?,
        None => at(split.runs[k - 1].get())? + split.runs[k - 1].get().len(),
    };
    let mut rest = String::with_capacity(text.len() - (end - start) + 2);
    rest.push_str(text.get(..start)?);
    rest.push_str(text.get(end..)?);
    let old = split.runs[..k].iter().map(|r| (*r).to_owned()).collect();
    Some((rest, old))
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
    for run in session.runs.iter_mut() {
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
    for (i, cp) in session.checkpoints.iter().enumerate() {
        let at = format!("checkpoints[{i}]");
        total(&cp.extra, &at)?;
        files(&cp.files_changed, &format!("{at}.files_changed"))?;
    }
    let old = session.runs.undecoded();
    for (i, run) in session.runs.iter().enumerate() {
        run_counts(run, &format!("runs[{}]", old + i))?;
    }
    Ok(())
}

/// [`counts`] of one run, `at` naming it (`runs[3]`).
fn run_counts(run: &crate::model::Run, at: &str) -> Result<(), String> {
    total(&run.extra, at)?;
    files(&run.files_changed, &format!("{at}.files_changed"))
}

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

/// The run at `index` of those `runs` left undecoded ([`crate::model::Runs::undecoded`]) as a
/// full load gives it ([`decode_run`]); `None` when out of range or when it does not pass a
/// full load's checks.
pub fn decode_old(runs: &crate::model::Runs, index: usize) -> Option<crate::model::Run> {
    decode_run(runs.undecoded_json(index)?)
}

/// One run left undecoded by [`parse_recent`], decoded and checked as [`parse`] decodes and
/// checks the runs of a file (exact values, counts), its paths in the portable form; `None`
/// when it does not pass (a full [`parse`] then says why).
pub fn decode_run(raw: &str) -> Option<crate::model::Run> {
    let mut run: crate::model::Run = serde_json::from_str(raw).ok()?;
    super::exact::check(raw).ok()?;
    run_counts(&run, "").ok()?;
    portable_run(&mut run);
    Some(run)
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

    /// A run as `pas-agent` writes it: an old run's skeleton (its details in the history
    /// file) when `skeleton`, else a run with a commit and a file.
    fn run_json(i: usize, state: &str, skeleton: bool) -> serde_json::Value {
        let mut r = serde_json::json!({
            "id": format!("00000000-0000-4000-8000-{i:012}"), "agent": "codex",
            "argv": ["codex", "exec", "fix it"], "cwd": "/w", "state": state,
            "started_at": "2026-01-01T00:00:00Z", "ended_at": "2026-01-01T00:07:00Z",
            "duration_ms": 420000, "exit_code": 0, "signal": null,
            "commits": [], "files_changed": [], "agent_session_id": format!("s-{i}")
        });
        if skeleton {
            r["files_changed_total"] = 2.into();
            r["commits_total"] = 1.into();
            r["details_in_history"] = true.into();
        } else {
            r["commits"] = serde_json::json!([{"id": "abc", "summary": "work"}]);
            r["files_changed"] = serde_json::json!([{"path": "a.txt", "status": "Added"}]);
        }
        r
    }

    /// The text of a session holding `runs`, as pas-agent writes it.
    fn with_runs(runs: Vec<serde_json::Value>) -> String {
        let mut s: serde_json::Value = serde_json::from_str(minimal()).unwrap();
        s["runs"] = runs.into();
        let s = parse(&p(), s.to_string().as_bytes()).unwrap();
        String::from_utf8(to_json(&s).unwrap()).unwrap() + "\n"
    }

    #[test]
    fn old_skeletons_stay_undecoded_and_are_written_back_byte_for_byte() {
        // Skeletons, one of them holding a field this build would write back differently
        // once decoded (`1E2` as `100.0`, the array on several lines); then a skeleton that
        // says it is running, which is decoded, and so is every run after it.
        let mut runs: Vec<_> = (0..3).map(|i| run_json(i, "finished", true)).collect();
        runs.push(run_json(3, "running", true));
        runs.push(run_json(4, "abandoned", true));
        runs.push(run_json(5, "finished", false));
        let text = with_runs(runs).replacen(
            "\"details_in_history\": true",
            "\"a_future_field\": [1E2, {\"z\": 1}],\n      \"details_in_history\": true",
            1,
        );
        let recent = parse_recent(&p(), text.as_bytes()).unwrap();
        assert_eq!(recent.runs.undecoded(), 3);
        assert_eq!(recent.runs.total(), 6);
        assert_eq!(recent.runs.len(), 3);
        assert_eq!(recent.runs[0].state, crate::model::RunState::Running);
        let mut out = to_json(&recent).unwrap();
        out.push(b'\n');
        assert_eq!(String::from_utf8(out).unwrap(), text);
        // Decoded, the same session (which is written back differently).
        let full = parse(&p(), text.as_bytes()).unwrap();
        assert_eq!(full.runs.total(), 6);
        assert_ne!(
            String::from_utf8(to_json(&full).unwrap()).unwrap() + "\n",
            text
        );
        let old = decode_old(&recent.runs, 0).unwrap();
        assert_eq!(old, full.runs[0]);
        assert_eq!(
            old.extra["a_future_field"],
            serde_json::json!([100.0, {"z": 1}])
        );
        assert_eq!(recent.runs[..], full.runs[3..]);
        let (mut a, mut b) = (recent.clone(), full.clone());
        a.runs = Vec::new().into();
        b.runs = Vec::new().into();
        assert_eq!(a, b);
    }

    #[test]
    fn only_small_skeletons_leading_the_runs_stay_undecoded() {
        // A run that got its details back (larger than a skeleton) is decoded, so that the
        // next save moves them again; so are the runs after a decoded one.
        let mut big = run_json(0, "finished", true);
        big["last_message"] = "x".repeat(MAX_UNDECODED_RUN).into();
        let text = with_runs(vec![big, run_json(1, "finished", true)]);
        assert_eq!(
            parse_recent(&p(), text.as_bytes())
                .unwrap()
                .runs
                .undecoded(),
            0
        );
        let text = with_runs(vec![
            run_json(0, "finished", false),
            run_json(1, "finished", true),
        ]);
        assert_eq!(
            parse_recent(&p(), text.as_bytes())
                .unwrap()
                .runs
                .undecoded(),
            0
        );
        let text = with_runs(vec![run_json(0, "finished", true)]);
        let s = parse_recent(&p(), text.as_bytes()).unwrap();
        assert_eq!((s.runs.undecoded(), s.runs.len()), (1, 0));
        assert_eq!(
            String::from_utf8(to_json(&s).unwrap()).unwrap() + "\n",
            text
        );
    }

    #[test]
    fn a_damaged_file_loaded_recent_names_the_problem_where_it_is() {
        let mut runs: Vec<_> = (0..3).map(|i| run_json(i, "finished", true)).collect();
        runs.push(run_json(3, "finished", false));
        let text = with_runs(runs);
        for bad in [
            text.replacen("\"duration_ms\": 420000", "\"duration_ms\": \"long\"", 4),
            text.replace("\"project_name\": \"p\"", "\"project_name\": 5"),
            text[..text.len() - 40].to_string(),
            format!("<<<<<<< ours\n{text}=======\n{text}>>>>>>> theirs\n"),
        ] {
            let want = parse(&p(), bad.as_bytes()).unwrap_err().to_string();
            let got = parse_recent(&p(), bad.as_bytes()).unwrap_err().to_string();
            assert_eq!(got, want);
            assert!(got.contains("/x/.pas-agent/session.json"), "{got}");
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
