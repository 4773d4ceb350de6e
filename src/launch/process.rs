//! Process identity: a token naming one process's start, so that a later process that reuses
//! the pid is not mistaken for it.
//!
//! On Linux the token is `linux:<boot id>:<start time in clock ticks since boot>`, from
//! `/proc/sys/kernel/random/boot_id` and field 22 of `/proc/<pid>/stat`. That field is fixed
//! for the life of a process, unlike wall-clock start times, which drift by a second under NTP
//! (`launcher-store.md` §C2, citing sysinfo#680 and r-lib/ps#206); the boot id makes a record
//! from before a reboot never match. Elsewhere the token is absent and liveness is judged by
//! the pid alone.

/// The start token of `pid`, or `None` where it cannot be read.
pub fn start_token(pid: u32) -> Option<String> {
    #[cfg(target_os = "linux")]
    {
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name (field 2) may contain spaces and parentheses: parse after the last ')'.
        let rest = &stat[stat.rfind(')')? + 1..];
        // `rest` starts at field 3, so field 22 is the 20th word.
        let ticks = rest.split_whitespace().nth(19)?;
        Some(format!("linux:{}:{ticks}", boot.trim()))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        None
    }
}

/// This process's start token.
pub fn own_start_token() -> Option<String> {
    start_token(std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn own_token_is_stable_and_differs_from_a_child() {
        let a = own_start_token().unwrap();
        assert!(a.starts_with("linux:"));
        assert_eq!(Some(a.clone()), own_start_token());
        let mut child = std::process::Command::new("sleep")
            .arg("1")
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let b = start_token(child.id()).unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        assert_ne!(a, b);
    }
}
