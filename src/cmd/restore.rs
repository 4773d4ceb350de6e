//! `pas-agent restore [RUN… | --all] [--drop]`: bring frozen runs back, each through `pas-agent
//! run AGENT --resume <id>` in its own directory (docs/freeze.md). Inside tmux each comes back
//! in a window of its own tmux session, named as before; outside tmux one run comes back in
//! this terminal, and several are printed as commands to run.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::Utc;
use serde::Serialize;

use super::print_json;
use crate::cli::RestoreArgs;
use crate::error::{Error, Result};
use crate::launch::freeze::{self, Restore, Takeover, Token};
use crate::launch::reconcile;
use crate::launch::registry::{Entry, Registry, State};
use crate::launch::tmux::sh_word;
use crate::term::{clean, clean_line, note, warn};

/// `restore --json` (the list): `{"runs": [<registry entry as in runs --all --json>]}`.
#[derive(Serialize)]
struct ListJson {
    runs: Vec<serde_json::Value>,
}

pub fn run(args: RestoreArgs) -> Result<i32> {
    if let Some(socket) = &args.receive {
        return receive(socket);
    }
    let reg = Registry::open()?;
    // Runs whose launcher died (a crash, a reboot) become frozen here when their session is
    // known.
    reconcile::registry(&reg)?;
    let entries = reg.entries()?;
    if args.drop {
        return drop(&reg, &entries, &args.runs);
    }
    if args.runs.is_empty() && !args.all {
        return list(&entries, args.json);
    }
    let targets: Vec<Entry> = if args.all {
        entries
            .iter()
            .filter(|e| e.state == State::Frozen)
            .cloned()
            .collect()
    } else {
        super::freeze::select(&entries, &args.runs)?
    };
    if targets.is_empty() {
        crate::term::print("No frozen agent runs to restore on this machine.\n")?;
        return Ok(0);
    }
    let mut failed = false;
    let mut ready = Vec::new();
    for e in &targets {
        match Restore::of(e) {
            Ok(r) => ready.push(r),
            Err(why) => {
                failed = true;
                warn(&format!(
                    "not restored: {} ({}): {}",
                    e.short_id(),
                    clean_line(&e.agent),
                    why
                ));
            }
        }
    }
    #[cfg(unix)]
    if let Some((server, pane)) = crate::launch::tmux::here() {
        let ok = in_tmux(&reg, &server, &pane, ready)?;
        return Ok(if failed || !ok { 1 } else { 0 });
    }
    match ready.as_slice() {
        [] => Ok(1),
        [one] if !args.all => {
            let code = here(&reg, one)?;
            Ok(if failed { code.max(1) } else { code })
        }
        _ => {
            let mut out =
                String::from("Outside tmux, restore each run in a terminal of its own with:\n");
            for r in &ready {
                out.push_str(&format!(
                    "  pas-agent restore {}    # {} in {}\n",
                    r.entry.short_id(),
                    clean_line(&r.entry.agent),
                    clean_line(&r.entry.cwd)
                ));
            }
            crate::term::print(&out)?;
            Ok(if failed { 1 } else { 0 })
        }
    }
}

/// The frozen runs (and the live ones, for context), as `runs --all` shows them.
fn list(entries: &[Entry], json: bool) -> Result<i32> {
    let frozen: Vec<&Entry> = entries
        .iter()
        .filter(|e| e.state == State::Frozen)
        .collect();
    if json {
        let runs = frozen.iter().map(|e| super::runs::entry_json(e)).collect();
        print_json(&ListJson { runs })?;
        return Ok(0);
    }
    if frozen.is_empty() {
        crate::term::print("No frozen agent runs on this machine.\n")?;
        return Ok(0);
    }
    let now = Utc::now();
    let mut out = String::from("Frozen agent runs (`pas-agent restore <id>` or `--all`):\n");
    for e in frozen {
        let f = e.frozen.as_ref();
        let cause = f.map_or("", |f| {
            if f.cause == "crash" {
                " (its launcher died)"
            } else {
                ""
            }
        });
        let at = f.map_or(e.started_at, |f| f.at);
        out.push_str(&format!(
            "  {}  {}  frozen {}{cause}  {}  session {}\n",
            e.short_id(),
            clean_line(&e.agent),
            crate::display::ago(&at, &now),
            clean_line(&e.cwd),
            clean_line(e.agent_session_id.as_deref().unwrap_or("-")),
        ));
        if let Some(err) = &e.last_error {
            out.push_str(&format!("      last restore failed: {}\n", clean_line(err)));
        }
    }
    crate::term::print(&out)?;
    Ok(0)
}

