//! Kilo CLI (`kilo`, npm `@kilocode/cli`, an OpenCode fork whose platform packages hold the
//! binary): everything pas-agent knows about it. Its sessions are read the way OpenCode's are,
//! through its own `session list` and `export` commands ([`super::opencode::Listed`]).
//!
//! - **Context**: `AGENTS.md` (kilo.ai/docs/cli; checked: kilo 7.7.9, the file's text in the
//!   model's request).
//! - **Launch**: `-s/--session <id>` continues a session, for the interactive mode and for
//!   `kilo run`; ids are OpenCode's, `ses_` and 26 letters and digits (checked: kilo 7.7.9
//!   `--help`, `run --help`, and `kilo session list --format json`).
//! - **Store**: `kilo session list --format json` and `kilo export <id>` print exactly
//!   OpenCode's layouts (checked: kilo 7.7.9 against a mock model).
//! - **MCP**: `mcp` in `kilo.json` at the project root or `~/.config/kilo/kilo.json`, OpenCode's
//!   shape with Kilo's schema (checked: kilo 7.7.9, `kilo mcp list`); no option for one run.
//! - **Hooks**: plugins in OpenCode's style, which pas-agent does not install into.

use super::mcp::{Mcp, Place, Registration, Shape};
use super::opencode::Listed;
use super::{Agent, BASE, IdShape, Resume, SessionId, Straight};

/// Kilo CLI's row.
pub const AGENT: Agent = Agent {
    id: "kilo",
    name: "Kilo CLI",
    aliases: &["kilocode"],
    executables: &["kilo"],
    context_file: "AGENTS.md",
    resume: Some(Resume {
        args: &["--session", "{id}"],
        subcommands: &["run"],
        after_subcommand: &[],
    }),
    session_id: SessionId::Discover,
    id_shape: IdShape::PrefixedAlnum {
        prefix: "ses_",
        len: 26,
    },
    straight: Straight {
        // checked: kilo 7.7.9 `--help`. Not straight: the interactive mode (`[project]`), `run`,
        // `attach`, `acp`, `serve`, `pr` and `cloud` (they host or start sessions).
        subcommands: &[
            "completion",
            "mcp",
            "debug",
            "auth",
            "providers",
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
            "console",
            "roll-call",
            "profile",
            "remote",
            "daemon",
            "config",
            "worktree",
            "help",
        ],
        flags: &["-v", "--version", "-h", "--help"],
    },
    store: Some(&Listed {
        program: "kilo",
        unquote: true,
    }),
    mcp: Some(Mcp {
        shape: Shape::OpenCodeJson {
            schema: "https://app.kilo.ai/config.json",
        },
        hint: "# Kilo CLI: merge into kilo.json at the project root or ~/.config/kilo/kilo.json",
        one_run: None,
        // checked: kilo 7.7.9 `kilo mcp list` (project kilo.json; the user's file as its
        // docs name it).
        registrations: &[
            Registration {
                file: Place::Project("kilo.json"),
                table: &["mcp"],
                comments: true,
            },
            Registration {
                file: Place::UserConfig("kilo/kilo.json"),
                table: &["mcp"],
                comments: true,
            },
        ],
    }),
    ..BASE
};
