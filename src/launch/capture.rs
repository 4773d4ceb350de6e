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
//!   rows joined, trailing blanks trimmed; plain lines up to a screenful later, see
//!   [`ScreenText`]), then the final screen. A full-screen agent that
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

use avt::parser::{AnsiMode, DecMode, Function, State};
use avt::{Charset, Line, Observation, Observer, Operation, Parser, ScreenKind, Terminal};

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
        // Valid UTF-8 (nearly all output) is checked by the standard library's validator,
        // several times faster than the lossy conversion's chunk walk; the text is the same.
        let text = match std::str::from_utf8(now) {
            Ok(text) => text.to_owned(),
            Err(_) => String::from_utf8_lossy(now).into_owned(),
        };
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
    type Output = ();

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

    fn end(&mut self, _: &mut Observation<'_>) {}
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

/// The emulator's settings that decide how a line of printable ASCII prints, followed exactly
/// from the functions the parser hands it (avt keeps them private): what avt 0.19's engine
/// does to them in `ris`, `soft_reset`, `decstbm`, `decset`/`decrst`, `save_cursor`/
/// `restore_cursor`, `sm`/`rm`, `gzd4`/`g1d4`, `so`/`si` and `resize`, and nothing else touches
/// them. The matches are exhaustive, so a new function in a later avt fails to compile here.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Modes {
    /// Insert mode (IRM).
    insert: bool,
    /// Auto-wrap (DECAWM).
    auto_wrap: bool,
    /// The scroll region is the whole screen.
    full_region: bool,
    /// G0 and G1.
    charsets: [Charset; 2],
    /// G1 is shifted in (SO).
    shifted: bool,
    /// The alternate screen is shown.
    alternate: bool,
    /// Auto-wrap as saved with the cursor, on the primary and the alternate screen.
    saved_auto_wrap: [bool; 2],
}

impl Default for Modes {
    fn default() -> Modes {
        Modes {
            insert: false,
            auto_wrap: true,
            full_region: true,
            charsets: [Charset::Ascii, Charset::Ascii],
            shifted: false,
            alternate: false,
            saved_auto_wrap: [true, true],
        }
    }
}

impl Modes {
    /// Whether a printable ASCII character prints as itself, overwriting, wrapping at the
    /// right margin, and a line feed at the bottom row scrolls the whole screen.
    fn plain(&self) -> bool {
        !self.insert
            && self.auto_wrap
            && self.full_region
            && !self.alternate
            && self.charsets[usize::from(self.shifted)] == Charset::Ascii
    }

    fn saved(&mut self) -> &mut bool {
        &mut self.saved_auto_wrap[usize::from(self.alternate)]
    }

