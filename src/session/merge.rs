//! The three-way merge of `session.json` that understands its format: the git merge driver
//! (`pas-agent merge-driver %O %A %B %P`) and `pas-agent resolve` use it. docs/teams.md says
//! what it does with each field.
//!
//! The merge works on JSON values, so fields this build does not know merge too, and the
//! result is read back as a [`Session`](crate::model::Session) and written the way every save
//! writes (the original's field order, unknown fields kept). Rules, with "ours" the branch being merged into (`%A`)
//! and "theirs" the other side (`%B`):
//!
//! - a value changed on one side only takes that side's value; equal changes agree;
//! - `updated_at`: the later one; `created_at`: the earlier one; `schema_version`: the larger;
//! - the winner of a real disagreement is the side with the later `updated_at` (ours on a tie);
//!   `git` is the winner's;
//! - the task's lists are unioned (an item removed on one side and untouched on the other is
//!   removed; one added on either side is kept once), and an item completed on either side is
//!   no longer remaining;
//! - `description`, `objective` and `next_action` changed differently on both sides: the
//!   winner's value is kept and the loser's is added to `discoveries`, saying so;
//! - `checkpoints` and `runs` are unioned by `id`, in time order (`timestamp`, `started_at`);
//!   a record changed on both sides merges field by field; one deleted on a side and untouched
//!   on the other is deleted;
//! - objects (the task's and a record's unknown fields included) merge key by key with the
//!   same rules; anything else both sides changed differently takes the winner's value.

use std::cmp::Ordering;

use serde_json::{Map, Value};

/// The six lists of a task.
const LISTS: [&str; 6] = [
    "completed",
    "remaining",
    "blockers",
    "decisions",
    "constraints",
    "discoveries",
];
/// The task's text fields whose losing value is kept as a discovery.
const TEXTS: [(&str, &str); 3] = [
    ("description", "task description"),
    ("objective", "objective"),
    ("next_action", "next action"),
];

/// Merges three session files' bytes (`base` empty when the two sides share no ancestor).
/// Returns the merged file's bytes (pretty JSON and a newline), ready to write.
///
/// Errors: why a side cannot be merged (it is not a readable session file, or the result would
/// not be one), for the caller to fall back to git's line merge.
pub fn merge_files(base: &[u8], ours: &[u8], theirs: &[u8]) -> Result<Vec<u8>, String> {
    let read = |name: &str, bytes: &[u8]| -> Result<Value, String> {
        // Through the store's parser: the same checks as every load (version, exactness).
        let path = std::path::Path::new(name);
        super::codec::parse(path, bytes).map_err(|e| e.to_string())?;
        serde_json::from_slice(bytes).map_err(|e| format!("{name}: {e}"))
    };
    let o = read("ours", ours)?;
    let t = read("theirs", theirs)?;
    let b = if base.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        Some(read("base", base)?)
    };
    let merged = merge(b.as_ref(), &o, &t);
    // Read back through the store's parser too (one instance of the session's deserializer in
    // the binary, not a second one for `serde_json::Value`).
    let text = serde_json::to_vec(&merged).map_err(|e| e.to_string())?;
    let session = super::codec::parse(std::path::Path::new("the merged session"), &text)
        .map_err(|e| format!("the merged session is not valid: {e}"))?;
    let mut bytes = super::codec::to_json(&session).map_err(|e| e.to_string())?;
    bytes.push(b'\n');
    crate::limits::SESSION
        .check_write(bytes.len())
        .map_err(|p| format!("the merged session: {p}"))?;
    Ok(bytes)
}

