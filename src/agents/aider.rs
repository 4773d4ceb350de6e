//! Aider (`aider`, PyPI `aider-chat`): what pas-agent knows about it.
//!
//! - **Context**: aider loads no instruction file by itself; the convention is `--read <file>`
//!   (aider.chat/docs/usage/conventions.html; ruler, github.com/intellectronica/ruler, writes
//!   AGENTS.md and adds it to `read:`), so the launcher adds `--read AGENTS.md` (a file of
//!   the run's own when `AGENTS.md` is tracked by git). Started otherwise, it does not read
//!   AGENTS.md (checked: aider 0.86.2 against a mock model, the task text not in the request)
//!   unless `read: AGENTS.md` is in its `.aider.conf.yml`.
//! - **Launch**: no sessions with ids: aider appends each chat to the repository's
//!   `.aider.chat.history.md`, and `--restore-chat-history` sends that whole history again
//!   (aider.chat/docs/config/options.html; checked: aider 0.86.2, the earlier turns in the
//!   model's request). pas-agent names a chat by the local time in its heading, `# aider chat
//!   started at 2026-12-01 15:43:06` → `20261201_154306`, and resumes with
//!   `--restore-chat-history`, the best aider allows: the latest chats, not one chosen by id.
//! - **Transcript**: the chat's section of `.aider.chat.history.md` (at the git root, else the
//!   working directory): `#### ` lines are the prompt as typed, `> ` lines aider's own notes
//!   (`> Main model: <model> with …`, or `> Model: …` for a model aider has no settings for,
//!   `> Tokens: 2.4k sent, 7 received.`, `> Applied edit to <file>`), and the rest the model's
//!   answer (checked: aider 0.86.2 against a mock model).
//! - **Hooks, MCP**: none (`aider --help`: only `--notifications-command`).

use std::path::{Path, PathBuf};

use chrono::{DateTime, Local, NaiveDateTime, TimeZone, Utc};

use super::store::{Candidate, Query, Store};
use super::words::{Collector, read_file};
use super::{Agent, BASE, IdShape, Resume, SessionId, Straight};
use crate::model::Transcript;

/// Aider's row.
pub const AGENT: Agent = Agent {
    id: "aider",
    name: "Aider",
    executables: &["aider"],
    context_file: "AGENTS.md",
    context_args: &["--read", "{context}"],
    resume: Some(Resume {
        args: &["--restore-chat-history"],
        subcommands: &[],
        after_subcommand: &[],
    }),
    session_id: SessionId::Discover,
    id_shape: IdShape::DateSerial,
    straight: Straight {
        subcommands: &[],
        // checked: aider 0.86.2 `--help`: these print and exit (`--upgrade` installs).
        flags: &[
            "--version",
            "-h",
            "--help",
            "--list-models",
            "--models",
            "--just-check-update",
            "--upgrade",
            "--update",
            "--install-main-branch",
            "--show-repo-map",
            "--show-prompts",
            "--exit",
        ],
    },
    store: Some(&History),
    ..BASE
};

/// The chat history's file name.
const FILE: &str = ".aider.chat.history.md";
/// What a chat's heading starts with.
const HEADING: &str = "# aider chat started at ";

/// `.aider.chat.history.md` as a store.
struct History;

/// The history file for `cwd`: in the nearest directory up from it that has one of its own or
/// is a git work tree's top.
fn history_file(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .find(|d| d.join(FILE).is_file() || d.join(".git").exists())
        .map(|d| d.join(FILE))
        .filter(|p| p.is_file())
}

/// A chat heading's id and start (local time), from the heading line.
fn heading(line: &str) -> Option<(String, DateTime<Utc>)> {
    let when = line.strip_prefix(HEADING)?.trim();
    let naive = NaiveDateTime::parse_from_str(when, "%Y-%m-%d %H:%M:%S").ok()?;
    let at = Local
        .from_local_datetime(&naive)
        .earliest()?
        .with_timezone(&Utc);
    Some((naive.format("%Y%m%d_%H%M%S").to_string(), at))
}

impl Store for History {
    fn dir(&self) -> Option<PathBuf> {
        None
    }

    fn sessions(&self, q: &Query<'_>) -> Vec<Candidate> {
        let Some(path) = history_file(q.cwd) else {
            return Vec::new();
        };
        let Ok(text) = read_file(&path) else {
            return Vec::new();
        };
        text.lines()
            .filter_map(heading)
            // Whole seconds: the heading's start may be up to a second before the run's.
            .filter(|(_, at)| q.inside(*at) || q.inside(*at + chrono::Duration::seconds(1)))
            .map(|(id, at)| Candidate {
                id,
                at,
                file: Some(path.clone()),
            })
            .collect()
    }

