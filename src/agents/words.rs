//! Reading what an agent said during one run from its own session store: the pieces every
//! agent module's transcript reader shares. [`Collector`] gathers the user's prompts, the
//! agent's last answer, the model and token counts while a reader walks the store's entries,
//! and bounds them: every text is cut to a bounded length ([`MAX_PROMPT_CHARS`],
//! [`MAX_ANSWER_CHARS`]) and at most [`MAX_PROMPTS`] prompts are kept, so a run record stays
//! small whatever the agent wrote. The text is kept as the agent wrote it (control characters
//! included): readers clean it for the terminal and escape it for Markdown like every other
//! string read from a file.
//!
//! The entry point is [`crate::agents::Agent::transcript`]: it never fails and never panics;
//! a store that is missing, damaged, larger than [`crate::limits::TRANSCRIPT`], or in a layout
//! this version does not know gives a [`Transcript`] whose `missing` says why. Only the part of
//! the conversation after `since` is taken, so a resumed session (whose file holds the earlier
//! turns too) records only this run's turns.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use crate::model::Extra;
pub use crate::model::{
    CommandRun, MAX_ANSWER_CHARS, MAX_COMMAND_CHARS, MAX_COMMANDS, MAX_EDITS, MAX_PROMPT_CHARS,
    MAX_PROMPTS, Tokens, Transcript,
};

/// The session file a transcript is read from, and its text ([`read_file`]): `hint` (the path
/// the agent's hook payload named) when it is a file, else what `find` finds in the store
/// directory `dir` (`None` without a home). `Err` says why not, for [`Transcript::missing`]: no
/// `what` (`"pi session <id>"`) was found under `dir` (`default` when there is none), or the
/// file could not be read.
pub(crate) fn session_file(
    hint: Option<&Path>,
    dir: Option<PathBuf>,
    find: impl FnOnce(&Path) -> Option<PathBuf>,
    what: &str,
    default: &str,
) -> Result<(PathBuf, String), String> {
    let path = match hint.filter(|h| h.is_file()) {
        Some(h) => h.to_path_buf(),
        None => match dir.as_deref().and_then(find) {
            Some(p) => p,
            None => {
                let under = dir.map_or_else(|| default.to_string(), |d| d.display().to_string());
                return Err(format!("no {what} was found under {under}"));
            }
        },
    };
    let text = read_file(&path)?;
    Ok((path, text))
}

/// A file read whole, at most [`crate::limits::TRANSCRIPT`] bytes: its text, or why not.
pub(crate) fn read_file(path: &Path) -> Result<String, String> {
    let limit = crate::limits::TRANSCRIPT;
    match crate::fsutil::read_limited(path, limit.bytes) {
        Ok(Some(bytes)) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Ok(None) => Err(format!("{} does not exist", path.display())),
        Err(crate::fsutil::ReadError::TooLarge(size)) => Err(format!(
            "{} is not read: {}",
            path.display(),
            limit.read_refusal(size)
        )),
        Err(e) => Err(format!("{} could not be read: {e}", path.display())),
    }
}

/// Why several files of one session, `size` bytes in all, are not read.
pub(crate) fn together(limit: crate::limits::Limit, size: u64) -> String {
    format!(
        "together they are more than {size} bytes, larger than the {} ({} bytes) an {} may hold",
        crate::limits::human(limit.bytes),
        limit.bytes,
        limit.what
    )
}

/// `text` cut to at most `max` characters (an ellipsis ends a cut one) and whether it was cut.
/// Surrounding whitespace is trimmed first.
pub(crate) fn cut(text: &str, max: usize) -> (String, bool) {
    let text = text.trim();
    match text.char_indices().nth(max) {
        None => (text.to_string(), false),
        Some((end, _)) => {
            let keep: String = text[..end]
                .char_indices()
                .nth(max.saturating_sub(1))
                .map_or(&text[..end], |(i, _)| &text[..i])
                .to_string();
            (format!("{}…", keep.trim_end()), true)
        }
    }
}

