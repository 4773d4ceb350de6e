//! The editors' and IDEs' agents that `export` writes for but `run` does not launch, each with
//! its own rules file. Each row cites the agent's own documentation; "always" below means the
//! front matter that makes the rule apply to every request.

use super::{Agent, BASE, Layout, LimitUnit, ReadLimit};

/// Cursor (the editor): project rules are `.cursor/rules/*.mdc`, Markdown with front
/// matter `description`, `globs`, `alwaysApply`; `alwaysApply: true` is the "Always"
/// rule type (cursor.com/docs/context/rules, as documented in cameronbrooks11.github.io/
/// agent-policy/reference/targets/cursor-rules and developertoolkit.ai/en/cursor-ide/
/// quick-start/project-rules). The CLI (`cursor-agent`, row `cursor`) reads AGENTS.md.
pub const CURSOR: Agent = Agent {
    id: "cursor-rules",
    name: "Cursor",
    aliases: &["cursor-ide"],
    executables: &["cursor"],
    runs: false,
    context_file: ".cursor/rules/pas-agent.mdc",
    layout: Layout::Owned {
        front_matter: "---\ndescription: pas-agent session context (the task, progress and next step)\nglobs:\nalwaysApply: true\n---\n",
    },
    marks: &[".cursor"],
    ..BASE
};

/// Windsurf (Cascade): workspace rules are `.windsurf/rules/*.md` with a `trigger` in the
/// front matter, `always_on` for always; each rule file is read up to 12,000 characters
/// (docs.windsurf.com/windsurf/cascade/memories, "Rules": activation modes and limits).
pub const WINDSURF: Agent = Agent {
    id: "windsurf",
    name: "Windsurf",
    aliases: &["cascade"],
    executables: &["windsurf"],
    runs: false,
    context_file: ".windsurf/rules/pas-agent.md",
    layout: Layout::Owned {
        front_matter: "---\ntrigger: always_on\n---\n",
    },
    marks: &[".windsurf"],
    read_limit: Some(ReadLimit {
        amount: 12_000,
        unit: LimitUnit::Chars,
    }),
    ..BASE
};

/// Cline: every Markdown file in `.clinerules/` is combined into the rules; front matter
/// (`paths`) only makes a rule conditional, so a file without it always applies
/// (docs.cline.bot/features/cline-rules/overview and .../conditional-rules).
pub const CLINE: Agent = Agent {
    id: "cline",
    name: "Cline",
    aliases: &[],
    executables: &["cline"],
    runs: false,
    context_file: ".clinerules/pas-agent.md",
    layout: Layout::Owned { front_matter: "" },
    marks: &[".clinerules"],
    ..BASE
};

/// Kiro (the IDE): steering files are `.kiro/steering/*.md` with front matter
/// `inclusion: always | fileMatch | manual` (kiro.dev/docs/steering, as cited in
/// kirodotdev/Kiro#9176). The CLI (`kiro-cli`, row `kiro-cli`) reads AGENTS.md.
pub const KIRO_STEERING: Agent = Agent {
    id: "kiro-steering",
    name: "Kiro steering",
    aliases: &["kiro-ide"],
    executables: &["kiro"],
    runs: false,
    context_file: ".kiro/steering/pas-agent.md",
    layout: Layout::Owned {
        front_matter: "---\ninclusion: always\n---\n",
    },
    marks: &[".kiro"],
    ..BASE
};

/// Roo Code: workspace rules are every file in `.roo/rules/`, read recursively in
/// alphabetical order; no front matter (docs.roocode.com/features/custom-instructions).
pub const ROO_CODE: Agent = Agent {
    id: "roo-code",
    name: "Roo Code",
    aliases: &["roo"],
    executables: &[],
    runs: false,
    context_file: ".roo/rules/pas-agent.md",
    layout: Layout::Owned { front_matter: "" },
    marks: &[".roo"],
    ..BASE
};