/// `restore --drop RUN…`: forgets the entries, with their captures.
fn drop(reg: &Registry, entries: &[Entry], selectors: &[String]) -> Result<i32> {
    let targets = super::freeze::select(entries, selectors)?;
    let mut out = String::new();
    let mut code = 0;
    for e in targets {
        if e.state == State::Live {
            warn(&format!(
                "not dropped: {} is live (freeze it first, or let it finish)",
                e.short_id()
            ));
            code = 1;
            continue;
        }
        match reg.drop_entry(e.run_id)? {
            Some(_) => out.push_str(&format!(
                "Dropped {}: {} in {}\n",
                e.short_id(),
                clean_line(&e.agent),
                clean_line(&e.cwd)
            )),
            None => code = 1,
        }
    }
    crate::term::print(&out)?;
    Ok(code)
}

/// Says how a restore ended.
fn settled(r: &Restore, verified: bool) -> String {
    if verified {
        format!(
            "restore of {} verified: {} is in session {}",
            r.entry.short_id(),
            r.agent.name,
            r.session_id
        )
    } else {
        let kept = r
            .entry
            .frozen
            .as_ref()
            .and_then(|f| f.capture.as_deref())
            .map(|c| format!("; the frozen capture is kept in {}", clean(c)))
            .unwrap_or_default();
        format!(
            "restore of {} not verified: nothing showed that {} came up in session {} within {} s{kept}",
            r.entry.short_id(),
            r.agent.name,
            r.session_id,
            freeze::ack_grace().as_secs()
        )
    }
}

/// One run in this terminal: the launcher runs in this process, a thread watches the restore.
fn here(reg: &Registry, r: &Restore) -> Result<i32> {
    let (_, token) = match freeze::begin_restore(reg, r.entry.run_id)? {
        Ok(begun) => begun,
        Err(why) => {
            warn(&format!("not restored: {}: {why}", r.entry.short_id()));
            return Ok(1);
        }
    };
    note(&format!(
        "pas-agent: restoring {} ({} in {}, session {})",
        r.entry.short_id(),
        r.agent.name,
        clean(&r.entry.cwd),
        r.session_id
    ));
    let since = Utc::now();
    let running = Arc::new(AtomicBool::new(true));
    // `None`: no launcher took the run over; `Some(verdict)`: one did, and the restore was
    // (or could not be) verified.
    let watcher = {
        let (reg, r, token, running) =
            (reg.clone(), r.clone(), token.clone(), Arc::clone(&running));
        std::thread::spawn(move || -> Option<Result<bool>> {
            let taken = freeze::wait_takeover(&reg, &token, freeze::TAKEOVER_TIMEOUT, || {
                running.load(Ordering::Relaxed)
            });
            match taken {
                Ok(Some(Takeover::Taken(new))) => Some(freeze::verify(
                    &reg,
                    new.run_id,
                    &r,
                    since,
                    freeze::ack_grace(),
                )),
                _ => None,
            }
        })
    };
    let mut argv = vec!["pas-agent".to_string()];
    argv.extend(r.run_args(Some(&token)));
    let code = match std::env::set_current_dir(&r.cwd) {
        Ok(()) => match crate::cli::parse_from(&argv) {
            Ok(cli) => match cli.command {
                crate::cli::Command::Run(a) => super::run::run(a),
                _ => Err(Error::Message("not a run".into())),
            },
            Err(e) => Err(Error::Usage(e.to_string())),
        },
        Err(e) => Err(Error::io(&r.cwd, e)),
    };
    running.store(false, Ordering::Relaxed);
    match watcher.join().ok().flatten() {
        Some(Ok(verified)) => note(&format!("pas-agent: {}", settled(r, verified))),
        Some(Err(e)) => warn(&format!(
            "the restore of {} could not be checked: {e}",
            r.entry.short_id()
        )),
        None => {
            let why = match &code {
                Err(e) => e.to_string(),
                Ok(c) => format!("its launcher exited {c} before it took the run over"),
            };
            freeze::abort_restore(reg, &token, &why, || {})?;
            warn(&format!(
                "not restored: {}: {}; it is frozen still",
                r.entry.short_id(),
                clean_line(&why)
            ));
        }
    }
    code
}

/// A restore started in a tmux window, waiting to be settled.
#[cfg(unix)]
struct Started {
    restore: Restore,
    token: Token,
    pane: String,
    place: String,
}