    fn transcript(
        &self,
        id: &str,
        cwd: &Path,
        _since: DateTime<Utc>,
        hint: Option<&Path>,
    ) -> Transcript {
        let Some(path) = hint
            .filter(|h| h.is_file())
            .map(Path::to_path_buf)
            .or_else(|| history_file(cwd))
        else {
            return Transcript::missing(format!("no {FILE} was found for {}", cwd.display()));
        };
        match read_file(&path) {
            Ok(text) => match parse(&text, id) {
                Some(c) => c.finish(&path),
                None => Transcript::missing(format!(
                    "{} has no chat started at the time {id} names",
                    path.display()
                )),
            },
            Err(why) => Transcript::missing(why),
        }
    }
}

/// A count as aider prints it: `7`, `2.4k`, `1.1M`.
fn count(word: &str) -> Option<u64> {
    let (number, scale) = match word.strip_suffix('k') {
        Some(n) => (n, 1e3),
        None => match word.strip_suffix('M') {
            Some(n) => (n, 1e6),
            None => (word, 1.0),
        },
    };
    let n: f64 = number.replace(',', "").parse().ok()?;
    (n >= 0.0 && n.is_finite()).then(|| (n * scale).round() as u64)
}

/// The words of chat `id` in the history `text`, `None` when it has no such chat.
pub(crate) fn parse(text: &str, id: &str) -> Option<Collector> {
    let mut c = Collector::default();
    let mut inside = false;
    let mut found = false;
    let mut prompt: Vec<&str> = Vec::new();
    let mut answer: Vec<&str> = Vec::new();
    let flush = |prompt: &mut Vec<&str>, c: &mut Collector| {
        if !prompt.is_empty() {
            c.prompt(&prompt.join("\n"));
            prompt.clear();
        }
    };
    for line in text.lines() {
        if let Some((this, _)) = heading(line) {
            if inside {
                break;
            }
            inside = this == id;
            found |= inside;
            continue;
        }
        if !inside {
            continue;
        }
        if let Some(p) = line.strip_prefix("#### ") {
            if !answer.is_empty() {
                c.answer(&answer.join("\n"));
                answer.clear();
            }
            prompt.push(p.trim_end());
            continue;
        }
        flush(&mut prompt, &mut c);
        if let Some(note) = line.strip_prefix("> ") {
            let note = note.trim_end();
            if let Some(model) = note
                .strip_prefix("Main model: ")
                .or_else(|| note.strip_prefix("Model: "))
            {
                c.model(model.split(" with ").next().unwrap_or(model));
            } else if let Some(file) = note.strip_prefix("Applied edit to ") {
                c.edited(file);
            } else if let Some(rest) = note.strip_prefix("Tokens: ") {
                let words: Vec<&str> = rest
                    .split_whitespace()
                    .map(|w| w.trim_end_matches([',', '.']))
                    .collect();
                let before = |label: &str| {
                    words
                        .iter()
                        .position(|w| *w == label)
                        .and_then(|i| i.checked_sub(1))
                        .and_then(|i| count(words[i]))
                };
                c.tokens(before("sent"), before("received"), None, None);
            }
            continue;
        }
        if line.trim() == ">" {
            continue;
        }
        answer.push(line);
    }
    flush(&mut prompt, &mut c);
    if !answer.is_empty() {
        c.answer(&answer.join("\n"));
    }
    found.then_some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HISTORY: &str = include_str!("../../tests/fixtures/agents/aider/chat.history.md");

    #[test]
    fn each_chat_is_read_on_its_own() {
        let t = parse(HISTORY, "20261201_154306")
            .unwrap()
            .finish(Path::new("/h.md"));
        assert_eq!(t.prompts, ["hello AIDER1"]);
        assert_eq!(t.last_answer.as_deref(), Some("MOCK-ANSWER-7"));
        assert_eq!(t.model.as_deref(), Some("openai/gpt-4.1"));
        let tokens = t.tokens.unwrap();
        assert_eq!((tokens.input, tokens.output), (Some(2400), Some(7)));
        // A restored chat: its own prompt only, though the model got the earlier ones.
        let t = parse(HISTORY, "20261201_154413")
            .unwrap()
            .finish(Path::new("/h.md"));
        assert_eq!(t.prompts, ["third AIDER3 restored"]);
        assert_eq!(t.last_answer.as_deref(), Some("MOCK-ANSWER-13"));
        assert!(parse(HISTORY, "20991231_000000").is_none());
    }

    #[test]
    fn headings_name_chats_by_their_local_start() {
        let (id, _) = heading("# aider chat started at 2026-12-01 15:43:06").unwrap();
        assert_eq!(id, "20261201_154306");
        assert!(AGENT.id_shape.accepts(&id));
        assert!(heading("# aider chat started at soon").is_none());
        assert_eq!(count("2.4k"), Some(2400));
        assert_eq!(count("1,234"), Some(1234));
        assert_eq!(count("x"), None);
    }
}