/// Merges three session values (see the module docs).
pub fn merge(base: Option<&Value>, ours: &Value, theirs: &Value) -> Value {
    let theirs_wins = later(theirs, ours);
    let mut notes = Vec::new();
    let (Some(o), Some(t)) = (ours.as_object(), theirs.as_object()) else {
        return pick(theirs_wins, ours, theirs).clone();
    };
    let b = base.and_then(Value::as_object);
    let mut out = Map::new();
    for key in keys(o, t) {
        let (bv, ov, tv) = (b.and_then(|m| m.get(&key)), o.get(&key), t.get(&key));
        let merged = match key.as_str() {
            "updated_at" => max_time(ov, tv, Ordering::Greater),
            "created_at" => max_time(ov, tv, Ordering::Less),
            "schema_version" => match (ov.and_then(Value::as_u64), tv.and_then(Value::as_u64)) {
                (Some(a), Some(c)) => Some(Value::from(a.max(c))),
                _ => ov.or(tv).cloned(),
            },
            "git" => pick(theirs_wins, ov, tv).or(ov).cloned(),
            "task" => match (ov, tv) {
                (Some(ov), Some(tv)) => Some(merge_task(bv, ov, tv, theirs_wins, &mut notes)),
                _ => value3(bv, ov, tv, theirs_wins),
            },
            "checkpoints" => by_id(bv, ov, tv, "timestamp", theirs_wins),
            "runs" => by_id(bv, ov, tv, "started_at", theirs_wins),
            _ => value3(bv, ov, tv, theirs_wins),
        };
        if let Some(v) = merged {
            out.insert(key, v);
        }
    }
    if !notes.is_empty()
        && let Some(Value::Object(task)) = out.get_mut("task")
    {
        let list = task
            .entry("discoveries")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(items) = list {
            for n in notes {
                let n = Value::String(n);
                if !items.contains(&n) {
                    items.push(n);
                }
            }
        }
    }
    Value::Object(out)
}

fn pick<T>(theirs_wins: bool, ours: T, theirs: T) -> T {
    if theirs_wins { theirs } else { ours }
}

/// Whether `a`'s `updated_at` is later than `b`'s.
fn later(a: &Value, b: &Value) -> bool {
    let at = |v: &Value| {
        v.get("updated_at")
            .and_then(Value::as_str)
            .map(String::from)
    };
    cmp_time(at(a).as_deref(), at(b).as_deref()) == Ordering::Greater
}

fn cmp_time(a: Option<&str>, b: Option<&str>) -> Ordering {
    let parse = |s: Option<&str>| s.and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok());
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => a.cmp(&b),
    }
}

fn max_time(o: Option<&Value>, t: Option<&Value>, want: Ordering) -> Option<Value> {
    match (o, t) {
        (Some(a), Some(b)) => {
            let ord = cmp_time(a.as_str(), b.as_str());
            Some(
                if ord == want || ord == Ordering::Equal {
                    a
                } else {
                    b
                }
                .clone(),
            )
        }
        _ => o.or(t).cloned(),
    }
}

/// Keys of `o` in its order, then those only `t` has, in its order.
fn keys(o: &Map<String, Value>, t: &Map<String, Value>) -> Vec<String> {
    let mut out: Vec<String> = o.keys().cloned().collect();
    out.extend(t.keys().filter(|k| !o.contains_key(*k)).cloned());
    out
}

/// The three-way merge of one value; `None` = the key is absent in the result.
fn value3(
    b: Option<&Value>,
    o: Option<&Value>,
    t: Option<&Value>,
    theirs_wins: bool,
) -> Option<Value> {
    if o == t {
        return o.cloned();
    }
    if o == b {
        return t.cloned();
    }
    if t == b {
        return o.cloned();
    }
    if let (Some(Value::Object(om)), Some(Value::Object(tm))) = (o, t) {
        let bm = b.and_then(Value::as_object);
        let mut out = Map::new();
        for key in keys(om, tm) {
            if let Some(v) = value3(
                bm.and_then(|m| m.get(&key)),
                om.get(&key),
                tm.get(&key),
                theirs_wins,
            ) {
                out.insert(key, v);
            }
        }
        return Some(Value::Object(out));
    }
    pick(theirs_wins, o, t).cloned()
}

