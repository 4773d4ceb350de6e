//! Merging pas-agent's hook entries into an agent's settings file, and taking them out again.
//!
//! The file is edited as text through a format-preserving parser (`jsonc-parser`'s CST for
//! JSON, `toml_edit` for TOML): what pas-agent does not touch keeps its bytes, order, comments
//! and layout. The shape is the one Claude Code, Codex and Gemini CLI share: event name →
//! list of matcher groups → each with a list of handlers `{type = "command", command, timeout}`.
//!
//! - Install adds, per event, one matcher group holding pas-agent's handler, after the groups
//!   already there; a handler of ours already present is kept (its command updated in place
//!   when pas-agent moved), so installing twice changes nothing.
//! - Remove takes out every handler of ours, then the groups, event lists and `hooks` table
//!   that it left empty; nothing else.
//! - A file that does not parse, or whose `hooks` (or an event's entry) is not the shape above,
//!   is refused: the caller writes nothing.

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstArray, CstInputValue, CstObject, CstRootNode};
use toml_edit::{ArrayOfTables, DocumentMut, Item, Table, value};

use super::{Event, Format, Integration, command, is_ours};

/// What an edit did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// The new text of the file, or `None` when nothing changes.
    pub text: Option<String>,
    /// The agent's event names whose entries were added, updated or removed.
    pub events: Vec<&'static str>,
}

/// Installs (or with `remove`, takes out) pas-agent's hooks for `integration` in the settings
/// text `text` (`None` or blank for a file that does not exist yet), with the program
/// `program` on the command lines.
///
/// Errors: why the text cannot be edited (a parse error with line and column, or the part
/// that has an unexpected shape); nothing is to be written then.
pub fn edit(
    text: Option<&str>,
    integration: &Integration,
    program: &str,
    remove: bool,
) -> Result<Edit, String> {
    let text = text.unwrap_or("");
    match integration.format {
        Format::Json { comments } => json(text, comments, integration, program, remove),
        Format::Toml => toml(text, integration, program, remove),
    }
}

