//! Formatting shared by terminal and Markdown output: times, durations, counts.

use chrono::{DateTime, Utc};

/// The repository's documentation folder on the web (Cargo.toml's `repository`, then
/// `docs/`): what help texts and hints point to. Every link the binary prints is one of these
/// constants, whole, so that tests/e2e/ecosystem.rs finds each in the binary and checks that
/// the file it names is in the tree.
pub const DOCS_URL: &str = concat!(env!("CARGO_PKG_REPOSITORY"), "/tree/main/docs/");

/// docs/teams.md on the web: committing the session, the merge driver, pruning.
pub const TEAMS_URL: &str = concat!(env!("CARGO_PKG_REPOSITORY"), "/blob/main/docs/teams.md");

/// `YYYY-MM-DD HH:MM UTC`, the original's minute precision.
pub fn minute(t: &DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M UTC").to_string()
}

/// `YYYY-MM-DD HH:MM:SS UTC`.
pub fn second(t: &DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// A duration in milliseconds as people say it: `850ms`, `12s`, `3m 05s`, `2h 10m`.
pub fn duration(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0 => format!("{ms}ms"),
        1..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// `1 file`, `2 files`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `120345` as `120,345`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// How long ago `t` was, relative to `now`: `just now`, `5m ago`, `3h ago`, `2d ago`.
pub fn ago(t: &DateTime<Utc>, now: &DateTime<Utc>) -> String {
    let s = (*now - *t).num_seconds().max(0);
    match s {
        0..=59 => "just now".into(),
        60..=3599 => format!("{}m ago", s / 60),
        3600..=86399 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(850), "850ms");
        assert_eq!(duration(12_400), "12s");
        assert_eq!(duration(185_000), "3m 05s");
        assert_eq!(duration(7_800_000), "2h 10m");
    }
}
