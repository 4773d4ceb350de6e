//! How an agent's command line reads, as far as `pas-agent freeze` needs it: which flags take a
//! value, which words are a one-shot prompt or make the run one-shot, and which choose a
//! session. A frozen run comes back through `pas-agent run AGENT --resume <id>` with the
//! arguments it was started with minus those ([`ArgShape::for_restore`]): the prompt it was
//! started with is already in its conversation and must not be sent again, a one-shot mode
//! (`claude -p`, `codex exec`) would end the restored agent at once, and the resume syntax
//! chooses the session.

/// What an agent's arguments mean (one row per agent, from its own `--help`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArgShape {
    /// Whether the rest of this row was read from the agent's `--help`; when `false`, a frozen
    /// run's arguments are kept as they were (nothing is known to drop).
    pub known: bool,
    /// Flags that take the next word as their value (`--model opus`), or `--flag=value`.
    pub value_flags: &'static [&'static str],
    /// Flags (and subcommands) whose value is optional: the next word when it does not start
    /// with `-` (`claude --resume [id]`, `codex resume [id]`).
    pub optional_flags: &'static [&'static str],
    /// Flags that take every following word up to the next flag (`--add-dir a b`).
    pub many_flags: &'static [&'static str],
    /// Flags and subcommands of a one-shot run (`-p`, `exec`), and flags only such a run
    /// takes: dropped, with their value.
    pub one_shot: &'static [&'static str],
    /// Flags whose value is a prompt (`--prompt <text>`): dropped with it.
    pub prompt_flags: &'static [&'static str],
    /// Flags and subcommands that choose a session (`--resume`, `--continue`,
    /// `--session-id`): dropped with their value, since the restore chooses it.
    pub session_flags: &'static [&'static str],
    /// Whether the words that are neither flags nor their values are prompts (dropped);
    /// otherwise they are kept (a directory, a subcommand).
    pub positional_prompts: bool,
}

/// The row of an agent whose arguments were not read: kept as they are.
pub const UNKNOWN: ArgShape = ArgShape {
    known: false,
    value_flags: &[],
    optional_flags: &[],
    many_flags: &[],
    one_shot: &[],
    prompt_flags: &[],
    session_flags: &[],
    positional_prompts: false,
};

/// How many words a flag takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Takes {
    Nothing,
    One,
    Optional,
    Many,
}

impl ArgShape {
    fn takes(&self, name: &str) -> Takes {
        if self.value_flags.contains(&name) {
            Takes::One
        } else if self.optional_flags.contains(&name) {
            Takes::Optional
        } else if self.many_flags.contains(&name) {
            Takes::Many
        } else {
            Takes::Nothing
        }
    }

    fn dropped(&self, name: &str) -> bool {
        self.one_shot.contains(&name)
            || self.prompt_flags.contains(&name)
            || self.session_flags.contains(&name)
    }

    /// The arguments (what followed the agent's name) to start a frozen run's agent with
    /// again: `args` without one-shot prompts, one-shot modes and session choices, every other
    /// flag kept with its value, in order. With an unknown row, `args` unchanged.
    pub fn for_restore(&self, args: &[String]) -> Vec<String> {
        if !self.known {
            return args.to_vec();
        }
        let mut out = Vec::new();
        let mut i = 0;
        let mut first_word = true;
        while i < args.len() {
            let word = &args[i];
            i += 1;
            if word == "--" {
                // Everything after `--` is a word for the agent: a prompt or kept.
                if !self.positional_prompts {
                    out.extend(args[i - 1..].iter().cloned());
                }
                break;
            }
            let is_flag = word.starts_with('-') && word.len() > 1;
            let (name, inline) = match word.split_once('=') {
                Some((n, _)) if is_flag && n.starts_with("--") => (n, true),
                _ => (word.as_str(), false),
            };
            // A subcommand counts only as the first word that is not a flag.
            let subcommand = !is_flag
                && first_word
                && (self.dropped(name) || self.takes(name) != Takes::Nothing);
            if !is_flag && !subcommand {
                first_word = false;
                if !self.positional_prompts {
                    out.push(word.clone());
                }
                continue;
            }
            if !is_flag {
                first_word = false;
            }
            let mut values = Vec::new();
            if !inline {
                match self.takes(name) {
                    Takes::Nothing => {}
                    Takes::One => {
                        if let Some(v) = args.get(i) {
                            values.push(v.clone());
                            i += 1;
                        }
                    }
                    Takes::Optional => {
                        if let Some(v) = args.get(i).filter(|v| !v.starts_with('-')) {
                            values.push(v.clone());
                            i += 1;
                        }
                    }
                    Takes::Many => {
                        while let Some(v) = args.get(i).filter(|v| !v.starts_with('-')) {
                            values.push(v.clone());
                            i += 1;
                        }
                    }
                }
            }
            if !self.dropped(name) {
                out.push(word.clone());
                out.extend(values);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn prompts_one_shot_modes_and_session_choices_are_dropped() {
        let claude = crate::agents::by_name("claude").unwrap().arg_shape;
        assert_eq!(
            claude.for_restore(&s(&[
                "--model",
                "opus",
                "-p",
                "fix the bug",
                "--add-dir",
                "a",
                "b",
                "--session-id",
                "x",
                "--permission-mode=acceptEdits",
                "--resume"
            ])),
            s(&[
                "--model",
                "opus",
                "--add-dir",
                "a",
                "b",
                "--permission-mode=acceptEdits"
            ])
        );
        assert_eq!(claude.for_restore(&s(&["--", "-p"])), s(&[]));
        let codex = crate::agents::by_name("codex").unwrap().arg_shape;
        assert_eq!(
            codex.for_restore(&s(&[
                "exec",
                "--skip-git-repo-check",
                "-c",
                "model=m",
                "-o",
                "out.txt",
                "Say hello"
            ])),
            s(&["-c", "model=m"])
        );
        assert_eq!(
            codex.for_restore(&s(&["--no-daemon", "resume", "0199", "-m", "o3", "go on"])),
            s(&["--no-daemon", "-m", "o3"])
        );
        // A row that was not read keeps everything.
        assert_eq!(UNKNOWN.for_restore(&s(&["-p", "x"])), s(&["-p", "x"]));
    }
}
