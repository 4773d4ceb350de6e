//! `pas-agent hook` and `pas-agent prompt`: the scripts sourced in the real bash, zsh and fish
//! under strict options, registered once however often they are loaded, their hook functions
//! called the way each shell calls them, and the prompt protocol on real repositories.
//! (`hooks_tmux.rs` drives the same shells interactively.)

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::{Sandbox, stderr, stdout};

/// The program's path; fails the test with a clear message when the shell is missing (the
/// tests must not pass by skipping: `.ci/run` installs them).
pub fn require(program: &str) -> PathBuf {
    which::which(program).unwrap_or_else(|_| {
        panic!(
            "`{program}` is not installed, and the shell hook tests need it: run .ci/run, or \
             apt-get install zsh fish shellcheck tmux"
        )
    })
}

/// A command for `program` with the sandbox's isolated environment (HOME, XDG, git config,
/// PATH with the stand-in directory first), its own stamp directory, no agent markers, and
/// the work directory as the current directory.
pub fn isolated(sb: &Sandbox, program: &Path) -> Command {
    let template = sb.cmd();
    let mut cmd = Command::new(program);
    for (k, v) in template.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let runtime = sb.home.join("run");
    std::fs::create_dir_all(&runtime).expect("mkdir run");
    cmd.env("XDG_RUNTIME_DIR", runtime)
        .env("XDG_CACHE_HOME", sb.home.join(".cache"))
        .env("XDG_DATA_HOME", sb.home.join(".local/share"))
        .env_remove("CLAUDECODE")
        .env_remove("PROMPT_COMMAND")
        .env_remove("ENV")
        .env_remove("BASH_ENV")
        .env_remove("ZDOTDIR")
        .current_dir(&sb.work)
        .stdin(Stdio::null());
    cmd
}

/// The hook script for `shell`, as the binary prints it.
pub fn hook(sb: &Sandbox, shell: &str) -> String {
    sb.ok(&["hook", shell])
}

/// Runs `body` in `shell`, with the rendered hook in `$PAS_HOOK` and the binary's path in
/// `$PAS`. `args` are the shell's own options before `-c`. The notice is off (the tmux tests
/// look at it), so that stderr shows only what went wrong.
pub fn shell(sb: &Sandbox, program: &str, args: &[&str], body: &str) -> Output {
    let exe = require(program);
    let mut cmd = isolated(sb, &exe);
    cmd.env("PAS_HOOK", hook(sb, program))
        .env("PAS", crate::common::bin())
        .env("PAS_AGENT_NOTICE", "0")
        .args(args)
        .arg("-c")
        .arg(body);
    cmd.output().expect("run the shell")
}

