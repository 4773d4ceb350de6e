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
//! - A file that does not parse, or whose `hooks`, an event's entry, a group or a handler is not
//!   the shape above, is refused: the caller writes nothing. So is a JSON object on the edited
//!   path (the top level, `hooks`, the groups and handlers of our events) with a key twice: the
//!   parser here finds the first, the agents (`JSON.parse`) keep the last. A Codex group's
//!   handlers may be `[[hooks.<Event>.hooks]]` tables or an inline list of inline tables.

use crate::agents::hooks::json_options;
use jsonc_parser::cst::{CstArray, CstInputValue, CstObject, CstRootNode};
use toml_edit::{ArrayOfTables, DocumentMut, Item, Table, value};

use super::{Event, Format, Integration, command, is_ours};
use crate::agents::hooks::Installed;

/// What an edit did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// The new text of the file, or `None` when nothing changes.
    pub text: Option<String>,
    /// The agent's event names whose entries were added, updated or removed, then the keys of
    /// the top-level settings added or removed with them.
    pub events: Vec<&'static str>,
    /// Whether the file is to be deleted rather than written (a file pas-agent owned whole,
    /// [`Format::Owned`], whose hooks were removed).
    pub delete: bool,
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
    // The edges keep what the parsers would lose: a byte order mark, and CRLF line ends
    // (which toml_edit and the JSON tree would mix with the LF lines they add).
    let text = text.unwrap_or("");
    let (bom, text) = match text.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", text),
    };
    let crlf = text.contains("\r\n") && text.matches('\n').count() == text.matches("\r\n").count();
    let lf;
    let text = if crlf {
        lf = text.replace("\r\n", "\n");
        lf.as_str()
    } else {
        text
    };
    let mut edit = match integration.hooks.format {
        Format::Json { comments } => json(text, comments, integration, program, remove),
        Format::Toml => toml(text, integration, program, remove),
        Format::Owned { template } => owned(text, template, integration, program, remove),
    }?;
    edit.text = edit.text.map(|t| {
        let t = if crlf { t.replace('\n', "\r\n") } else { t };
        if t.is_empty() { t } else { format!("{bom}{t}") }
    });
    Ok(edit)
}

