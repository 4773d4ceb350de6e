//! The output capture of a pseudo-terminal run, in `.pas-agent/runs/<run-id>/`:
//!
//! - `capture.ansi`: the bytes the agent wrote, escape sequences and all;
//! - `capture.cast`: the same output as an [asciicast v2] recording (a JSON header with the
//!   terminal's width, height and the start time, then one `[seconds, "o", text]` event per read
//!   and `[seconds, "r", "COLSxROWS"]` when the window is resized), which `asciinema play` replays
//!   and `asciinema cat` prints;
//! - `capture.txt`: what a person read on the screen. The output is played through a terminal
//!   emulator ([`avt`], the virtual terminal of asciinema's own player and CLI) of the run's
//!   window size; every line that scrolls off the top is written out as it goes (soft-wrapped
//!   rows joined, trailing blanks trimmed), then the final screen. A full-screen agent that
//!   redraws in place reads as its screens, not as fragments of its redraws. What an agent drew
//!   on the alternate screen (the full-screen mode that leaves no scrollback) is written as it
//!   was when the agent left that mode, after a `[pas-agent: …]` note line, and so is the
//!   alternate screen still shown when the output ends.
//!
//! All three stop at a size limit: [`DEFAULT_LIMIT`] bytes of agent output, or
//! `PAS_AGENT_CAPTURE_LIMIT` (bytes; 0 turns capturing off); `capture.txt` also stops at that many
//! bytes of text (and 4 KiB for the notes), since redraws that clear the screen can put more
//! text in scrollback than they cost in output. A note at the end of each file says where it was cut. The directory is created
//! 0700 and the files 0600 (captures can hold secrets the agent printed), and
//! `.pas-agent/.gitignore` lists `runs/`.
//!
//! Every file's content does not depend on how the output was cut into reads: a character
//! split between two reads waits for its other bytes (bytes that are not UTF-8 become U+FFFD in
//! the cast and the text, as a terminal shows them), and the emulator keeps its parser state
//! between reads.
//!
//! [asciicast v2]: https://docs.asciinema.org/manual/asciicast/v2/

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use avt::parser::{DecMode, Function};
use avt::{Line, Observation, Observer, Operation, ScreenKind, Terminal};

use crate::fsutil::{Named, WriteError, WriteGuard};

/// Environment variable: the capture limit in bytes.
pub const LIMIT_ENV: &str = "PAS_AGENT_CAPTURE_LIMIT";
/// Default capture limit: 32 MiB of agent output.
pub const DEFAULT_LIMIT: u64 = 32 * 1024 * 1024;
/// The capture directory of all runs, relative to the project root.
pub const RUNS_DIR: &str = ".pas-agent/runs";
/// Bytes of `capture.txt` allowed past the limit, so that the note of a cut output fits.
const TEXT_SLACK: u64 = 4096;
/// The note line put before the alternate screen's text in `capture.txt`.
pub const FULL_SCREEN_NOTE: &str = "[pas-agent: the full screen as the agent left it]";

/// The limit from [`LIMIT_ENV`], or the default; `None` when capturing is off.
pub fn limit() -> Option<u64> {
    let limit = std::env::var(LIMIT_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(DEFAULT_LIMIT);
    (limit > 0).then_some(limit)
}

/// Where a run's capture goes, relative to the project root: `(ansi, txt)`.
pub fn paths(run_id: &uuid::Uuid) -> (String, String) {
    let dir = format!("{RUNS_DIR}/{run_id}");
    (format!("{dir}/capture.ansi"), format!("{dir}/capture.txt"))
}

/// Where a run's asciicast recording goes, relative to the project root.
pub fn cast_path(run_id: &uuid::Uuid) -> String {
    format!("{RUNS_DIR}/{run_id}/capture.cast")
}

/// Turns output bytes into UTF-8 text, independently of how they are cut into pieces: the
/// start of a character whose other bytes have not arrived yet waits for the next piece, and
/// bytes that are not UTF-8 become U+FFFD (as a terminal shows them).
#[derive(Default)]
struct Utf8Joiner {
    /// The start of a multi-byte character whose remaining bytes have not arrived yet.
    pending: Vec<u8>,
}

/// How many bytes at the end of `bytes` start a UTF-8 character that is not complete yet
/// (0 to 3).
fn incomplete_tail(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let b = bytes[bytes.len() - back];
        if b & 0xC0 == 0x80 {
            continue; // a continuation byte: look further back for its lead
        }
        let needed = match b {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return 0, // ASCII or not a lead byte: nothing waits
        };
        return if back < needed { back } else { 0 };
    }
    0
}