fn merge_task(
    b: Option<&Value>,
    o: &Value,
    t: &Value,
    theirs_wins: bool,
    notes: &mut Vec<String>,
) -> Value {
    let (Some(om), Some(tm)) = (o.as_object(), t.as_object()) else {
        return value3(b, Some(o), Some(t), theirs_wins).unwrap_or(Value::Null);
    };
    let bm = b.and_then(Value::as_object);
    let mut out = Map::new();
    for key in keys(om, tm) {
        let (bv, ov, tv) = (bm.and_then(|m| m.get(&key)), om.get(&key), tm.get(&key));
        let merged = if LISTS.contains(&key.as_str()) {
            Some(union_list(bv, ov, tv))
        } else if let Some((_, label)) = TEXTS.iter().find(|(k, _)| *k == key) {
            let changed_both = ov != bv && tv != bv && ov != tv;
            let v = value3(bv, ov, tv, theirs_wins);
            if changed_both {
                // The side with the later update wins; the other side's value is kept here.
                let (won, lost) = if theirs_wins { (tv, ov) } else { (ov, tv) };
                if let Some(Value::String(s)) = lost
                    && !s.trim().is_empty()
                {
                    let kept = won.and_then(Value::as_str).unwrap_or("(none)");
                    notes.push(format!(
                        "merge: both branches changed the {label}; kept \"{kept}\", the other branch had \"{s}\""
                    ));
                }
            }
            v
        } else {
            value3(bv, ov, tv, theirs_wins)
        };
        if let Some(v) = merged {
            out.insert(key, v);
        }
    }
    // An item completed on either side is no longer remaining.
    let done: Vec<Value> = out
        .get("completed")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(Value::Array(rem)) = out.get_mut("remaining") {
        rem.retain(|i| !done.contains(i));
    }
    Value::Object(out)
}

/// Ours in order, minus what theirs removed; then theirs' additions, minus what ours removed.
fn union_list(b: Option<&Value>, o: Option<&Value>, t: Option<&Value>) -> Value {
    let empty = Vec::new();
    let arr =
        |v: Option<&Value>| -> Vec<Value> { v.and_then(Value::as_array).unwrap_or(&empty).clone() };
    let (bl, ol, tl) = (arr(b), arr(o), arr(t));
    let mut out: Vec<Value> = Vec::new();
    for item in &ol {
        let removed_by_theirs = bl.contains(item) && !tl.contains(item);
        if !removed_by_theirs {
            out.push(item.clone());
        }
    }
    for item in &tl {
        let removed_by_ours = bl.contains(item) && !ol.contains(item);
        if !removed_by_ours && !out.contains(item) {
            out.push(item.clone());
        }
    }
    Value::Array(out)
}

/// Records (checkpoints, runs) unioned by `id`, sorted by `time_key` (stable: ours first).
fn by_id(
    b: Option<&Value>,
    o: Option<&Value>,
    t: Option<&Value>,
    time_key: &str,
    theirs_wins: bool,
) -> Option<Value> {
    if o.is_none() && t.is_none() {
        return None;
    }
    fn arr(v: Option<&Value>) -> &[Value] {
        v.and_then(Value::as_array).map_or(&[], Vec::as_slice)
    }
    let (bl, ol, tl) = (arr(b), arr(o), arr(t));
    let id = |v: &Value| v.get("id").and_then(Value::as_str).map(String::from);
    let find = |list: &[Value], want: &str| {
        list.iter()
            .find(|v| id(v).as_deref() == Some(want))
            .cloned()
    };
    let mut out: Vec<Value> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for item in ol.iter().chain(tl.iter()) {
        let Some(key) = id(item) else {
            if !out.contains(item) {
                out.push(item.clone());
            }
            continue;
        };
        if seen.contains(&key) {
            continue;
        }
        seen.push(key.clone());
        let (bv, ov, tv) = (find(bl, &key), find(ol, &key), find(tl, &key));
        if let Some(v) = value3(bv.as_ref(), ov.as_ref(), tv.as_ref(), theirs_wins) {
            out.push(v);
        }
    }
    let time = |v: &Value| v.get(time_key).and_then(Value::as_str).map(String::from);
    out.sort_by(|a, c| cmp_time(time(a).as_deref(), time(c).as_deref()));
    Some(Value::Array(out))
}

