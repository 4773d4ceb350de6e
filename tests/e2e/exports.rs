//! Issue 13, items 4 and 5: export for CI and for every agent (`--check`, `--remove`, `--all`,
//! the agents whose rules are a directory of files with front matter), and captures that
//! replay (`capture.cast`, checked with asciinema's own parser) and read as the screen did
//! (`capture.txt`).

use std::process::Command;

use crate::common::{Sandbox, last_run};
use crate::launcher_support::{Tmux, read, sh_quote};

/// What `asciinema cat FILE` prints, or its error output. asciinema 2.2 opens `/dev/tty`, so
/// it runs under util-linux `script`, which gives it a terminal; its output goes to a file.
fn asciinema_cat(cast: &std::path::Path) -> Result<Vec<u8>, String> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = Command::new("script")
        .args(["-qec"])
        .arg(format!(
            "asciinema cat {} > {}",
            sh_quote(&cast.to_string_lossy()),
            sh_quote(&out.to_string_lossy())
        ))
        .arg("/dev/null")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("script (util-linux) runs");
    if run.status.success() {
        Ok(std::fs::read(out).unwrap())
    } else {
        Err(format!(
            "asciinema cat failed (is asciinema installed? apt-get install asciinema; .ci/run does): {}{}",
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr)
        ))
    }
}

// ---- Item 5: replayable, readable captures ----

/// A stand-in full-screen agent: a line on the primary screen, a redrawn menu on the
/// alternate screen (cleared between frames, as TUIs do), then a line after leaving it.
const FULL_SCREEN: &str = r#"printf 'starting up\r\n'
printf '\033[?1049h\033[H\033[2J'
printf 'frame 1 loading\033[H\033[2J'
printf '\033[2;3H\033[1mMenu\033[0m\033[4;3Hcafé ─ 😀'
printf '\033[4;8Hx'
sleep 0.3
printf '\033[?1049lgoodbye\r\n'
"#;

#[test]
fn a_full_screen_run_replays_in_asciinema_and_reads_as_the_screen() {
    let sb = Sandbox::with_session();
    sb.stand_in("fullscreen", FULL_SCREEN);
    let t = Tmux::start(&sb, &["run", "--", "fullscreen"], 91, 27);
    assert_eq!(t.exit_code(), 0);
    let run = last_run(&sb);
    let ansi = sb.path(run["capture"].as_str().expect("a pty run is captured"));
    let text = read(&ansi.with_extension("txt"));
    // What was on each screen as it was left, each line whole; not the first frame.
    assert_eq!(
        text,
        "[pas-agent: the full screen as the agent left it]\n  Menu\n\n  café x 😀\nstarting up\ngoodbye\n"
    );

    let cast_path = ansi.with_extension("cast");
    let cast = read(&cast_path);
    let header: serde_json::Value = serde_json::from_str(cast.lines().next().unwrap()).unwrap();
    assert_eq!(header["version"], 2);
    assert_eq!(
        (header["width"].as_u64(), header["height"].as_u64()),
        (Some(91), Some(27))
    );
    assert!(header["timestamp"].as_i64().is_some(), "{header}");
    // asciinema's own parser reads it and prints the output as recorded.
    let printed = asciinema_cat(&cast_path).unwrap();
    assert_eq!(printed, std::fs::read(&ansi).unwrap());
}

#[test]
fn a_resized_window_is_recorded_in_the_cast() {
    let sb = Sandbox::with_session();
    sb.stand_in(
        "waiter",
        r#"trap 'echo "resized to $(stty size)"' WINCH
echo ready
while :; do read -r line && [ "$line" = quit ] && exit 0; done"#,
    );
    let t = Tmux::start(&sb, &["run", "--", "waiter"], 80, 24);
    t.wait_screen("ready");
    t.resize(100, 30);
    t.wait_screen("resized to 30 100");
    t.keys(&["quit", "Enter"]);
    assert_eq!(t.exit_code(), 0);
    let run = last_run(&sb);
    let ansi = sb.path(run["capture"].as_str().unwrap());
    let cast = read(&ansi.with_extension("cast"));
    let events: Vec<serde_json::Value> = cast
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        events.iter().any(|e| e[1] == "r" && e[2] == "100x30"),
        "{cast}"
    );
    let printed = asciinema_cat(&ansi.with_extension("cast")).unwrap();
    assert!(String::from_utf8_lossy(&printed).contains("resized to 30 100"));
}
