//! `doctor`'s checks of pas-agent's entries in the agents' own settings: the lifecycle hooks
//! `integrate` installs (all there, starting a pas-agent that exists, approved where the agent
//! asks for approval) at the project's and the user's level, and the MCP servers the agents
//! are told to start.

use super::{Check, Context, Runs, home_relative, shown};
use crate::hook::quote_posix;
use crate::integrate::{self, Format, installs, settings};
use crate::term::clean_line;

/// Largest settings file read (as `integrate` reads them).
const MAX_SETTINGS: u64 = 4 * 1024 * 1024;

/// The program part of an installed hook command: everything before `lifecycle <key> <event>`.
fn program_of(command: &str) -> &str {
    let mut rest = command.trim_end();
    for _ in 0..3 {
        rest = rest
            .rsplit_once(char::is_whitespace)
            .map_or("", |(head, _)| head)
            .trim_end();
    }
    rest
}

/// Every agent `integrate` installs into, at the project's level (in a session) and the
/// user's: pas-agent's hooks there, whole, starting a pas-agent that exists, and approved.
pub fn hooks(cx: &Context, checks: &mut Vec<Check>) {
    let root = cx.project.as_ref().map(|p| p.root.clone());
    for integration in integrate::all() {
        let key = integration.key();
        let before = checks.len();
        for user in [false, true] {
            if !user && root.is_none() {
                continue;
            }
            let base = root.as_deref().unwrap_or(&cx.cwd);
            let Ok(path) = integration.settings_path(base, user) else {
                continue;
            };
            let flag = if user { " --user" } else { "" };
            let reinstall = format!("pas-agent integrate {key}{flag}");
            let name = format!("{key} hooks{}", if user { " (user)" } else { "" });
            let file = home_relative(&path);
            let recorded = installs::find(&path).is_some();
            let text = match crate::fsutil::read_limited(&path, MAX_SETTINGS) {
                Ok(Some(bytes)) => Some(String::from_utf8_lossy(&bytes).into_owned()),
                _ => None,
            };
            let Some(text) = text else {
                if recorded {
                    checks.push(
                        Check::problem(
                            name,
                            format!("{file} is gone, and pas-agent's hooks with it"),
                        )
                        .fix(reinstall),
                    );
                }
                continue;
            };
            let found = match settings::installed(&text, &integration) {
                Ok(found) => found,
                Err(_) if matches!(integration.hooks.format, Format::Owned { .. }) => {
                    // A file pas-agent writes whole, changed since: `integrate` leaves it be.
                    if recorded || text.contains(integrate::SUBCOMMAND) {
                        checks.push(
                            Check::problem(
                                name,
                                format!(
                                    "{file} is no longer the file pas-agent writes there (edited?); pas-agent does not change it"
                                ),
                            )
                            .fix(format!(
                                "rm -- {}; {reinstall}",
                                quote_posix(&path.to_string_lossy())
                            )),
                        );
                    }
                    continue;
                }
                Err(e) => {
                    if recorded || text.contains(integrate::SUBCOMMAND) {
                        checks.push(
                            Check::problem(
                                name,
                                format!(
                                    "{file} cannot be read ({}), and {} cannot read it either",
                                    clean_line(&e),
                                    integration.agent.name
                                ),
                            )
                            .fix(format!("fix {file} by hand, then `{reinstall}`")),
                        );
                    }
                    continue;
                }
            };
            if found.is_empty() {
                if recorded {
                    checks.push(
                        Check::problem(
                            name,
                            format!(
                                "pas-agent's hooks are gone from {file} (rewritten by {} or an editor?)",
                                integration.agent.name
                            ),
                        )
                        .fix(reinstall),
                    );
                }
                continue;
            }
            let missing: Vec<&str> = integration
                .hooks
                .events
                .iter()
                .map(|(event, _)| *event)
                .filter(|event| !found.iter().any(|f| f.event == *event))
                .collect();
            if !missing.is_empty() {
                checks.push(
                    Check::problem(
                        name,
                        format!("{file} lacks {} of pas-agent's hooks", missing.join(", ")),
                    )
                    .fix(reinstall),
                );
                continue;
            }
            let mut others = Vec::new();
            let mut broken = None;
            for entry in &found {
                match cx.runs(program_of(&entry.command)) {
                    Runs::Me => {}
                    Runs::Other(p) => others.push(shown(&p)),
                    Runs::Missing(why) => broken = Some(why),
                }
            }
            if let Some(why) = broken {
                checks.push(
                    Check::problem(
                        name,
                        format!("the hooks in {file} cannot start pas-agent: {why}"),
                    )
                    .fix(reinstall),
                );
                continue;
            }
            let approvals = integration
                .hooks
                .approvals
                .map(|a| a.check(&path, if user { None } else { root.as_deref() }, &found))
                .unwrap_or_default();
            let refused: Vec<_> = approvals.iter().filter(|a| !a.approved).collect();
            if !refused.is_empty() {
                for a in refused {
                    let mut c = Check::problem(name.clone(), clean_line(&a.detail));
                    if let Some(fix) = &a.fix {
                        c = c.fix(fix.clone());
                    }
                    checks.push(c);
                }
                continue;
            }
            let mut detail = format!(
                "in {file} ({})",
                found.iter().map(|f| f.event).collect::<Vec<_>>().join(", ")
            );
            for a in &approvals {
                detail.push_str("; ");
                detail.push_str(&clean_line(&a.detail));
            }
            others.dedup();
            if others.is_empty() {
                checks.push(Check::ok(name, detail));
            } else {
                checks.push(Check::info(
                    name,
                    format!(
                        "{detail}; they start {}, not this pas-agent ({})",
                        others.join(", "),
                        cx.me_shown()
                    ),
                ));
            }
        }
        // Nothing installed for an agent that is here: how to.
        let installed = integration
            .agent
            .executables
            .iter()
            .any(|e| which::which(e).is_ok());
        if checks.len() == before && installed {
            checks.push(
                Check::info(format!("{key} hooks"), "not installed")
                    .fix(format!("pas-agent integrate {key}")),
            );
        }
    }
}