    /// Follows `function`, about to be executed on a screen of `rows` rows.
    fn track(&mut self, function: &Function, rows: usize) {
        use Function as F;
        match function {
            F::Ris => *self = Modes::default(),
            F::Decstr => {
                self.full_region = true;
                self.insert = false;
                self.charsets = [Charset::Ascii, Charset::Ascii];
                self.shifted = false;
                *self.saved() = true;
            }
            F::Decstbm(top, bottom) => {
                let top = usize::from(*top).max(1) - 1;
                let bottom = if *bottom == 0 {
                    rows
                } else {
                    usize::from(*bottom)
                } - 1;
                if top < bottom && bottom < rows {
                    self.full_region = top == 0 && bottom == rows - 1;
                }
            }
            F::Decset(modes) => {
                for mode in modes.as_slice() {
                    match mode {
                        DecMode::AutoWrap => self.auto_wrap = true,
                        DecMode::AltScreenBuffer => self.alternate = true,
                        DecMode::SaveCursor => *self.saved() = self.auto_wrap,
                        DecMode::SaveCursorAltScreenBuffer => {
                            *self.saved() = self.auto_wrap;
                            self.alternate = true;
                        }
                        DecMode::CursorKeys | DecMode::Origin | DecMode::TextCursorEnable => {}
                    }
                }
            }
            F::Decrst(modes) => {
                for mode in modes.as_slice() {
                    match mode {
                        DecMode::AutoWrap => self.auto_wrap = false,
                        DecMode::AltScreenBuffer => self.alternate = false,
                        DecMode::SaveCursor => self.auto_wrap = *self.saved(),
                        DecMode::SaveCursorAltScreenBuffer => {
                            self.alternate = false;
                            self.auto_wrap = *self.saved();
                        }
                        DecMode::CursorKeys | DecMode::Origin | DecMode::TextCursorEnable => {}
                    }
                }
            }
            F::Decsc | F::Scosc => *self.saved() = self.auto_wrap,
            F::Decrc | F::Scorc => self.auto_wrap = *self.saved(),
            F::Sm(modes) | F::Rm(modes) => {
                let on = matches!(function, F::Sm(_));
                for mode in modes.as_slice() {
                    match mode {
                        AnsiMode::Insert => self.insert = on,
                        AnsiMode::NewLine => {}
                    }
                }
            }
            F::Gzd4(charset) => self.charsets[0] = *charset,
            F::G1d4(charset) => self.charsets[1] = *charset,
            F::So => self.shifted = true,
            F::Si => self.shifted = false,
            F::Bs
            | F::Cbt(_)
            | F::Cha(_)
            | F::Cht(_)
            | F::Cnl(_)
            | F::Cpl(_)
            | F::Cr
            | F::Ctc(_)
            | F::Cub(_)
            | F::Cud(_)
            | F::Cuf(_)
            | F::Cup(_, _)
            | F::Cuu(_)
            | F::Dch(_)
            | F::Decaln
            | F::Dl(_)
            | F::Ech(_)
            | F::Ed(_)
            | F::El(_)
            | F::Ht
            | F::Hts
            | F::Ich(_)
            | F::Il(_)
            | F::Lf
            | F::Nel
            | F::Osc(_)
            | F::Print(_)
            | F::Rep(_)
            | F::Ri
            | F::Sd(_)
            | F::Sgr(_)
            | F::Su(_)
            | F::Tbc(_)
            | F::Vpa(_)
            | F::Vpr(_)
            | F::Xtwinops(_) => {}
        }
    }

    /// The screen became `rows` rows high (it was `before`): the scroll region is reset.
    fn resized(&mut self, before: usize, rows: usize) {
        if rows != before {
            self.full_region = true;
        }
    }
}

/// How many rows a plain line of `len` characters takes on a screen `cols` wide: a line that
/// fills its last row exactly leaves the cursor past the margin, and the carriage return takes
/// it back without a wrap.
fn rows_of(len: usize, cols: usize) -> usize {
    len.div_ceil(cols).max(1)
}

/// How many bytes at the start of `bytes` are printable ASCII (0x20 to 0x7E), eight looked at
/// together (as [`super::modes::plain_prefix`] does).
fn printable_prefix(bytes: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let printable = |b: &u8| matches!(b, 0x20..=0x7e);
    let mut words = bytes.chunks_exact(8);
    let mut at = 0;
    for word in words.by_ref() {
        let w = u64::from_le_bytes(word.try_into().expect("chunks of 8"));
        // Bit 7 of a byte is set here when it is below 0x20 (or a false alarm above such a
        // byte), 0x7F or above 0x7F.
        let below = w.wrapping_sub(ONES * 0x20) & !w;
        let del = w ^ (ONES * 0x7f);
        let del = del.wrapping_sub(ONES) & !del;
        if (below | del | w) & HIGH != 0
            && let Some(i) = word.iter().position(|b| !printable(b))
        {
            return at + i;
        }
        at += 8;
    }
    let rest = words.remainder();
    at + rest
        .iter()
        .position(|b| !printable(b))
        .unwrap_or(rest.len())
}

/// The length of the plain lines at the start of `bytes`: complete lines of printable ASCII
/// (0x20 to 0x7E), each ended by `\r\n`.
fn plain_lines(bytes: &[u8]) -> usize {
    let mut end = 0;
    let mut i = 0;
    loop {
        i += printable_prefix(&bytes[i..]);
        if bytes.get(i..i + 2) != Some(b"\r\n") {
            return end;
        }
        i += 2;
        end = i;
    }
}

/// Passes evictions to the reader but the first `skip` (rows it already read).
struct Skip<'a> {
    reader: &'a mut Reader,
    skip: usize,
}