/// Collects a run's words while a store reader walks its entries in order.
#[derive(Debug, Default)]
pub(crate) struct Collector {
    /// The first prompt, kept whatever follows.
    first: Option<String>,
    /// The latest prompts after the first, at most [`MAX_PROMPTS`] - 1.
    latest: std::collections::VecDeque<String>,
    total: usize,
    answer: Option<String>,
    model: Option<String>,
    tokens: Tokens,
    /// The latest error the agent showed in place of an answer (Claude Code's "Not logged in"
    /// or an API failure), when no answer came after it.
    error: Option<String>,
    /// Files the agent's tools wrote, each once, in the order first written.
    edits: Vec<String>,
    edits_total: usize,
    /// The latest commands the agent's tools ran, each with the id of its tool call when the
    /// exit code comes later ([`Collector::exited`]).
    commands: std::collections::VecDeque<(Option<String>, CommandRun)>,
    commands_total: usize,
    /// Lines or entries that could not be read.
    pub damaged: usize,
}

impl Collector {
    /// A prompt the user gave; blank ones are skipped.
    pub fn prompt(&mut self, text: &str) {
        if text.trim().is_empty() {
            return;
        }
        let (text, _) = cut(text, MAX_PROMPT_CHARS);
        self.total += 1;
        if self.first.is_none() {
            self.first = Some(text);
            return;
        }
        if self.latest.len() == MAX_PROMPTS - 1 {
            self.latest.pop_front();
        }
        self.latest.push_back(text);
    }

    /// An answer of the agent's (the latest one wins); blank ones are skipped. Only the first
    /// [`MAX_ANSWER_CHARS`] * 4 bytes are kept until [`Collector::finish`] cuts it.
    pub fn answer(&mut self, text: &str) {
        if text.trim().is_empty() {
            return;
        }
        let mut end = text.len().min(MAX_ANSWER_CHARS * 4 + 4);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        self.answer = Some(text[..end].to_string());
        self.error = None;
    }

    /// An error the agent showed where an answer would be (not the model's words): kept as
    /// why the answer is missing, never as the answer.
    pub fn error(&mut self, text: &str) {
        if !text.trim().is_empty() {
            self.error = Some(cut(text, 300).0);
        }
    }

    /// A file one of the agent's tools wrote (created, edited, patched, deleted), as the tool
    /// named it.
    pub fn edited(&mut self, path: &str) {
        let shown = cut(path, MAX_COMMAND_CHARS).0;
        if shown.is_empty() || self.edits.contains(&shown) {
            return;
        }
        self.edits_total += 1;
        if self.edits.len() < MAX_EDITS {
            self.edits.push(shown);
        }
    }

    /// A shell command one of the agent's tools ran, with its exit code when known.
    pub fn ran(&mut self, command: &str, exit_code: Option<i64>) {
        self.ran_call(None, command, exit_code);
    }

    /// A shell command run by the tool call `id`, whose exit code a later entry gives
    /// ([`Collector::exited`]).
    pub fn ran_as(&mut self, id: &str, command: &str) {
        self.ran_call(Some(id.to_string()), command, None);
    }

    /// The exit code of the command the tool call `id` ran, when it is still kept.
    pub fn exited(&mut self, id: &str, exit_code: Option<i64>) {
        if let Some((_, c)) = self
            .commands
            .iter_mut()
            .rev()
            .find(|(call, _)| call.as_deref() == Some(id))
        {
            c.exit_code = exit_code;
        }
    }

    fn ran_call(&mut self, id: Option<String>, command: &str, exit_code: Option<i64>) {
        if command.trim().is_empty() {
            return;
        }
        self.commands_total += 1;
        if self.commands.len() == MAX_COMMANDS {
            self.commands.pop_front();
        }
        self.commands.push_back((
            id,
            CommandRun {
                command: cut(command, MAX_COMMAND_CHARS).0,
                exit_code,
                extra: Extra::new(),
            },
        ));
    }

    /// The model named by an entry of the run.
    pub fn model(&mut self, name: &str) {
        if !name.trim().is_empty() {
            let (name, _) = cut(name, 200);
            self.model = Some(name);
        }
    }

    /// The model the session was set to before the run's first entry, kept only when no entry
    /// of the run names one (an agent may write a turn's settings a moment before the run's
    /// start is noted).
    pub fn model_before(&mut self, name: &str) {
        if self.model.is_none() {
            self.model(name);
        }
    }

