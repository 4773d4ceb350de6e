//! The table of known agents. A new agent is a new row here, not a new branch elsewhere.
//!
//! Each row says: the canonical id stored in run records, other names, the executables to look
//! for on `PATH`, the context file the agent reads at startup (the export target), how to
//! resume a known session id with the agent's own syntax, and how to learn the id of a new
//! session. Every fact carries its source in a comment. Keys in square brackets are expanded
//! in `../shared/reference/agents.md` ("Sources"); "checked: <tool> <version>" means the flag
//! was read in the installed tool's `--help` (or its files) for this table, and an agent marked
//! "unverified" could not be installed or run here, so its row follows the secondary sources
//! named and may need updating.
//!
//! The first seven ids, their aliases and their files are those of the original PAS-Agent's
//! `export --to` (`pas-agent-format.md` §3), so every target it accepts is accepted here.

/// One agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Agent {
    /// Canonical id, stored in run records (`claude-code`, `codex`, …).
    pub id: &'static str,
    /// Human name.
    pub name: &'static str,
    /// Other names accepted wherever an agent is named (`claude`, `gemini`, …).
    pub aliases: &'static [&'static str],
    /// Executables to look for on `PATH`, in order.
    pub executables: &'static [&'static str],
    /// The context file the agent reads at startup, relative to the project root.
    pub context_file: &'static str,
    /// How much of its context file the agent reads, where it is known to cut off: the block
    /// is placed and checked against it (see `crate::export`).
    pub read_limit: Option<ReadLimit>,
    /// Arguments the launcher adds so that the agent reads the context file, for agents that
    /// load no file by themselves (`{context}` stands for [`Agent::context_file`]).
    pub context_args: &'static [&'static str],
    /// How to resume a known session id, when the agent has a way.
    pub resume: Option<Resume>,
    /// How the launcher learns the id of the agent's session for a new run.
    pub session_id: SessionId,
    /// What the agent's session ids look like. An id read from any file (`session.json`, the
    /// agent's own store, a capture) reaches a command line or a record only when it has this
    /// shape, and no shape admits a leading `-`, so an id is never read as a flag.
    pub id_shape: IdShape,
    /// Whether the agent reads `@path` in its context file as an import of that file (Claude
    /// Code, Gemini CLI and its fork Qwen Code); export then looks through those imports for
    /// another pas-agent block the agent would see as well.
    pub at_imports: bool,
    /// Command lines that start no agent session (version, help, configuration, listing,
    /// login, …): `pas-agent run` runs them straight, with no record, checkpoint or export.
    pub straight: Straight,
}

/// How much of a context file an agent reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimit {
    /// The amount read, in `unit`s from the start of the file.
    pub amount: usize,
    /// What `amount` counts.
    pub unit: LimitUnit,
}

/// The unit of a [`ReadLimit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitUnit {
    /// Bytes.
    Bytes,
    /// Unicode characters (a file that is not UTF-8 counts one per replaced sequence).
    Chars,
}

impl ReadLimit {
    /// The length of `bytes` in this limit's unit.
    pub fn measure(&self, bytes: &[u8]) -> usize {
        match self.unit {
            LimitUnit::Bytes => bytes.len(),
            LimitUnit::Chars => String::from_utf8_lossy(bytes).chars().count(),
        }
    }

    /// `32768 bytes`, `12000 characters`.
    pub fn describe(&self, n: usize) -> String {
        match self.unit {
            LimitUnit::Bytes => format!("{n} bytes"),
            LimitUnit::Chars => format!("{n} characters"),
        }
    }
}

/// The shape of an agent's session ids. Every shape starts with an ASCII letter or digit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdShape {
    /// No ids are learned or resumed: every id is refused.
    None,
    /// A UUID: 8-4-4-4-12 hexadecimal digits, either case, any version (Claude Code's v4,
    /// Codex's v7).
    Uuid,
    /// `prefix` then a UUID (Amp's `T-…`).
    PrefixedUuid(&'static str),
    /// `prefix` then exactly `len` ASCII letters and digits (OpenCode's `ses_…`).
    PrefixedAlnum {
        /// What the id starts with (`ses_`).
        prefix: &'static str,
        /// How many letters and digits follow.
        len: usize,
    },
    /// Digits, `_`, digits (Goose's `20251108_1`).
    DateSerial,
}

impl IdShape {
    /// Whether `id` has this shape.
    pub fn accepts(&self, id: &str) -> bool {
        fn uuid(s: &str) -> bool {
            let groups: Vec<&str> = s.split('-').collect();
            groups.len() == 5
                && groups
                    .iter()
                    .zip([8, 4, 4, 4, 12])
                    .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
        }
        match *self {
            IdShape::None => false,
            IdShape::Uuid => uuid(id),
            IdShape::PrefixedUuid(prefix) => id.strip_prefix(prefix).is_some_and(uuid),
            IdShape::PrefixedAlnum { prefix, len } => id
                .strip_prefix(prefix)
                .is_some_and(|r| r.len() == len && r.bytes().all(|b| b.is_ascii_alphanumeric())),
            IdShape::DateSerial => id.split_once('_').is_some_and(|(a, b)| {
                !a.is_empty()
                    && !b.is_empty()
                    && a.len() <= 16
                    && b.len() <= 16
                    && a.bytes().chain(b.bytes()).all(|c| c.is_ascii_digit())
            }),
        }
    }
}

/// The agent's subcommands and flags that start no agent session, from its own `--help`.
///
/// A command line runs straight when one of `flags` appears before any `--`, or when its first
/// word that is not an option is one of `subcommands`. Options with a value before the
/// subcommand (`claude --model opus mcp list`) hide it, so such a line is recorded as a run:
/// the safe side, since a run is recorded rather than lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Straight {
    /// Subcommands that configure, list, log in, update or diagnose (`mcp`, `login`, …).
    pub subcommands: &'static [&'static str],
    /// Flags that print and exit (`--version`, `--help`, …).
    pub flags: &'static [&'static str],
}

