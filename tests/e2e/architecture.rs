//! The tree as docs/architecture.md draws it: the imports between modules form no circle (at
//! the top level, and between the files of one module), and no code outside `src/agents/`
//! matches on an agent's name. Read from the source files themselves.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::common::walk;

/// Every `.rs` file under `src/` but `main.rs`, by module path (`launch::pty`), with its text
/// up to its unit tests and without comment lines.
fn modules() -> BTreeMap<String, String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    for path in walk(&src) {
        if path.extension().is_none_or(|e| e != "rs") || path.ends_with("main.rs") {
            continue;
        }
        let rel: PathBuf = path.strip_prefix(&src).unwrap().with_extension("");
        let mut parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
            parts.pop();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap();
        let code: String = code
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .map(|l| format!("{l}\n"))
            .collect();
        out.insert(parts.join("::"), code);
    }
    out
}

/// The module paths a file names: `crate::a::b`, `super::a`, and the items of
/// `use crate::{a, b::c}` and `use super::{a, b}`, resolved against `me`.
fn named(me: &str, code: &str) -> Vec<String> {
    let parent: Vec<&str> = {
        let mut p: Vec<&str> = me.split("::").collect();
        p.pop();
        p
    };
    let mut out = Vec::new();
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    for (prefix, base) in [("crate::", Vec::new()), ("super::", parent.clone())] {
        let mut rest = code;
        while let Some(i) = rest.find(prefix) {
            let before = rest[..i].chars().last();
            rest = &rest[i + prefix.len()..];
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            let mut paths = Vec::new();
            if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                paths.extend(group[..end].split(',').map(|s| s.trim().to_string()));
            } else {
                paths.push(rest.chars().take_while(|c| word(*c)).collect::<String>());
            }
            for p in paths {
                let mut full: Vec<String> = base.iter().map(|s| s.to_string()).collect();
                full.extend(
                    p.split("::")
                        .filter(|s| !s.is_empty() && *s != "self")
                        .map(str::to_string),
                );
                out.push(full.join("::"));
            }
        }
    }
    out
}

/// The longest prefix of `path` that is a module.
fn resolve(path: &str, modules: &BTreeSet<String>) -> Option<String> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len())
        .rev()
        .map(|k| parts[..k].join("::"))
        .find(|p| modules.contains(p))
}

/// A circle in `edges`, if there is one.
fn circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            match state.get(m.as_str()).copied().unwrap_or(0) {
                1 => {
                    let at = stack.iter().position(|s| s == m).unwrap();
                    let mut c = stack[at..].to_vec();
                    c.push(m.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(m, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in edges.keys() {
        if !state.contains_key(n.as_str()) {
            let mut stack = Vec::new();
            if let Some(c) = visit(n, edges, &mut state, &mut stack) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn no_import_circle_between_modules_nor_between_the_files_of_one() {
    let modules = modules();
    let names: BTreeSet<String> = modules.keys().cloned().collect();
    let mut top: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut inner: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (me, code) in &modules {
        for path in named(me, code) {
            let Some(target) = resolve(&path, &names) else {
                continue;
            };
            // A module's use of its own parent (`super::Item` re-exported there) is not an
            // arrow between siblings.
            if target == *me || me.starts_with(&format!("{target}::")) || target.is_empty() {
                continue;
            }
            let (a, b) = (me.split("::").next(), target.split("::").next());
            if a != b {
                top.entry(a.unwrap().to_string())
                    .or_default()
                    .insert(b.unwrap().to_string());
            } else if me.contains("::") && target.contains("::") {
                inner.entry(me.clone()).or_default().insert(target);
            }
        }
    }
    assert!(top.len() > 10, "the module graph was read: {top:?}");
    assert!(
        top["cmd"].contains("launch") && top["launch"].contains("agents"),
        "{top:?}"
    );
    assert_eq!(circle(&top), None, "a circle between top-level modules");
    assert_eq!(
        circle(&inner),
        None,
        "a circle between the files of a module"
    );
}

#[test]
fn only_the_agent_modules_match_on_an_agent_name() {
    let modules = modules();
    let mut names: BTreeSet<String> = BTreeSet::new();
    let out = crate::common::Sandbox::plain().run(&["export", "--to", "no-such-agent"]);
    let error = String::from_utf8_lossy(&out.stderr).into_owned();
    // The possible values of `export --to`: every agent's id, alias and executable.
    let values = error
        .split("possible values:")
        .nth(1)
        .expect("`export --to` lists the agents it accepts");
    for word in values.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')) {
        if word.len() > 1 {
            names.insert(word.to_string());
        }
    }
    assert!(
        names.contains("claude") && names.contains("codex"),
        "{names:?}"
    );
    let mut found = Vec::new();
    for (me, code) in &modules {
        if me.starts_with("agents") {
            continue;
        }
        for line in code.lines() {
            let t = line.trim();
            for n in &names {
                let quoted = format!("\"{n}\"");
                if let Some(i) = t.find(&quoted) {
                    let after = t[i + quoted.len()..].trim_start();
                    if after.starts_with("=>") || after.starts_with('|') || t.starts_with('|') {
                        found.push(format!("{me}: {t}"));
                    }
                }
            }
        }
    }
    assert!(found.is_empty(), "matches on an agent's name: {found:#?}");
}
