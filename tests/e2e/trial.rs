//! Findings of a newcomer's trial of the ecosystem and handoff features: each input they
//! reported, as a test.

use crate::common::{Sandbox, stderr};

/// Zed reads the first of its own list of files that exists (`.rules`, `.cursorrules`,
/// `.clinerules`, …): a directory of that name (Cline's `.clinerules/`) is not one of them, so
/// the export goes on down the list, and `export --all` in such a project succeeds.
#[test]
fn a_directory_named_like_a_file_zed_reads_is_passed_over() {
    let sb = Sandbox::with_session();
    sb.write(".clinerules/style.md", "rule\n");
    let out = sb.run(&["export", "--to", "zed"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(sb.path("AGENTS.md").is_file());
    assert_eq!(sb.read(".clinerules/style.md"), "rule\n");
    let out = sb.run(&["export", "--all"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = sb.run(&["export", "--all", "--check"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// A rules file pas-agent owns whole (front matter and block) is, like a context file it
/// created, not work done since the last checkpoint.
#[test]
fn exporting_to_an_editors_rules_file_is_not_a_change_since_the_checkpoint() {
    let sb = Sandbox::with_session();
    sb.git(&["add", "-A"]);
    sb.git(&["commit", "-q", "-m", "start"]);
    sb.ok(&["checkpoint", "base"]);
    for to in [
        "cursor-rules",
        "windsurf",
        "kiro-steering",
        "continue",
        "copilot-instructions",
    ] {
        let out = sb.run(&["export", "--to", to]);
        assert!(out.status.success(), "{to}: {}", stderr(&out));
        let out = sb.run(&["status"]);
        assert!(
            !stderr(&out).contains("changed since the last checkpoint")
                && !String::from_utf8_lossy(&out.stdout)
                    .contains("changed since the last checkpoint"),
            "{to}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            stderr(&out)
        );
    }
    // Work is still seen.
    sb.write("src.rs", "fn main() {}\n");
    let out = sb.run(&["status"]);
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(all.contains("changed since the last checkpoint"), "{all}");
}