impl Straight {
    /// Whether the user's arguments `args` (what follows the agent's name) start no session.
    pub fn matches(&self, args: &[std::ffi::OsString]) -> bool {
        let words: Vec<std::borrow::Cow<'_, str>> = args
            .iter()
            .map(|a| a.to_string_lossy())
            .take_while(|a| a != "--")
            .collect();
        if words.iter().any(|w| self.flags.contains(&w.as_ref())) {
            return true;
        }
        words
            .iter()
            .find(|w| !w.starts_with('-'))
            .is_some_and(|w| self.subcommands.contains(&w.as_ref()))
    }
}

/// `--help` and `--version`: the flags nearly every CLI prints and exits on (used for the rows
/// that could not be checked here, where `-h`/`-v` may mean something else).
const HELP_VERSION: &[&str] = &["--help", "--version"];

/// The agent's own syntax for resuming a session by id: `args` (with `{id}` replaced) go before
/// the user's arguments, or right after the first of them that is one of `subcommands` (so
/// `codex exec -c …` resumes as `codex exec resume <id> -c …`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resume {
    /// The resume arguments, `{id}` standing for the session id (`["--resume", "{id}"]`).
    pub args: &'static [&'static str],
    /// Subcommands after which `args` go instead of at the front (`["exec", "e"]` for Codex).
    pub subcommands: &'static [&'static str],
}

impl Resume {
    /// Whether the user's own arguments already resume a session this way (their first word,
    /// `--resume` or `resume`, is there).
    pub fn mentioned_in(&self, user: &[std::ffi::OsString]) -> bool {
        let Some(first) = self.args.first() else {
            return false;
        };
        user.iter().any(|a| {
            let a = a.to_string_lossy();
            a == *first || (first.starts_with("--") && a.starts_with(&format!("{first}=")))
        })
    }

    /// The command line that resumes session `id`, given the user's own arguments.
    ///
    /// Shape: `args` with every `{id}` replaced, inserted at the front of `user`, or after the
    /// first element of `user` equal to one of `subcommands`.
    pub fn apply(&self, id: &str, user: &[std::ffi::OsString]) -> Vec<std::ffi::OsString> {
        let ours = self
            .args
            .iter()
            .map(|a| std::ffi::OsString::from(a.replace("{id}", id)));
        let at = user
            .iter()
            .position(|a| self.subcommands.iter().any(|s| a == *s))
            .map_or(0, |i| i + 1);
        let mut out: Vec<std::ffi::OsString> = user[..at].to_vec();
        out.extend(ours);
        out.extend(user[at..].iter().cloned());
        out
    }
}

/// How to learn the agent's own session id for a new run (SPEC §5 `agent_session_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionId {
    /// No documented way: the run records no session id.
    Unknown,
    /// The launcher chooses a UUID v4 and passes `flag <uuid>`, unless the user's arguments
    /// already hold one of `unless` (their own session choice wins, and nothing is recorded
    /// for it). `store`, when set, is checked after the run to confirm the agent used it.
    Choose {
        /// The flag that takes the id (`--session-id`).
        flag: &'static str,
        /// User flags that already pick a session (`--resume`, `--continue`, …), alone or
        /// `--flag=value`.
        unless: &'static [&'static str],
        /// Checked after the run for the chosen id; when the id is not there, the session is
        /// looked up in the store as for [`SessionId::Discover`].
        store: Option<Store>,
    },
    /// The launcher reads the agent's own session store after the run.
    Discover(Store),
    /// The agent prints the id when it exits: the text after `marker` in the run's plain-text
    /// capture (only with a pseudo-terminal, where output is captured).
    Printed {
        /// The text just before the id; the last occurrence wins, the id being the run of
        /// ASCII letters, digits, `-` and `_` after it.
        marker: &'static str,
    },
    /// Run the executable with `args` after the run; it prints the sessions as a JSON array of
    /// objects with `id`, `directory` and `created` (milliseconds since the Unix epoch).
    Listed {
        /// Arguments of the listing command (`["session", "list", "--format", "json"]`).
        args: &'static [&'static str],
    },
}

/// An agent's on-disk session store, read by [`crate::launch::session_id`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    /// Claude Code: `$CLAUDE_CONFIG_DIR` (default `~/.claude`) `/projects/<cwd with every
    /// non-alphanumeric character as '-'>/<session id>.jsonl`; each event line has
    /// `sessionId` and `cwd` ([CC-sessions], [CC-claudedir]; checked: claude 2.1.197).
    ClaudeProjects,
    /// Codex: `$CODEX_HOME` (default `~/.codex`) `/sessions/YYYY/MM/DD/rollout-*.jsonl`, whose
    /// first line is `{"type":"session_meta","payload":{"id","timestamp","cwd",…}}`
    /// ([CX-txcript], launcher-store.md §A7; checked: codex-cli 0.171.0).
    CodexRollouts,
    /// Gemini CLI: `$GEMINI_CLI_HOME` (default `~`) `/.gemini/tmp/<project>/chats/session-*.jsonl`
    /// (legacy `.json`), where `<project>` is the short id `~/.gemini/projects.json` maps the
    /// working directory to (each such directory also holds `.project_root`); the first line
    /// is `{"sessionId","projectHash","startTime",…,"kind":"main"}` ([GM-sessions],
    /// [GM-src-storage], [GM-src-chatrec]; checked: gemini 0.61.0 `packages/core/src/config/
    /// storage.ts` in its bundle).
    GeminiChats,
}

/// The most common resume syntax: `--resume <id>` before the user's arguments.
const RESUME_FLAG: Resume = Resume {
    args: &["--resume", "{id}"],
    subcommands: &[],
};

