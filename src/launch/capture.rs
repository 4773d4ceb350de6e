//! The output capture of a pseudo-terminal run: `.pas-agent/runs/<run-id>/capture.ansi` (the
//! bytes the agent wrote, escape sequences and all) and `capture.txt` (the printable text and
//! line feeds only: escape sequences are recognised by `vte`, the VT parser of the Alacritty
//! terminal, and dropped, so text shown on screen is searchable).
//!
//! Both stop at a size limit: [`DEFAULT_LIMIT`] bytes of agent output, or
//! `PAS_AGENT_CAPTURE_LIMIT` (bytes; 0 turns capturing off). A note at the end of each file says
//! where it was cut. The directory is created 0700 and the files 0600 (captures can hold
//! secrets the agent printed), and `.pas-agent/.gitignore` lists `runs/`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::fsutil::{Named, WriteError, WriteGuard};

/// Environment variable: the capture limit in bytes.
pub const LIMIT_ENV: &str = "PAS_AGENT_CAPTURE_LIMIT";
/// Default capture limit: 32 MiB of agent output.
pub const DEFAULT_LIMIT: u64 = 32 * 1024 * 1024;
/// The capture directory of all runs, relative to the project root.
pub const RUNS_DIR: &str = ".pas-agent/runs";

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

/// Collects what a terminal would print: characters, line feeds and tabs, with cursor moves
/// that stand for blank space turned into spaces and line breaks. Everything else (colours,
/// modes, titles, erasures: escape and control sequences, parsed by vte) is dropped.
#[derive(Default)]
struct Text {
    out: Vec<u8>,
    /// The cursor column on the current output line (0-based, one per character).
    col: usize,
    /// The last byte ever written to the text (kept when `out` is taken), to know whether a
    /// line is open.
    last: Option<u8>,
}

impl Text {
    fn pad_to(&mut self, col: usize) {
        if col > self.col {
            self.out.extend(std::iter::repeat_n(b' ', col - self.col));
        }
        self.col = col;
    }

    fn line_break(&mut self) {
        if self.out.last().or(self.last.as_ref()).is_some_and(|b| *b != b'\n') {
            self.out.push(b'\n');
        }
        self.col = 0;
    }
}

impl vte::Perform for Text {
    fn print(&mut self, c: char) {
        let mut buf = [0u8; 4];
        self.out
            .extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        self.col += 1;
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\n' => {
                self.out.push(b'\n');
                self.col = 0;
            }
            b'\r' => self.col = 0,
            b'\t' => {
                self.out.push(b'\t');
                self.col = (self.col / 8 + 1) * 8;
            }
            _ => {}
        }
    }

    /// A TUI often moves the cursor right (CUF) or to a column (CHA, HPA) instead of printing
    /// spaces, and jumps between rows (CUP, CUU, CUD, CNL, CPL, VPA) instead of printing line
    /// feeds; those become spaces and line breaks so words and lines stay apart.
    fn csi_dispatch(
        &mut self,
        params: &vte::Params,
        _intermediates: &[u8],
        _ignore: bool,
        action: char,
    ) {
        let mut values = params.iter().map(|p| p.first().copied().unwrap_or(0));
        let first = usize::from(values.next().unwrap_or(0).max(1)).min(1000);
        match action {
            'C' => self.pad_to(self.col + first),
            'G' | '`' => self.pad_to(first - 1),
            'H' | 'f' => {
                let col = usize::from(values.next().unwrap_or(0).max(1)).min(1000);
                self.line_break();
                self.pad_to(col - 1);
            }
            'A' | 'B' | 'E' | 'F' | 'd' => self.line_break(),
            _ => {}
        }
    }
}

/// Turns terminal output into `capture.txt`'s text, independently of how the output is cut
/// into reads: the same bytes fed at once or a byte at a time give the same text.
///
/// vte 0.14 loses the character after a UTF-8 sequence that was split between two `advance`
/// calls when more bytes follow it in the second call (its partial-character path skips by
/// the wrong count). The converter therefore never hands vte an incomplete trailing
/// sequence: up to three bytes of an unfinished character wait for the next chunk.
#[derive(Default)]
pub struct TextConverter {
    parser: vte::Parser,
    performer: Text,
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

impl TextConverter {
    /// Feeds output bytes; returns the text they completed (UTF-8, `\n` line ends).
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<u8> {
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
        self.parser.advance(&mut self.performer, now);
        self.pending = later.to_vec();
        if let Some(b) = self.performer.out.last() {
            self.performer.last = Some(*b);
        }
        std::mem::take(&mut self.performer.out)
    }

    /// Drops an unfinished character (the output was cut inside it, or ended there).
    pub fn drop_pending(&mut self) {
        self.pending.clear();
    }