/// Every run in a window of its own tmux session, as before; returns whether all came back.
#[cfg(unix)]
fn in_tmux(
    reg: &Registry,
    server: &crate::launch::tmux::Server,
    pane: &str,
    ready: Vec<Restore>,
) -> Result<bool> {
    let current = server.place(pane).and_then(|(p, _)| p.session);
    let exe = std::env::current_exe().map_err(|e| Error::io("the pas-agent executable", e))?;
    let env: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| !freeze::WINDOW_OWN.contains(&k.as_str()))
        .collect();
    let since = Utc::now();
    let mut all_ok = true;
    let mut started = Vec::new();
    for r in ready {
        let (_, token) = match freeze::begin_restore(reg, r.entry.run_id)? {
            Ok(begun) => begun,
            Err(why) => {
                warn(&format!("not restored: {}: {why}", r.entry.short_id()));
                all_ok = false;
                continue;
            }
        };
        let fail = |why: String, pane: Option<&str>| -> Result<()> {
            freeze::abort_restore(reg, &token, &why, || {
                if let Some(p) = pane {
                    server.kill_pane(p);
                }
            })?;
            warn(&format!(
                "not restored: {}: {}; it is frozen still",
                r.entry.short_id(),
                clean_line(&why)
            ));
            Ok(())
        };
        let handoff = match freeze::Handoff::new() {
            Ok(h) => h,
            Err(e) => {
                fail(format!("no socket for the window: {e}"), None)?;
                all_ok = false;
                continue;
            }
        };
        let (session, window) = r.window(current.as_deref());
        let command = format!(
            "{} restore --receive {}",
            sh_word(&exe.to_string_lossy()),
            sh_word(&handoff.path().to_string_lossy())
        );
        let new_pane =
            match server.open_window(&session, &window, &r.cwd, r.entry.terminal, &command) {
                Ok(p) => p,
                Err(why) => {
                    fail(why, None)?;
                    all_ok = false;
                    continue;
                }
            };
        let handed = freeze::Handed {
            cwd: r.cwd.to_string_lossy().into_owned(),
            args: r.run_args(Some(&token)),
            env: env.clone(),
        };
        if let Err(why) = handoff.send(&handed, freeze::TAKEOVER_TIMEOUT) {
            fail(why, Some(&new_pane))?;
            all_ok = false;
            continue;
        }
        started.push(Started {
            place: format!("tmux session {session}, window {window}"),
            restore: r,
            token,
            pane: new_pane,
        });
    }
    // Each launcher takes its run over, then each restore is watched for its evidence.
    let mut taken = Vec::new();
    for s in started {
        let dead = || server.pane_dead(&s.pane).unwrap_or(true);
        match freeze::wait_takeover(reg, &s.token, freeze::TAKEOVER_TIMEOUT, || !dead())? {
            Some(Takeover::Taken(new)) => {
                server.release(&s.pane);
                taken.push((s, new));
            }
            outcome => {
                let why = match outcome {
                    Some(Takeover::Failed(why)) => why,
                    _ => {
                        let screen = server.screen(&s.pane);
                        let last: Vec<&str> =
                            screen.lines().filter(|l| !l.trim().is_empty()).collect();
                        let tail = last[last.len().saturating_sub(3)..].join(" / ");
                        format!(
                            "its launcher did not take the run over within {} s{}",
                            freeze::TAKEOVER_TIMEOUT.as_secs(),
                            if tail.is_empty() {
                                String::new()
                            } else {
                                format!(" (the window showed: {tail})")
                            }
                        )
                    }
                };
                freeze::abort_restore(reg, &s.token, &why, || server.kill_pane(&s.pane))?;
                warn(&format!(
                    "not restored: {}: {}; it is frozen still",
                    s.restore.entry.short_id(),
                    clean_line(&why)
                ));
                all_ok = false;
            }
        }
    }
    let grace = freeze::ack_grace();
    let verdicts: Vec<Result<bool>> = std::thread::scope(|scope| {
        let handles: Vec<_> = taken
            .iter()
            .map(|(s, new)| {
                scope.spawn(move || freeze::verify(reg, new.run_id, &s.restore, since, grace))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::Message("the check failed unexpectedly".into())))
            })
            .collect()
    });
    let mut out = String::new();
    for ((s, _), verdict) in taken.iter().zip(verdicts) {
        let verified = verdict?;
        out.push_str(&format!(
            "Restored {}: {} in {} ({}); {}\n",
            s.restore.entry.short_id(),
            s.restore.agent.name,
            clean_line(&s.restore.entry.cwd),
            clean_line(&s.place),
            settled(&s.restore, verified)
        ));
    }
    crate::term::print(&out)?;
    Ok(all_ok)
}

/// In a restored tmux window: takes the environment the restore hands over, and becomes that
/// run's launcher (`pas-agent -C <cwd> run …`).
fn receive(socket: &std::path::Path) -> Result<i32> {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let handed = freeze::receive(socket, Duration::from_secs(30)).map_err(Error::Message)?;
        let exe = std::env::current_exe().map_err(|e| Error::io("the pas-agent executable", e))?;
        let mut cmd = std::process::Command::new(exe);
        cmd.arg("-C")
            .arg(&handed.cwd)
            .args(&handed.args)
            .env_clear();
        for (k, v) in &handed.env {
            cmd.env(k, v);
        }
        for k in freeze::WINDOW_OWN {
            match std::env::var_os(k) {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        let err = cmd.exec();
        Err(Error::Message(format!(
            "the restored run could not be started: {err}"
        )))
    }
    #[cfg(not(unix))]
    {
        let _ = (socket, Duration::ZERO);
        Err(Error::Message(
            "restoring in tmux needs a Unix system".into(),
        ))
    }
}