impl Utf8Joiner {
    /// The text `bytes` complete (with any bytes held back from the previous piece).
    fn feed(&mut self, bytes: &[u8]) -> String {
        let mut joined;
        let all: &[u8] = if self.pending.is_empty() {
            bytes
        } else {
            joined = std::mem::take(&mut self.pending);
            joined.extend_from_slice(bytes);
            &joined
        };
        let keep = incomplete_tail(all);
        let (now, later) = all.split_at(all.len() - keep);
        let text = String::from_utf8_lossy(now).into_owned();
        self.pending = later.to_vec();
        text
    }

    /// Drops an unfinished character (the output was cut inside it, or ended there).
    fn drop_pending(&mut self) {
        self.pending.clear();
    }
}

/// Collects the text a person reads: lines leaving the primary screen's top (joined across
/// soft wraps) and snapshots of the alternate screen when the agent leaves it.
#[derive(Default)]
struct Reader {
    /// The rows of a soft-wrapped line read so far.
    partial: String,
    /// Finished text (`\n` after each line), taken at the end of each feed.
    out: String,
}

impl Reader {
    fn line(&mut self, line: &Line) {
        self.partial.extend(line.chars());
        if !line.is_wrapped() {
            self.out.push_str(self.partial.trim_end());
            self.out.push('\n');
            self.partial.clear();
        }
    }

    /// The primary screen's lines still in the terminal, without the blank rows below the last
    /// one written.
    fn primary(&mut self, terminal: &Terminal) {
        let mark = self.out.len();
        for line in terminal.primary_screen().all_lines() {
            self.line(line);
        }
        if !self.partial.is_empty() {
            self.out.push_str(self.partial.trim_end());
            self.out.push('\n');
            self.partial.clear();
        }
        trim_blank_tail(&mut self.out, mark);
    }

    /// The alternate screen as shown now, after a note line; nothing when it is blank.
    fn alternate(&mut self, terminal: &Terminal) {
        let mut text = String::new();
        for line in terminal.screen().visible_lines() {
            text.push_str(line.text().trim_end());
            if !line.is_wrapped() {
                text.push('\n');
            }
        }
        let body = text.trim_matches('\n');
        if !body.is_empty() {
            self.out.push_str(FULL_SCREEN_NOTE);
            self.out.push('\n');
            self.out.push_str(body);
            self.out.push('\n');
        }
    }
}

/// Removes blank lines at the end of `out`, past byte `mark`.
fn trim_blank_tail(out: &mut String, mark: usize) {
    while out.len() > mark && out.ends_with("\n\n") {
        out.pop();
    }
    if out.len() == mark + 1 && out.ends_with('\n') {
        out.pop();
    }
}

/// Whether `operation` takes the terminal out of the alternate screen (DECRST 47, 1047 or
/// 1049, or a hard reset).
fn leaves_alternate(operation: &Operation) -> bool {
    match operation {
        Operation::Function(Function::Decrst(modes)) => modes.as_slice().iter().any(|m| {
            matches!(
                m,
                DecMode::AltScreenBuffer | DecMode::SaveCursorAltScreenBuffer
            )
        }),
        Operation::Function(Function::Ris) => true,
        _ => false,
    }
}

impl Observer for Reader {
    type Output = String;

    fn before(&mut self, context: &mut Observation<'_>, operation: &Operation) {
        let terminal = context.terminal();
        if matches!(operation, Operation::Function(Function::Ris)) {
            // A hard reset clears the primary screen without scrolling it: keep what it shows.
            self.primary(terminal);
        }
        if terminal.active_screen_kind() == ScreenKind::Alternate && leaves_alternate(operation) {
            self.alternate(terminal);
        }
    }

    fn evicted(&mut self, _: &mut Observation<'_>, line: &Line) {
        self.line(line);
    }

    fn end(&mut self, _: &mut Observation<'_>) -> String {
        std::mem::take(&mut self.out)
    }
}