    /// The text of `bytes` fed in one piece.
    pub fn convert(bytes: &[u8]) -> Vec<u8> {
        let mut c = TextConverter::default();
        let out = c.feed(bytes);
        c.drop_pending();
        out
    }
}

/// An open capture.
pub struct Capture {
    ansi: BufWriter<File>,
    text: BufWriter<File>,
    converter: TextConverter,
    written: u64,
    limit: u64,
    cut: bool,
    failed: bool,
}

impl Capture {
    /// Creates the run's capture directory and both files under `root`, through the session
    /// root's [`WriteGuard`]: a `.pas-agent/` or `runs/` that leads outside the root is refused,
    /// and the files are created new (`O_EXCL`, never through a link).
    ///
    /// Errors: the directory or a file cannot be created, or the guard refuses (the message
    /// names the real target).
    pub fn create(root: &Path, run_id: &uuid::Uuid, limit: u64) -> std::io::Result<Capture> {
        let (ansi, txt) = paths(run_id);
        let ansi = root.join(ansi);
        let txt = root.join(txt);
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
        Ok(Capture {
            ansi: BufWriter::with_capacity(64 * 1024, create(&ansi)?),
            text: BufWriter::with_capacity(64 * 1024, create(&txt)?),
            converter: TextConverter::default(),
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
        let room = usize::try_from(self.limit.saturating_sub(self.written)).unwrap_or(usize::MAX);
        let take = &bytes[..bytes.len().min(room)];
        let ok = self.ansi.write_all(take).is_ok() && self.plain(take);
        self.written += take.len() as u64;
        if !ok {
            self.failed = true;
        } else if take.len() < bytes.len() {
            self.cut = true;
            self.converter.drop_pending();
            let note = format!(
                "\r\n[pas-agent: capture cut at {} bytes; set {LIMIT_ENV} to keep more]\r\n",
                self.limit
            );
            let _ = self.ansi.write_all(note.as_bytes());
            let _ = self.plain(note.as_bytes());
        }
    }

    /// Feeds bytes through the parser into the text file.
    fn plain(&mut self, bytes: &[u8]) -> bool {
        let text = self.converter.feed(bytes);
        self.text.write_all(&text).is_ok()
    }

    /// Flushes both files.
    pub fn finish(mut self) {
        let _ = self.ansi.flush();
        let _ = self.text.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_has_no_escapes_and_the_limit_holds() {
        let dir = tempfile::tempdir().unwrap();
        let id = uuid::Uuid::new_v4();
        let mut c = Capture::create(dir.path(), &id, 60).unwrap();
        c.write(b"\x1b[1;31mred\x1b[0m line\r\n\x1b]0;title\x07next\x1b[2Cword\x1b[5;1Hrow\r\n");
        c.write(b"0123456789012345678901234567890123456789");
        c.finish();
        let (ansi, txt) = paths(&id);
        let raw = std::fs::read(dir.path().join(ansi)).unwrap();
        let text = std::fs::read_to_string(dir.path().join(txt)).unwrap();
        assert!(raw.starts_with(b"\x1b[1;31mred"));
        assert!(text.starts_with("red line\nnext  word\nrow\n"), "{text:?}");
        assert!(!text.contains('\x1b') && !text.contains('\r'), "{text:?}");
        assert!(text.contains("capture cut at 60 bytes"), "{text:?}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let meta = std::fs::metadata(dir.path().join(paths(&id).0)).unwrap();
            assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        }
        // Cursor moves that stand for spaces and line breaks (as Claude Code's TUI draws).
        let id = uuid::Uuid::new_v4();
        let mut t = Capture::create(dir.path(), &id, 1000).unwrap();
        t.write(
            b"\x1b[1mClaude\x1b[8GCode\x1b[24Gv2\r\r\n\x1b[3G\x1b[39mMock reply.\r\x1b[2Bnext\n",
        );
        t.finish();
        let text = std::fs::read_to_string(dir.path().join(paths(&id).1)).unwrap();
        assert_eq!(text, "Claude Code            v2\n  Mock reply.\nnext\n");
    }

    /// `xéC─😀y` written in two pieces, cut after the first byte of `é` (issue 8 item 4).
    #[test]
    fn a_character_split_between_reads_keeps_the_next_one() {
        let line = "xéC─😀y\n".as_bytes();
        for cut in 0..=line.len() {
            let mut c = TextConverter::default();
            let mut out = c.feed(&line[..cut]);
            out.extend(c.feed(&line[cut..]));
            assert_eq!(String::from_utf8(out).unwrap(), "xéC─😀y\n", "cut at {cut}");
        }
    }

    use proptest::prelude::*;

    /// Pieces of terminal output: text in several scripts, controls, and escape sequences
    /// (CSI with parameters, OSC ended by BEL or ST with UTF-8 inside, charset designations).
    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-zA-Z0-9 ]{1,6}",
            prop::sample::select(vec![
                "é", "─", "😀", "ĸ", "日本", "\u{301}", "\u{fffd}", "\r", "\n", "\t", "\r\n",
                "\x1b[1;31m", "\x1b[0m", "\x1b[2C", "\x1b[5;10H", "\x1b[?1049h", "\x1b[?25l",
                "\x1b]0;tïtle\x07", "\x1b]2;😀\x1b\\", "\x1b(0", "\x1b(B", "\x1b[>1u",
                "\x1b[3G", "\x1b[2B", "\x1b7", "\x1b8", "\x1bP+q\x1b\\",
            ])
            .prop_map(str::to_string),
        ]
    }

    proptest! {
        #[test]
        fn text_does_not_depend_on_how_output_is_chunked(
            pieces in prop::collection::vec(piece(), 0..40),
            cuts in prop::collection::vec(1usize..=5, 0..400),
        ) {
            let bytes = pieces.concat().into_bytes();
            let whole = TextConverter::convert(&bytes);
            let mut c = TextConverter::default();
            let mut chunked = Vec::new();
            let mut rest: &[u8] = &bytes;
            let mut sizes = cuts.iter().cycle();
            while !rest.is_empty() {
                let n = (*sizes.next().unwrap_or(&1)).min(rest.len());
                chunked.extend(c.feed(&rest[..n]));
                rest = &rest[n..];
            }
            prop_assert_eq!(String::from_utf8_lossy(&whole), String::from_utf8_lossy(&chunked));
        }
    }
}