/// Every known agent, in the order `--help` lists them.
pub const AGENTS: &[Agent] = &[
    // Claude Code. Executable `claude`, context `CLAUDE.md` ([CC-cli], [CC-memory]).
    // `--session-id <uuid>` uses a caller-chosen id, `-r/--resume <id>` resumes one
    // ([CC-cli]; checked: claude 2.1.197 `--help`). anthropics/claude-code#44607 reports the
    // flag not controlling the on-disk id in interactive mode, hence the store check.
    Agent {
        id: "claude-code",
        name: "Claude Code",
        aliases: &["claude"],
        executables: &["claude"],
        context_file: "CLAUDE.md",
        read_limit: None,
        context_args: &[],
        resume: Some(RESUME_FLAG),
        session_id: SessionId::Choose {
            flag: "--session-id",
            unless: &[
                "--session-id",
                "-r",
                "--resume",
                "-c",
                "--continue",
                "--fork-session",
                "--from-pr",
                "--no-session-persistence",
            ],
            store: Some(Store::ClaudeProjects),
        },
        // Ids: UUIDs, `<id>.jsonl` in the store (checked: claude 2.1.197). `@path` imports: see
        // `crate::export::imports`.
        id_shape: IdShape::Uuid,
        at_imports: true,
        straight: Straight {
            // checked: claude 2.1.197 `--help` (Commands; `-v/--version`, `-h/--help`).
            // `ultrareview` runs in the cloud and prints findings: no local session.
            subcommands: &[
                "agents",
                "auth",
                "auto-mode",
                "doctor",
                "gateway",
                "install",
                "mcp",
                "plugin",
                "plugins",
                "project",
                "setup-token",
                "ultrareview",
                "update",
                "upgrade",
            ],
            flags: &["-v", "--version", "-h", "--help"],
        },
    },
    // Codex CLI. Executable `codex`, context `AGENTS.md` from the git root down to the cwd
    // ([CX-agentsmd]). No way to choose the id (openai/codex discussion #3827): it is read from
    // the rollout. `codex resume <id>` and `codex exec resume <id> [prompt]` (checked:
    // codex-cli 0.171.0 `resume --help`, `exec resume --help`; `exec` is also `e`).
    Agent {
        id: "codex",
        name: "Codex",
        aliases: &[],
        executables: &["codex"],
        context_file: "AGENTS.md",
        read_limit: Some(ReadLimit {
            amount: 32 * 1024,
            unit: LimitUnit::Bytes,
        }),
        context_args: &[],
        resume: Some(Resume {
            args: &["resume", "{id}"],
            subcommands: &["exec", "e"],
        }),
        session_id: SessionId::Discover(Store::CodexRollouts),
        // Ids: UUID v7, `session_meta.payload.id` (checked: codex-cli 0.171.0 rollouts). Codex
        // reads at most `project_doc_max_bytes` (default 32 KiB) of AGENTS.md ([CX-config]).
        id_shape: IdShape::Uuid,
        at_imports: false,
        straight: Straight {
            // checked: codex-cli 0.171.0 `--help` (Commands; `-V/--version`, `-h/--help`).
            // Not straight: `exec`/`e`, `review`, `resume`, `fork`, `agents` (sessions), and
            // `apply`/`a`, `cloud` (they change the work tree, worth a record).
            subcommands: &[
                "login",
                "logout",
                "mcp",
                "plugin",
                "app-server",
                "remote-control",
                "completion",
                "update",
                "doctor",
                "sandbox",
                "debug",
                "queue",
                "archive",
                "delete",
                "unarchive",
                "migrate-rollouts",
                "migrate-nfs-db",
                "exec-server",
                "features",
                "help",
            ],
            flags: &["-V", "--version", "-h", "--help"],
        },
    },
    // Gemini CLI. Executable `gemini`, context `GEMINI.md` in the workspace and its parents
    // ([GM-geminimd]). `-r/--resume <uuid|index|latest>` ([GM-cli], [GM-sessions]; checked:
    // gemini 0.61.0, which resumes by UUID). 0.61 also has `--session-id`, which older
    // releases lack; the chat store works for all of them.
    Agent {
        id: "gemini-cli",
        name: "Gemini CLI",
        aliases: &["gemini"],
        executables: &["gemini"],
        context_file: "GEMINI.md",
        read_limit: None,
        context_args: &[],
        resume: Some(RESUME_FLAG),
        session_id: SessionId::Discover(Store::GeminiChats),
        // Ids: UUIDs, `sessionId` (checked: gemini 0.61.0 chat files); `@path` imports in
        // GEMINI.md ([GM-memport]; `findImports` in the 0.61.0 bundle).
        id_shape: IdShape::Uuid,
        at_imports: true,
        straight: Straight {
            // checked: gemini 0.61.0 `--help` (Commands, with their aliases; flags that list
            // or delete and exit).
            subcommands: &[
                "mcp",
                "extensions",
                "extension",
                "skills",
                "skill",
                "hooks",
                "hook",
                "gemma",
            ],
            flags: &[
                "-v",
                "--version",
                "-h",
                "--help",
                "-l",
                "--list-extensions",
                "--list-sessions",
                "--delete-session",
            ],
        },
    },
    // OpenCode. Executable `opencode`, context `AGENTS.md` found walking up ([OC-cli]).
    // `-s/--session <id>` continues a session, for the TUI and for `opencode run`;
    // `opencode session list --format json` prints `[{"id","title","updated","created",
    // "projectId","directory"}]`, times in ms (checked: opencode 1.18.33 `--help`,
    // `run --help`, and a run against a local mock model).
    Agent {
        id: "opencode",
        name: "OpenCode",
        aliases: &[],
        executables: &["opencode"],
        context_file: "AGENTS.md",
        read_limit: None,
        context_args: &[],
        resume: Some(Resume {
            args: &["--session", "{id}"],
            subcommands: &["run"],
        }),
        session_id: SessionId::Listed {
            args: &["session", "list", "--format", "json"],
        },
        // Ids: `ses_` then 12 hex digits and 14 base-62 characters (checked: opencode 1.18.33,
        // `Identifier.create` in its bundle).
        id_shape: IdShape::PrefixedAlnum {
            prefix: "ses_",
            len: 26,
        },
        at_imports: false,
        straight: Straight {
            // checked: opencode 1.18.33 `--help`. Not straight: the TUI (`[project]`), `run`,
            // `attach`, `acp`, `serve`, `web` (they host sessions) and `pr` (starts one).
            subcommands: &[
                "completion",
                "mcp",
                "debug",
                "providers",
                "auth",
                "agent",
                "upgrade",
                "uninstall",
                "models",
                "stats",
                "export",
                "import",
                "github",
                "session",
                "plugin",
                "plug",
                "db",
            ],
            flags: &["-v", "--version", "-h", "--help"],
        },
    },
    // Cursor CLI. Reads `AGENTS.md` at the root; executable `cursor-agent`, newer releases
    // also `agent` ([CU-devhints], [CU-changelog]). `--resume <chatId>` ([CU-devhints]).
    // Unverified: not installable from the registries reached here. The id of a new chat is
    // only known by creating it first (`agent create-chat`, [CU-coder747]); not done, since its
    // behaviour could not be checked.
    Agent {
        id: "cursor",
        name: "Cursor CLI",
        aliases: &[],
        executables: &["cursor-agent", "agent"],
        context_file: "AGENTS.md",
        read_limit: None,
        context_args: &[],
        resume: Some(RESUME_FLAG),
        session_id: SessionId::Unknown,
        // Ids: chat ids are UUIDs ([CU-coder747]). Unverified.
        id_shape: IdShape::Uuid,
        at_imports: false,
        // Unverified: only the near-universal `--help` and `--version`.
        straight: Straight {
            subcommands: &[],
            flags: HELP_VERSION,
        },
    },
    // Kiro CLI ≥ 2.18 loads `AGENTS.md` from the workspace ([KI-sessions], [RS-ff]);
    // executable `kiro-cli`. `kiro-cli chat --resume-id <id>`; on exit it prints
    // `kiro-cli chat --resume-id <ID>` ([KI-sessions]). Unverified: not installable here.
    Agent {
        id: "kiro-cli",
        name: "Kiro CLI",
        aliases: &["kiro"],
        executables: &["kiro-cli"],
        context_file: "AGENTS.md",
        read_limit: None,
        context_args: &[],
        resume: Some(Resume {
            args: &["chat", "--resume-id", "{id}"],
            subcommands: &[],
        }),
        session_id: SessionId::Printed {
            marker: "--resume-id ",
        },
        // Ids: UUIDs ([KI-sessions]). Unverified.
        id_shape: IdShape::Uuid,
        at_imports: false,
        // Unverified: only the near-universal `--help` and `--version`.
        straight: Straight {
            subcommands: &[],
            flags: HELP_VERSION,
        },
    },
    // Antigravity reads root `AGENTS.md` since 1.20.3 and only the first 12,000 characters of a
    // rules file ([AG-skly], [AG-promptscript]); its CLI is `agy` ([AG-hermes]). No documented
    // resume flag or session id ([AG-specstory] only shows a `brain/<id>` store). Unverified.
    Agent {
        id: "antigravity",
        name: "Antigravity",
        aliases: &["agy"],
        executables: &["agy"],
        context_file: "AGENTS.md",
        read_limit: Some(ReadLimit {
            amount: 12_000,
            unit: LimitUnit::Chars,
        }),
        context_args: &[],
        resume: None,
        session_id: SessionId::Unknown,
        // No resume: no ids.
        id_shape: IdShape::None,
        at_imports: false,
        // Unverified: only the near-universal `--help` and `--version`.
        straight: Straight {
            subcommands: &[],
            flags: HELP_VERSION,
        },
    },
    // Aider loads no instruction file by itself; the convention is `--read <file>`
    // ([AI-lore], [RU-readme]: ruler writes AGENTS.md and adds it to `read:`). It has no
    // session ids: history is a per-repository Markdown file ([AI-ao]). Unverified.
    Agent {
        id: "aider",
        name: "Aider",
        aliases: &[],
        executables: &["aider"],
        context_file: "AGENTS.md",
        read_limit: None,
        context_args: &["--read", "{context}"],
        resume: None,
        session_id: SessionId::Unknown,
        // No session ids.
        id_shape: IdShape::None,
        at_imports: false,
        // Unverified: only the near-universal `--help` and `--version`.
        straight: Straight {
            subcommands: &[],
            flags: HELP_VERSION,
        },
    },
    // GitHub Copilot CLI reads `AGENTS.md` among others ([CP-instr]). `--session-id <id>`
    // "Resume an existing session or task by ID, or set the UUID for a new session";
    // `-r/--resume [id]`, `--continue`, `--connect` (checked: copilot 1.0.102 `--help`).
    Agent {
        id: "copilot",
        name: "GitHub Copilot CLI",
        aliases: &["copilot-cli"],
        executables: &["copilot"],
        context_file: "AGENTS.md",
        read_limit: None,
        context_args: &[],
        resume: Some(RESUME_FLAG),
        session_id: SessionId::Choose {
            flag: "--session-id",
            unless: &["--session-id", "-r", "--resume", "--continue", "--connect"],
            store: None,
        },
        // Ids: "set the UUID for a new session" (copilot 1.0.102 `--help`).
        id_shape: IdShape::Uuid,
        at_imports: false,
        // Unverified: only the near-universal `--help` and `--version`.
        straight: Straight {
            subcommands: &[],
            flags: HELP_VERSION,
        },
    },
    // Qwen Code (a Gemini CLI fork) reads `QWEN.md` ([RS-ff], [AC-qwen]). `--session-id`
    // "Specify a session ID for this run", `-r/--resume <id>`, `-c/--continue` (checked:
    // qwen 0.15.10 `--help`).
    Agent {
        id: "qwen-code",
        name: "Qwen Code",
        aliases: &["qwen"],
        executables: &["qwen"],
        context_file: "QWEN.md",
        read_limit: None,
        context_args: &[],
        resume: Some(RESUME_FLAG),
        session_id: SessionId::Choose {
            flag: "--session-id",
            unless: &["--session-id", "-r", "--resume", "-c", "--continue"],
            store: None,
        },
        // Ids: UUIDs, as in Gemini CLI, which it forks; `@path` imports as in Gemini CLI
        // ([AC-qwen]). Unverified.
        id_shape: IdShape::Uuid,
        at_imports: true,
        // Unverified: only the near-universal `--help` and `--version`.
        straight: Straight {
            subcommands: &[],
            flags: HELP_VERSION,
        },
    },
    // Amp reads `AGENTS.md` ([AC-amp], [RS-ff]); executable `amp` (npm `@ampcode/cli`).
    // `amp threads continue <T-…>` ([AM-ralph], [AM-hex]). Thread ids come from its service
    // (`amp threads new`), which cannot be reached here; unverified, no id is learned.
    Agent {
        id: "amp",
        name: "Amp",
        aliases: &[],
        executables: &["amp"],
        context_file: "AGENTS.md",
        read_limit: None,
        context_args: &[],
        resume: Some(Resume {
            args: &["threads", "continue", "{id}"],
            subcommands: &[],
        }),
        session_id: SessionId::Unknown,
        // Ids: `T-` then a UUID ([AM-hex]). Unverified.
        id_shape: IdShape::PrefixedUuid("T-"),
        at_imports: false,
        // Unverified: only the near-universal `--help` and `--version`.
        straight: Straight {
            subcommands: &[],
            flags: HELP_VERSION,
        },
    },
    // Goose reads `.goosehints` ([GO-hints]). `goose session -r --session-id <id>` ([GO-cli]);
    // sessions are named, not announced. Unverified: not on the registries reached here.
    Agent {
        id: "goose",
        name: "Goose",
        aliases: &[],
        executables: &["goose"],
        context_file: ".goosehints",
        read_limit: None,
        context_args: &[],
        resume: Some(Resume {
            args: &["session", "--resume", "--session-id", "{id}"],
            subcommands: &[],
        }),
        session_id: SessionId::Unknown,
        // Ids: `20251108_1` ([GO-cli]). Unverified.
        id_shape: IdShape::DateSerial,
        at_imports: false,
        // Unverified: only the near-universal `--help` and `--version`.
        straight: Straight {
            subcommands: &[],
            flags: HELP_VERSION,
        },
    },
];