    /// Adds token counts of one model call.
    pub fn tokens(
        &mut self,
        input: Option<u64>,
        output: Option<u64>,
        cache_read: Option<u64>,
        cache_write: Option<u64>,
    ) {
        fn add(sum: &mut Option<u64>, n: Option<u64>) {
            if let Some(n) = n {
                *sum = Some(sum.unwrap_or(0).saturating_add(n));
            }
        }
        add(&mut self.tokens.input, input);
        add(&mut self.tokens.output, output);
        add(&mut self.tokens.cache_read, cache_read);
        add(&mut self.tokens.cache_write, cache_write);
    }

    /// The transcript read from `source`. A run with no words says so in `missing`, and
    /// unreadable entries are counted there too.
    pub fn finish(self, source: &Path) -> Transcript {
        let (answer, answer_truncated) = match &self.answer {
            Some(a) => {
                let (a, cut) = cut(a, MAX_ANSWER_CHARS);
                (Some(a), cut)
            }
            None => (None, false),
        };
        let mut prompts: Vec<String> = self.first.into_iter().collect();
        prompts.extend(self.latest);
        let tokens = (self.tokens != Tokens::default()).then_some(self.tokens);
        let mut t = Transcript {
            source: Some(source.to_string_lossy().into_owned()),
            prompts_omitted: self.total.saturating_sub(prompts.len()),
            prompts,
            last_answer: answer,
            answer_truncated,
            model: self.model,
            tokens,
            edits_omitted: self.edits_total.saturating_sub(self.edits.len()),
            edits: self.edits,
            commands_omitted: self.commands_total.saturating_sub(self.commands.len()),
            commands: self.commands.into_iter().map(|(_, c)| c).collect(),
            missing: None,
            extra: Extra::new(),
        };
        let damaged = match self.damaged {
            0 => None,
            n => Some(format!(
                "{n} entr{} of {} could not be read",
                if n == 1 { "y" } else { "ies" },
                source.display()
            )),
        };
        let damaged = match (self.error, damaged) {
            (Some(e), Some(d)) => Some(format!(
                "the agent ended with an error of its own: {e} ({d})"
            )),
            (Some(e), None) => Some(format!("the agent ended with an error of its own: {e}")),
            (None, d) => d,
        };
        if !t.has_words() {
            let why = crate::model::NO_WORDS;
            t.missing = Some(match damaged {
                Some(d) => format!("{why} ({d})"),
                None => why.to_string(),
            });
        } else {
            t.missing = damaged;
        }
        t
    }
}

/// Puts `message`, the agent's last message as its end-of-turn hook reported it, in place of the
/// answer read from its transcript when the transcript was read and they differ. A hook fires
/// when the turn ends, which can be before the agent has written that turn to its transcript,
/// so the hook's message is the newer.
pub fn hook_answer(t: &mut Transcript, message: &str) {
    if t.source.is_none() || message.trim().is_empty() {
        return;
    }
    let (answer, truncated) = cut(message, MAX_ANSWER_CHARS);
    if t.last_answer.as_deref() != Some(answer.as_str()) {
        t.last_answer = Some(answer);
        t.answer_truncated = truncated;
        if t.has_words()
            && t.missing
                .as_deref()
                .is_some_and(|m| m.starts_with(crate::model::NO_WORDS))
        {
            t.missing = None;
        }
    }
}

/// Walks a JSON-lines text: each line parsed on its own, a line that is not JSON counted as
/// damaged (a last line cut short by an agent still writing included).
pub(crate) fn json_lines(
    text: &str,
    c: &mut Collector,
    mut each: impl FnMut(&serde_json::Value, &mut Collector),
) {
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<serde_json::Value>(line) {
            Ok(v) => each(&v, c),
            Err(_) => c.damaged += 1,
        }
    }
}