fn json_options(comments: bool) -> ParseOptions {
    ParseOptions {
        allow_comments: comments,
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

fn json(
    text: &str,
    comments: bool,
    integration: &Integration,
    program: &str,
    remove: bool,
) -> Result<Edit, String> {
    let blank = text.trim().is_empty();
    let source = if blank { "{}\n" } else { text };
    // The concrete syntax tree takes comments whatever the options say: an agent that reads
    // plain JSON gets its file checked as plain JSON first.
    if !comments && !blank {
        serde_json::from_str::<serde::de::IgnoredAny>(source)
            .map_err(|e| format!("not valid JSON: {e}"))?;
    }
    let root = CstRootNode::parse(source, &json_options(comments))
        .map_err(|e| format!("not valid JSON: {e}"))?;
    let top = match root.value() {
        None => root.object_value_or_set(),
        Some(v) => v
            .as_object()
            .ok_or("the top level is not a JSON object; pas-agent edits only a settings object")?,
    };
    let hooks = match top.get("hooks") {
        None => None,
        Some(p) => Some(
            p.value()
                .and_then(|v| v.as_object())
                .ok_or("`hooks` is not an object")?,
        ),
    };
    // Check every event's entry before changing anything.
    let mut lists: Vec<(&'static str, Event, Option<CstArray>)> = Vec::new();
    for &(name, event) in integration.events {
        let list = match hooks.as_ref().and_then(|h| h.get(name)) {
            None => None,
            Some(p) => Some(
                p.value()
                    .and_then(|v| v.as_array())
                    .ok_or_else(|| format!("`hooks.{name}` is not a list"))?,
            ),
        };
        lists.push((name, event, list));
    }
    let mut changed = Vec::new();
    if remove {
        let Some(hooks) = hooks else {
            return Ok(Edit {
                text: None,
                events: changed,
            });
        };
        for (name, event, list) in lists {
            let Some(list) = list else { continue };
            if json_remove(&list, integration, event) {
                changed.push(name);
                if list.elements().is_empty()
                    && let Some(p) = hooks.get(name)
                {
                    p.remove();
                }
            }
        }
        if !changed.is_empty()
            && hooks.properties().is_empty()
            && let Some(p) = top.get("hooks")
        {
            p.remove();
        }
    } else {
        for (name, event, list) in lists {
            let wanted = command(program, integration, event);
            if let Some(list) = &list
                && let Some(found) = json_find(list, integration, event)
            {
                let current = found
                    .get("command")
                    .and_then(|p| p.value())
                    .and_then(|v| v.as_string_lit())
                    .and_then(|s| s.decoded_value().ok());
                if current.as_deref() != Some(wanted.as_str()) {
                    if let Some(p) = found.get("command") {
                        p.set_value(CstInputValue::String(wanted));
                    }
                    changed.push(name);
                }
                continue;
            }
            let hooks = top.object_value_or_set("hooks");
            let list = hooks.array_value_or_set(name);
            list.append(CstInputValue::Object(vec![(
                "hooks".into(),
                CstInputValue::Array(vec![CstInputValue::Object(vec![
                    ("type".into(), "command".into()),
                    ("command".into(), wanted.into()),
                    (
                        "timeout".into(),
                        CstInputValue::Number(integration.timeout.to_string()),
                    ),
                ])]),
            )]));
            changed.push(name);
        }
    }
    if changed.is_empty() {
        return Ok(Edit {
            text: None,
            events: changed,
        });
    }
    let mut out = root.to_string();
    if blank && !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(Edit {
        text: Some(out),
        events: changed,
    })
}

/// The handler objects of the matcher groups in `list`.
fn json_handlers(list: &CstArray) -> Vec<(CstObject, CstArray, CstObject)> {
    let mut out = Vec::new();
    for group in list.elements() {
        let Some(group) = group.as_object() else {
            continue;
        };
        let Some(handlers) = group
            .get("hooks")
            .and_then(|p| p.value())
            .and_then(|v| v.as_array())
        else {
            continue;
        };
        for h in handlers.elements() {
            if let Some(h) = h.as_object() {
                out.push((group.clone(), handlers.clone(), h));
            }
        }
    }
    out
}

fn json_command(handler: &CstObject) -> Option<String> {
    handler
        .get("command")?
        .value()?
        .as_string_lit()?
        .decoded_value()
        .ok()
}

fn json_find(list: &CstArray, integration: &Integration, event: Event) -> Option<CstObject> {
    json_handlers(list)
        .into_iter()
        .map(|(_, _, h)| h)
        .find(|h| json_command(h).is_some_and(|c| is_ours(&c, integration, event)))
}

/// Removes our handlers from `list`, and the groups left without handlers; whether anything
/// was removed.
fn json_remove(list: &CstArray, integration: &Integration, event: Event) -> bool {
    let mut removed = false;
    for (group, handlers, h) in json_handlers(list) {
        if !json_command(&h).is_some_and(|c| is_ours(&c, integration, event)) {
            continue;
        }
        h.remove();
        removed = true;
        let only_matcher = group.properties().iter().all(|p| {
            matches!(
                p.name().and_then(|n| n.decoded_value().ok()).as_deref(),
                Some("hooks" | "matcher")
            )
        });
        if handlers.elements().is_empty() && only_matcher {
            group.remove();
        }
    }
    removed
}

fn toml(
    text: &str,
    integration: &Integration,
    program: &str,
    remove: bool,
) -> Result<Edit, String> {
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| format!("not valid TOML: {}", e.to_string().trim()))?;
    match doc.get("hooks") {
        None | Some(Item::Table(_)) => {}
        Some(_) => {
            return Err(
                "`hooks` is not a table written as [hooks] sections; pas-agent edits only that form".into(),
            );
        }
    }
    for &(name, _) in integration.events {
        match doc.get("hooks").and_then(|h| h.get(name)) {
            None | Some(Item::ArrayOfTables(_)) => {}
            Some(_) => {
                return Err(format!(
                    "`hooks.{name}` is not written as [[hooks.{name}]] tables; pas-agent edits only that form"
                ));
            }
        }
    }
    let mut changed = Vec::new();
    if remove {
        if let Some(Item::Table(hooks)) = doc.get_mut("hooks") {
            for &(name, event) in integration.events {
                let Some(Item::ArrayOfTables(groups)) = hooks.get_mut(name) else {
                    continue;
                };
                if toml_remove(groups, integration, event) {
                    changed.push(name);
                    if groups.is_empty() {
                        hooks.remove(name);
                    }
                }
            }
            if !changed.is_empty() && hooks.is_empty() {
                doc.remove("hooks");
            }
        }
    } else {
        for &(name, event) in integration.events {
            let wanted = command(program, integration, event);
            let hooks = doc
                .entry("hooks")
                .or_insert_with(|| {
                    let mut t = Table::new();
                    t.set_implicit(true);
                    Item::Table(t)
                })
                .as_table_mut()
                .ok_or("`hooks` is not a table")?;
            let groups = hooks
                .entry(name)
                .or_insert_with(|| Item::ArrayOfTables(ArrayOfTables::new()))
                .as_array_of_tables_mut()
                .ok_or_else(|| format!("`hooks.{name}` is not a list of tables"))?;
            match toml_find(groups, integration, event) {
                Some(handler) => {
                    if handler.get("command").and_then(|c| c.as_str()) != Some(wanted.as_str()) {
                        handler["command"] = value(wanted);
                        changed.push(name);
                    }
                }
                None => {
                    let mut handler = Table::new();
                    handler["type"] = value("command");
                    handler["command"] = value(wanted);
                    handler["timeout"] = value(i64::try_from(integration.timeout).unwrap_or(60));
                    let mut handlers = ArrayOfTables::new();
                    handlers.push(handler);
                    let mut group = Table::new();
                    group.insert("hooks", Item::ArrayOfTables(handlers));
                    groups.push(group);
                    changed.push(name);
                }
            }
        }
    }
    Ok(Edit {
        text: (!changed.is_empty()).then(|| doc.to_string()),
        events: changed,
    })
}

fn toml_find<'a>(
    groups: &'a mut ArrayOfTables,
    integration: &Integration,
    event: Event,
) -> Option<&'a mut Table> {
    groups
        .iter_mut()
        .filter_map(|g| g.get_mut("hooks").and_then(|h| h.as_array_of_tables_mut()))
        .flat_map(|h| h.iter_mut())
        .find(|h| {
            h.get("command")
                .and_then(|c| c.as_str())
                .is_some_and(|c| is_ours(c, integration, event))
        })
}