impl Agent {
    /// [`Agent::context_args`] with `{context}` replaced by the context file.
    pub fn context_args(&self) -> Vec<std::ffi::OsString> {
        self.context_args
            .iter()
            .map(|a| a.replace("{context}", self.context_file).into())
            .collect()
    }
}

/// Files an agent loads at startup besides its [`Agent::context_file`], relative to the
/// project root, by agent id. Claude Code 2.1 (checked in the 2.1.197 binary's memory
/// loader): `CLAUDE.md`, `.claude/CLAUDE.md` and `CLAUDE.local.md` in each directory from the
/// one it starts in up to the root, and `.claude/rules/*.md`.
pub const ALSO_READS: &[(&str, &[&str])] =
    &[("claude-code", &[".claude/CLAUDE.md", "CLAUDE.local.md"])];

/// The other files `agent` loads at startup (see [`ALSO_READS`]).
pub fn also_reads(agent: &Agent) -> &'static [&'static str] {
    ALSO_READS
        .iter()
        .find(|(id, _)| *id == agent.id)
        .map_or(&[], |(_, files)| files)
}

/// The agent whose id or alias is `name` (what `export --to` accepts).
pub fn by_name(name: &str) -> Option<&'static Agent> {
    AGENTS
        .iter()
        .find(|a| a.id == name || a.aliases.contains(&name))
}