/// Continue (the editor extensions): local rules are `.continue/rules/*.md`, front matter
/// `name`, `globs`, `regex`, `description`, `alwaysApply` (`true`: always included)
/// (docs.continue.dev/customize/deep-dives/rules). Its CLI, `cn`, has a row of its own
/// (`continue-cli`), which exports to AGENTS.md: `cn` on `PATH` says that one is in use.
pub const CONTINUE: Agent = Agent {
    id: "continue",
    name: "Continue",
    aliases: &["continue-dev"],
    executables: &[],
    runs: false,
    context_file: ".continue/rules/pas-agent.md",
    layout: Layout::Owned {
        front_matter: "---\nname: pas-agent session context\nalwaysApply: true\n---\n",
    },
    marks: &[".continue"],
    ..BASE
};

/// JetBrains Junie reads `.junie/guidelines.md` by default (another path, such as
/// AGENTS.md, only when set in its settings) (jetbrains.com/help/junie/
/// customize-guidelines.html, project-settings.html). One file, often the user's: a block.
pub const JUNIE: Agent = Agent {
    id: "junie",
    name: "JetBrains Junie",
    aliases: &[],
    executables: &["junie"],
    runs: false,
    context_file: ".junie/guidelines.md",
    layout: Layout::Block,
    marks: &[".junie"],
    ..BASE
};

/// GitHub Copilot (VS Code, the coding agent): path-specific instructions are
/// `.github/instructions/NAME.instructions.md` with front matter `applyTo` (a glob; `**`
/// for every file) (docs.github.com/en/copilot/how-tos/configure-custom-instructions-in-
/// your-ide/add-repository-instructions-in-your-ide). Its CLI (row `copilot`) reads AGENTS.md.
pub const COPILOT_INSTRUCTIONS: Agent = Agent {
    id: "copilot-instructions",
    name: "GitHub Copilot",
    aliases: &["copilot-vscode"],
    executables: &[],
    runs: false,
    context_file: ".github/instructions/pas-agent.instructions.md",
    layout: Layout::Owned {
        front_matter: "---\napplyTo: \"**\"\n---\n",
    },
    marks: &[".github/copilot-instructions.md", ".github/instructions"],
    ..BASE
};

/// Crush reads AGENTS.md among its context files (and CRUSH.md, CLAUDE.md, …), all of them
/// combined (charmbracelet/crush guide "Context files"; AGENTS.md is what `crush` itself
/// initialises since v0.18.0, charmbracelet/crush discussion #912).
pub const CRUSH: Agent = Agent {
    id: "crush",
    name: "Crush",
    aliases: &[],
    executables: &["crush"],
    runs: false,
    context_file: "AGENTS.md",
    layout: Layout::Block,
    marks: &["CRUSH.md"],
    ..BASE
};

/// Warp: project rules are AGENTS.md (WARP.md still read, for older projects)
/// (docs.warp.dev/agents/capabilities/rules). Its CLI is `warp`.
pub const WARP: Agent = Agent {
    id: "warp",
    name: "Warp",
    aliases: &[],
    executables: &["warp"],
    runs: false,
    context_file: "AGENTS.md",
    layout: Layout::Block,
    marks: &["WARP.md"],
    ..BASE
};

/// Zed reads one project instructions file: the first that exists of `.rules`,
/// `.cursorrules`, `.windsurfrules`, `.clinerules`, `.github/copilot-instructions.md`,
/// `AGENT.md`, `AGENTS.md`, `CLAUDE.md`, `GEMINI.md` (zed.dev/docs/ai/instructions). So the
/// block goes to the first of those that exists, and to AGENTS.md when none does.
pub const ZED: Agent = Agent {
    id: "zed",
    name: "Zed",
    aliases: &[],
    executables: &["zed", "zeditor"],
    runs: false,
    context_file: "AGENTS.md",
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
    ..BASE
};