/// stderr without the two lines bash prints when `-i` runs without a terminal.
pub fn clean_stderr(out: &Output) -> String {
    stderr(out)
        .lines()
        .filter(|l| {
            !l.contains("no job control in this shell")
                && !l.contains("cannot set terminal process group")
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Asserts exit 0 and an empty stderr (apart from bash's job-control note); returns stdout.
#[track_caller]
pub fn quiet_success(out: &Output) -> String {
    assert!(
        out.status.success() && clean_stderr(out).is_empty(),
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        stdout(out),
        stderr(out)
    );
    stdout(out)
}

const BASH_STRICT: &[&str] = &["--norc", "--noprofile", "-i", "-euo", "pipefail"];
const ZSH_STRICT: &[&str] = &[
    "-f",
    "-i",
    "-o",
    "no_unset",
    "-o",
    "err_exit",
    "-o",
    "pipefail",
    "-o",
    "ksh_arrays",
    "-o",
    "sh_word_split",
    "-o",
    "warn_create_global",
];
const FISH: &[&str] = &["--no-config", "-i"];

/// A stand-in for bash-preexec, written for these tests (bash-preexec itself is not packaged
/// here, and its code is not ours to copy): it offers the interface other tools detect and use
/// — the `bash_preexec_imported` flag and a `precmd_functions` array that it runs from
/// PROMPT_COMMAND with the user's `$?` — without bash-preexec's DEBUG trap.
const FAKE_BASH_PREEXEC: &str = r#"
bash_preexec_imported=defined
precmd_functions=()
preexec_functions=()
__fake_bp_set() { return "$1"; }
__fake_bp_precmd() {
    local s=$? f
    for f in ${precmd_functions[@]+"${precmd_functions[@]}"}; do __fake_bp_set "$s"; "$f"; done
    __fake_bp_set "$s"
}
PROMPT_COMMAND="__fake_bp_precmd${PROMPT_COMMAND:+;$PROMPT_COMMAND}"
"#;

#[test]
fn hook_prints_one_script_per_shell() {
    let sb = Sandbox::plain();
    for (shell, marker) in [
        ("bash", "__pas_agent_precmd"),
        ("zsh", "precmd_functions"),
        ("fish", "--on-event fish_prompt"),
        ("powershell", "function global:prompt"),
        ("pwsh", "function global:prompt"),
    ] {
        let script = hook(&sb, shell);
        assert!(script.contains(marker), "{shell}");
        let quoted_bin = crate::common::bin().to_string_lossy().into_owned();
        assert!(
            script.contains(&quoted_bin),
            "{shell}: the binary's path is baked in"
        );
    }
    let err = sb.fails(&["hook", "tcsh"], 2);
    assert!(err.contains("bash") && err.contains("powershell"), "{err}");
}

#[test]
fn rendered_scripts_pass_the_shells_own_syntax_checks_and_shellcheck() {
    let sb = Sandbox::plain();
    let dir = sb.tmp.path();
    for (shell, check) in [
        ("bash", vec!["bash", "-n"]),
        ("zsh", vec!["zsh", "-n"]),
        ("fish", vec!["fish", "--no-execute"]),
        (
            "bash",
            vec!["shellcheck", "--shell=bash", "--severity=style"],
        ),
    ] {
        let file = dir.join(format!("hook.{shell}"));
        std::fs::write(&file, hook(&sb, shell)).unwrap();
        let out = isolated(&sb, &require(check[0]))
            .args(&check[1..])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{check:?} on the {shell} script:\n{}{}",
            stdout(&out),
            stderr(&out)
        );
    }
}

#[test]
fn bash_sources_silently_under_strict_options_and_registers_once() {
    let sb = Sandbox::with_session();
    // Each preset PROMPT_COMMAND, then what it must be after two loads.
    let cases: &[(&str, &str)] = &[
        (
            "unset PROMPT_COMMAND",
            r#"declare -- PROMPT_COMMAND="__pas_agent_precmd \"\$_\"""#,
        ),
        (
            "PROMPT_COMMAND=''",
            r#"declare -- PROMPT_COMMAND="__pas_agent_precmd \"\$_\"""#,
        ),
        (
            "PROMPT_COMMAND='history -a'",
            r#"declare -- PROMPT_COMMAND="__pas_agent_precmd \"\$_\";history -a""#,
        ),
        (
            "PROMPT_COMMAND=' ; history -a;'",
            r#"declare -- PROMPT_COMMAND="__pas_agent_precmd \"\$_\";history -a;""#,
        ),
        // An array keeps its length: the hook joins its first command.
        (
            "PROMPT_COMMAND=(first 'second; x')",
            r#"declare -a PROMPT_COMMAND=([0]="__pas_agent_precmd \"\$_\";first" [1]="second; x")"#,
        ),
        (
            "PROMPT_COMMAND=(only)",
            r#"declare -a PROMPT_COMMAND=([0]="__pas_agent_precmd \"\$_\";only")"#,
        ),
        (
            "PROMPT_COMMAND=('' second)",
            r#"declare -a PROMPT_COMMAND=([0]="__pas_agent_precmd \"\$_\"" [1]="second")"#,
        ),
        (
            "declare -a PROMPT_COMMAND=()",
            r#"declare -a PROMPT_COMMAND=([0]="__pas_agent_precmd \"\$_\"")"#,
        ),
    ];
    for (preset, want) in cases {
        let body = format!(
            "{preset}\neval \"$PAS_HOOK\"\neval \"$PAS_HOOK\"\ndeclare -p PROMPT_COMMAND\ntype -t claude codex cursor-agent kiro-cli"
        );
        let out = quiet_success(&shell(&sb, "bash", BASH_STRICT, &body));
        let mut lines = out.lines();
        assert_eq!(lines.next(), Some(*want), "after `{preset}`");
        assert_eq!(
            lines.collect::<Vec<_>>(),
            ["function"; 4],
            "after `{preset}`"
        );
    }
}

#[test]
fn bash_coexists_with_bash_preexec_either_way_round() {
    let sb = Sandbox::with_session();
    let fake = sb.tmp.path().join("fake-bash-preexec.sh");
    std::fs::write(&fake, FAKE_BASH_PREEXEC).unwrap();
    let fake = fake.to_string_lossy();
    // bash-preexec first: the hook joins its precmd_functions, once, at the front.
    let body = format!(
        "precmd_functions=(); source '{fake}'\nprecmd_functions+=(user_precmd)\n\
         user_precmd() {{ echo \"user sees $?\"; }}\n\
         eval \"$PAS_HOOK\"; eval \"$PAS_HOOK\"\n\
         declare -p precmd_functions PROMPT_COMMAND\n\
         set +e; (exit 7); eval \"$PROMPT_COMMAND\"\necho \"prompt: $PAS_AGENT_PROMPT\""
    );
    let out = quiet_success(&shell(&sb, "bash", BASH_STRICT, &body));
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            r#"declare -a precmd_functions=([0]="__pas_agent_precmd" [1]="user_precmd")"#,
            r#"declare -- PROMPT_COMMAND="__fake_bp_precmd""#,
            "user sees 7",
            "prompt: Build the thing",
        ]
    );
    // The hook first: it stays in PROMPT_COMMAND, and a second load does not add it again.
    let body = format!(
        "eval \"$PAS_HOOK\"\nsource '{fake}'\neval \"$PAS_HOOK\"\n\
         declare -p precmd_functions PROMPT_COMMAND"
    );
    let out = quiet_success(&shell(&sb, "bash", BASH_STRICT, &body));
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "declare -a precmd_functions=()",
            r#"declare -- PROMPT_COMMAND="__fake_bp_precmd;__pas_agent_precmd \"\$_\"""#,
        ]
    );
}