/// The agent named by id, alias or executable name, in any case (what `run` accepts:
/// `claude`, `Claude`, `cursor-agent`, `agy` …). Ids and aliases win over executables.
pub fn lookup(name: &str) -> Option<&'static Agent> {
    named(AGENTS.iter(), name)
}

/// The first of `agents` whose id or alias is `name` (ASCII case ignored), else the first
/// with an executable of that name.
fn named<'a>(agents: impl Iterator<Item = &'a Agent> + Clone, name: &str) -> Option<&'a Agent> {
    let eq = |a: &str| a.eq_ignore_ascii_case(name);
    agents
        .clone()
        .find(|a| eq(a.id) || a.aliases.iter().any(|n| eq(n)))
        .or_else(|| {
            agents
                .into_iter()
                .find(|a| a.executables.iter().any(|n| eq(n)))
        })
}

/// How `export` writes an agent's file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// A marked block in a file the user may share with other text (`CLAUDE.md`,
    /// `AGENTS.md`, …): the text around the block is kept byte for byte.
    Block,
    /// A file pas-agent owns entirely, in a directory of rule files the agent reads: the
    /// agent's front matter (YAML between `---` lines, ending in a line feed; empty for agents
    /// that need none), then the block. The block's markers stay, so `--check` and
    /// `--remove` treat it as any other.
    Owned {
        /// The front matter, `---` lines included, `\n` line ends.
        front_matter: &'static str,
    },
}

