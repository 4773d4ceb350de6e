//! The hooks in real interactive shells: bash, zsh and fish started inside tmux (each test with
//! its own server socket and HOME), loaded from an rc file exactly as docs/hooks.md says, and
//! driven by typing. Waits poll the screen with a generous limit; nothing is timed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::{Sandbox, make_executable};
use crate::hooks::{isolated, require};

/// How long to wait for something to appear on the screen before failing.
const PATIENCE: Duration = Duration::from_secs(60);

/// One tmux server with one pane running a shell.
struct Term<'a> {
    sb: &'a Sandbox,
    socket: PathBuf,
}

impl<'a> Term<'a> {
    /// Starts `argv` in a new tmux server, in the work directory, with the sandbox environment
    /// plus `env`.
    fn start(sb: &'a Sandbox, argv: &[&str], env: &[(&str, String)]) -> Term<'a> {
        let tmux = require("tmux");
        let socket = sb.tmp.path().join("tmux.sock");
        let conf = sb.tmp.path().join("tmux.conf");
        std::fs::write(
            &conf,
            "set -g remain-on-exit on\nset -g history-limit 20000\n",
        )
        .unwrap();
        let mut cmd = isolated(sb, &tmux);
        cmd.env("TERM", "xterm-256color")
            .args(["-S"])
            .arg(&socket)
            .arg("-f")
            .arg(&conf)
            .args(["new-session", "-d", "-x", "200", "-y", "50", "-c"])
            .arg(&sb.work)
            .arg("--")
            .args(argv);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("start tmux");
        assert!(
            out.status.success(),
            "tmux: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Term { sb, socket }
    }

    fn tmux(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(require("tmux"));
        cmd.arg("-S").arg(&self.socket).args(args);
        cmd.output().expect("run tmux")
    }

    /// Types `line` and presses Enter.
    fn type_line(&self, line: &str) {
        if !line.is_empty() {
            assert!(
                self.tmux(&["send-keys", "-t", "0", "-l", line])
                    .status
                    .success()
            );
        }
        assert!(
            self.tmux(&["send-keys", "-t", "0", "Enter"])
                .status
                .success()
        );
    }

    /// Everything the pane showed so far, wrapped lines joined, trailing blanks and empty
    /// lines removed.
    fn screen(&self) -> String {
        let out = self.tmux(&["capture-pane", "-p", "-J", "-S", "-", "-t", "0"]);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim_end())
            .collect::<Vec<_>>()
            .join("\n")
            .trim_end()
            .to_string()
    }

    /// Waits until `done` holds for the screen; returns the screen.
    #[track_caller]
    fn wait(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            if start.elapsed() > PATIENCE {
                panic!("timed out waiting for {what}; the screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the screen ends with `text` (a prompt, typically).
    #[track_caller]
    fn wait_end(&self, text: &str) -> String {
        self.wait(&format!("the screen to end with {text:?}"), |s| {
            s.ends_with(text)
        })
    }

    /// Types `line` and waits for its output `text` followed by a fresh `prompt`.
    #[track_caller]
    fn run(&self, line: &str, text: &str, prompt: &str) -> String {
        let before = self.screen().matches(text).count();
        self.type_line(line);
        self.wait(&format!("{text:?} after `{line}`, then {prompt:?}"), |s| {
            s.matches(text).count() > before && s.ends_with(prompt)
        })
    }

    /// The `prompt` calls the hook made so far (the stand-in binary logs them).
    fn prompt_calls(&self) -> usize {
        std::fs::read_to_string(self.sb.tmp.path().join("calls.log"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("prompt "))
            .count()
    }
}

impl Drop for Term<'_> {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

/// What differs between the shells in the shared scenario.
struct Spec {
    name: &'static str,
    /// The rc file's text: prompt set-up, then the documented hook line; `{LOGGED}` is the
    /// quoted path of the logging stand-in for the binary.
    rc: &'static str,
    /// `echo "status=<last status>"` in this shell.
    show_status: &'static str,
    /// Prints `prompt=<PAS_AGENT_PROMPT>`, or `prompt=unset`.
    show_prompt: &'static str,
}

const BASH: Spec = Spec {
    name: "bash",
    rc: "PS1='[${PAS_AGENT_PROMPT-}]> '\neval \"$(pas-agent hook bash)\"\n__pas_agent_bin={LOGGED}\n",
    show_status: "echo \"status=$?\"",
    show_prompt: "echo \"prompt=${PAS_AGENT_PROMPT-unset}\"",
};

const ZSH: Spec = Spec {
    name: "zsh",
    rc: "setopt prompt_subst\nunsetopt prompt_sp\nPROMPT='[${PAS_AGENT_PROMPT//\\%/%%}]> '\n\
         eval \"$(pas-agent hook zsh)\"\n__pas_agent_bin={LOGGED}\n",
    show_status: "echo \"status=$?\"",
    show_prompt: "echo \"prompt=${PAS_AGENT_PROMPT-unset}\"",
};

const FISH: Spec = Spec {
    name: "fish",
    rc: "set -g fish_greeting\nfunction fish_prompt; printf '[%s]> ' \"$PAS_AGENT_PROMPT\"; end\n\
         pas-agent hook fish | source\nset -g __pas_agent_bin {LOGGED}\n",
    show_status: "echo \"status=$status\"",
    show_prompt: "set -q PAS_AGENT_PROMPT; and echo \"prompt=$PAS_AGENT_PROMPT\"; or echo prompt=unset",
};

/// A sandbox with a session, `pas-agent` on PATH, a stand-in `codex` that exits 3, and a
/// logging stand-in for the binary the hook calls. Returns it and the rc file's path.
fn world(spec: &Spec) -> (Sandbox, PathBuf) {
    let sb = Sandbox::with_session();
    std::os::unix::fs::symlink(crate::common::bin(), sb.bin_dir.join("pas-agent")).unwrap();
    sb.stand_in("codex", "echo \"stand-in codex $*\"; exit 3");
    let logged = sb.tmp.path().join("logged-pas-agent");
    std::fs::write(
        &logged,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
            sb.tmp.path().join("calls.log").display(),
            crate::common::bin().display()
        ),
    )
    .unwrap();
    make_executable(&logged);
    let quoted = format!("'{}'", logged.display());
    let rc = sb.home.join(format!("rc.{}", spec.name));
    std::fs::write(&rc, spec.rc.replace("{LOGGED}", &quoted)).unwrap();
    (sb, rc)
}

fn start<'a>(sb: &'a Sandbox, spec: &Spec, rc: &Path) -> Term<'a> {
    let rc = rc.to_str().unwrap();
    match spec.name {
        "bash" => Term::start(
            sb,
            &[
                require("bash").to_str().unwrap(),
                "--noprofile",
                "--rcfile",
                rc,
                "-i",
            ],
            &[],
        ),
        "zsh" => {
            std::fs::copy(rc, sb.home.join(".zshrc")).unwrap();
            let zdotdir = sb.home.to_string_lossy().into_owned();
            Term::start(
                sb,
                &[require("zsh").to_str().unwrap(), "-d", "-i"],
                &[("ZDOTDIR", zdotdir)],
            )
        }
        _ => Term::start(
            sb,
            &[
                require("fish").to_str().unwrap(),
                "--no-config",
                "-i",
                "-C",
                &format!("source '{rc}'"),
            ],
            &[],
        ),
    }
}

/// The shared scenario: `$?` survives, the notice comes once per entry, the prompt text
/// follows `pas-agent update` with exactly one process and none when nothing changed, the
/// stand-in agent typed inside the session is recorded as a run, and not when bypassed,
/// switched off or typed outside the session.
fn scenario(spec: &Spec) {
    let (sb, rc) = world(spec);
    let term = start(&sb, spec, &rc);
    let notice = "pas-agent: Build the thing · no next action";
    let screen = term.wait(&format!("{} to start with the notice", spec.name), |s| {
        s.contains(notice) && s.ends_with("[Build the thing]>")
    });
    assert_eq!(screen.matches(notice).count(), 1, "{screen}");
    let prompt = "[Build the thing]>";

    // $? is the failing command's, after the hook ran for the prompt in between.
    term.type_line("false");
    term.run(spec.show_status, "status=1", prompt);

    // Nothing changed: prompts come and go without starting pas-agent.
    let calls = term.prompt_calls();
    assert!(calls >= 1, "the first prompt asked pas-agent");
    for _ in 0..3 {
        term.type_line("");
    }
    term.run("echo quiet-mark", "quiet-mark", prompt);
    assert_eq!(
        term.prompt_calls(),
        calls,
        "no process when nothing changed"
    );

    // The session changed: one call, and the prompt shows the new text.
    term.type_line("pas-agent update --completed one --remaining two");
    let prompt = "[Build the thing 1/2]>";
    term.wait_end(prompt);
    term.run(spec.show_prompt, "prompt=Build the thing 1/2", prompt);
    assert_eq!(
        term.prompt_calls(),
        calls + 1,
        "one process when the session changed"
    );

    // A known agent typed inside the session goes through `pas-agent run`.
    term.run(
        "codex --flag 'two words'",
        "stand-in codex --flag two words",
        prompt,
    );
    term.run(spec.show_status, "status=3", prompt);
    let runs = sb.session()["runs"].clone();
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
    assert_eq!(runs[0]["agent"], "codex");
    assert_eq!(
        runs[0]["argv"],
        serde_json::json!(["codex", "--flag", "two words"])
    );
    assert_eq!(runs[0]["exit_code"], 3);
    assert_eq!(runs[0]["state"], "finished");
    assert_eq!(runs[0]["cwd"], sb.work.to_str().unwrap());

    // Bypassed, or switched off: the agent runs, unrecorded.
    term.run("command codex --bypass", "stand-in codex --bypass", prompt);
    term.run(
        "PAS_AGENT_WRAP=0 codex --off",
        "stand-in codex --off",
        prompt,
    );

    // Outside the session: untouched, and no prompt text.
    term.run("cd ..", "cd ..", "[]>");
    term.run("codex --outside", "stand-in codex --outside", "[]>");
    term.run(spec.show_prompt, "prompt=unset", "[]>");
    assert_eq!(sb.session()["runs"].as_array().map(Vec::len), Some(1));

    // Back in: the notice once more, for this entry only.
    term.run("cd work", "pas-agent: Build the thing (1/2 done)", prompt);
    term.run("echo back", "back", prompt);
    let screen = term.screen();
    assert_eq!(
        screen.matches("pas-agent: Build the thing").count(),
        2,
        "one notice per entry:\n{screen}"
    );
}

#[test]
fn bash_interactive() {
    scenario(&BASH);
}

#[test]
fn zsh_interactive() {
    scenario(&ZSH);
}

#[test]
fn fish_interactive() {
    scenario(&FISH);
}

#[test]
fn bash_keeps_the_last_argument_and_survives_set_e() {
    let (sb, rc) = world(&BASH);
    let term = start(&sb, &BASH, &rc);
    let prompt = "[Build the thing]>";
    term.wait_end(prompt);
    term.type_line("echo one two");
    term.run("echo \"last=$_\"", "last=two", prompt);
    // Under `set -e` a prompt command that fails ends the shell: the hook must not fail after
    // a status that `set -e` itself let through.
    term.type_line("set -e");
    term.type_line("! true");
    term.run("echo survived", "survived", prompt);
}