/// The emulator's size for a window of `cols`×`rows`: at least 1×1, at most
/// [`crate::limits::CAPTURE_SCREEN`].
fn screen_size(cols: u16, rows: u16) -> (usize, usize) {
    let (max_cols, max_rows) = crate::limits::CAPTURE_SCREEN;
    (
        usize::from(cols.clamp(1, max_cols)),
        usize::from(rows.clamp(1, max_rows)),
    )
}

/// Renders terminal output as the text a person read on a screen of a given size: lines that
/// scroll off the top as they go, the final screen at the end (see the module documentation).
/// The result does not depend on how the output is cut into pieces.
pub struct ScreenText {
    terminal: Terminal,
    reader: Reader,
    utf8: Utf8Joiner,
}

impl ScreenText {
    /// A blank screen of `cols`×`rows` cells (each at least 1) that keeps no scrollback: lines
    /// leaving the top are handed out by [`ScreenText::feed`] instead.
    pub fn new(cols: u16, rows: u16) -> ScreenText {
        let (cols, rows) = screen_size(cols, rows);
        let terminal = Terminal::with_scrollback(cols, rows, Some(0))
            .expect("screen_size gives at least 1x1, which is valid");
        ScreenText {
            terminal,
            reader: Reader::default(),
            utf8: Utf8Joiner::default(),
        }
    }

    /// Feeds output bytes; returns the lines that became final (each ended by `\n`).
    pub fn feed(&mut self, bytes: &[u8]) -> String {
        let text = self.utf8.feed(bytes);
        self.terminal.feed_with(text.as_str(), &mut self.reader)
    }

    /// The window changed size: the screen reflows as a terminal's does; returns the lines that
    /// left it.
    pub fn resize(&mut self, cols: u16, rows: u16) -> String {
        let (cols, rows) = screen_size(cols, rows);
        self.terminal.resize_with(cols, rows, &mut self.reader)
    }

    /// Drops an unfinished character (the output was cut inside it).
    pub fn drop_pending(&mut self) {
        self.utf8.drop_pending();
    }

    /// The text still on the screen: the primary screen's lines, then the alternate screen
    /// when it is the one shown.
    pub fn finish(mut self) -> String {
        self.reader.primary(&self.terminal);
        if self.terminal.active_screen_kind() == ScreenKind::Alternate {
            self.reader.alternate(&self.terminal);
        }
        std::mem::take(&mut self.reader.out)
    }

    /// The whole text of `bytes` shown on a `cols`×`rows` screen, fed in one piece.
    pub fn render(bytes: &[u8], cols: u16, rows: u16) -> String {
        let mut screen = ScreenText::new(cols, rows);
        let mut out = screen.feed(bytes);
        screen.drop_pending();
        out.push_str(&screen.finish());
        out
    }
}

/// The window size the agent's pseudo-terminal gets (the launcher's terminal's, as
/// [`super::pty`] opens it), 80×24 when there is none: `(cols, rows)`.
fn window_size() -> (u16, u16) {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let size = super::terminal::size(std::io::stdout().as_fd())
            .or_else(|| super::terminal::size(std::io::stdin().as_fd()));
        if let Some(s) = size {
            return (s.cols, s.rows);
        }
    }
    (80, 24)
}

/// The text side of a capture: the screen and `capture.txt`, on a thread of its own.
struct TextFile {
    text: BufWriter<File>,
    screen: ScreenText,
    written: u64,
    limit: u64,
    cut: bool,
    failed: bool,
}

/// What the capture tells the text thread, in output order.
enum ToText {
    /// Output bytes.
    Bytes(Vec<u8>),
    /// The window's new size: `(cols, rows)`.
    Resize(u16, u16),
    /// The output was cut: an unfinished character is dropped.
    Cut,
}

impl TextFile {
    fn take(&mut self, message: ToText) {
        let lines = match message {
            ToText::Bytes(bytes) => self.screen.feed(&bytes),
            ToText::Resize(cols, rows) => self.screen.resize(cols, rows),
            ToText::Cut => {
                self.screen.drop_pending();
                return;
            }
        };
        self.out(&lines);
    }