impl Observer for Skip<'_> {
    type Output = ();

    fn before(&mut self, context: &mut Observation<'_>, operation: &Operation) {
        self.reader.before(context, operation);
    }

    fn evicted(&mut self, context: &mut Observation<'_>, line: &Line) {
        if self.skip > 0 {
            self.skip -= 1;
        } else {
            self.reader.evicted(context, line);
        }
    }

    fn end(&mut self, _: &mut Observation<'_>) {}
}

/// The longest unfinished plain line held back between feeds (bytes); a longer one goes
/// through the emulator as it comes.
const PENDING_MAX: usize = 4096;

/// Renders terminal output as the text a person read on a screen of a given size: lines that
/// scroll off the top as they go, the final screen at the end (see the module documentation).
/// The result does not depend on how the output is cut into pieces.
///
/// Plain output takes a short cut: when the emulator is in a state where a line of printable
/// ASCII ended by `\r\n` just prints and scrolls (primary screen, cursor at the start of a blank
/// bottom row, the whole screen as the scroll region, auto-wrap on, insert mode off, an ASCII
/// character set, the parser between sequences: see [`Modes`]), such lines are held back
/// instead of played. The text of a held line that will scroll off is the line itself; only
/// the last screenful is played through the emulator when something else comes (or the
/// screen is resized or finished), which leaves it in the state the whole run would have.
pub struct ScreenText {
    terminal: Terminal,
    /// The emulator's parser, kept here so that its state can be seen.
    parser: Parser,
    modes: Modes,
    reader: Reader,
    utf8: Utf8Joiner,
    /// Complete plain lines not played yet (each ended by `\r\n`); they started in the state
    /// described above.
    held: String,
    /// An unfinished plain line after `held` (printable ASCII, maybe a final `\r`), at most
    /// [`PENDING_MAX`] bytes.
    pending: String,
    /// The screen's rows above the bottom one were read already (they scroll off first when
    /// `held` is played).
    ahead: bool,
    /// Whether the short cut is taken (tests compare it with the emulator alone).
    fast: bool,
    /// How many lines took the short cut.
    skipped: u64,
    /// `held` is not looked at again before it is this long (bytes): twice what was left the
    /// last time, at least [`ScreenText::COMPRESS_MIN`], so that finding the last screenful
    /// (a walk back over it) costs a bounded share of each byte, whatever the screen's size
    /// and the reads'.
    compress_at: usize,
    /// The least `compress_at` (tests make it 0).
    compress_min: usize,
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
            parser: Parser::new(),
            modes: Modes::default(),
            reader: Reader::default(),
            utf8: Utf8Joiner::default(),
            held: String::new(),
            pending: String::new(),
            ahead: false,
            fast: true,
            skipped: 0,
            compress_at: Self::COMPRESS_MIN,
            compress_min: Self::COMPRESS_MIN,
        }
    }

    /// See `compress_at`.
    const COMPRESS_MIN: usize = 16 * 1024;

    /// Feeds output bytes; returns the lines that became final (each ended by `\n`). Lines of
    /// plain output can come out a screenful later than they were fed.
    pub fn feed(&mut self, bytes: &[u8]) -> String {
        let text = self.utf8.feed(bytes);
        self.feed_text(&text)
    }

    /// [`ScreenText::feed`] for output already decoded: the text of the bytes, each character
    /// whole (a character split between reads is given once its last byte came).
    pub fn feed_text(&mut self, text: &str) -> String {
        if !self.fast {
            self.play(text);
        } else if self.pending.is_empty() {
            self.take_text(text);
        } else {
            let mut joined = std::mem::take(&mut self.pending);
            joined.push_str(text);
            self.take_text(&joined);
        }
        std::mem::take(&mut self.reader.out)
    }

    /// Holds back plain lines where the short cut applies, plays the rest.
    fn take_text(&mut self, text: &str) {
        let bytes = text.as_bytes();
        let mut pos = 0;
        while pos < bytes.len() {
            // Whether the next line is plain (or the text ends in what may become one), before
            // the emulator's state is looked at, and the run of plain lines only then: a line
            // that is played is scanned once.
            let line = printable_prefix(&bytes[pos..]);
            let after = &bytes[pos + line..];
            let candidate = after.starts_with(b"\r\n")
                || ((after.is_empty() || after == b"\r") && line + after.len() <= PENDING_MAX);
            if candidate && (!self.held.is_empty() || self.may_hold()) {
                let n = plain_lines(&bytes[pos..]);
                self.held.push_str(&text[pos..pos + n]);
                pos += n;
                let rest = &bytes[pos..];
                let printable = printable_prefix(rest);
                if rest.len() <= PENDING_MAX
                    && (printable == rest.len()
                        || (printable + 1 == rest.len() && rest[printable] == b'\r'))
                {
                    self.pending.push_str(&text[pos..]);
                    break;
                }
            }
            self.flush();
            let next = bytes[pos..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(bytes.len(), |i| pos + i + 1);
            self.play(&text[pos..next]);
            pos = next;
        }
        self.compress();
    }

    /// Whether a plain line fed now would just print and scroll (see the type's documentation)
    /// and its text can be told before it is played: nothing read is waiting to be joined to
    /// the bottom row.
    fn may_hold(&self) -> bool {
        if !self.modes.plain() || self.parser.state != State::Ground {
            return false;
        }
        let rows = self.terminal.size().1;
        let cursor = self.terminal.cursor();
        if cursor.col != 0
            || cursor.row != rows - 1
            || self.terminal.active_screen_kind() != ScreenKind::Primary
        {
            return false;
        }
        let screen = self.terminal.primary_screen();
        let blank_bottom = screen
            .line(rows - 1)
            .is_some_and(|l| !l.is_wrapped() && l.chars().all(|c| c == ' '));
        let above_ends = match rows.checked_sub(2) {
            Some(row) => screen.line(row).is_some_and(|l| !l.is_wrapped()),
            None => self.reader.partial.is_empty(),
        };
        blank_bottom && above_ends
    }

    /// Writes out the held lines that will scroll off the top anyway: all but the last ones
    /// that fill at least a screen, which stay held. The first time, the screen's rows above
    /// the bottom one are read first: they are the first to leave.
    fn compress(&mut self) {
        if self.held.len() < self.compress_at {
            return;
        }
        self.compress_at = self.compress_min.max(2 * self.held.len());
        let (cols, rows) = self.terminal.size();
        let bytes = self.held.as_bytes();
        let mut start = bytes.len();
        let mut tail = 0;
        while tail < rows && start > 0 {
            let end = start - 2; // the line's `\r`
            let begin = bytes[..end]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            tail += rows_of(end - begin, cols);
            start = begin;
        }
        if tail < rows || start == 0 {
            return;
        }
        if !self.ahead {
            for line in self
                .terminal
                .primary_screen()
                .visible_lines()
                .take(rows - 1)
            {
                self.reader.line(line);
            }
            self.ahead = true;
        }
        let out = &mut self.reader.out;
        let mut rest = &self.held[..start];
        while !rest.is_empty() {
            // Every held line is printable up to its `\r\n`.
            let end = printable_prefix(rest.as_bytes());
            out.push_str(rest[..end].trim_end_matches(' '));
            out.push('\n');
            rest = &rest[end + 2..];
            self.skipped += 1;
        }
        self.held.drain(..start);
        self.compress_at = self.compress_min.max(2 * self.held.len());
    }

    /// Plays the held lines (their last screenful, if [`ScreenText::compress`] wrote out the
    /// rest), passing on only the rows not read yet.
    fn flush(&mut self) {
        if self.held.is_empty() {
            return;
        }
        let held = std::mem::take(&mut self.held);
        if self.ahead {
            let skip = self.terminal.size().1 - 1;
            let observer = Skip {
                reader: &mut self.reader,
                skip,
            };
            Self::run(
                &mut self.terminal,
                &mut self.parser,
                &mut self.modes,
                &held,
                observer,
            );
            self.ahead = false;
        } else {
            self.play(&held);
        }
        self.held = held;
        self.held.clear();
        self.compress_at = self.compress_min;
    }

    /// Plays the held and the pending text.
    fn settle(&mut self) {
        self.flush();
        let pending = std::mem::take(&mut self.pending);
        self.play(&pending);
    }

    /// Plays `text` through the emulator.
    fn play(&mut self, text: &str) {
        Self::run(
            &mut self.terminal,
            &mut self.parser,
            &mut self.modes,
            text,
            &mut self.reader,
        );
    }

    fn run<O: Observer>(
        terminal: &mut Terminal,
        parser: &mut Parser,
        modes: &mut Modes,
        text: &str,
        observer: O,
    ) {
        let rows = terminal.size().1;
        let functions = text
            .chars()
            .filter_map(|ch| parser.feed(ch))
            .inspect(|f| modes.track(f, rows));
        terminal.execute_with(functions, observer);
    }

    /// The window changed size: the screen reflows as a terminal's does; returns the lines that
    /// left it.
    pub fn resize(&mut self, cols: u16, rows: u16) -> String {
        self.settle();
        let (cols, rows) = screen_size(cols, rows);
        let before = self.terminal.size().1;
        self.terminal.resize_with(cols, rows, &mut self.reader);
        self.modes.resized(before, self.terminal.size().1);
        std::mem::take(&mut self.reader.out)
    }

    /// Drops an unfinished character (the output was cut inside it).
    pub fn drop_pending(&mut self) {
        self.utf8.drop_pending();
    }

    /// The text still on the screen: the primary screen's lines, then the alternate screen
    /// when it is the one shown.
    pub fn finish(mut self) -> String {
        self.settle();
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

/// How long a capture thread that has emptied its queue waits before it sleeps on the queue.
pub const COALESCE: std::time::Duration = std::time::Duration::from_millis(1);

/// The next message of `rx`, `None` once every sender is gone. A thread that blocks on an empty
/// queue must be woken by the sender (a `futex` call on the relay's thread and a context switch)
/// for every message: during a stream that is one wake-up per 4 KiB read. Sleeping
/// [`COALESCE`] first lets a stream's messages gather, to be taken without a wake-up; a message
/// waits at most that long longer, which no file of the capture shows (the cast's times are
/// taken when its thread takes the output, as before).
pub fn recv_coalesced<T>(rx: &std::sync::mpsc::Receiver<T>) -> Option<T> {
    use std::sync::mpsc::TryRecvError;
    match rx.try_recv() {
        Ok(message) => return Some(message),
        Err(TryRecvError::Disconnected) => return None,
        Err(TryRecvError::Empty) => {}
    }
    std::thread::sleep(COALESCE);
    rx.recv().ok()
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
    /// Output, decoded as the cast has it (whole characters).
    Text(String),
    /// The window's new size: `(cols, rows)`.
    Resize(u16, u16),
}

impl TextFile {
    fn take(&mut self, message: ToText) {
        let lines = match message {
            ToText::Text(text) => self.screen.feed_text(&text),
            ToText::Resize(cols, rows) => self.screen.resize(cols, rows),
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
        while let Some(message) = recv_coalesced(&rx) {
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
/// hands the cast's text to a thread of its own that plays it through the terminal emulator into
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

    /// Writes bytes to the cast (an `"o"` event) and hands its text to the text thread.
    fn derived(&mut self, bytes: &[u8]) -> bool {
        let data = self.cast_utf8.feed(bytes);
        if data.is_empty() {
            return true;
        }
        let t = self.started.elapsed().as_secs_f64();
        let ok = self.event(t, "o", &data);
        self.tell(ToText::Text(data));
        ok
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

    /// `xéC─😀y` written in two pieces, cut after the first byte of `é`.
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

    /// The coalescing receive hands every message over, in order, and ends when the senders
    /// are gone, whether the messages came before or during its pause or after it slept.
    #[test]
    fn recv_coalesced_keeps_every_message_in_order() {
        let (tx, rx) = std::sync::mpsc::sync_channel::<u32>(4);
        let sender = std::thread::spawn(move || {
            for i in 0..200 {
                tx.send(i).unwrap();
                if i % 50 == 0 {
                    std::thread::sleep(COALESCE * 3);
                }
            }
        });
        let mut got = Vec::new();
        while let Some(i) = recv_coalesced(&rx) {
            got.push(i);
        }
        sender.join().unwrap();
        assert_eq!(got, (0..200).collect::<Vec<_>>());
    }

    proptest::proptest! {
        /// The joiner's text is the lossy decoding of all the output, however it is cut:
        /// valid and invalid UTF-8 alike (the valid-UTF-8 short cut changes nothing).
        #[test]
        fn utf8_joiner_is_the_lossy_decoding_of_the_whole(
            pieces in proptest::collection::vec(proptest::sample::select(vec![
                &b"a"[..], b"\r\n", "é".as_bytes(), "─".as_bytes(), "😀".as_bytes(), b"\xff",
                b"\xe2\x82", b"\xc3", b"\x80", b"\xf0\x9f\x98", b"\xed\xa0\x80", b"\x1b[0m",
            ]), 0..40),
            cuts in proptest::collection::vec(0usize..120, 0..8),
        ) {
            let bytes: Vec<u8> = pieces.concat();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.push(0);
            cuts.push(bytes.len());
            cuts.sort_unstable();
            let mut joiner = Utf8Joiner::default();
            let mut text = String::new();
            for w in cuts.windows(2) {
                text.push_str(&joiner.feed(&bytes[w[0]..w[1]]));
            }
            // What is still held at the end is an unfinished character the whole decoding
            // shows as U+FFFD.
            if !joiner.pending.is_empty() {
                text.push('\u{FFFD}');
            }
            proptest::prop_assert_eq!(text, String::from_utf8_lossy(&bytes).into_owned());
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

    impl ScreenText {
        /// The emulator alone, without the short cut.
        fn slow(cols: u16, rows: u16) -> ScreenText {
            ScreenText {
                fast: false,
                ..ScreenText::new(cols, rows)
            }
        }

        /// The short cut, writing out held lines at every read.
        fn eager(cols: u16, rows: u16) -> ScreenText {
            ScreenText {
                compress_at: 0,
                compress_min: 0,
                ..ScreenText::new(cols, rows)
            }
        }

        /// Everything that decides what comes next: the emulator (its `dump`: screens, cursor,
        /// modes, charsets, margins, saved cursors), the parser, the followed modes, a soft-wrapped
        /// line read in part. Plays what is held first.
        fn state(&mut self) -> String {
            self.settle();
            format!(
                "{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
                self.terminal.dump(),
                self.terminal.cursor(),
                self.parser,
                self.modes,
                self.reader.partial
            )
        }
    }

    /// One step of a run: output, or a new window size.
    #[derive(Clone, Debug)]
    enum Step {
        Out(Vec<u8>),
        Resize(u16, u16),
    }

    /// Output that mixes plain lines (short, empty, trailing blanks, exactly a screen row or
    /// several, longer ones that wrap) with everything that changes how they print: scroll
    /// regions, origin mode, insert mode, auto-wrap, G0/G1 charsets and shifts, saved and
    /// restored cursors (which restore auto-wrap), the alternate screens, soft and hard resets,
    /// scrolling, cursor moves, a carriage return without a line feed, tabs, DEL, C1 controls,
    /// UTF-8 and escape sequences left open.
    fn mixed_piece() -> impl Strategy<Value = Vec<u8>> {
        let plain = ("[ -~]{0,30}", 0usize..4)
            .prop_map(|(line, spaces)| format!("{line}{}\r\n", " ".repeat(spaces)).into_bytes());
        let block = (1usize..40, 0usize..25).prop_map(|(n, len)| {
            let mut out = Vec::new();
            for i in 0..n {
                let width = (len + i * 7) % 26;
                out.extend((0..width).map(|j| b'a' + ((i + j) % 26) as u8));
                out.extend_from_slice(b"\r\n");
            }
            out
        });
        let controls = prop::sample::select(vec![
            "\x1b[2;4r",
            "\x1b[r",
            "\x1b[1;3r",
            "\x1b[2r",
            "\x1b[?6h",
            "\x1b[?6l",
            "\x1b[4h",
            "\x1b[4l",
            "\x1b[?7l",
            "\x1b[?7h",
            "\x1b(0",
            "\x1b(B",
            "\x1b)0",
            "\x1b)B",
            "\x0e",
            "\x0f",
            "\x1b7",
            "\x1b8",
            "\x1b[s",
            "\x1b[u",
            "\x1b[?7l\x1b7\x1b[?7h",
            "\x1b[?7l\x1b[s\x1b[?7h",
            "\x1b[?7l\x1b[?1048h\x1b[?7h",
            "\x1b[?7l\x1b[?1049h\x1b[?7h",
            "\x1b[4h\x1b[?1049h\x1b[?1049l",
            "\x1b[?1048h",
            "\x1b[?1048l",
            "\x1b[?1049h",
            "\x1b[?1049l",
            "\x1b[?47h",
            "\x1b[?47l",
            "\x1b[!p",
            "\x1bc",
            "\x1b[S",
            "\x1b[2T",
            "\x1bM",
            "\x1b[L",
            "\x1b[M",
            "\x1b[2A",
            "\x1b[H",
            "\x1b[99;1H",
            "\x1b[3G",
            "\x1b[K",
            "\x1b[2J",
            "\x1b[1;32m",
            "\x1b[0m",
            "\x1b[41m",
            "\x1b[3b",
            "\x1bD",
            "\x1bE",
            "\x1b[20l",
            "\x1b[20h",
            "\x1b]0;t\x07",
            "\x1b]0;open",
            "\x1b[",
            "\x1b",
            "\x1bP+q",
            "\x1b\\",
            "\r",
            "\n",
            "\t",
            "\x08",
            "\x7f",
            "\u{9b}2J",
            "é",
            "日本",
            "😀",
            " ",
            "x",
        ])
        .prop_map(|s| s.as_bytes().to_vec());
        prop_oneof![
            3 => plain,
            3 => block,
            4 => controls,
            1 => prop::sample::select(vec![&b"\xff"[..], b"\xc3", b"\xe2\x94", b"\xf0\x9f\x98"])
                .prop_map(<[u8]>::to_vec),
        ]
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            20 => mixed_piece().prop_map(Step::Out),
            1 => (1u16..12, 1u16..7).prop_map(|(c, r)| Step::Resize(c, r)),
        ]
    }

    /// Feeds `steps` to `screen`, every output cut into pieces of the sizes in `cuts`.
    fn run_steps(screen: &mut ScreenText, steps: &[Step], cuts: &[usize]) -> String {
        let mut out = String::new();
        let mut sizes = cuts.iter().cycle();
        for step in steps {
            match step {
                Step::Out(bytes) => {
                    let mut rest: &[u8] = bytes;
                    while !rest.is_empty() {
                        let n = (*sizes.next().unwrap_or(&usize::MAX)).min(rest.len());
                        out.push_str(&screen.feed(&rest[..n]));
                        rest = &rest[n..];
                    }
                }
                Step::Resize(c, r) => out.push_str(&screen.resize(*c, *r)),
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        /// The short cut gives the emulator's text, byte for byte, and leaves the emulator in
        /// the state it alone would have, whatever the output, window size and reads.
        #[test]
        fn the_short_cut_is_the_emulator(
            steps in prop::collection::vec(step(), 0..60),
            size in prop::sample::select(vec![(1u16, 1u16), (1, 3), (4, 1), (5, 2), (7, 3), (10, 4), (20, 5), (26, 6)]),
            cuts in prop::collection::vec(1usize..200, 1..20),
            whole in any::<bool>(),
            eager in any::<bool>(),
        ) {
            let (cols, rows) = size;
            let mut slow = ScreenText::slow(cols, rows);
            let mut expected = run_steps(&mut slow, &steps, &[usize::MAX]);
            let mut fast = if eager { ScreenText::eager(cols, rows) } else { ScreenText::new(cols, rows) };
            let cuts = if whole { vec![usize::MAX] } else { cuts };
            let mut got = run_steps(&mut fast, &steps, &cuts);
            prop_assert_eq!(slow.state(), fast.state());
            expected.push_str(&slow.finish());
            got.push_str(&fast.finish());
            prop_assert_eq!(expected, got);
        }
    }

    /// Lines of plain text longer than the screen is wide, as `cat` of a base64 file shows them:
    /// most take the short cut, in reads of any size, and the text is the emulator's.
    #[test]
    fn plain_lines_take_the_short_cut() {
        let mut output = Vec::new();
        for i in 0..2000u32 {
            let width = [120, 80, 0, 79, 160, 7][i as usize % 6];
            output.extend((0..width).map(|j| b'A' + ((i + j) % 26) as u8));
            output.extend_from_slice(b"\r\n");
        }
        let expected = {
            let mut slow = ScreenText::slow(80, 24);
            let mut out = slow.feed(&output);
            out.push_str(&slow.finish());
            out
        };
        for read in [1, 100, 4095, 1 << 20] {
            let mut fast = ScreenText::new(80, 24);
            let mut out = String::new();
            for piece in output.chunks(read) {
                out.push_str(&fast.feed(piece));
            }
            let skipped = fast.skipped;
            out.push_str(&fast.finish());
            assert_eq!(out, expected, "reads of {read}");
            // All but the last 16 KiB or so, held until the output ends, then played.
            assert!(
                skipped > 1700,
                "reads of {read}: {skipped} lines took the short cut"
            );
        }
    }

    /// The cost of the text, in nanoseconds per byte of output (`cargo test --release --lib
    /// screen_text_speed -- --ignored --nocapture`): plain 120-column lines on an 80×24 screen,
    /// a redrawing TUI's output, and plain lines in a scroll region (where the short cut never
    /// applies), each in 4 KiB reads, with and without the short cut.
    #[test]
    #[ignore]
    #[allow(clippy::disallowed_macros)]
    fn screen_text_speed() {
        let mut plain = Vec::new();
        let mut i = 0u32;
        while plain.len() < 32 << 20 {
            plain.extend((0..120).map(|j| {
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
                    [((i * 7 + j) % 64) as usize]
            }));
            plain.extend_from_slice(b"\r\n");
            i += 1;
        }
        let mut tui = Vec::new();
        let mut i = 0u32;
        while tui.len() < 8 << 20 {
            tui.extend_from_slice(format!("\x1b[{};1H\x1b[2K\x1b[1;36m> \x1b[0mstep {i}: reading src/launch/capture.rs \x1b[2m({} lines)\x1b[0m", i % 20 + 2, i * 3).as_bytes());
            if i.is_multiple_of(7) {
                tui.extend_from_slice(
                    b"\x1b[24;1H\r\nplain log line from the agent, nothing special in it\r\n",
                );
            }
            i += 1;
        }
        // The same lines in a scroll region: the short cut never applies.
        let mut region = b"\x1b[1;20r".to_vec();
        region.extend_from_slice(&plain[..8 << 20]);
        for (name, bytes) in [
            ("plain 120-column lines", &plain),
            ("TUI redraws", &tui),
            ("plain lines in a scroll region", &region),
        ] {
            for fast in [false, true] {
                let mut screen = if fast {
                    ScreenText::new(80, 24)
                } else {
                    ScreenText::slow(80, 24)
                };
                let start = Instant::now();
                let mut len = 0;
                for piece in bytes.chunks(4096) {
                    len += screen.feed(piece).len();
                }
                len += screen.finish().len();
                let ns = start.elapsed().as_nanos() as f64 / bytes.len() as f64;
                println!("{name}, short cut {fast}: {ns:.2} ns/byte ({len} bytes of text)");
            }
        }
    }

    proptest! {
        /// The word-at-a-time scan stops where the byte-by-byte one does.
        #[test]
        fn printable_prefix_is_the_first_byte_that_is_not_printable(
            bytes in prop::collection::vec(prop_oneof![
                0x20u8..=0x7e, prop::sample::select(vec![0u8, 9, 10, 13, 0x1b, 0x1f, 0x7f, 0x80, 0x9b, 0xc3, 0xff])
            ], 0..70),
            printable_first in 0usize..64,
        ) {
            let mut bytes = bytes;
            let n = printable_first.min(bytes.len());
            for b in &mut bytes[..n] {
                if !matches!(b, 0x20..=0x7e) {
                    *b = b'a';
                }
            }
            let expected = bytes.iter().position(|b| !matches!(b, 0x20..=0x7e)).unwrap_or(bytes.len());
            prop_assert_eq!(printable_prefix(&bytes), expected);
        }
    }
}