fn toml_remove(groups: &mut ArrayOfTables, integration: &Integration, event: Event) -> bool {
    let mut removed = false;
    let mut i = 0;
    while i < groups.len() {
        let group = groups.get_mut(i).expect("index in range");
        if let Some(handlers) = group
            .get_mut("hooks")
            .and_then(|h| h.as_array_of_tables_mut())
        {
            let before = handlers.len();
            handlers.retain(|h| {
                !h.get("command")
                    .and_then(|c| c.as_str())
                    .is_some_and(|c| is_ours(c, integration, event))
            });
            if handlers.len() != before {
                removed = true;
                let empty = handlers.is_empty();
                let only_matcher = group.iter().all(|(k, _)| k == "hooks" || k == "matcher");
                if empty && only_matcher {
                    groups.remove(i);
                    continue;
                }
            }
        }
        i += 1;
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::super::by_key;
    use super::*;

    const PROGRAM: &str = "/opt/bin/pas-agent";

    fn install(text: Option<&str>, key: &str) -> String {
        edit(text, by_key(key).unwrap(), PROGRAM, false)
            .unwrap()
            .text
            .unwrap()
    }

    fn remove(text: &str, key: &str) -> Option<String> {
        edit(Some(text), by_key(key).unwrap(), PROGRAM, true)
            .unwrap()
            .text
    }

    #[test]
    fn json_install_keeps_the_rest_and_remove_restores_the_bytes() {
        let original = "{\n  \"model\": \"opus\",\n  \"hooks\": {\n    \"Stop\": [\n      { \"matcher\": \"\", \"hooks\": [ { \"type\": \"command\", \"command\": \"notify-send done\" } ] }\n    ]\n  },\n  \"z\": 1\n}\n";
        let installed = install(Some(original), "claude");
        let v: serde_json::Value = serde_json::from_str(&installed).unwrap();
        assert_eq!(
            v["hooks"]["Stop"][0]["hooks"][0]["command"],
            "notify-send done"
        );
        assert_eq!(
            v["hooks"]["Stop"][1]["hooks"][0]["command"],
            "/opt/bin/pas-agent lifecycle claude stop"
        );
        assert_eq!(v["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"], 30);
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["model", "hooks", "z"]);
        // Idempotent.
        assert_eq!(
            edit(Some(&installed), by_key("claude").unwrap(), PROGRAM, false)
                .unwrap()
                .text,
            None
        );
        assert_eq!(remove(&installed, "claude").as_deref(), Some(original));
        assert_eq!(remove(original, "claude"), None);
    }

    #[test]
    fn json_new_file_and_comments_for_gemini() {
        let new = install(None, "gemini");
        let v: serde_json::Value = serde_json::from_str(&new).unwrap();
        assert_eq!(
            v["hooks"]["AfterAgent"][0]["hooks"][0]["command"],
            "/opt/bin/pas-agent lifecycle gemini stop"
        );
        let with_comments = "{\n  // my theme\n  \"ui\": {\"theme\": \"x\"}\n}\n";
        let installed = install(Some(with_comments), "gemini");
        assert!(installed.contains("// my theme"));
        assert_eq!(remove(&installed, "gemini").as_deref(), Some(with_comments));
        // Claude's settings are plain JSON.
        assert!(
            edit(
                Some(with_comments),
                by_key("claude").unwrap(),
                PROGRAM,
                false
            )
            .is_err()
        );
    }

    #[test]
    fn json_refuses_what_it_cannot_edit() {
        for bad in [
            "{",
            "[1]",
            "{\"hooks\": 3}",
            "{\"hooks\": {\"Stop\": {}}}",
            "{\"a\":1,}",
        ] {
            let e = edit(Some(bad), by_key("claude").unwrap(), PROGRAM, false);
            assert!(e.is_err(), "{bad}");
            let e = edit(Some(bad), by_key("claude").unwrap(), PROGRAM, true);
            assert!(e.is_err(), "{bad}");
        }
    }

    #[test]
    fn json_moved_program_is_updated_in_place() {
        let installed = install(None, "claude");
        let moved = edit(
            Some(&installed),
            by_key("claude").unwrap(),
            "pas-agent",
            false,
        )
        .unwrap();
        assert_eq!(moved.events.len(), 3);
        let text = moved.text.unwrap();
        assert!(text.contains("\"pas-agent lifecycle claude stop\""));
        assert!(!text.contains("/opt/bin"));
    }

    #[test]
    fn toml_install_keeps_the_rest_and_remove_restores_the_bytes() {
        let original = "# my codex config\nmodel = \"o3\"  # fast\n\n[[hooks.Stop]]\nmatcher = \"\"\n[[hooks.Stop.hooks]]\ntype = \"command\"\ncommand = \"notify-send done\"\n\n[projects.\"/x\"]\ntrust_level = \"trusted\"\n";
        let installed = install(Some(original), "codex");
        let v: toml_edit::DocumentMut = installed.parse().unwrap();
        assert_eq!(
            v["hooks"]["Stop"][1]["hooks"][0]["command"].as_str(),
            Some("/opt/bin/pas-agent lifecycle codex stop")
        );
        assert_eq!(
            v["hooks"]["Stop"][0]["hooks"][0]["command"].as_str(),
            Some("notify-send done")
        );
        assert!(installed.starts_with("# my codex config\nmodel = \"o3\"  # fast\n"));
        assert_eq!(
            edit(Some(&installed), by_key("codex").unwrap(), PROGRAM, false)
                .unwrap()
                .text,
            None
        );
        assert_eq!(remove(&installed, "codex").as_deref(), Some(original));
        let fresh = install(None, "codex");
        assert_eq!(remove(&fresh, "codex").as_deref(), Some(""));
    }

    #[test]
    fn toml_refuses_what_it_cannot_edit() {
        for bad in [
            "model = ",
            "hooks = 3",
            "hooks = { Stop = [] }",
            "[hooks]\nStop = 1\n",
        ] {
            assert!(
                edit(Some(bad), by_key("codex").unwrap(), PROGRAM, false).is_err(),
                "{bad}"
            );
        }
    }
}