/// pas-agent's handlers for `integration` in the settings text `text`, in file order, each with
/// its place (the agents that fingerprint approved hooks key them by place).
///
/// Errors: the text cannot be read as [`edit`] reads it.
pub fn installed(text: &str, integration: &Integration) -> Result<Vec<Installed>, String> {
    let mut out = Vec::new();
    // Read as `edit` reads it: without a byte order mark, CRLF line ends as LF.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lf;
    let text = if text.contains("\r\n") {
        lf = text.replace("\r\n", "\n");
        lf.as_str()
    } else {
        text
    };
    if text.trim().is_empty() {
        return Ok(out);
    }
    match integration.hooks.format {
        Format::Json { comments } => {
            if !comments {
                serde_json::from_str::<serde::de::IgnoredAny>(text)
                    .map_err(|e| format!("not valid JSON: {e}"))?;
            }
            let root = CstRootNode::parse(text, &json_options(comments))
                .map_err(|e| format!("not valid JSON: {e}"))?;
            let Some(hooks) = root
                .value()
                .and_then(|v| v.as_object())
                .and_then(|top| top.get("hooks"))
                .and_then(|p| p.value())
                .and_then(|v| v.as_object())
            else {
                return Ok(out);
            };
            for &(name, event) in integration.hooks.events {
                let Some(list) = hooks
                    .get(name)
                    .and_then(|p| p.value())
                    .and_then(|v| v.as_array())
                else {
                    continue;
                };
                for (g, group) in list.elements().into_iter().enumerate() {
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
                    let group_plain = json_keys(&group).iter().all(|k| k == "hooks");
                    for (h, handler) in handlers.elements().into_iter().enumerate() {
                        let Some(handler) = handler.as_object() else {
                            continue;
                        };
                        let Some(command) = json_command(&handler) else {
                            continue;
                        };
                        if !is_ours(&command, integration, event) {
                            continue;
                        }
                        let timeout = handler
                            .get("timeout")
                            .and_then(|p| p.value())
                            .and_then(|v| v.as_number_lit())
                            .and_then(|n| n.to_string().trim().parse().ok());
                        out.push(Installed {
                            event: name,
                            group: g,
                            handler: h,
                            command,
                            timeout,
                            plain: group_plain
                                && json_keys(&handler)
                                    .iter()
                                    .all(|k| matches!(k.as_str(), "type" | "command" | "timeout")),
                        });
                    }
                }
            }
        }
        Format::Owned { template } => {
            let Some(found) = owned_commands(template, text) else {
                return Err("not the file pas-agent writes there".into());
            };
            for (h, (event, command)) in found.into_iter().enumerate() {
                let Some(&(name, _)) = integration.hooks.events.iter().find(|(_, e)| *e == event)
                else {
                    continue;
                };
                if is_ours(&command, integration, event) {
                    out.push(Installed {
                        event: name,
                        group: 0,
                        handler: h,
                        command,
                        timeout: None,
                        plain: true,
                    });
                }
            }
        }
        Format::Toml => {
            let doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
                format!("not valid TOML: {}", e.to_string().trim())
            })?;
            for &(name, event) in integration.hooks.events {
                let Some(Item::ArrayOfTables(groups)) = doc.get("hooks").and_then(|h| h.get(name))
                else {
                    continue;
                };
                for (g, group) in groups.iter().enumerate() {
                    let group_plain = group.iter().all(|(k, _)| k == "hooks");
                    let handlers: Vec<(
                        Option<&toml_edit::Value>,
                        Option<&toml_edit::Value>,
                        bool,
                    )> = match group.get("hooks") {
                        Some(Item::ArrayOfTables(t)) => t
                            .iter()
                            .map(|h| {
                                (
                                    h.get("command").and_then(Item::as_value),
                                    h.get("timeout").and_then(Item::as_value),
                                    h.iter()
                                        .all(|(k, _)| matches!(k, "type" | "command" | "timeout")),
                                )
                            })
                            .collect(),
                        Some(Item::Value(toml_edit::Value::Array(a))) => a
                            .iter()
                            .map(|h| match h.as_inline_table() {
                                Some(t) => (
                                    t.get("command"),
                                    t.get("timeout"),
                                    t.iter()
                                        .all(|(k, _)| matches!(k, "type" | "command" | "timeout")),
                                ),
                                None => (None, None, false),
                            })
                            .collect(),
                        _ => Vec::new(),
                    };
                    for (h, (command, timeout, handler_plain)) in handlers.into_iter().enumerate() {
                        if !toml_ours(command, integration, event) {
                            continue;
                        }
                        out.push(Installed {
                            event: name,
                            group: g,
                            handler: h,
                            command: command.and_then(|c| c.as_str()).unwrap_or_default().into(),
                            timeout: timeout
                                .and_then(|t| t.as_integer())
                                .and_then(|t| u64::try_from(t).ok()),
                            plain: group_plain && handler_plain,
                        });
                    }
                }
            }
        }
    }
    Ok(out)
}

/// The keys of a JSON object, decoded (a key that cannot be decoded is left out).
fn json_keys(object: &CstObject) -> Vec<String> {
    object
        .properties()
        .iter()
        .filter_map(|p| p.name().and_then(|n| n.decoded_value().ok()))
        .collect()
}

/// Whether `text`, the result of taking pas-agent's hooks out of a settings file, holds
/// nothing at all: blank, or (JSON) one empty object with nothing but blanks and no comment
/// around it. A file that says nothing is one `integrate` may remove when it created it.
pub fn is_empty(text: &str, format: Format) -> bool {
    let t = text.trim_start_matches('\u{feff}').trim();
    match format {
        Format::Toml | Format::Owned { .. } => t.is_empty(),
        Format::Json { .. } => {
            t.is_empty()
                || t.strip_prefix('{')
                    .and_then(|r| r.strip_suffix('}'))
                    .is_some_and(|inner| inner.trim().is_empty())
        }
    }
}

/// `template` with each `{command:<event>}` replaced by the command for that event, as a JSON
/// string literal.
fn render(template: &str, integration: &Integration, program: &str) -> String {
    let mut out = template.to_string();
    for event in Event::ALL {
        let literal = serde_json::Value::String(command(program, integration, event)).to_string();
        out = out.replace(&format!("{{command:{}}}", event.word()), &literal);
    }
    out
}

/// The commands in `text` where `template` has its `{command:<event>}` placeholders, when
/// `text` is `template` with a JSON string literal in each of them (and nothing else changed).
fn owned_commands(template: &str, text: &str) -> Option<Vec<(Event, String)>> {
    const OPEN: &str = "{command:";
    let (mut t, mut rest) = (template, text);
    let mut found = Vec::new();
    while let Some(at) = t.find(OPEN) {
        rest = rest.strip_prefix(&t[..at])?;
        let after = &t[at + OPEN.len()..];
        let end = after.find('}')?;
        let event = Event::from_word(&after[..end])?;
        t = &after[end + 1..];
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<String>();
        let value = values.next()?.ok()?;
        let used = values.byte_offset();
        found.push((event, value));
        rest = &rest[used..];
    }
    (rest == t).then_some(found)
}

