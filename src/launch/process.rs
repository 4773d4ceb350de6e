//! Process identity and liveness: a token naming one process's start, so that a later process
//! that reuses the pid is not mistaken for it, and a tri-state verdict on whether a recorded
//! launcher still runs.
//!
//! Token shapes (opaque to everything but this module; stored in `launcher_started`):
//! - Linux: `linux:<boot id>:<start time in clock ticks since boot>@<host>`, from
//!   `/proc/sys/kernel/random/boot_id` and field 22 of `/proc/<pid>/stat`. That field is fixed
//!   for the life of a process, unlike wall-clock start times, which drift by a second under
//!   NTP (GuillaumeGomez/sysinfo#680, r-lib/ps#206); the boot id makes a
//!   record from before a reboot never match.
//! - Elsewhere: `start:<seconds since the epoch>@<host>`, from sysinfo, compared with a
//!   two-second tolerance (the same section: never compare those seconds exactly).
//!
//! Tokens written before the `@<host>` suffix existed are read as from this host.

use sysinfo::{Pid, ProcessRefreshKind, ProcessStatus, ProcessesToUpdate, System};

/// Whether a recorded process still runs. Only [`Liveness::Dead`] is proof; a record is never
/// closed on [`Liveness::Unknown`] ("fail closed").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    /// The same process (pid and start token) is running.
    Alive,
    /// The pid is gone, is a zombie, or belongs to a different process (another start token,
    /// or a record from an earlier boot of this host).
    Dead,
    /// Cannot tell: no pid or token, another host, or the process table is not readable.
    Unknown,
}

/// This host's name, as sysinfo reports it (empty when unknown).
fn host() -> String {
    System::host_name().unwrap_or_default()
}

#[cfg(target_os = "linux")]
fn boot_id() -> Option<String> {
    Some(
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .ok()?
            .trim()
            .to_string(),
    )
}

#[cfg(target_os = "linux")]
fn start_ticks(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces and parentheses: parse after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    // `rest` starts at field 3, so field 22 is the 20th word.
    Some(rest.split_whitespace().nth(19)?.to_string())
}

/// The start token of `pid`, or `None` where it cannot be read.
pub fn start_token(pid: u32) -> Option<String> {
    #[cfg(target_os = "linux")]
    {
        Some(format!(
            "linux:{}:{}@{}",
            boot_id()?,
            start_ticks(pid)?,
            host()
        ))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let secs = sysinfo_process(pid)?.start_time;
        Some(format!("start:{secs}@{}", host()))
    }
}

/// This process's start token.
pub fn own_start_token() -> Option<String> {
    start_token(std::process::id())
}

/// What sysinfo knows of one pid.
struct Seen {
    zombie: bool,
    #[cfg_attr(target_os = "linux", allow(dead_code))]
    start_time: u64,
}

fn sysinfo_process(pid: u32) -> Option<Seen> {
    let mut sys = System::new().ok()?;
    let pid = Pid::from_u32(pid);
    sys.refresh_processes_specifics(
        ProcessesToUpdate::Some(&[pid]),
        true,
        ProcessRefreshKind::nothing(),
    );
    sys.process(pid).map(|p| Seen {
        zombie: p.status() == ProcessStatus::Zombie,
        start_time: p.start_time(),
    })
}

/// `kill(pid, 0)`: `Some(false)` when the pid provably does not exist (ESRCH), `Some(true)`
/// when it exists (success or EPERM), `None` otherwise.
#[cfg(unix)]
fn pid_exists(pid: u32) -> Option<bool> {
    let pid = i32::try_from(pid).ok().filter(|p| *p > 0)?;
    // SAFETY: kill(2) with signal 0 only checks for existence and permission.
    let r = unsafe { libc::kill(pid, 0) };
    if r == 0 {
        return Some(true);
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::ESRCH) => Some(false),
        Some(libc::EPERM) => Some(true),
        _ => None,
    }
}

#[cfg(not(unix))]
fn pid_exists(_pid: u32) -> Option<bool> {
    None
}