/// A stand-in for VS Code's bash shell integration, written for these tests (its script is
/// not ours to copy), with the behaviour that matters here (microsoft/vscode,
/// `shellIntegration-bash.sh`): it keeps the first (or only) PROMPT_COMMAND command, replaces
/// it with its own prompt command that runs the kept one and then marks the prompt, and a
/// DEBUG trap counts any command that runs after that mark as a command the user started.
const FAKE_VSCODE: &str = r#"
__fake_vsc_ready=
__fake_vsc_log=()
__fake_vsc_debug() {
    if [[ -n $__fake_vsc_ready ]]; then
        __fake_vsc_ready=
        __fake_vsc_log+=("command start: $BASH_COMMAND")
    fi
}
trap '__fake_vsc_debug' DEBUG
__fake_vsc_original_prompt_command=${PROMPT_COMMAND:-}
__fake_vsc_prompt_cmd() {
    local status=$?
    eval "${__fake_vsc_original_prompt_command:-:}"
    __fake_vsc_log+=("prompt")
    __fake_vsc_ready=1
    return $status
}
PROMPT_COMMAND=__fake_vsc_prompt_cmd
"#;

#[test]
fn bash_runs_before_vscodes_prompt_mark_with_a_string_or_an_array() {
    let sb = Sandbox::with_session();
    let fake = sb.tmp.path().join("fake-vscode.sh");
    std::fs::write(&fake, FAKE_VSCODE).unwrap();
    let fake = fake.to_string_lossy();
    // Each PROMPT_COMMAND the user may have, with VS Code's integration loaded before the hook
    // (installed by hand in ~/.bashrc) and after it (VS Code injects it after ~/.bashrc).
    for preset in [
        "unset PROMPT_COMMAND",
        "PROMPT_COMMAND='history -a'",
        "PROMPT_COMMAND=(only)",
        "PROMPT_COMMAND=('history -a')",
    ] {
        for vscode_first in [true, false] {
            let load = if vscode_first {
                format!("source '{fake}'; eval \"$PAS_HOOK\"")
            } else {
                format!("eval \"$PAS_HOOK\"; source '{fake}'")
            };
            // Run every PROMPT_COMMAND element as bash does before a prompt, then one more
            // command, as the user would: the first command the DEBUG trap sees after the
            // prompt mark must be that one, not one of the prompt's.
            let body = format!(
                "only() {{ :; }}\n{preset}\n{load}\nset +e\n\
                 for __c in \"${{PROMPT_COMMAND[@]}}\"; do eval \"$__c\"; done\n\
                 trap - DEBUG\n\
                 printf '%s\\n' \"${{__fake_vsc_log[@]}}\" \"segment: ${{PAS_AGENT_PROMPT-}}\"\n\
                 declare -p PROMPT_COMMAND"
            );
            let out = quiet_success(&shell(&sb, "bash", BASH_STRICT, &body));
            let lines: Vec<&str> = out.lines().collect();
            let what = format!("{preset}, VS Code first: {vscode_first}");
            assert_eq!(lines[0], "prompt", "{what}: {out}");
            assert_eq!(lines[1], "command start: trap - DEBUG", "{what}: {out}");
            assert_eq!(lines[2], "segment: Build the thing", "{what}: {out}");
            // A string stayed a string; the user's array kept its one element.
            if preset.contains('(') {
                assert!(
                    lines[3].starts_with("declare -a PROMPT_COMMAND=([0]="),
                    "{what}: {out}"
                );
                assert!(!lines[3].contains("[1]="), "{what}: {out}");
            } else {
                assert!(
                    lines[3].starts_with("declare -- PROMPT_COMMAND="),
                    "{what}: {out}"
                );
            }
        }
    }
}

#[test]
fn bash_keeps_the_status_for_later_prompt_commands() {
    let sb = Sandbox::with_session();
    // Run PROMPT_COMMAND as bash does before a prompt, after a command that failed with 3.
    let body = "PROMPT_COMMAND='echo \"user sees $?\"'\neval \"$PAS_HOOK\"\n\
                set +e; (exit 3); eval \"$PROMPT_COMMAND\"\n\
                echo \"prompt: $PAS_AGENT_PROMPT\"";
    let out = quiet_success(&shell(&sb, "bash", BASH_STRICT, body));
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["user sees 3", "prompt: Build the thing"]
    );
}