/// A file pas-agent owns whole ([`Format::Owned`]): written from the template, replaced when it
/// is an earlier rendering of it (the program moved), deleted on removal. Any other file at
/// that path is refused.
fn owned(
    text: &str,
    template: &str,
    integration: &Integration,
    program: &str,
    remove: bool,
) -> Result<Edit, String> {
    let names: Vec<&'static str> = integration.hooks.events.iter().map(|(n, _)| *n).collect();
    let unchanged = || Edit {
        text: None,
        events: Vec::new(),
        delete: false,
    };
    if text.trim().is_empty() {
        if remove {
            return Ok(unchanged());
        }
        return Ok(Edit {
            text: Some(render(template, integration, program)),
            events: names,
            delete: false,
        });
    }
    let ours = owned_commands(template, text).is_some_and(|found| {
        !found.is_empty()
            && found
                .iter()
                .all(|(event, c)| is_ours(c, integration, *event))
    });
    if !ours {
        return Err(
            "the file is not the one pas-agent writes there (it was changed, or belongs to something else); pas-agent does not edit it"
                .into(),
        );
    }
    if remove {
        return Ok(Edit {
            text: Some(String::new()),
            events: names,
            delete: true,
        });
    }
    let new = render(template, integration, program);
    if new == text {
        return Ok(unchanged());
    }
    Ok(Edit {
        text: Some(new),
        events: names,
        delete: false,
    })
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
    json_unique_keys(&top, "the top-level object")?;
    let hooks = match top.get("hooks") {
        None => None,
        Some(p) => Some(
            p.value()
                .and_then(|v| v.as_object())
                .ok_or("`hooks` is not an object")?,
        ),
    };
    if let Some(hooks) = &hooks {
        json_unique_keys(hooks, "`hooks`")?;
    }
    // Check every event's entry, down to each handler, before changing anything.
    let mut lists: Vec<(&'static str, Event, Option<CstArray>)> = Vec::new();
    for &(name, event) in integration.hooks.events {
        let list = match hooks.as_ref().and_then(|h| h.get(name)) {
            None => None,
            Some(p) => Some(
                p.value()
                    .and_then(|v| v.as_array())
                    .ok_or_else(|| format!("`hooks.{name}` is not a list"))?,
            ),
        };
        if let Some(list) = &list {
            json_handlers(list, name)?;
        }
        lists.push((name, event, list));
    }
    let mut changed = Vec::new();
    if remove {
        let Some(hooks) = hooks else {
            return Ok(Edit {
                text: None,
                events: changed,
                delete: false,
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
                let mut moved = false;
                if current.as_deref() != Some(wanted.as_str()) {
                    if let Some(p) = found.get("command") {
                        p.set_value(CstInputValue::String(wanted));
                    }
                    moved = true;
                }
                // A timeout pas-agent once wrote that the agent does not honour.
                let timeout = integration.hooks.timeout_for(event);
                if let Some(p) = found.get("timeout")
                    && p.value()
                        .and_then(|v| v.as_number_lit())
                        .is_some_and(|n| n.to_string().trim().parse::<u64>().ok() != Some(timeout))
                {
                    p.set_value(CstInputValue::Number(timeout.to_string()));
                    moved = true;
                }
                if moved {
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
                        CstInputValue::Number(integration.hooks.timeout_for(event).to_string()),
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
            delete: false,
        });
    }
    let mut out = root.to_string();
    if blank && !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(Edit {
        text: Some(out),
        events: changed,
        delete: false,
    })
}

/// Refuses an object in which a key appears twice: `jsonc-parser` finds the first, the agents
/// (`JSON.parse`) keep the last, so pas-agent would edit the copy the agent ignores.
fn json_unique_keys(object: &CstObject, what: &str) -> Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    for p in object.properties() {
        let name = p
            .name()
            .and_then(|n| n.decoded_value().ok())
            .ok_or_else(|| format!("{what} has a key pas-agent cannot read"))?;
        if !seen.insert(name.clone()) {
            return Err(format!(
                "{what} has the key `{name}` more than once; the agent keeps only the last, so pas-agent will not guess which to edit"
            ));
        }
    }
    Ok(())
}

/// The handler objects of the matcher groups in `list` (the entry of event `name`).
///
/// Errors: a group or handler of another shape than `{"hooks": [{…}, …], …}` (a group that is
/// not an object, without a `hooks` list, a handler that is not an object or whose `command` is
/// not a string), or with a key twice: pas-agent does not edit what it cannot fully read.
fn json_handlers(
    list: &CstArray,
    name: &str,
) -> Result<Vec<(CstObject, CstArray, CstObject)>, String> {
    let mut out = Vec::new();
    for (i, group) in list.elements().into_iter().enumerate() {
        let at = format!("`hooks.{name}[{i}]`");
        let group = group
            .as_object()
            .ok_or_else(|| format!("{at} is not an object"))?;
        json_unique_keys(&group, &at)?;
        let handlers = group
            .get("hooks")
            .ok_or_else(|| format!("{at} has no `hooks` list"))?
            .value()
            .and_then(|v| v.as_array())
            .ok_or_else(|| format!("{at}.hooks is not a list"))?;
        for (j, h) in handlers.elements().into_iter().enumerate() {
            let at = format!("{at}.hooks[{j}]");
            let h = h
                .as_object()
                .ok_or_else(|| format!("{at} is not an object"))?;
            json_unique_keys(&h, &at)?;
            if h.get("command").is_some() && json_command(&h).is_none() {
                return Err(format!("{at}.command is not a string"));
            }
            out.push((group.clone(), handlers.clone(), h));
        }
    }
    Ok(out)
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
    // The list was checked before any change: the shape is known to be right.
    json_handlers(list, "")
        .unwrap_or_default()
        .into_iter()
        .map(|(_, _, h)| h)
        .find(|h| json_command(h).is_some_and(|c| is_ours(&c, integration, event)))
}

/// Removes our handlers from `list`, and the groups left without handlers; whether anything
/// was removed.
fn json_remove(list: &CstArray, integration: &Integration, event: Event) -> bool {
    let mut removed = false;
    // The list was checked before any change: the shape is known to be right.
    for (group, handlers, h) in json_handlers(list, "").unwrap_or_default() {
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
    for &(name, _) in integration.hooks.events {
        match doc.get("hooks").and_then(|h| h.get(name)) {
            None => {}
            Some(Item::ArrayOfTables(groups)) => toml_check(groups, name)?,
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
            for &(name, event) in integration.hooks.events {
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
        for &(name, event) in integration.hooks.events {
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
            match toml_update(groups, integration, event, &wanted) {
                Some(true) => changed.push(name),
                Some(false) => {}
                None => {
                    let mut handler = Table::new();
                    handler["type"] = value("command");
                    handler["command"] = value(wanted);
                    handler["timeout"] =
                        value(i64::try_from(integration.hooks.timeout_for(event)).unwrap_or(60));
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
    changed.extend(toml_settings(&mut doc, integration, remove));
    Ok(Edit {
        text: (!changed.is_empty()).then(|| doc.to_string()),
        events: changed,
        delete: false,
    })
}

/// Adds the integration's top-level settings ([`crate::agents::hooks::Setting`]) that the file
/// does not set, each under a comment naming pas-agent; with `remove`, takes out those still
/// under that comment. A key the file sets otherwise is the user's, and is left alone.
/// Returns the keys added or removed.
fn toml_settings(
    doc: &mut DocumentMut,
    integration: &Integration,
    remove: bool,
) -> Vec<&'static str> {
    let mut changed = Vec::new();
    for setting in integration.hooks.settings {
        let comment = format!("# {}\n", setting.why);
        let ours = doc
            .as_table()
            .key(setting.key)
            .and_then(|k| k.leaf_decor().prefix())
            .and_then(|p| p.as_str())
            .is_some_and(|p| p.contains(&comment));
        if remove {
            if ours && doc.as_table_mut().remove(setting.key).is_some() {
                changed.push(setting.key);
            }
            continue;
        }
        if doc.as_table().contains_key(setting.key) {
            continue;
        }
        doc.as_table_mut().insert(setting.key, value(setting.value));
        if let Some(mut key) = doc.as_table_mut().key_mut(setting.key) {
            key.leaf_decor_mut().set_prefix(comment);
        }
        changed.push(setting.key);
    }
    changed
}

/// A matcher group's handlers, in either form TOML allows: `[[hooks.<Event>.hooks]]` tables,
/// or `hooks = [{ type = "command", command = "…" }, …]`, an inline array of inline tables.
enum Handlers<'a> {
    Tables(&'a mut ArrayOfTables),
    Inline(&'a mut toml_edit::Array),
}

fn toml_handlers(group: &mut Table) -> Option<Handlers<'_>> {
    match group.get_mut("hooks")? {
        Item::ArrayOfTables(t) => Some(Handlers::Tables(t)),
        Item::Value(toml_edit::Value::Array(a)) => Some(Handlers::Inline(a)),
        _ => None,
    }
}

/// Whether the handler whose `command` is `command` is ours.
fn toml_ours(command: Option<&toml_edit::Value>, integration: &Integration, event: Event) -> bool {
    command
        .and_then(|c| c.as_str())
        .is_some_and(|c| is_ours(c, integration, event))
}

/// Checks every group of event `name` has the shape [`Handlers`] describes, each handler a
/// table whose `command`, if any, is a string.
///
/// Errors: what has another shape: pas-agent does not edit what it cannot fully read.
fn toml_check(groups: &ArrayOfTables, name: &str) -> Result<(), String> {
    let command_ok = |c: Option<&toml_edit::Value>| c.is_none_or(|c| c.as_str().is_some());
    for (i, group) in groups.iter().enumerate() {
        let at = format!("`hooks.{name}[{i}]`");
        match group.get("hooks") {
            None => return Err(format!("{at} has no `hooks` list")),
            Some(Item::ArrayOfTables(handlers)) => {
                for (j, h) in handlers.iter().enumerate() {
                    if !command_ok(h.get("command").and_then(Item::as_value)) {
                        return Err(format!("{at}.hooks[{j}].command is not a string"));
                    }
                }
            }
            Some(Item::Value(toml_edit::Value::Array(handlers))) => {
                for (j, h) in handlers.iter().enumerate() {
                    let Some(h) = h.as_inline_table() else {
                        return Err(format!("{at}.hooks[{j}] is not a table"));
                    };
                    if !command_ok(h.get("command")) {
                        return Err(format!("{at}.hooks[{j}].command is not a string"));
                    }
                }
            }
            Some(_) => {
                return Err(format!(
                    "{at}.hooks is neither [[hooks.{name}.hooks]] tables nor a list of tables"
                ));
            }
        }
    }
    Ok(())
}

/// Sets the command of our handler for `event` in `groups` to `wanted`: `None` when there is
/// none, else whether it changed.
fn toml_update(
    groups: &mut ArrayOfTables,
    integration: &Integration,
    event: Event,
    wanted: &str,
) -> Option<bool> {
    for group in groups.iter_mut() {
        match toml_handlers(group) {
            Some(Handlers::Tables(handlers)) => {
                for h in handlers.iter_mut() {
                    if toml_ours(
                        h.get("command").and_then(Item::as_value),
                        integration,
                        event,
                    ) {
                        let mut changed = h.get("command").and_then(|c| c.as_str()) != Some(wanted);
                        if changed {
                            h["command"] = value(wanted);
                        }
                        // A timeout pas-agent once wrote that the agent does not honour.
                        let timeout = i64::try_from(integration.hooks.timeout_for(event)).ok();
                        if let Some(t) = timeout
                            && h.get("timeout")
                                .and_then(|v| v.as_integer())
                                .is_some_and(|v| v != t)
                        {
                            let decor = h
                                .get("timeout")
                                .and_then(Item::as_value)
                                .map(|v| v.decor().clone());
                            h["timeout"] = value(t);
                            if let (Some(decor), Some(v)) =
                                (decor, h.get_mut("timeout").and_then(Item::as_value_mut))
                            {
                                *v.decor_mut() = decor;
                            }
                            changed = true;
                        }
                        return Some(changed);
                    }
                }
            }
            Some(Handlers::Inline(handlers)) => {
                for h in handlers.iter_mut().filter_map(|h| h.as_inline_table_mut()) {
                    if toml_ours(h.get("command"), integration, event) {
                        let Some(current) = h.get_mut("command") else {
                            continue;
                        };
                        let mut changed = current.as_str() != Some(wanted);
                        if changed {
                            let decor = current.decor().clone();
                            *current = toml_edit::Value::from(wanted);
                            *current.decor_mut() = decor;
                        }
                        let timeout = i64::try_from(integration.hooks.timeout_for(event)).ok();
                        if let (Some(t), Some(current)) = (timeout, h.get_mut("timeout"))
                            && current.as_integer().is_some_and(|v| v != t)
                        {
                            let decor = current.decor().clone();
                            *current = toml_edit::Value::from(t);
                            *current.decor_mut() = decor;
                            changed = true;
                        }
                        return Some(changed);
                    }
                }
            }
            None => {}
        }
    }
    None
}

fn toml_remove(groups: &mut ArrayOfTables, integration: &Integration, event: Event) -> bool {
    let mut removed = false;
    let mut i = 0;
    while i < groups.len() {
        let group = groups.get_mut(i).expect("index in range");
        let (before, after) = match toml_handlers(group) {
            Some(Handlers::Tables(handlers)) => {
                let before = handlers.len();
                handlers.retain(|h| {
                    !toml_ours(
                        h.get("command").and_then(Item::as_value),
                        integration,
                        event,
                    )
                });
                (before, handlers.len())
            }
            Some(Handlers::Inline(handlers)) => {
                let before = handlers.len();
                handlers.retain(|h| {
                    !h.as_inline_table()
                        .is_some_and(|t| toml_ours(t.get("command"), integration, event))
                });
                (before, handlers.len())
            }
            None => (0, 0),
        };
        if after != before {
            removed = true;
            let only_matcher = group.iter().all(|(k, _)| k == "hooks" || k == "matcher");
            if after == 0 && only_matcher {
                groups.remove(i);
                continue;
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
        edit(text, &by_key(key).unwrap(), PROGRAM, false)
            .unwrap()
            .text
            .unwrap()
    }

    fn remove(text: &str, key: &str) -> Option<String> {
        edit(Some(text), &by_key(key).unwrap(), PROGRAM, true)
            .unwrap()
            .text
    }

    #[test]
    fn an_owned_file_is_written_whole_replaced_when_ours_and_deleted_on_removal() {
        let copilot = by_key("copilot").unwrap();
        let new = install(None, "copilot");
        let v: serde_json::Value = serde_json::from_str(&new).unwrap();
        assert_eq!(v["version"], 1);
        assert_eq!(
            v["hooks"]["agentStop"][0]["bash"],
            "/opt/bin/pas-agent lifecycle copilot stop"
        );
        assert_eq!(v["hooks"]["sessionEnd"][0]["timeoutSec"], 30);
        // Again: nothing changes. Moved: the commands follow.
        assert_eq!(
            edit(Some(&new), &copilot, PROGRAM, false).unwrap().text,
            None
        );
        let moved = edit(Some(&new), &copilot, "'/my tools/pas-agent'", false).unwrap();
        assert!(
            moved
                .text
                .unwrap()
                .contains("'/my tools/pas-agent' lifecycle copilot stop")
        );
        // Removal deletes it.
        let gone = edit(Some(&new), &copilot, PROGRAM, true).unwrap();
        assert!(gone.delete && gone.events.len() == 3);
        assert_eq!(edit(None, &copilot, PROGRAM, true).unwrap().text, None);
        // A file of that name that is not pas-agent's, or was edited, is never touched.
        for other in [
            "{\"version\": 1, \"hooks\": {}}",
            &new.replace("\"timeoutSec\": 30", "\"timeoutSec\": 5"),
            &new.replace("lifecycle copilot stop", "lifecycle claude stop"),
        ] {
            for remove in [false, true] {
                assert!(
                    edit(Some(other), &copilot, PROGRAM, remove).is_err(),
                    "{other}"
                );
            }
        }
    }

    #[test]
    fn qwen_hooks_take_milliseconds_and_droid_claudes_shape() {
        let qwen: serde_json::Value = serde_json::from_str(&install(None, "qwen")).unwrap();
        assert_eq!(qwen["hooks"]["Stop"][0]["hooks"][0]["timeout"], 30_000);
        let droid: serde_json::Value = serde_json::from_str(&install(None, "droid")).unwrap();
        assert_eq!(droid["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"], 30);
        assert_eq!(
            droid["hooks"]["SessionStart"][0]["hooks"][0]["command"],
            "/opt/bin/pas-agent lifecycle droid session-start"
        );
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
            edit(Some(&installed), &by_key("claude").unwrap(), PROGRAM, false)
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
                &by_key("claude").unwrap(),
                PROGRAM,
                false
            )
            .is_err()
        );
    }

    /// A file the user had is given back byte for byte by install then remove: empty objects,
    /// CRLF, tabs, other hooks, comments. What the parsers lay out anew (a one-line object
    /// without spaces, `{ }`, an empty `hooks` table or list, no final newline in TOML) is
    /// given back by `integrate --remove` from its record of the file before, while the file
    /// is as `integrate` left it (tests/e2e/integrate.rs).
    #[test]
    fn install_then_remove_gives_back_every_byte() {
        let json = [
            "{}",
            "{}\n",
            "{\n  \"a\": 1\n}",
            "{\r\n  \"a\": 1\r\n}\r\n",
            "{\n\t\"a\": [1, 2],\n\t\"b\": {\"c\": null}\n}\n",
            "{\n  \"hooks\": {\n    \"PreToolUse\": [{\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"x\"}]}]\n  }\n}\n",
        ];
        let mut bad = Vec::new();
        for original in json {
            for key in ["claude", "gemini"] {
                let installed = install(Some(original), key);
                let back = remove(&installed, key);
                if back.as_deref() != Some(original) {
                    bad.push(format!("{key}: {original:?} -> {back:?}"));
                }
            }
        }
        let gemini = [
            "// settings\n{\n  /* theme */ \"ui\": {}\n}\n",
            "{} // end\n",
        ];
        for original in gemini {
            let installed = install(Some(original), "gemini");
            let back = remove(&installed, "gemini");
            if back.as_deref() != Some(original) {
                bad.push(format!("gemini: {original:?} -> {back:?}"));
            }
        }
        let toml = [
            "model = \"o3\"\n",
            "\n\n# just a comment\n",
            "[hooks.state]\n[hooks.state.\"/x:stop:0:0\"]\ntrusted_hash = \"sha256:1\"\n",
            "model = \"o3\"\r\n[tui]\r\nx = 1\r\n",
            "[[hooks.PreToolUse]]\nmatcher = \"Bash\"\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"x\"\n",
        ];
        for original in toml {
            let installed = install(Some(original), "codex");
            let back = remove(&installed, "codex");
            if back.as_deref() != Some(original) {
                bad.push(format!("codex: {original:?} -> {back:?}"));
            }
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
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
            let e = edit(Some(bad), &by_key("claude").unwrap(), PROGRAM, false);
            assert!(e.is_err(), "{bad}");
            let e = edit(Some(bad), &by_key("claude").unwrap(), PROGRAM, true);
            assert!(e.is_err(), "{bad}");
        }
    }

    #[test]
    fn json_moved_program_is_updated_in_place() {
        let installed = install(None, "claude");
        let moved = edit(
            Some(&installed),
            &by_key("claude").unwrap(),
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
            edit(Some(&installed), &by_key("codex").unwrap(), PROGRAM, false)
                .unwrap()
                .text,
            None
        );
        assert_eq!(remove(&installed, "codex").as_deref(), Some(original));
        let fresh = install(None, "codex");
        assert_eq!(remove(&fresh, "codex").as_deref(), Some(""));
    }

    /// Codex clamps a session-end timeout to 3 s and warns at every start about a larger one;
    /// its server runs SessionEnd at once only with `thread_unload_delay_secs = 0`.
    #[test]
    fn codex_gets_timeouts_it_honours_and_its_sessions_end_when_the_user_quits() {
        let installed = install(None, "codex");
        let v: toml_edit::DocumentMut = installed.parse().unwrap();
        assert_eq!(
            v["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"].as_integer(),
            Some(3)
        );
        assert_eq!(
            v["hooks"]["Stop"][0]["hooks"][0]["timeout"].as_integer(),
            Some(30)
        );
        assert_eq!(v["thread_unload_delay_secs"].as_integer(), Some(0));
        assert!(installed.starts_with("# pas-agent: "), "{installed}");
        // What an older pas-agent wrote (30 s everywhere) is brought in line.
        let old = installed
            .replace("timeout = 3\n", "timeout = 30\n")
            .replace("# pas-agent: run the SessionEnd hook when you quit, not a minute later\nthread_unload_delay_secs = 0\n", "");
        let again = install(Some(&old), "codex");
        assert_eq!(again, installed);
        // A delay the user set is theirs: kept, and left when the hooks go.
        let mine = "thread_unload_delay_secs = 10\n";
        let with_mine = install(Some(mine), "codex");
        assert!(with_mine.starts_with(mine), "{with_mine}");
        assert_eq!(with_mine.matches("thread_unload_delay_secs").count(), 1);
        assert_eq!(remove(&with_mine, "codex").as_deref(), Some(mine));
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
                edit(Some(bad), &by_key("codex").unwrap(), PROGRAM, false).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn json_refuses_a_key_twice_on_the_edited_path() {
        let ours = "{\"type\": \"command\", \"command\": \"pas-agent lifecycle claude stop\"}";
        for bad in [
            format!("{{\"hooks\": {{}}, \"model\": \"x\", \"hooks\": {{\"Stop\": [{{\"hooks\": [{ours}]}}]}}}}"),
            format!("{{\"hooks\": {{\"Stop\": [], \"Stop\": [{{\"hooks\": [{ours}]}}]}}}}"),
            format!("{{\"hooks\": {{\"Stop\": [{{\"hooks\": [], \"hooks\": [{ours}]}}]}}}}"),
            "{\"hooks\": {\"Stop\": [{\"hooks\": [{\"command\": \"a\", \"command\": \"pas-agent lifecycle claude stop\"}]}]}}".to_string(),
        ] {
            for remove in [false, true] {
                let e = edit(Some(&bad), &by_key("claude").unwrap(), PROGRAM, remove)
                    .expect_err(&bad);
                assert!(e.contains("more than once"), "{bad}: {e}");
            }
        }
        // A key twice elsewhere is not pas-agent's to judge.
        let elsewhere = "{\"ui\": {\"a\": 1, \"a\": 2}}\n";
        assert!(edit(Some(elsewhere), &by_key("gemini").unwrap(), PROGRAM, false).is_ok());
    }

    #[test]
    fn json_refuses_a_group_or_handler_of_another_shape() {
        for bad in [
            // `hooks` of a group as an object, not a list.
            "{\"hooks\": {\"Stop\": [{\"hooks\": {\"type\": \"command\", \"command\": \"pas-agent lifecycle claude stop\"}}]}}",
            "{\"hooks\": {\"Stop\": [3]}}",
            "{\"hooks\": {\"Stop\": [{\"matcher\": \"\"}]}}",
            "{\"hooks\": {\"Stop\": [{\"hooks\": [\"pas-agent lifecycle claude stop\"]}]}}",
            "{\"hooks\": {\"Stop\": [{\"hooks\": [{\"command\": [\"pas-agent\"]}]}]}}",
        ] {
            for remove in [false, true] {
                assert!(
                    edit(Some(bad), &by_key("claude").unwrap(), PROGRAM, remove).is_err(),
                    "{bad}"
                );
            }
        }
        // A handler without a command (a prompt hook) is understood and kept.
        let prompt =
            "{\"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"prompt\", \"prompt\": \"x\"}]}]}}";
        let installed = install(Some(prompt), "claude");
        let removed: serde_json::Value =
            serde_json::from_str(&remove(&installed, "claude").unwrap()).unwrap();
        assert_eq!(
            removed,
            serde_json::from_str::<serde_json::Value>(prompt).unwrap()
        );
    }

    #[test]
    fn toml_understands_handlers_as_an_inline_list_and_refuses_other_shapes() {
        let inline = "[[hooks.Stop]]\nhooks = [{ type = \"command\", command = \"notify-send done\" }, { type = \"command\", command = \"pas-agent lifecycle codex stop\" }]\n";
        let codex = &by_key("codex").unwrap();
        // Installing finds ours there: no second Stop handler.
        let installed = install(Some(inline), "codex");
        let v: toml_edit::DocumentMut = installed.parse().unwrap();
        assert_eq!(v["hooks"]["Stop"].as_array_of_tables().unwrap().len(), 1);
        assert!(installed.contains("command = \"/opt/bin/pas-agent lifecycle codex stop\""));
        // Removing takes it out, and the group it leaves empty.
        let removed = remove(inline, "codex").expect("ours is removed");
        let v: toml_edit::DocumentMut = removed.parse().unwrap();
        let handlers = v["hooks"]["Stop"][0]["hooks"].as_array().unwrap();
        assert_eq!(handlers.len(), 1);
        assert!(!removed.contains("lifecycle"), "{removed}");
        let alone = "[[hooks.Stop]]\nhooks = [{ type = \"command\", command = \"pas-agent lifecycle codex stop\" }]\n";
        assert_eq!(remove(alone, "codex").as_deref(), Some(""));
        assert_eq!(
            edit(Some(alone), codex, "pas-agent", false).unwrap().events,
            ["SessionStart", "SessionEnd", "thread_unload_delay_secs"]
        );
        for bad in [
            "[[hooks.Stop]]\nhooks = { type = \"command\", command = \"pas-agent lifecycle codex stop\" }\n",
            "[[hooks.Stop]]\nhooks = [\"pas-agent lifecycle codex stop\"]\n",
            "[[hooks.Stop]]\nmatcher = \"\"\n",
            "[[hooks.Stop]]\n[hooks.Stop.hooks]\ncommand = \"pas-agent lifecycle codex stop\"\n",
            "[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ncommand = 3\n",
        ] {
            for remove in [false, true] {
                assert!(edit(Some(bad), codex, PROGRAM, remove).is_err(), "{bad}");
            }
        }
    }
}