/// An agent `export` writes for but `run` does not launch (an editor's or IDE's agent, or a
/// CLI whose sessions are not known here), with its own rules file.
#[derive(Debug, Clone, Copy)]
pub struct RulesAgent {
    /// The agent: `id`, `name`, `aliases`, `executables` (their presence on `PATH` says it is
    /// installed, for `export --all`), `context_file` (the file written) and `read_limit`.
    /// The launch fields are unused.
    pub agent: Agent,
    /// How the file is written.
    pub layout: Layout,
    /// Files the agent reads instead of `context_file`, the first that exists winning (Zed):
    /// export goes to the first of these that exists, else to `context_file`.
    pub reads_first: &'static [&'static str],
    /// Paths (relative to the project root) whose presence says the agent is used in the
    /// project, for `export --all` (its own configuration directory).
    pub marks: &'static [&'static str],
}

/// The fields of an [`Agent`] that `export` alone uses, the rest empty.
const fn export_only(
    id: &'static str,
    name: &'static str,
    aliases: &'static [&'static str],
    executables: &'static [&'static str],
    context_file: &'static str,
    read_limit: Option<ReadLimit>,
) -> Agent {
    Agent {
        id,
        name,
        aliases,
        executables,
        context_file,
        read_limit,
        context_args: &[],
        resume: None,
        session_id: SessionId::Unknown,
        id_shape: IdShape::None,
        at_imports: false,
        straight: Straight {
            subcommands: &[],
            flags: HELP_VERSION,
        },
    }
}

/// Every agent `export` writes for beyond [`AGENTS`]. Each row cites the agent's own
/// documentation (read through the search tool on 2026-11-30); "always" below means the
/// front matter that makes the rule apply to every request.
pub const RULES_AGENTS: &[RulesAgent] = &[
    // Cursor (the editor): project rules are `.cursor/rules/*.mdc`, Markdown with front
    // matter `description`, `globs`, `alwaysApply`; `alwaysApply: true` is the "Always"
    // rule type (cursor.com/docs/context/rules, as documented in cameronbrooks11.github.io/
    // agent-policy/reference/targets/cursor-rules and developertoolkit.ai/en/cursor-ide/
    // quick-start/project-rules). The CLI (`cursor-agent`, row `cursor`) reads AGENTS.md.
    RulesAgent {
        agent: export_only(
            "cursor-rules",
            "Cursor",
            &["cursor-ide"],
            &["cursor"],
            ".cursor/rules/pas-agent.mdc",
            None,
        ),
        layout: Layout::Owned {
            front_matter: "---\ndescription: pas-agent session context (the task, progress and next step)\nglobs:\nalwaysApply: true\n---\n",
        },
        reads_first: &[],
        marks: &[".cursor"],
    },
    // Windsurf (Cascade): workspace rules are `.windsurf/rules/*.md` with a `trigger` in the
    // front matter, `always_on` for always; each rule file is read up to 12,000 characters
    // (docs.windsurf.com/windsurf/cascade/memories, "Rules": activation modes and limits).
    RulesAgent {
        agent: export_only(
            "windsurf",
            "Windsurf",
            &["cascade"],
            &["windsurf"],
            ".windsurf/rules/pas-agent.md",
            Some(ReadLimit {
                amount: 12_000,
                unit: LimitUnit::Chars,
            }),
        ),
        layout: Layout::Owned {
            front_matter: "---\ntrigger: always_on\n---\n",
        },
        reads_first: &[],
        marks: &[".windsurf"],
    },
    // Cline: every Markdown file in `.clinerules/` is combined into the rules; front matter
    // (`paths`) only makes a rule conditional, so a file without it always applies
    // (docs.cline.bot/features/cline-rules/overview and .../conditional-rules).
    RulesAgent {
        agent: export_only(
            "cline",
            "Cline",
            &[],
            &["cline"],
            ".clinerules/pas-agent.md",
            None,
        ),
        layout: Layout::Owned { front_matter: "" },
        reads_first: &[],
        marks: &[".clinerules"],
    },
    // Kiro (the IDE): steering files are `.kiro/steering/*.md` with front matter
    // `inclusion: always | fileMatch | manual` (kiro.dev/docs/steering, as cited in
    // kirodotdev/Kiro#9176). The CLI (`kiro-cli`, row `kiro-cli`) reads AGENTS.md.
    RulesAgent {
        agent: export_only(
            "kiro-steering",
            "Kiro steering",
            &["kiro-ide"],
            &["kiro"],
            ".kiro/steering/pas-agent.md",
            None,
        ),
        layout: Layout::Owned {
            front_matter: "---\ninclusion: always\n---\n",
        },
        reads_first: &[],
        marks: &[".kiro"],
    },
    // Roo Code: workspace rules are every file in `.roo/rules/`, read recursively in
    // alphabetical order; no front matter (docs.roocode.com/features/custom-instructions).
    RulesAgent {
        agent: export_only(
            "roo-code",
            "Roo Code",
            &["roo"],
            &[],
            ".roo/rules/pas-agent.md",
            None,
        ),
        layout: Layout::Owned { front_matter: "" },
        reads_first: &[],
        marks: &[".roo"],
    },
    // Continue: local rules are `.continue/rules/*.md`, front matter `name`, `globs`, `regex`,
    // `description`, `alwaysApply` (`true`: always included) (docs.continue.dev/customize/
    // deep-dives/rules). Its CLI is `cn`.
    RulesAgent {
        agent: export_only(
            "continue",
            "Continue",
            &["continue-dev"],
            &["cn"],
            ".continue/rules/pas-agent.md",
            None,
        ),
        layout: Layout::Owned {
            front_matter: "---\nname: pas-agent session context\nalwaysApply: true\n---\n",
        },
        reads_first: &[],
        marks: &[".continue"],
    },
    // JetBrains Junie reads `.junie/guidelines.md` by default (another path, such as
    // AGENTS.md, only when set in its settings) (jetbrains.com/help/junie/
    // customize-guidelines.html, project-settings.html). One file, often the user's: a block.
    RulesAgent {
        agent: export_only(
            "junie",
            "JetBrains Junie",
            &[],
            &["junie"],
            ".junie/guidelines.md",
            None,
        ),
        layout: Layout::Block,
        reads_first: &[],
        marks: &[".junie"],
    },
    // GitHub Copilot (VS Code, the coding agent): path-specific instructions are
    // `.github/instructions/NAME.instructions.md` with front matter `applyTo` (a glob; `**`
    // for every file) (docs.github.com/en/copilot/how-tos/configure-custom-instructions-in-
    // your-ide/add-repository-instructions-in-your-ide). Its CLI (row `copilot`) reads AGENTS.md.
    RulesAgent {
        agent: export_only(
            "copilot-instructions",
            "GitHub Copilot",
            &["copilot-vscode"],
            &[],
            ".github/instructions/pas-agent.instructions.md",
            None,
        ),
        layout: Layout::Owned {
            front_matter: "---\napplyTo: \"**\"\n---\n",
        },
        reads_first: &[],
        marks: &[".github/copilot-instructions.md", ".github/instructions"],
    },
    // Crush reads AGENTS.md among its context files (and CRUSH.md, CLAUDE.md, …), all of them
    // combined (charmbracelet/crush guide "Context files"; AGENTS.md is what `crush` itself
    // initialises since v0.18.0, charmbracelet/crush discussion #912).
    RulesAgent {
        agent: export_only("crush", "Crush", &[], &["crush"], "AGENTS.md", None),
        layout: Layout::Block,
        reads_first: &[],
        marks: &["CRUSH.md"],
    },
    // Warp: project rules are AGENTS.md (WARP.md still read, for older projects)
    // (docs.warp.dev/agents/capabilities/rules). Its CLI is `warp`.
    RulesAgent {
        agent: export_only("warp", "Warp", &[], &["warp"], "AGENTS.md", None),
        layout: Layout::Block,
        reads_first: &[],
        marks: &["WARP.md"],
    },
    // Zed reads one project instructions file: the first that exists of `.rules`,
    // `.cursorrules`, `.windsurfrules`, `.clinerules`, `.github/copilot-instructions.md`,
    // `AGENT.md`, `AGENTS.md`, `CLAUDE.md`, `GEMINI.md` (zed.dev/docs/ai/instructions). So the
    // block goes to the first of those that exists, and to AGENTS.md when none does.
    RulesAgent {
        agent: export_only("zed", "Zed", &[], &["zed", "zeditor"], "AGENTS.md", None),
        layout: Layout::Block,
        reads_first: &[
            ".rules",
            ".cursorrules",
            ".windsurfrules",
            ".clinerules",
            ".github/copilot-instructions.md",
            "AGENT.md",
            "AGENTS.md",
            "CLAUDE.md",
            "GEMINI.md",
        ],
        marks: &[".zed"],
    },
];