#[test]
fn zsh_sources_silently_under_hostile_options_and_registers_once_first() {
    let sb = Sandbox::with_session();
    let body = "other() { :; }\nprecmd_functions=(other)\n\
                eval \"$PAS_HOOK\"\neval \"$PAS_HOOK\"\n\
                print -rl -- \"${precmd_functions[@]}\"\nwhence -w claude cursor-agent\n\
                for f in \"${precmd_functions[@]}\"; do $f; done\n\
                print -r -- \"prompt: $PAS_AGENT_PROMPT\"";
    let out = quiet_success(&shell(&sb, "zsh", ZSH_STRICT, body));
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "__pas_agent_precmd",
            "other",
            "claude: function",
            "cursor-agent: function",
            "prompt: Build the thing",
        ]
    );
}

#[test]
fn fish_sources_silently_and_registers_one_handler() {
    let sb = Sandbox::with_session();
    let body = "printf '%s\\n' $PAS_HOOK | source\nprintf '%s\\n' $PAS_HOOK | source\n\
                functions --handlers-type generic | string match -e __pas_agent\n\
                functions -q claude cursor-agent; and echo wrapped\n\
                emit fish_prompt\necho \"prompt: $PAS_AGENT_PROMPT\"";
    let out = quiet_success(&shell(&sb, "fish", FISH, body));
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "fish_prompt __pas_agent_precmd",
            "wrapped",
            "prompt: Build the thing"
        ]
    );
}

#[test]
fn nothing_is_installed_in_non_interactive_shells_or_inside_an_agent_run() {
    let sb = Sandbox::with_session();
    let bash_check = "eval \"$PAS_HOOK\"\n\
                      if declare -F __pas_agent_precmd >/dev/null || declare -F claude >/dev/null || [[ -n ${PROMPT_COMMAND-} ]]; then echo installed; fi";
    let zsh_check = "eval \"$PAS_HOOK\"\n\
                     if functions claude >/dev/null 2>&1 || (( ${+precmd_functions} )); then echo installed; fi";
    let fish_check = "printf '%s\\n' $PAS_HOOK | source\n\
                      if functions -q claude; or functions -q __pas_agent_precmd; echo installed; end";
    let runs = [
        (
            "bash",
            vec!["--norc", "--noprofile", "-euo", "pipefail"],
            bash_check,
        ),
        (
            "zsh",
            vec!["-f", "-o", "no_unset", "-o", "err_exit"],
            zsh_check,
        ),
        ("fish", vec!["--no-config"], fish_check),
    ];
    for (program, args, check) in &runs {
        let out = shell(&sb, program, args, check);
        assert_eq!(quiet_success(&out), "", "{program}, non-interactive");
    }
    // Interactive, but a shell an agent opened during `pas-agent run`.
    let interactive = [("bash", BASH_STRICT), ("zsh", ZSH_STRICT), ("fish", FISH)];
    for ((program, args), (_, _, check)) in interactive.iter().zip(&runs) {
        let mut cmd = isolated(&sb, &require(program));
        cmd.env("PAS_HOOK", hook(&sb, program))
            .env("PAS_AGENT_RUN_ID", "4f9f1d5e-0000-4000-8000-000000000000")
            .args(*args)
            .arg("-c")
            .arg(check);
        assert_eq!(
            quiet_success(&cmd.output().unwrap()),
            "",
            "{program}, inside a run"
        );
    }
}