    /// Writes finished lines, up to the limit (whole lines only); a write error stops the text.
    fn out(&mut self, lines: &str) {
        if self.cut || self.failed || lines.is_empty() {
            return;
        }
        // Room for the notes of a cut output on top of the limit.
        let room = self
            .limit
            .saturating_add(TEXT_SLACK)
            .saturating_sub(self.written);
        let ok = if lines.len() as u64 <= room {
            self.written += lines.len() as u64;
            self.text.write_all(lines.as_bytes()).is_ok()
        } else {
            self.cut = true;
            let end = lines
                .match_indices('\n')
                .map(|(i, _)| i + 1)
                .take_while(|&end| end as u64 <= room)
                .last()
                .unwrap_or(0);
            let note = format!(
                "[pas-agent: text cut at {} bytes; set {LIMIT_ENV} to keep more]\n",
                self.limit
            );
            self.text.write_all(&lines.as_bytes()[..end]).is_ok()
                && self.text.write_all(note.as_bytes()).is_ok()
        };
        self.failed = !ok;
    }

    /// Reads messages until the capture closes the channel, then writes the final screen.
    fn run(mut self, rx: std::sync::mpsc::Receiver<ToText>) {
        for message in rx {
            self.take(message);
        }
        let rest = std::mem::replace(&mut self.screen, ScreenText::new(1, 1)).finish();
        self.out(&rest);
        let _ = self.text.flush();
    }
}

/// An open capture.
///
/// [`Capture::write`] writes the raw bytes and the cast itself (a copy and a JSON escape) and
/// hands the bytes to a thread of its own that plays them through the terminal emulator into
/// `capture.txt` (several times the cost of the rest), so a caller on the relay's path waits
/// for neither. What that thread has not rendered yet waits in memory, at most the capture's
/// limit; [`Capture::finish`] waits for it.
pub struct Capture {
    ansi: BufWriter<File>,
    cast: BufWriter<File>,
    cast_utf8: Utf8Joiner,
    text: Option<(std::sync::mpsc::Sender<ToText>, std::thread::JoinHandle<()>)>,
    started: Instant,
    /// The window size the screen and the cast were last told: `(cols, rows)`.
    size: (u16, u16),
    /// Whether to follow the launcher's window size (off for a capture of a fixed size).
    follow_window: bool,
    written: u64,
    limit: u64,
    cut: bool,
    failed: bool,
}

impl Capture {
    /// Creates the run's capture directory and its three files under `root`, through the
    /// session root's [`WriteGuard`]: a `.pas-agent/` or `runs/` that leads outside the root is
    /// refused, and the files are created new (`O_EXCL`, never through a link). The screen
    /// size is the launcher's terminal's, followed as it is resized.
    ///
    /// Errors: the directory or a file cannot be created or written, the guard refuses (the
    /// message names the real target), or the text thread cannot be started.
    pub fn create(root: &Path, run_id: &uuid::Uuid, limit: u64) -> std::io::Result<Capture> {
        let mut c = Capture::with_size(root, run_id, limit, window_size())?;
        c.follow_window = true;
        Ok(c)
    }

    /// [`Capture::create`] for a screen of a fixed `(cols, rows)`.
    pub fn with_size(
        root: &Path,
        run_id: &uuid::Uuid,
        limit: u64,
        size: (u16, u16),
    ) -> std::io::Result<Capture> {
        let (ansi, txt) = paths(run_id);
        let ansi = root.join(ansi);
        let txt = root.join(txt);
        let cast = root.join(cast_path(run_id));
        let dir: PathBuf = ansi.parent().map(Path::to_path_buf).unwrap_or_default();
        let guard = WriteGuard::new(root)?;
        let refused = |e: WriteError| match e {
            WriteError::Io(e) => e,
            e => std::io::Error::other(e.to_string()),
        };
        guard
            .create_dir_all(&dir, Named::ByUs, 0o700)
            .map_err(refused)?;
        let create = |p: &Path| guard.create_new(p, 0o600).map_err(refused);
        let size = (size.0.max(1), size.1.max(1));
        let mut cast = BufWriter::with_capacity(64 * 1024, create(&cast)?);
        let header = serde_json::json!({
            "version": 2,
            "width": size.0,
            "height": size.1,
            "timestamp": chrono::Utc::now().timestamp(),
        });
        writeln!(cast, "{header}")?;
        let ansi = BufWriter::with_capacity(64 * 1024, create(&ansi)?);
        let text = TextFile {
            text: BufWriter::with_capacity(64 * 1024, create(&txt)?),
            screen: ScreenText::new(size.0, size.1),
            written: 0,
            limit,
            cut: false,
            failed: false,
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("pas-agent-capture-text".into())
            .spawn(move || text.run(rx))?;
        Ok(Capture {
            ansi,
            cast,
            cast_utf8: Utf8Joiner::default(),
            text: Some((tx, thread)),
            started: Instant::now(),
            size,
            follow_window: false,
            written: 0,
            limit,
            cut: false,
            failed: false,
        })
    }

    /// Appends agent output, up to the limit. A write error stops capturing (the run goes on).
    pub fn write(&mut self, bytes: &[u8]) {
        if self.cut || self.failed {
            return;
        }
        if self.follow_window {
            let now = window_size();
            if now != self.size && !self.resized(now) {
                self.failed = true;
                return;
            }
        }
        let room = usize::try_from(self.limit.saturating_sub(self.written)).unwrap_or(usize::MAX);
        let take = &bytes[..bytes.len().min(room)];
        let ok = self.ansi.write_all(take).is_ok() && self.derived(take);
        self.written += take.len() as u64;
        if !ok {
            self.failed = true;
        } else if take.len() < bytes.len() {
            self.cut = true;
            self.cast_utf8.drop_pending();
            self.tell(ToText::Cut);
            let note = format!(
                "\r\n[pas-agent: capture cut at {} bytes; set {LIMIT_ENV} to keep more]\r\n",
                self.limit
            );
            let _ = self.ansi.write_all(note.as_bytes());
            let _ = self.derived(note.as_bytes());
        }
    }

    /// The most bytes of output this capture keeps: once that many (and one more) were given to
    /// [`Capture::write`], it has noted the cut and takes no more.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    fn tell(&self, message: ToText) {
        if let Some((tx, _)) = &self.text {
            let _ = tx.send(message);
        }
    }

