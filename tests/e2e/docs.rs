//! The examples in README.md and docs/*.md are run: every ```console block is a sequence of
//! `$ command` lines, each followed by what it must print (stdout and stderr together). In expected output, `[..]`
//! stands for any text within a line, and a line that is only `[..]` for any number of lines.
//! Commands run with `sh -c` in a fresh git repository per document (one commit, `README.md`),
//! with the built `pas-agent` first on PATH, and must exit 0.

use std::path::{Path, PathBuf};

use crate::common::{Sandbox, stderr, stdout};

struct Step {
    command: String,
    expected: Vec<String>,
    line: usize,
}

fn console_steps(markdown: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut in_block = false;
    for (n, line) in markdown.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block && line.trim() == "```console";
            continue;
        }
        if !in_block {
            continue;
        }
        if let Some(cmd) = line.strip_prefix("$ ") {
            steps.push(Step {
                command: cmd.to_string(),
                expected: Vec::new(),
                line: n + 1,
            });
        } else if let Some(step) = steps.last_mut() {
            step.expected.push(line.to_string());
        }
    }
    steps
}

/// Whether `actual` matches `pattern`, where `[..]` matches any text.
fn line_matches(pattern: &str, actual: &str) -> bool {
    let parts: Vec<&str> = pattern.split("[..]").collect();
    if parts.len() == 1 {
        return pattern == actual;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !actual.starts_with(first) || !actual[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &actual[first.len()..actual.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

fn output_matches(expected: &[String], actual: &str) -> Result<(), String> {
    let lines: Vec<&str> = actual.lines().collect();
    let mut at = 0;
    let mut skipping = false;
    for want in expected {
        if want == "[..]" {
            skipping = true;
            continue;
        }
        loop {
            let Some(line) = lines.get(at) else {
                return Err(format!("expected {want:?}, output ended"));
            };
            at += 1;
            if line_matches(want, line) {
                break;
            }
            if !skipping {
                return Err(format!("expected {want:?}, got {line:?}"));
            }
        }
        skipping = false;
    }
    if !skipping && at < lines.len() {
        return Err(format!("unexpected extra output from {:?}", lines[at]));
    }
    Ok(())
}

fn run_document(path: &Path) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    let steps = console_steps(&text);
    let sb = Sandbox::repo();
    let bin_dir: PathBuf = crate::common::bin().parent().unwrap().to_path_buf();
    for step in &steps {
        let cmd = sb.git_cmd();
        let path_var = format!(
            "{}:{}",
            bin_dir.display(),
            cmd.get_envs()
                .find(|(k, _)| *k == "PATH")
                .and_then(|(_, v)| v)
                .map(|v| v.to_string_lossy().into_owned())
                .unwrap_or_default()
        );
        let mut sh = std::process::Command::new("sh");
        // What a person sees: stdout and stderr together.
        sh.arg("-c")
            .arg(format!("exec 2>&1\n{}", step.command))
            .current_dir(&sb.work);
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => sh.env(k, v),
                None => sh.env_remove(k),
            };
        }
        sh.env("PATH", path_var).stdin(std::process::Stdio::null());
        let out = sh.output().unwrap();
        let where_ = format!("{}:{}: $ {}", path.display(), step.line, step.command);
        assert!(
            out.status.success(),
            "{where_}\nexit {:?}\nstdout:\n{}\nstderr:\n{}",
            out.status,
            stdout(&out),
            stderr(&out)
        );
        if let Err(e) = output_matches(&step.expected, &stdout(&out)) {
            panic!("{where_}\n{e}\nstdout was:\n{}", stdout(&out));
        }
    }
    steps.len()
}

fn documents() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs = vec![root.join("README.md")];
    let mut more: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    more.sort();
    docs.extend(more);
    docs
}

#[test]
fn examples_in_the_documentation_run() {
    let mut total = 0;
    for doc in documents() {
        total += run_document(&doc);
    }
    assert!(
        total >= 8,
        "the tour and the reference have examples ({total} found)"
    );
}

#[test]
fn the_matcher_rejects_what_it_should() {
    assert!(line_matches("a [..] c", "a b c"));
    assert!(!line_matches("a [..] c", "a b d"));
    assert!(output_matches(&["x".into(), "[..]".into(), "z".into()], "x\ny\ny\nz\n").is_ok());
    assert!(output_matches(&["x".into()], "x\ny\n").is_err());
    assert!(output_matches(&["x".into(), "z".into()], "x\ny\nz\n").is_err());
}