/// Installs a copy of the binary at `dir/pas-agent` and returns its hook script for `shell`.
fn hook_from_copy(sb: &Sandbox, dir: &Path, shell: &str) -> (PathBuf, String) {
    std::fs::create_dir_all(dir).unwrap();
    let copy = dir.join("pas-agent");
    // With `cp`, not std::fs::copy: a file this process held open for writing could be
    // inherited by a child another test thread is starting, and executing it would then fail
    // with "text file busy".
    let cp = Command::new("cp")
        .arg(crate::common::bin())
        .arg(&copy)
        .status();
    assert!(cp.unwrap().success());
    let out = isolated(sb, &copy).args(["hook", shell]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    (copy, stdout(&out))
}

#[test]
fn a_binary_under_an_awkward_path_is_quoted_for_every_shell() {
    let sb = Sandbox::with_session();
    let dir = sb.tmp.path().join("it's a $HOME `x` \"dir\" \\ ; *");
    for (program, args, body) in [
        (
            "bash",
            BASH_STRICT,
            "eval \"$PAS_HOOK\"; __pas_agent_precmd; printf '%s\\n' \"$__pas_agent_bin\" \"$PAS_AGENT_PROMPT\"",
        ),
        (
            "zsh",
            ZSH_STRICT,
            "eval \"$PAS_HOOK\"; __pas_agent_precmd; printf '%s\\n' \"$__pas_agent_bin\" \"$PAS_AGENT_PROMPT\"",
        ),
        (
            "fish",
            FISH,
            "printf '%s\\n' $PAS_HOOK | source; emit fish_prompt; printf '%s\\n' $__pas_agent_bin $PAS_AGENT_PROMPT",
        ),
    ] {
        let (copy, script) = hook_from_copy(&sb, &dir, program);
        let mut cmd = isolated(&sb, &require(program));
        cmd.env("PAS_HOOK", script).args(args).arg("-c").arg(body);
        let out = cmd.output().unwrap();
        let text = stdout(&out);
        assert_eq!(
            text.lines().collect::<Vec<_>>(),
            [copy.to_str().unwrap(), "Build the thing"],
            "{program}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn a_vanished_binary_is_reported_once_and_the_shell_keeps_working() {
    let sb = Sandbox::with_session();
    sb.stand_in("codex", "echo \"stand-in codex $*\"; exit 4");
    for (program, args, body) in [
        (
            "bash",
            BASH_STRICT,
            "eval \"$PAS_HOOK\"; rm -- \"$__pas_agent_bin\"\n__pas_agent_precmd; __pas_agent_precmd\nset +e; codex --direct; echo \"status $?\"; echo \"prompt ${PAS_AGENT_PROMPT-unset}\"",
        ),
        (
            "zsh",
            ZSH_STRICT,
            "eval \"$PAS_HOOK\"; rm -- \"$__pas_agent_bin\"\n__pas_agent_precmd; __pas_agent_precmd\nsetopt no_err_exit; codex --direct; echo \"status $?\"; echo \"prompt ${PAS_AGENT_PROMPT-unset}\"",
        ),
        (
            "fish",
            FISH,
            "printf '%s\\n' $PAS_HOOK | source; rm -- $__pas_agent_bin\nemit fish_prompt; emit fish_prompt\ncodex --direct; echo \"status $status\"; set -q PAS_AGENT_PROMPT; or echo 'prompt unset'",
        ),
    ] {
        let dir = sb.tmp.path().join(format!("gone-{program}"));
        let (_, script) = hook_from_copy(&sb, &dir, program);
        let mut cmd = isolated(&sb, &require(program));
        cmd.env("PAS_HOOK", script).args(args).arg("-c").arg(body);
        let out = cmd.output().unwrap();
        let err = clean_stderr(&out);
        assert_eq!(err.matches("is gone").count(), 1, "{program}: {err}");
        assert_eq!(
            stdout(&out).lines().collect::<Vec<_>>(),
            ["stand-in codex --direct", "status 4", "prompt unset"],
            "{program}: {err}"
        );
        assert!(out.status.success(), "{program}");
    }
    assert!(
        sb.session().get("runs").is_none(),
        "nothing went through the launcher"
    );
}

/// The code block in docs/hooks.md whose first line is `first`.
pub fn documented(first: &str) -> String {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/hooks.md"))
        .expect("read docs/hooks.md");
    let mut block: Option<String> = None;
    for line in doc.lines() {
        match &mut block {
            None if line == first => block = Some(format!("{line}\n")),
            Some(b) if line.starts_with("```") => return b.clone(),
            Some(b) => b.push_str(&format!("{line}\n")),
            None => {}
        }
    }
    panic!("docs/hooks.md has no code block starting with {first:?}")
}

#[test]
fn the_documented_prompt_settings_show_session_text_and_never_run_it() {
    let sb = Sandbox::with_session();
    std::os::unix::fs::symlink(crate::common::bin(), sb.bin_dir.join("pas-agent")).unwrap();
    let evil = "%n\\w $(touch INJ1) `touch INJ2` \u{1b}[2J %F{red} ${HOME}";
    sb.ok(&["update", "--task", evil]);
    // What the prompt must show: the text as it is, cut to 32 characters.
    let shown: String = "%n\\w $(touch INJ1) `touch INJ2` ?[2J"
        .chars()
        .take(31)
        .collect();
    let cases = [
        (
            "bash",
            BASH_STRICT,
            format!(
                "PS1='base> '\n{}__pas_agent_precmd\nprintf '%s\\n' \"${{PS1@P}}\"",
                documented("# ~/.bashrc")
            ),
            format!("({shown}…) base> "),
        ),
        (
            "zsh",
            ZSH_STRICT,
            format!(
                "PROMPT='base> '\n{}__pas_agent_precmd\nprint -rP -- \"$PROMPT\"",
                documented("# ~/.zshrc")
            ),
            format!("({shown}…) base> "),
        ),
        (
            "fish",
            FISH,
            format!(
                "{}emit fish_prompt\nfish_right_prompt; echo",
                documented("# ~/.config/fish/config.fish")
            ),
            format!("({shown}…)"),
        ),
    ];
    for (program, args, body, want) in cases {
        let out = shell(&sb, program, args, &body);
        assert_eq!(
            quiet_success(&out).trim_end_matches('\n'),
            want,
            "{program}"
        );
        for f in ["INJ1", "INJ2"] {
            assert!(!sb.path(f).exists(), "{program} ran text from the session");
        }
    }
    // Outside a session the documented prompts are unchanged.
    let out = shell(
        &sb,
        "bash",
        BASH_STRICT,
        &format!(
            "cd /\nPS1='base> '\n{}__pas_agent_precmd\nprintf '%s\\n' \"${{PS1@P}}\"",
            documented("# ~/.bashrc")
        ),
    );
    assert_eq!(quiet_success(&out), "base> \n");
}

/// Runs the binary with the isolated environment (its stamps under the sandbox); asserts exit
/// 0 and an empty stderr; returns stdout.
fn prompt(sb: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> String {
    let mut cmd = isolated(sb, &crate::common::bin());
    cmd.args(args).envs(env.iter().copied());
    let out = cmd.output().unwrap();
    assert!(
        out.status.success() && stderr(&out).is_empty(),
        "{args:?}: {out:?}"
    );
    stdout(&out)
}

#[test]
fn prompt_prints_nothing_outside_a_session_and_a_marker_for_a_damaged_one() {
    let sb = Sandbox::repo();
    assert_eq!(prompt(&sb, &["prompt"], &[]), "");
    assert_eq!(
        prompt(&sb, &["prompt", "--hook", "77", "--notice"], &[]),
        ""
    );
    sb.ok(&["init", "--task", "t"]);
    sb.write(".pas-agent/session.json", "{\"id\": \u{1b}[2J");
    assert_eq!(prompt(&sb, &["prompt"], &[]), "session damaged\n");
    sb.write(".pas-agent/session.json", r#"{"schema_version": 9}"#);
    assert_eq!(
        prompt(&sb, &["prompt"], &[]),
        "session from a newer pas-agent\n"
    );
    let out = prompt(&sb, &["prompt", "--hook", "77", "--notice"], &[]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "session from a newer pas-agent");
    assert!(lines[1].contains("cannot be read"), "{out}");
    assert_eq!(
        lines[3..],
        [sb.path(".pas-agent/session.json").to_str().unwrap()]
    );
}

#[test]
fn prompt_shows_progress_stale_mark_and_live_run_without_taking_the_lock() {
    let sb = Sandbox::with_session();
    sb.ok(&[
        "update",
        "--completed",
        "a",
        "--remaining",
        "b",
        "--remaining",
        "c",
    ]);
    assert_eq!(prompt(&sb, &["prompt"], &[]), "Build the thing 1/3\n");
    sb.ok(&["checkpoint", "here"]);
    assert_eq!(prompt(&sb, &["prompt"], &[]), "Build the thing 1/3\n");
    sb.git(&["commit", "-q", "--allow-empty", "-m", "moved on"]);
    assert_eq!(
        prompt(&sb, &["prompt"], &[]),
        "Build the thing 1/3 · stale\n"
    );
    sb.ok(&["checkpoint", "again"]);
    assert_eq!(
        prompt(&sb, &["prompt", "--width", "9"], &[]),
        "Build th… 1/3\n"
    );
    sb.ok(&["update", "--next", "more"]);
    assert_eq!(
        prompt(&sb, &["prompt"], &[]),
        "Build the thing 1/3 · stale\n",
        "task moved on"
    );
    sb.ok(&["checkpoint", "third"]);
    // A run the launcher is in the middle of, while another process holds the session lock.
    let mut s = sb.session();
    s["runs"] = serde_json::json!([{
        "id": "8d1f4f43-8c43-4c43-8c43-8c438c438c43", "agent": "codex", "argv": ["codex"],
        "cwd": sb.work.to_str().unwrap(), "state": "running", "started_at": "2026-09-17T04:30:00Z"
    }]);
    sb.write(
        ".pas-agent/session.json",
        serde_json::to_vec_pretty(&s).unwrap(),
    );
    let locked = sb.tmp.path().join("locked");
    let holder = Command::new(require("flock"))
        .arg(sb.path(".pas-agent/session.lock"))
        .args(["-c", &format!("touch '{}'; sleep 60", locked.display())])
        .spawn()
        .unwrap();
    let _holder = KillOnDrop(holder);
    while !locked.exists() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(
        prompt(&sb, &["prompt"], &[]),
        "Build the thing 1/3 · codex running\n"
    );
}

struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn mtime(p: &Path) -> std::time::SystemTime {
    std::fs::metadata(p).unwrap().modified().unwrap()
}

#[test]
fn prompt_hook_protocol_stamps_the_newest_watched_file() {
    let sb = Sandbox::with_session();
    sb.ok(&["update", "--next", "Write \u{7}tests"]);
    let out = prompt(&sb, &["prompt", "--hook", "4242", "--notice"], &[]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "Build the thing");
    assert_eq!(lines[1], "pas-agent: Build the thing · next: Write ?tests");
    let stamp = PathBuf::from(lines[2]);
    assert_eq!(stamp, sb.home.join("run/pas-agent/prompt/4242"));
    let session = sb.path(".pas-agent/session.json");
    assert_eq!(
        lines[3..],
        [session.to_str().unwrap()],
        "no checkpoint: only the session"
    );
    assert_eq!(mtime(&stamp), mtime(&session));
    let notice_off = prompt(
        &sb,
        &["prompt", "--hook", "4242", "--notice"],
        &[("PAS_AGENT_NOTICE", "0")],
    );
    assert_eq!(notice_off.lines().nth(1), Some(""), "PAS_AGENT_NOTICE=0");

    // With a checkpoint the prompt depends on HEAD: git's files are watched too.
    sb.ok(&["checkpoint", "c"]);
    let out = prompt(&sb, &["prompt", "--hook", "4242"], &[]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[1], "", "no notice without --notice");
    let git = sb.work.join(".git");
    let want = [session.clone(), git.join("HEAD"), git.join("logs/HEAD")];
    let want: Vec<&str> = want.iter().map(|p| p.to_str().unwrap()).collect();
    // Then the branch's ref, its directories, packed-refs (field_runs.rs checks every layout).
    assert_eq!(lines[3..6], want[..]);
    let newest = lines[3..]
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.modified().unwrap())
        .max()
        .unwrap();
    assert_eq!(mtime(&stamp), newest);
    // A commit makes git's log newer than the stamp: what the hook's `-nt` test looks for.
    sb.git(&["commit", "-q", "--allow-empty", "-m", "x"]);
    assert!(mtime(&git.join("logs/HEAD")) > mtime(&stamp));
    // And an update makes the session newer.
    prompt(&sb, &["prompt", "--hook", "4242"], &[]);
    assert!(mtime(&session) <= mtime(&stamp));
    sb.ok(&["update", "--next", "again"]);
    assert!(mtime(&session) > mtime(&stamp));
}

#[test]
fn stamps_of_exited_shells_are_removed_when_a_new_shell_starts() {
    let sb = Sandbox::with_session();
    let dir = sb.home.join("run/pas-agent/prompt");
    std::fs::create_dir_all(&dir).unwrap();
    let mut gone = Command::new("true").spawn().unwrap();
    let gone_pid = gone.id();
    gone.wait().unwrap();
    let alive = std::process::id();
    for name in [gone_pid.to_string(), alive.to_string(), "notes".to_string()] {
        std::fs::write(dir.join(name), "").unwrap();
    }
    let mut cmd = isolated(&sb, &crate::common::bin());
    assert!(
        cmd.args(["prompt", "--hook", "1"])
            .output()
            .unwrap()
            .status
            .success()
    );
    assert!(
        !dir.join(gone_pid.to_string()).exists(),
        "stamp of an exited shell"
    );
    assert!(dir.join(alive.to_string()).exists() && dir.join("notes").exists());
    assert!(dir.join("1").exists());
}

/// A stand-in for starship's prompt binary: prints what a prompt module reading the environment
/// would see, and the status it was given.
const FAKE_STARSHIP: &str = "printf '<%s|%s>' \"${PAS_AGENT_PROMPT-none}\" \"$2\"";

/// How starship hooks into bash when PROMPT_COMMAND is a string (starship's `init bash`, written
/// again for this test): it keeps the old value in
/// STARSHIP_PROMPT_COMMAND and evaluates it in its own prompt command, then draws the prompt.
const FAKE_STARSHIP_BASH: &str = r#"
starship_precmd() {
    STARSHIP_CMD_STATUS=$?
    if [[ -n "${STARSHIP_PROMPT_COMMAND-}" ]]; then eval "$STARSHIP_PROMPT_COMMAND"; fi
    PS1="$(starship prompt --status="$STARSHIP_CMD_STATUS")"
}
if [[ -z "${PROMPT_COMMAND-}" ]]; then
    PROMPT_COMMAND=starship_precmd
elif [[ "$PROMPT_COMMAND" != *starship_precmd* ]]; then
    STARSHIP_PROMPT_COMMAND=$PROMPT_COMMAND
    PROMPT_COMMAND=starship_precmd
fi
"#;

/// starship in zsh: a precmd hook saves the status, and the prompt runs `starship prompt`.
const FAKE_STARSHIP_ZSH: &str = r#"
autoload -Uz add-zsh-hook
starship_precmd() { typeset -g STARSHIP_CMD_STATUS=$? }
add-zsh-hook precmd starship_precmd
setopt prompt_subst
PROMPT='$(starship prompt --status=$STARSHIP_CMD_STATUS)'
"#;

#[test]
fn a_prompt_drawn_by_another_program_sees_the_new_text_at_once_in_either_load_order() {
    let sb = Sandbox::with_session();
    sb.stand_in("starship", FAKE_STARSHIP);
    // One prompt after a command that failed with 5, then one after `pas-agent update`.
    let bash_prompt = "set +e; (exit 5); eval \"$PROMPT_COMMAND\"; printf '%s\\n' \"$PS1\"\n\
                       \"$PAS\" update --task Changed >/dev/null; eval \"$PROMPT_COMMAND\"; printf '%s\\n' \"$PS1\"\n\
                       \"$PAS\" update --task 'Build the thing' >/dev/null";
    // zsh gives every precmd hook the user's $? (callhookfunc), and so does this loop.
    let zsh_prompt = "setopt no_err_exit; ret() { return $1 }\n\
                      precmd() { local s=$? f; for f in \"${precmd_functions[@]}\"; do ret $s; $f; done }\n\
                      (exit 5); precmd; print -rP -- \"$PROMPT\"\n\
                      \"$PAS\" update --task Changed >/dev/null\n\
                      precmd; print -rP -- \"$PROMPT\"\n\
                      \"$PAS\" update --task 'Build the thing' >/dev/null";
    // fish itself keeps $status across fish_prompt handlers (the tmux tests see it); `emit`
    // here does not, so this run only checks the text.
    let fish_prompt = "function fish_prompt; starship prompt --status=$status; end\n\
                       emit fish_prompt; fish_prompt; echo\n\
                       $PAS update --task Changed >/dev/null; emit fish_prompt; fish_prompt; echo\n\
                       $PAS update --task 'Build the thing' >/dev/null";
    let hook_bash = "eval \"$PAS_HOOK\"";
    let hook_fish = "printf '%s\\n' $PAS_HOOK | source";
    for (program, args, first, second, prompt, want_status) in [
        (
            "bash",
            BASH_STRICT,
            hook_bash,
            FAKE_STARSHIP_BASH,
            bash_prompt,
            "--status=5",
        ),
        (
            "bash",
            BASH_STRICT,
            FAKE_STARSHIP_BASH,
            hook_bash,
            bash_prompt,
            "--status=5",
        ),
        (
            "zsh",
            ZSH_STRICT,
            hook_bash,
            FAKE_STARSHIP_ZSH,
            zsh_prompt,
            "--status=5",
        ),
        (
            "zsh",
            ZSH_STRICT,
            FAKE_STARSHIP_ZSH,
            hook_bash,
            zsh_prompt,
            "--status=5",
        ),
        ("fish", FISH, hook_fish, "", fish_prompt, "--status=0"),
    ] {
        let body = format!("{first}\n{second}\n{prompt}");
        let out = quiet_success(&shell(&sb, program, args, &body));
        assert_eq!(
            out.lines().collect::<Vec<_>>(),
            [
                format!("<Build the thing|{want_status}>"),
                "<Changed|--status=0>".to_string()
            ],
            "{program}: {first:.20} first"
        );
    }
}

#[test]
fn wrappers_copied_into_a_non_interactive_shell_pass_straight_through() {
    // Some agents copy the user's functions (not the prompt hooks) into the non-interactive
    // shells they run tools in. There, `codex` must be codex.
    let sb = Sandbox::with_session();
    sb.stand_in("codex", "echo \"stand-in codex $*\"; exit 4");
    let copied = quiet_success(&shell(
        &sb,
        "bash",
        BASH_STRICT,
        "eval \"$PAS_HOOK\"; declare -f __pas_agent_wrap __pas_agent_find __pas_agent_gone codex",
    ));
    assert!(copied.contains("codex ()"), "{copied}");
    let snapshot = sb.tmp.path().join("snapshot.sh");
    std::fs::write(&snapshot, copied).unwrap();
    let mut cmd = isolated(&sb, &require("bash"));
    cmd.args(["--norc", "--noprofile", "-u", "-c"]).arg(format!(
        "source '{}'; codex --tool; echo \"status $?\"",
        snapshot.display()
    ));
    let out = quiet_success(&cmd.output().unwrap());
    assert_eq!(out, "stand-in codex --tool\nstatus 4\n");
    assert!(sb.session().get("runs").is_none());
}

#[test]
fn a_linked_worktree_watches_its_own_head() {
    let sb = Sandbox::repo();
    sb.git(&["worktree", "add", "-q", "-b", "side", "../side"]);
    let side = sb.work.parent().unwrap().join("side");
    let run = |args: &[&str]| {
        let mut cmd = isolated(&sb, &crate::common::bin());
        let out = cmd.current_dir(&side).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        stdout(&out)
    };
    run(&["init", "--task", "Side work"]);
    run(&["checkpoint", "start"]);
    let out = run(&["prompt", "--hook", "99"]);
    let lines: Vec<&str> = out.lines().collect();
    let git_dir = sb.work.join(".git/worktrees/side");
    let want = [
        side.join(".pas-agent/session.json"),
        git_dir.join("HEAD"),
        git_dir.join("logs/HEAD"),
    ];
    let want: Vec<&str> = want.iter().map(|p| p.to_str().unwrap()).collect();
    assert_eq!(lines[0], "Side work");
    assert_eq!(lines[3..6], want[..]);
    let stamp = PathBuf::from(lines[2]);
    let mut git = sb.git_cmd();
    let commit = git
        .current_dir(&side)
        .args(["commit", "-q", "--allow-empty", "-m", "x"]);
    assert!(commit.status().unwrap().success());
    assert!(mtime(&git_dir.join("logs/HEAD")) > mtime(&stamp));
    assert_eq!(run(&["prompt"]), "Side work · stale\n");
}