/// A parsed token: `(kind, value, host)`; for Linux `value` is `boot:ticks`.
fn parse(token: &str) -> Option<(&str, &str, Option<&str>)> {
    let (body, host) = match token.rsplit_once('@') {
        Some((b, h)) => (b, Some(h)),
        None => (token, None),
    };
    let (kind, value) = body.split_once(':')?;
    Some((kind, value, host))
}

/// Judges whether the launcher recorded with `pid` and start `token` still runs.
///
/// Dead only on proof: the pid does not exist (sysinfo does not see it and `kill(pid, 0)`
/// says ESRCH), it is a zombie, its start token differs, or the token is from an earlier boot
/// of this host. A token from another host, a missing pid or token, or an unreadable process
/// table give [`Liveness::Unknown`].
pub fn liveness(pid: Option<u32>, token: Option<&str>) -> Liveness {
    let Some(pid) = pid else {
        return Liveness::Unknown;
    };
    let parsed = token.and_then(parse);
    if let Some((_, _, Some(h))) = parsed
        && h != host()
    {
        return Liveness::Unknown;
    }
    #[cfg(target_os = "linux")]
    if let Some(("linux", value, _)) = parsed
        && let (Some((boot, _)), Some(now)) = (value.split_once(':'), boot_id())
        && boot != now
    {
        return Liveness::Dead;
    }
    let Some(seen) = sysinfo_process(pid) else {
        return match pid_exists(pid) {
            Some(false) => Liveness::Dead,
            _ => Liveness::Unknown,
        };
    };
    if seen.zombie {
        return Liveness::Dead;
    }
    match parsed {
        #[cfg(target_os = "linux")]
        Some(("linux", value, _)) => match (value.split_once(':'), start_ticks(pid)) {
            (Some((_, ticks)), Some(now)) if ticks == now => Liveness::Alive,
            (Some(_), Some(_)) => Liveness::Dead,
            _ => Liveness::Unknown,
        },
        #[cfg(not(target_os = "linux"))]
        Some(("start", value, _)) => match value.parse::<u64>() {
            Ok(secs) if secs.abs_diff(seen.start_time) <= 2 => Liveness::Alive,
            Ok(_) => Liveness::Dead,
            Err(_) => Liveness::Unknown,
        },
        _ => Liveness::Unknown,
    }
}

/// The name and parent of `pid`: `(comm, ppid)`.
#[cfg(target_os = "linux")]
fn name_and_parent(pid: u32) -> Option<(String, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat.get(open + 1..close)?.to_string();
    // After the name: field 3 (state), then field 4 (ppid).
    let ppid = stat[close + 1..].split_whitespace().nth(1)?.parse().ok()?;
    Some((name, ppid))
}

#[cfg(not(target_os = "linux"))]
fn name_and_parent(pid: u32) -> Option<(String, u32)> {
    let mut sys = System::new().ok()?;
    let p = Pid::from_u32(pid);
    sys.refresh_processes_specifics(
        ProcessesToUpdate::Some(&[p]),
        true,
        ProcessRefreshKind::nothing(),
    );
    let process = sys.process(p)?;
    Some((
        process.name().to_string_lossy().into_owned(),
        process.parent()?.as_u32(),
    ))
}

/// This process's ancestors, parent first: `(pid, name)`, at most 32 of them, up to (not
/// including) pid 1. Empty where the process table cannot be read.
pub fn ancestors() -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let Some((_, mut pid)) = name_and_parent(std::process::id()) else {
        return out;
    };
    while pid > 1 && out.len() < 32 {
        let Some((name, parent)) = name_and_parent(pid) else {
            break;
        };
        out.push((pid, name));
        pid = parent;
    }
    out
}