/// An agent `export` writes for: a row of [`AGENTS`] (a block in its context file) or of
/// [`RULES_AGENTS`].
#[derive(Debug, Clone, Copy)]
pub struct ExportAgent {
    /// The agent (its `context_file` is the file written, unless `reads_first` says otherwise).
    pub agent: &'static Agent,
    /// How the file is written.
    pub layout: Layout,
    /// See [`RulesAgent::reads_first`]; empty for [`AGENTS`].
    pub reads_first: &'static [&'static str],
    /// See [`RulesAgent::marks`]; empty for [`AGENTS`].
    pub marks: &'static [&'static str],
}

impl ExportAgent {
    /// The file written under `root`: the first of [`ExportAgent::reads_first`] that exists
    /// there, else the agent's context file.
    pub fn file(&self, root: &std::path::Path) -> std::path::PathBuf {
        self.reads_first
            .iter()
            .map(|f| root.join(f))
            // A directory of that name (Cline's `.clinerules/`) is not the file Zed reads.
            .find(|p| p.metadata().is_ok_and(|m| m.is_file()))
            .unwrap_or_else(|| root.join(self.agent.context_file))
    }
}

/// Every agent `export` writes for: [`AGENTS`], then [`RULES_AGENTS`].
pub fn export_agents() -> Vec<ExportAgent> {
    AGENTS
        .iter()
        .map(|agent| ExportAgent {
            agent,
            layout: Layout::Block,
            reads_first: &[],
            marks: &[],
        })
        .chain(RULES_AGENTS.iter().map(|r| ExportAgent {
            agent: &r.agent,
            layout: r.layout,
            reads_first: r.reads_first,
            marks: r.marks,
        }))
        .collect()
}

/// The agent `export --to NAME` means: an id, alias or executable name of [`AGENTS`] or
/// [`RULES_AGENTS`], in any case (`claude`, `Claude`, `cursor-agent`, `cursor-rules`).
pub fn export_agent(name: &str) -> Option<ExportAgent> {
    let all = export_agents();
    let agent = named(all.iter().map(|e| e.agent), name)?;
    all.into_iter().find(|e| std::ptr::eq(e.agent, agent))
}

/// Every name `export --to` accepts, lower case, each once: ids, aliases and executables
/// (not the generic `agent`).
pub fn export_names() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for e in export_agents() {
        let a = e.agent;
        for n in std::iter::once(a.id)
            .chain(a.aliases.iter().copied())
            .chain(a.executables.iter().copied())
        {
            if n != "agent" && !out.contains(&n) {
                out.push(n);
            }
        }
    }
    out
}

/// Every id and alias, for the command line's list of possible values.
pub fn names() -> Vec<&'static str> {
    AGENTS
        .iter()
        .flat_map(|a| std::iter::once(a.id).chain(a.aliases.iter().copied()))
        .collect()
}