    /// Records a new window size: an `"r"` event in the cast, a reflow of the screen.
    fn resized(&mut self, size: (u16, u16)) -> bool {
        let size = (size.0.max(1), size.1.max(1));
        self.size = size;
        let t = self.started.elapsed().as_secs_f64();
        self.tell(ToText::Resize(size.0, size.1));
        self.event(t, "r", &format!("{}x{}", size.0, size.1))
    }

    /// Writes one cast event, `[t, kind, data]` and a newline, straight into the cast's buffer
    /// (the same compact JSON as a `serde_json::Value` would print, without building one and a
    /// `String` per read).
    fn event(&mut self, t: f64, kind: &str, data: &str) -> bool {
        serde_json::to_writer(&mut self.cast, &(t, kind, data)).is_ok()
            && self.cast.write_all(b"\n").is_ok()
    }

    /// Writes bytes to the cast (an `"o"` event) and hands them to the text thread.
    fn derived(&mut self, bytes: &[u8]) -> bool {
        let data = self.cast_utf8.feed(bytes);
        if !data.is_empty() {
            let t = self.started.elapsed().as_secs_f64();
            if !self.event(t, "o", &data) {
                return false;
            }
        }
        self.tell(ToText::Bytes(bytes.to_vec()));
        true
    }

    /// Flushes the raw bytes and the cast, then waits for the text thread to write the rest
    /// of the text and the final screen.
    pub fn finish(mut self) {
        let _ = self.ansi.flush();
        let _ = self.cast.flush();
        if let Some((tx, thread)) = self.text.take() {
            drop(tx);
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(dir: &Path, rel: &str) -> String {
        std::fs::read_to_string(dir.join(rel)).unwrap()
    }

    #[test]
    fn plain_text_has_no_escapes_and_the_limit_holds() {
        let dir = tempfile::tempdir().unwrap();
        let id = uuid::Uuid::new_v4();
        let mut c = Capture::with_size(dir.path(), &id, 60, (80, 24)).unwrap();
        c.write(b"\x1b[1;31mred\x1b[0m line\r\n\x1b]0;title\x07next\x1b[2Cword\x1b[5;1Hrow\r\n");
        c.write(b"0123456789012345678901234567890123456789");
        c.finish();
        let (ansi, txt) = paths(&id);
        let raw = std::fs::read(dir.path().join(ansi)).unwrap();
        let text = read(dir.path(), &txt);
        assert!(raw.starts_with(b"\x1b[1;31mred"));
        assert!(
            text.starts_with("red line\nnext  word\n\n\nrow\n"),
            "{text:?}"
        );
        assert!(!text.contains('\x1b') && !text.contains('\r'), "{text:?}");
        assert!(text.contains("capture cut at 60 bytes"), "{text:?}");
        let cast = read(dir.path(), &cast_path(&id));
        assert!(cast.contains("capture cut at 60 bytes"), "{cast:?}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            for f in [paths(&id).0, paths(&id).1, cast_path(&id)] {
                let meta = std::fs::metadata(dir.path().join(f)).unwrap();
                assert_eq!(meta.permissions().mode() & 0o777, 0o600);
            }
        }
    }

    /// Cursor moves, partial redraws and erasures end as the screen shows them (as Claude
    /// Code's TUI draws: only the cells that changed).
    #[test]
    fn the_text_is_the_screen_a_person_read() {
        let text = ScreenText::render(
            b"\x1b[1mClaude\x1b[8GCode\x1b[24Gv2\r\r\n\x1b[3G\x1b[39mMock rXply.\r\x1b[2Bnext\n\x1b[2;9He\x1b[4;1H",
            80,
            24,
        );
        assert_eq!(text, "Claude Code            v2\n  Mock reply.\n\nnext\n");
        // A line longer than the screen is one line; lines that scroll off come first.
        let long = "word ".repeat(30);
        let text = ScreenText::render(format!("{long}\r\n1\r\n2\r\n3\r\n4").as_bytes(), 40, 3);
        assert_eq!(text, format!("{}\n1\n2\n3\n4\n", long.trim_end()));
    }

    /// A full-screen program on the alternate screen: its screen as it left it, then what
    /// follows on the primary screen, which it restores.
    #[test]
    fn the_alternate_screen_is_kept_as_the_agent_left_it() {
        let out = b"before\r\n\x1b[?1049h\x1b[H\x1b[2Jframe one\x1b[H\x1b[2J\x1b[2;3Hframe two\x1b[3;3Hdone\x1b[?1049lafter\r\n";
        let text = ScreenText::render(out, 40, 6);
        assert_eq!(
            text,
            format!("{FULL_SCREEN_NOTE}\n  frame two\n  done\nbefore\nafter\n")
        );
        // Still on the alternate screen at the end: it comes last.
        let text = ScreenText::render(b"log\r\n\x1b[?1049h\x1b[Hmenu\x1b[2;1Hitem", 40, 6);
        assert_eq!(text, format!("log\n{FULL_SCREEN_NOTE}\nmenu\nitem\n"));
    }

    /// Redraws that clear the screen put more text in scrollback than they cost in output:
    /// the text stops at the limit too, at a line's end, with a note.
    #[test]
    fn the_text_stops_at_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let id = uuid::Uuid::new_v4();
        let limit = 5000;
        let mut c = Capture::with_size(dir.path(), &id, limit, (40, 30)).unwrap();
        for _ in 0..400 {
            c.write(b"\x1b[30;1Hx\x1b[2J");
        }
        c.finish();
        let text = read(dir.path(), &paths(&id).1);
        assert!(
            text.len() as u64 <= limit + TEXT_SLACK + 100,
            "{}",
            text.len()
        );
        assert!(
            text.ends_with(
                "[pas-agent: text cut at 5000 bytes; set PAS_AGENT_CAPTURE_LIMIT to keep more]\n"
            ),
            "{text}"
        );
    }

