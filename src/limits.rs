//! The size limit of each kind of file pas-agent writes and later reads back, in one table.
//!
//! Each kind has one [`Limit`], used by its reader (a larger file is refused) and by its
//! writer (a write that would produce a larger file is refused before anything is written,
//! so pas-agent never writes what it would not read back). The limits are documented in
//! `docs/format.md` ("Size limits").

/// A file kind's size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// Largest size read or written, in bytes.
    pub bytes: u64,
    /// The kind of file, for messages ("session file").
    pub what: &'static str,
    /// What the user can do when a write would cross the limit.
    pub hint: &'static str,
}

/// `.pas-agent/session.json`: 64 MiB.
pub const SESSION: Limit = Limit {
    bytes: 64 * 1024 * 1024,
    what: "session file",
    hint: "shorten the session: `pas-agent remove discoveries 1 2 …` (or another list) drops items you no longer need",
};

/// How much of an oversized `session.json` a command that changes the session still reads
/// (128 MiB, twice [`SESSION`]): enough for `remove` to bring a file that crossed the limit
/// (written by hand, or by pas-agent 0.3.0, which did not check) back under it. Such a
/// command still writes nothing above [`SESSION`].
pub const SESSION_RECOVERY_BYTES: u64 = 2 * SESSION.bytes;

/// Size above which `status` warns that the session file is getting large (4 MiB): each
/// change rewrites it, so a larger one makes every writing command slower, long before
/// [`SESSION`] refuses it.
pub const SESSION_WARN_BYTES: u64 = 4 * 1024 * 1024;

/// The most characters one text the user gives may hold: a task description, objective, next
/// action, list item (`update`, `init`, the MCP `update` tool) or checkpoint message. A longer
/// one is refused, naming this limit, and nothing changes: every item is shown in every
/// export, so one pasted log would crowd the whole session out of what an agent reads.
pub const ITEM_CHARS: usize = 10_000;

/// An agent's context file (`CLAUDE.md`, `AGENTS.md`, …): 16 MiB.
pub const CONTEXT_FILE: Limit = Limit {
    bytes: 16 * 1024 * 1024,
    what: "context file",
    hint: "shorten the session (`pas-agent remove discoveries 1 2 …`) or the file's own text, then export again",
};

/// The machine-wide run registry (`runs.json`): 4 MiB.
pub const REGISTRY: Limit = Limit {
    bytes: 4 * 1024 * 1024,
    what: "run registry",
    hint: "`pas-agent runs --all` removes the entries of runs whose launcher is gone",
};

/// The largest screen `capture.txt` is rendered on, `(columns, rows)`: 1,000 × 500. A window
/// that reports more (a terminal's absurd size) is rendered at this size, so the terminal
/// emulator's memory stays bounded (half a million cells); soft-wrapped lines are joined in the
/// text, so a narrower screen loses none of it. `capture.cast` keeps the real size.
pub const CAPTURE_SCREEN: (u16, u16) = (1000, 500);
/// An agent's own session file (a Claude Code transcript, a Codex rollout, a Gemini CLI chat,
/// an OpenCode export) read after a run for its words ([`crate::agents::Agent::transcript`]): 64 MiB. pas-agent
/// never writes these; a larger one is not read, and the run records why.
pub const TRANSCRIPT: Limit = Limit {
    bytes: 64 * 1024 * 1024,
    what: "agent transcript",
    hint: "pas-agent only reads agent transcripts",
};

impl Limit {
    /// Refuses a write of `len` bytes when it is over the limit. The message (the caller's
    /// error names the file) gives both sizes and what to do, and says nothing was written.
    pub fn check_write(&self, len: usize) -> Result<(), String> {
        let len = len as u64;
        if len <= self.bytes {
            return Ok(());
        }
        Err(format!(
            "writing it would make it {len} bytes, more than the {} ({} bytes) a {} may hold, so pas-agent could not read it back; nothing was written (the file is unchanged)\n  hint: {}",
            human(self.bytes),
            self.bytes,
            self.what,
            self.hint
        ))
    }

    /// The message for a file found larger than the limit when reading.
    pub fn read_refusal(&self, size: u64) -> String {
        format!(
            "the file is {size} bytes, larger than the {} ({} bytes) a {} may hold",
            human(self.bytes),
            self.bytes,
            self.what
        )
    }
}

/// `64 MiB`, `16 MiB`, or the byte count when not a whole number of MiB.
pub fn human(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_one_byte_over() {
        assert!(CONTEXT_FILE.check_write(16 * 1024 * 1024).is_ok());
        let err = CONTEXT_FILE.check_write(16 * 1024 * 1024 + 1).unwrap_err();
        assert!(err.contains("16777217 bytes"), "{err}");
        assert!(err.contains("16 MiB"), "{err}");
        assert!(err.contains("nothing was written"), "{err}");
        assert!(err.contains("hint:"), "{err}");
    }
}