/// Every executable name with a row in the table: the commands the shell hooks wrap.
pub fn executables() -> Vec<&'static str> {
    AGENTS
        .iter()
        .flat_map(|a| a.executables.iter().copied())
        .filter(|e| *e != "agent")
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn names_and_executables_resolve() {
        // Every target and alias of the original is checked end to end in tests/e2e/export.rs.
        assert_eq!(lookup("cursor-agent").unwrap().id, "cursor");
        assert_eq!(lookup("qwen").unwrap().context_file, "QWEN.md");
        assert!(by_name("vim").is_none());
    }

    #[test]
    fn export_names_resolve_in_any_case_to_one_agent() {
        assert_eq!(export_agent("Claude").unwrap().agent.id, "claude-code");
        assert_eq!(export_agent("CURSOR-AGENT").unwrap().agent.id, "cursor");
        assert_eq!(export_agent("cursor").unwrap().agent.id, "cursor");
        assert_eq!(
            export_agent("Cursor-Rules").unwrap().agent.id,
            "cursor-rules"
        );
        assert_eq!(lookup("Codex").unwrap().id, "codex");
        assert!(export_agent("vim").is_none());
        // Every name leads back to its own agent: no two agents share a name.
        for e in export_agents() {
            let a = e.agent;
            for n in std::iter::once(a.id).chain(a.aliases.iter().copied()) {
                assert_eq!(export_agent(n).unwrap().agent.id, a.id, "{n}");
            }
        }
        let names = export_names();
        let mut seen = std::collections::HashSet::new();
        for n in &names {
            assert!(seen.insert(n.to_ascii_lowercase()), "{n} twice");
            assert!(export_agent(n).is_some(), "{n}");
        }
        // Owned files are pas-agent's own, in the agent's rules directory.
        for r in RULES_AGENTS {
            if let Layout::Owned { front_matter } = r.layout {
                assert!(r.agent.context_file.contains("pas-agent"), "{}", r.agent.id);
                assert!(
                    front_matter.is_empty()
                        || (front_matter.starts_with("---\n") && front_matter.ends_with("\n---\n")),
                    "{}",
                    r.agent.id
                );
            }
        }
    }

    #[test]
    fn names_and_executables_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for n in names() {
            assert!(seen.insert(n), "duplicate name {n}");
        }
        let mut seen = std::collections::HashSet::new();
        for a in AGENTS {
            for e in a.executables {
                assert!(seen.insert(*e), "two agents claim {e}");
            }
        }
    }

    #[test]
    fn resume_goes_first_or_after_the_subcommand() {
        let claude = by_name("claude").unwrap().resume.unwrap();
        assert_eq!(
            claude.apply("abc", &os(&["-p", "hi"])),
            os(&["--resume", "abc", "-p", "hi"])
        );
        let codex = by_name("codex").unwrap().resume.unwrap();
        assert_eq!(codex.apply("x-1", &[]), os(&["resume", "x-1"]));
        assert_eq!(
            codex.apply("x-1", &os(&["exec", "--skip-git-repo-check", "go on"])),
            os(&["exec", "resume", "x-1", "--skip-git-repo-check", "go on"])
        );
        let kiro = by_name("kiro").unwrap().resume.unwrap();
        assert_eq!(kiro.apply("k", &[]), os(&["chat", "--resume-id", "k"]));
    }

    #[test]
    fn commands_that_start_no_session_run_straight() {
        let claude = by_name("claude").unwrap().straight;
        for line in [
            &["--version"][..],
            &["-v"],
            &["mcp", "list"],
            &["--debug", "mcp", "list"],
            &["doctor"],
            &["-p", "hi", "--help"],
        ] {
            assert!(claude.matches(&os(line)), "{line:?}");
        }
        for line in [
            &[][..],
            &["-p", "mcp list"],
            &["fix the mcp server"],
            &["--", "--version"],
            &["-p", "--", "mcp"],
        ] {
            assert!(!claude.matches(&os(line)), "{line:?}");
        }
        let codex = by_name("codex").unwrap().straight;
        assert!(codex.matches(&os(&["login", "status"])) && codex.matches(&os(&["-V"])));
        assert!(!codex.matches(&os(&["exec", "go"])) && !codex.matches(&os(&["resume"])));
        assert!(
            by_name("aider")
                .unwrap()
                .straight
                .matches(&os(&["--version"]))
        );
    }

    #[test]
    fn every_choose_row_names_its_own_flag_in_unless() {
        for a in AGENTS {
            if let SessionId::Choose { flag, unless, .. } = a.session_id {
                assert!(unless.contains(&flag), "{}", a.id);
            }
        }
        assert_eq!(
            by_name("aider").unwrap().context_args(),
            os(&["--read", "AGENTS.md"])
        );
    }

    #[test]
    fn id_shapes_accept_real_ids_and_never_a_flag() {
        let ok = [
            ("claude-code", "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b"),
            ("codex", "0199a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b"),
            ("gemini-cli", "3F2A1B4C-5D6E-4F70-8A9B-0C1D2E3F4A5B"),
            ("opencode", "ses_3a9f0c1e2b4dAbCdEfGhIjKlMn"),
            ("amp", "T-3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b"),
            ("goose", "20251108_1"),
        ];
        for (agent, id) in ok {
            assert!(by_name(agent).unwrap().id_shape.accepts(id), "{agent} {id}");
        }
        let hostile = [
            "--dangerously-skip-permissions",
            "-c",
            "--yolo",
            "--approval-mode=yolo",
            "",
            "-3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b",
            "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b --yolo",
            "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b\n",
            "ses_--dangerously-skip-per",
            "T---yolo",
            "_1",
        ];
        for a in AGENTS {
            for id in hostile {
                assert!(!a.id_shape.accepts(id), "{} accepts {id:?}", a.id);
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn no_shape_admits_a_leading_dash_or_a_space(id in "\\PC{0,60}") {
            for a in AGENTS {
                if a.id_shape.accepts(&id) {
                    proptest::prop_assert!(
                        id.starts_with(|c: char| c.is_ascii_alphanumeric())
                            && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
                        "{} accepts {:?}", a.id, id
                    );
                }
            }
        }
    }
}