/// The sides of a file holding git conflict markers (`<<<<<<<`, optional `|||||||` base,
/// `=======`, `>>>>>>>`), each reassembled with the lines both share: `(base, ours, theirs)`,
/// the base empty without diff3 sections. `None` when the text has no complete conflict.
pub fn split_conflict(text: &str) -> Option<(String, String, String)> {
    #[derive(PartialEq)]
    enum At {
        Both,
        Ours,
        Base,
        Theirs,
    }
    let (mut b, mut o, mut t) = (String::new(), String::new(), String::new());
    let mut at = At::Both;
    let mut conflicts = 0;
    let mut has_base = false;
    for line in text.split_inclusive('\n') {
        let marker = |m: &str| {
            line.starts_with(m) && (line.len() == 7 || line[7..].starts_with([' ', '\n', '\r']))
        };
        match at {
            At::Both if marker("<<<<<<<") => at = At::Ours,
            At::Ours if marker("|||||||") => {
                at = At::Base;
                has_base = true;
            }
            At::Ours | At::Base if marker("=======") => at = At::Theirs,
            At::Theirs if marker(">>>>>>>") => {
                at = At::Both;
                conflicts += 1;
            }
            At::Both => {
                b.push_str(line);
                o.push_str(line);
                t.push_str(line);
            }
            At::Ours => o.push_str(line),
            At::Base => b.push_str(line),
            At::Theirs => t.push_str(line),
        }
    }
    if conflicts == 0 || at != At::Both {
        return None;
    }
    Some((if has_base { b } else { String::new() }, o, t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::codec::is_conflicted;
    use serde_json::json;

    fn s(updated: &str, task: Value, cps: Value) -> Value {
        json!({"schema_version":1,"id":"46d89609-104d-4a43-907d-dbca99704a85","project_name":"p",
               "created_at":"2026-01-01T00:00:00Z","updated_at":updated,"task":task,"git":null,
               "checkpoints":cps})
    }

    #[test]
    fn lists_union_and_done_wins() {
        let base = s(
            "2026-01-01T00:00:00Z",
            json!({"description":"t","remaining":["a","b"]}),
            json!([]),
        );
        let ours = s(
            "2026-01-02T00:00:00Z",
            json!({"description":"t","remaining":["a","b","c"]}),
            json!([]),
        );
        let theirs = s(
            "2026-01-03T00:00:00Z",
            json!({"description":"t","remaining":["b"],"completed":["a"],"mood":"x"}),
            json!([]),
        );
        let m = merge(Some(&base), &ours, &theirs);
        assert_eq!(m["task"]["remaining"], json!(["b", "c"]));
        assert_eq!(m["task"]["completed"], json!(["a"]));
        assert_eq!(m["task"]["mood"], "x");
        assert_eq!(m["updated_at"], "2026-01-03T00:00:00Z");
    }

    #[test]
    fn scalar_conflict_keeps_the_loser_as_a_discovery() {
        let base = s(
            "2026-01-01T00:00:00Z",
            json!({"description":"t"}),
            json!([]),
        );
        let ours = s(
            "2026-01-02T00:00:00Z",
            json!({"description":"mine"}),
            json!([]),
        );
        let theirs = s(
            "2026-01-03T00:00:00Z",
            json!({"description":"yours"}),
            json!([]),
        );
        let m = merge(Some(&base), &ours, &theirs);
        assert_eq!(m["task"]["description"], "yours");
        assert!(
            m["task"]["discoveries"][0]
                .as_str()
                .unwrap()
                .contains("the other branch had \"mine\"")
        );
    }

    #[test]
    fn checkpoints_union_in_time_order() {
        let cp =
            |id: &str, ts: &str| json!({"id":id,"timestamp":ts,"message":"m","task_snapshot":{}});
        let base = s(
            "2026-01-01T00:00:00Z",
            json!({}),
            json!([cp("1", "2026-01-01T00:00:00Z")]),
        );
        let ours = s(
            "2026-01-02T00:00:00Z",
            json!({}),
            json!([
                cp("1", "2026-01-01T00:00:00Z"),
                cp("3", "2026-01-03T00:00:00Z")
            ]),
        );
        let theirs = s(
            "2026-01-02T00:00:00Z",
            json!({}),
            json!([
                cp("1", "2026-01-01T00:00:00Z"),
                cp("2", "2026-01-02T00:00:00Z")
            ]),
        );
        let m = merge(Some(&base), &ours, &theirs);
        let ids: Vec<&str> = m["checkpoints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["1", "2", "3"]);
    }

    #[test]
    fn conflict_markers_split() {
        let text = "{\n<<<<<<< HEAD\n\"a\": 1\n||||||| base\n\"a\": 0\n=======\n\"a\": 2\n>>>>>>> feat\n}\n";
        let (b, o, t) = split_conflict(text).unwrap();
        assert_eq!(o, "{\n\"a\": 1\n}\n");
        assert_eq!(t, "{\n\"a\": 2\n}\n");
        assert_eq!(b, "{\n\"a\": 0\n}\n");
        assert!(is_conflicted(text));
        assert!(split_conflict("{}\n").is_none());
    }
}