    /// A window of an absurd size is rendered on a bounded screen, and long lines stay whole.
    #[test]
    fn a_huge_window_is_rendered_on_a_bounded_screen() {
        let long = "x".repeat(3000);
        let text = ScreenText::render(format!("{long}\r\nend").as_bytes(), u16::MAX, u16::MAX);
        assert_eq!(text, format!("{long}\nend\n"));
        assert_eq!(ScreenText::render(b"a\r\nb", 0, 0), "a\nb\n");
    }

    /// `xéC─😀y` written in two pieces, cut after the first byte of `é` (issue 8 item 4).
    #[test]
    fn a_character_split_between_reads_keeps_the_next_one() {
        let line = "xéC─😀y\r\n".as_bytes();
        for cut in 0..=line.len() {
            let mut c = ScreenText::new(80, 24);
            let mut out = c.feed(&line[..cut]);
            out.push_str(&c.feed(&line[cut..]));
            out.push_str(&c.finish());
            assert_eq!(out, "xéC─😀y\n", "cut at {cut}");
        }
    }

    /// The cast: a header with the size and start time, then events whose text, joined, is
    /// the output, every character whole even when reads split them.
    #[test]
    fn the_cast_is_asciicast_v2_with_whole_characters() {
        let dir = tempfile::tempdir().unwrap();
        let id = uuid::Uuid::new_v4();
        let mut c = Capture::with_size(dir.path(), &id, 1000, (91, 27)).unwrap();
        let out = "a\u{1b}[1mé😀\r\nb\u{7}\"\\".as_bytes();
        for piece in out.chunks(1) {
            c.write(piece);
        }
        c.write(b"\xff!");
        c.finish();
        let cast = read(dir.path(), &cast_path(&id));
        let mut lines = cast.lines();
        let header: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
        assert_eq!(header["version"], 2);
        assert_eq!(header["width"], 91);
        assert_eq!(header["height"], 27);
        assert!(header["timestamp"].as_i64().unwrap() > 1_600_000_000);
        let mut joined = String::new();
        let mut last = 0.0;
        for line in lines {
            let event: (f64, String, String) = serde_json::from_str(line).unwrap();
            assert_eq!(event.1, "o");
            assert!(event.0 >= last);
            last = event.0;
            joined.push_str(&event.2);
        }
        assert_eq!(joined, "a\u{1b}[1mé😀\r\nb\u{7}\"\\\u{fffd}!");
    }