/// An RFC 3339 time in a JSON value.
pub(crate) fn time_of(v: &serde_json::Value) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(v.as_str()?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The text of a list of content parts: the `text` of each part whose `type` is one of
/// `kinds` (or every part with a `text` when `kinds` is empty), joined by blank lines. A plain
/// string is its own text.
pub(crate) fn text_of(content: &serde_json::Value, kinds: &[&str]) -> String {
    match content {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(parts) => parts
            .iter()
            .filter(|p| kinds.is_empty() || p["type"].as_str().is_some_and(|t| kinds.contains(&t)))
            .filter_map(|p| p["text"].as_str())
            .filter(|t| !t.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n\n"),
        _ => String::new(),
    }
}

/// The exit code in a tool's output: the integer right after the last `label` (`Exit Code:`,
/// `exited with code`), `None` when there is none there (`Exit Code: (none)`).
pub(crate) fn exit_code_after(output: &str, label: &str) -> Option<i64> {
    let (_, rest) = output.rsplit_once(label)?;
    let rest = rest.trim_start();
    let end = rest
        .char_indices()
        .find(|&(i, ch)| !(ch.is_ascii_digit() || (i == 0 && ch == '-')))
        .map_or(rest.len(), |(i, _)| i);
    rest[..end].parse().ok()
}

/// The first of `paths` that is a file.
pub(crate) fn first_file(paths: impl IntoIterator<Item = PathBuf>) -> Option<PathBuf> {
    paths.into_iter().find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_read_after_their_label() {
        let out = "Output: x\nError: (none)\nExit Code: 2\nSignal: 0";
        assert_eq!(exit_code_after(out, "Exit Code:"), Some(2));
        assert_eq!(exit_code_after("Exit Code: (none)", "Exit Code:"), None);
        assert_eq!(exit_code_after("no code", "Exit Code:"), None);
        assert_eq!(
            exit_code_after("[Process exited with code 127]", "exited with code"),
            Some(127)
        );
    }

    #[test]
    fn cut_keeps_short_text_and_marks_a_cut() {
        assert_eq!(cut("  hello  ", 10), ("hello".to_string(), false));
        assert_eq!(cut("hello world", 5), ("hell…".to_string(), true));
        assert_eq!(cut("ééééé", 5), ("ééééé".to_string(), false));
        assert_eq!(cut("éééééé", 5).0.chars().count(), 5);
    }

    #[test]
    fn prompts_keep_the_first_and_the_latest() {
        let mut c = Collector::default();
        for i in 0..20 {
            c.prompt(&format!("p{i}"));
        }
        c.prompt("   ");
        let t = c.finish(Path::new("/x"));
        assert_eq!(t.prompts.len(), MAX_PROMPTS);
        assert_eq!(t.prompts[0], "p0");
        assert_eq!(t.prompts[MAX_PROMPTS - 1], "p19");
        assert_eq!(t.prompts_omitted, 20 - MAX_PROMPTS);
        assert!(t.missing.is_none());
    }

    #[test]
    fn a_huge_answer_and_long_prompts_are_cut() {
        let mut c = Collector::default();
        c.prompt(&"p".repeat(100_000));
        c.answer(&"é".repeat(1_000_000));
        let t = c.finish(Path::new("/x"));
        assert_eq!(t.prompts[0].chars().count(), MAX_PROMPT_CHARS);
        assert!(t.prompts[0].ends_with('…'));
        let answer = t.last_answer.unwrap();
        assert_eq!(answer.chars().count(), MAX_ANSWER_CHARS);
        assert!(t.answer_truncated);
    }

    #[test]
    fn a_file_that_is_not_a_readable_transcript_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_file(dir.path()).unwrap_err();
        assert!(err.contains("directory"), "{err}");
        let err = read_file(&dir.path().join("none.jsonl")).unwrap_err();
        assert!(err.contains("does not exist"), "{err}");
        // Bytes that are not UTF-8 are read, replaced, and the line still counts.
        let f = dir.path().join("t.jsonl");
        std::fs::write(&f, b"{\"type\":\"user\",\"timestamp\":\"2026-01-02T00:00:00Z\",\"message\":{\"content\":\"caf\xe9\"}}\n").unwrap();
        let since = time_of(&"2026-01-01T00:00:00Z".into()).unwrap();
        let t = super::super::claude::parse(&read_file(&f).unwrap(), since).finish(&f);
        assert_eq!(t.prompts, ["caf\u{fffd}"]);
    }

    #[test]
    fn a_transcript_round_trips_and_keeps_unknown_fields() {
        let text =
            r#"{"prompts":["a"],"last_answer":"b","tokens":{"input":3,"future":1},"later":true}"#;
        let t: Transcript = serde_json::from_str(text).unwrap();
        assert_eq!(t.prompts, ["a"]);
        assert_eq!(serde_json::to_string(&t).unwrap(), text);
    }
}