/// pas-agent's MCP server in each agent's settings (project and user): it starts
/// `pas-agent mcp` with a pas-agent that exists.
pub fn mcp(cx: &Context, checks: &mut Vec<Check>) {
    let root = cx.project.as_ref().map(|p| p.root.as_path());
    for agent in crate::agents::AGENTS {
        let Some(mcp) = &agent.mcp else { continue };
        let home = agent.home.and_then(|h| h.path());
        for found in mcp.registered(root, home.as_deref()) {
            let name = format!(
                "{} mcp{}",
                agent.short_name(),
                if found.project { "" } else { " (user)" }
            );
            let file = home_relative(&found.file);
            let fix = format!(
                "pas-agent mcp --config {} prints the entry to put in {file}",
                agent.short_name()
            );
            let argv = match found.command {
                Ok(argv) => argv,
                Err(why) => {
                    checks.push(
                        Check::problem(
                            name,
                            format!("pas-agent's server in {file}: {}", clean_line(&why)),
                        )
                        .fix(fix),
                    );
                    continue;
                }
            };
            let line = clean_line(&argv.join(" "));
            if !argv.iter().skip(1).any(|a| a == "mcp") {
                checks.push(
                    Check::problem(
                        name,
                        format!("pas-agent's server in {file} runs `{line}`, not `pas-agent mcp`"),
                    )
                    .fix(fix),
                );
                continue;
            }
            match cx.runs(argv.first().map(String::as_str).unwrap_or_default()) {
                Runs::Me => checks.push(Check::ok(name, format!("{file}: `{line}`"))),
                Runs::Other(p) => checks.push(Check::info(
                    name,
                    format!(
                        "{file}: `{line}` starts {}, not this pas-agent ({})",
                        shown(&p),
                        cx.me_shown()
                    ),
                )),
                Runs::Missing(why) => checks.push(
                    Check::problem(name, format!("{file}: `{line}` cannot start: {why}")).fix(fix),
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_of_a_hook_command() {
        assert_eq!(program_of("pas-agent lifecycle claude stop"), "pas-agent");
        assert_eq!(
            program_of("'/opt/my tools/pas-agent' lifecycle codex session-end"),
            "'/opt/my tools/pas-agent'"
        );
    }
}