    /// A cast event written straight from a tuple is the JSON a `serde_json::Value` prints
    /// (the format before the writer skipped building one per read).
    #[test]
    fn cast_events_are_the_json_of_a_value() {
        for (t, data) in [
            (0.0, "plain"),
            (1.5e-7, "\u{1b}[1mé😀\r\n\"\\\u{7f}"),
            (12345.678901234, ""),
        ] {
            let mut direct = Vec::new();
            serde_json::to_writer(&mut direct, &(t, "o", data)).unwrap();
            let value = serde_json::json!([t, "o", data]).to_string();
            assert_eq!(String::from_utf8(direct).unwrap(), value);
        }
    }

    use proptest::prelude::*;

    /// Pieces of terminal output: text in several scripts, controls, and escape sequences
    /// (CSI with parameters, OSC ended by BEL or ST with UTF-8 inside, charset designations,
    /// the alternate screen), and bytes that are not UTF-8.
    fn piece() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            "[a-zA-Z0-9 ]{1,6}".prop_map(String::into_bytes),
            prop::sample::select(vec![
                "é",
                "─",
                "😀",
                "ĸ",
                "日本",
                "\u{301}",
                "\u{fffd}",
                "\r",
                "\n",
                "\t",
                "\r\n",
                "\x1b[1;31m",
                "\x1b[0m",
                "\x1b[2C",
                "\x1b[5;10H",
                "\x1b[?1049h",
                "\x1b[?1049l",
                "\x1b[2J",
                "\x1b[?25l",
                "\x1b]0;tïtle\x07",
                "\x1b]2;😀\x1b\\",
                "\x1b(0",
                "\x1b(B",
                "\x1b[>1u",
                "\x1b[3G",
                "\x1b[2B",
                "\x1b7",
                "\x1b8",
                "\x1bc",
                "\x1bP+q\x1b\\",
            ])
            .prop_map(|s| s.as_bytes().to_vec()),
            prop::sample::select(vec![&b"\xff"[..], b"\xc3", b"\xe2\x94", b"\xf0\x9f\x98"])
                .prop_map(<[u8]>::to_vec),
        ]
    }

    proptest! {
        #[test]
        fn text_does_not_depend_on_how_output_is_chunked(
            pieces in prop::collection::vec(piece(), 0..40),
            cuts in prop::collection::vec(1usize..=5, 0..400),
        ) {
            let bytes = pieces.concat();
            let whole = ScreenText::render(&bytes, 20, 5);
            let mut c = ScreenText::new(20, 5);
            let mut chunked = String::new();
            let mut joiner = Utf8Joiner::default();
            let mut joined = String::new();
            let mut rest: &[u8] = &bytes;
            let mut sizes = cuts.iter().cycle();
            while !rest.is_empty() {
                let n = (*sizes.next().unwrap_or(&1)).min(rest.len());
                chunked.push_str(&c.feed(&rest[..n]));
                joined.push_str(&joiner.feed(&rest[..n]));
                rest = &rest[n..];
            }
            c.drop_pending();
            chunked.push_str(&c.finish());
            prop_assert_eq!(whole, chunked);
            prop_assert_eq!(Utf8Joiner::default().feed(&bytes), joined);
        }
    }
}
