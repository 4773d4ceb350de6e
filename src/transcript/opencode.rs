//! OpenCode's session, read through its own `opencode export <session id>` (OpenCode 1.x keeps
//! sessions in an SQLite database, `~/.local/share/opencode/opencode.db`, whose tables are not
//! a public interface; the export is) ([OC-cli]; checked with opencode 1.18.33 `run` and
//! `run --session`, against the mock model).
//!
//! The export is one JSON object on stdout: `{"info":{…},"messages":[{"info":{"role":"user"|
//! "assistant","time":{"created":<ms>},"modelID","tokens":{"input","output","cache":{"read",
//! "write"}}},"parts":[{"type":"text","text"}…]}…]}`. Messages created after `since` are read:
//! a user message's text parts are a prompt, an assistant message's text parts an answer (with
//! its model and tokens). The command runs in the run's directory with at most
//! [`EXPORT_TIMEOUT`], and at most [`crate::limits::TRANSCRIPT`] bytes of its output are read.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{Collector, Transcript, text_of};

/// How long `opencode export` may take (it starts OpenCode's whole runtime: seconds).
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(30);

/// The words of session `id` after `since`. `hint` is not used: OpenCode has no session file.
pub fn read(id: &str, cwd: &Path, since: DateTime<Utc>, _hint: Option<&Path>) -> Transcript {
    if !id.starts_with("ses_") || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Transcript::missing(format!("{id} is not an OpenCode session id"));
    }
    let Ok(program) = which::which("opencode") else {
        return Transcript::missing(
            "opencode is not on PATH, so its session could not be exported",
        );
    };
    let text = match export(&program, id, cwd) {
        Ok(t) => t,
        Err(why) => return Transcript::missing(why),
    };
    let start = text.find('{').unwrap_or(0);
    let Ok(v) = serde_json::from_str::<Value>(&text[start..]) else {
        return Transcript::missing(format!(
            "`opencode export {id}` printed no session this version can read"
        ));
    };
    let Some(messages) = v["messages"].as_array() else {
        return Transcript::missing(format!(
            "`opencode export {id}` printed a layout this version does not know (no messages)"
        ));
    };
    let mut c = Collector::default();
    for m in messages {
        let info = &m["info"];
        let created = info["time"]["created"]
            .as_i64()
            .and_then(DateTime::<Utc>::from_timestamp_millis);
        if created.is_none_or(|t| t < since) {
            continue;
        }
        let text = text_of(&m["parts"], &["text"]);
        match info["role"].as_str().unwrap_or_default() {
            "user" => c.prompt(&text),
            "assistant" => {
                if let Some(model) = info["modelID"].as_str() {
                    c.model(model);
                }
                let t = &info["tokens"];
                if t.is_object() {
                    c.tokens(
                        t["input"].as_u64(),
                        t["output"].as_u64(),
                        t["cache"]["read"].as_u64(),
                        t["cache"]["write"].as_u64(),
                    );
                }
                c.answer(&text);
            }
            _ => {}
        }
    }
    c.finish(Path::new(&format!("opencode export {id}")))
}

/// Runs `opencode export <id>` in `cwd`: its stdout, or why not.
fn export(program: &Path, id: &str, cwd: &Path) -> Result<String, String> {
    let mut child = std::process::Command::new(program)
        .args(["export", id])
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("`opencode export` could not be started: {e}"))?;
    let stdout = child.stdout.take();
    let limit = crate::limits::TRANSCRIPT.bytes;
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        if let Some(mut s) = stdout {
            let _ = (&mut s).take(limit + 1).read_to_end(&mut out);
            // Past the limit, the rest is drained unread, so that a huge export ends at pipe
            // speed (and is reported as too large) rather than blocking until the timeout.
            let _ = std::io::copy(&mut s, &mut std::io::sink());
        }
        out
    });
    let deadline = std::time::Instant::now() + EXPORT_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "`opencode export {id}` did not finish within {} s",
                    EXPORT_TIMEOUT.as_secs()
                ));
            }
        }
    };
    let out = reader.join().unwrap_or_default();
    if out.len() as u64 > limit {
        return Err(format!(
            "`opencode export {id}` printed more than {} ({} bytes) an agent transcript may hold",
            crate::limits::human(limit),
            limit
        ));
    }
    if !status.success() {
        return Err(format!("`opencode export {id}` failed ({status})"));
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}