/// Every process below `root` (not `root` itself), from each process's parent id in
/// `/proc/<pid>/stat` (Linux; empty elsewhere), children before their own children.
pub fn descendants(root: u32) -> Vec<u32> {
    let mut parent_of: Vec<(u32, u32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`; comm may hold spaces and parentheses: split after the
        // last `)`.
        let Some(ppid) = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        parent_of.push((pid, ppid));
    }
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for &(child, parent) in &parent_of {
            if parent == p && !out.contains(&child) {
                out.push(child);
                frontier.push(child);
            }
        }
    }
    out
}

/// Programs that stand between an agent and the hook it runs (shells, `env`, `timeout`): the
/// process that ran the hook is the first ancestor not named here.
const GO_BETWEENS: &[&str] = &[
    "sh",
    "bash",
    "dash",
    "zsh",
    "fish",
    "ksh",
    "ash",
    "busybox",
    "env",
    "timeout",
    "nice",
    "nohup",
    "cmd.exe",
    "pwsh",
    "powershell",
];

/// The process that ran this one through any shells in between (an agent running its hook),
/// as `(pid, start token)`: the first ancestor that is not a shell or a wrapper such as
/// `env`. `None` when none can be found.
pub fn runner() -> Option<(u32, Option<String>)> {
    let (pid, _) = ancestors()
        .into_iter()
        .find(|(_, name)| !GO_BETWEENS.contains(&name.as_str()))?;
    Some((pid, start_token(pid)))
}

/// Whether the process `pid`, started as `token`, is an ancestor of this one (the same pid
/// among the ancestors, and the same start when a token is given).
pub fn is_ancestor(pid: u32, token: Option<&str>) -> bool {
    ancestors().iter().any(|(p, _)| *p == pid)
        && token.is_none_or(|t| start_token(pid).as_deref() == Some(t))
}

/// The direct children of `pid` (Linux; empty elsewhere).
pub fn children(pid: u32) -> Vec<u32> {
    descendants(pid)
        .into_iter()
        .filter(|c| parent_of(*c) == Some(pid))
        .collect()
}

/// The parent of `pid`.
fn parent_of(pid: u32) -> Option<u32> {
    name_and_parent(pid).map(|(_, parent)| parent)
}

/// Whether `pid` exists and is not a zombie (Linux: from `/proc`; elsewhere `kill(pid, 0)`).
pub fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) if cfg!(target_os = "linux") => false,
        Err(_) => pid_exists(pid) == Some(true),
    }
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

    #[cfg(target_os = "linux")]
    #[test]
    fn a_child_sees_this_process_among_its_ancestors() {
        let me = std::process::id();
        let out = std::process::Command::new("sh")
            .args(["-c", "cat /proc/$$/stat"])
            .output()
            .unwrap();
        let stat = String::from_utf8_lossy(&out.stdout);
        let ppid: u32 = stat[stat.rfind(')').unwrap() + 1..]
            .split_whitespace()
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(ppid, me);
        let (_, parent) = name_and_parent(me).unwrap();
        assert!(ancestors().first().is_some_and(|(p, _)| *p == parent));
        assert!(is_ancestor(parent, start_token(parent).as_deref()));
        assert!(!is_ancestor(me, None), "a process is not its own ancestor");
    }

    #[test]
    fn liveness_of_self_children_and_impostors() {
        let me = std::process::id();
        let token = own_start_token();
        assert_eq!(liveness(Some(me), token.as_deref()), Liveness::Alive);
        assert_eq!(liveness(None, token.as_deref()), Liveness::Unknown);
        assert_eq!(liveness(Some(me), None), Liveness::Unknown);

        // A reaped child's pid is gone.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert_eq!(liveness(Some(pid), token.as_deref()), Liveness::Dead);

        // A zombie (exited, not yet reaped) is dead too.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert_eq!(liveness(Some(pid), token.as_deref()), Liveness::Dead);
        child.wait().unwrap();

        #[cfg(target_os = "linux")]
        {
            // This pid with another start time: reused.
            let t = token.clone().unwrap();
            let (body, host) = t.rsplit_once('@').unwrap();
            let (prefix, ticks) = body.rsplit_once(':').unwrap();
            let other = format!("{prefix}:{}@{host}", ticks.parse::<u64>().unwrap() + 1);
            assert_eq!(liveness(Some(me), Some(&other)), Liveness::Dead);
            // An earlier boot of this host.
            let boot = format!("linux:00000000-0000-0000-0000-000000000000:{ticks}@{host}");
            assert_eq!(liveness(Some(me), Some(&boot)), Liveness::Dead);
            // Another host: cannot tell.
            let far = format!("{body}@elsewhere.invalid");
            assert_eq!(liveness(Some(me), Some(&far)), Liveness::Unknown);
            // A token from before hosts were recorded reads as this host.
            assert_eq!(liveness(Some(me), Some(body)), Liveness::Alive);
        }
    }
}
