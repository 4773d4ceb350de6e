//! What the agent turned on in the user's terminal, so that the launcher can turn it off again
//! when the agent exits, is killed or stops: the terminal is given back in every respect, not
//! only its termios settings (those are [`super::terminal`]'s).
//!
//! The agent's output (a pseudo-terminal run) goes through a VT parser (vte, as for the
//! capture) that follows the state a terminal keeps across writes:
//! - DEC private modes (`CSI ? Pm h/l`, saved and restored by `CSI ? Pm s/r`) from [`PRIVATE`]:
//!   alternate screen, cursor visibility and keys, autowrap, origin, mouse reporting and its
//!   encodings, focus events, bracketed paste, synchronized output, …;
//! - ANSI insert mode (`CSI 4 h`), the application keypad (`ESC =`), the kitty keyboard
//!   protocol's stack (`CSI > flags u` pushes, `CSI < n u` pops, `CSI = flags ; mode u`),
//!   xterm's key modifier options (`CSI > Pp ; Pv m`), the scroll region (`CSI t ; b r`),
//!   character attributes and colours (SGR), the cursor shape (`CSI n SP q`), the title
//!   stack (`CSI 22 t` / `CSI 23 t`; the launcher pushes the user's title before the agent
//!   starts and pops it after, so a title the agent set goes too), the character sets (`ESC ( 0`, SO/SI) and the colours set
//!   by OSC 4/10/11/12/17/19;
//! - full (`ESC c`) and soft (`CSI ! p`) resets.
//!
//! The terminal is assumed to be in its usual state when the agent starts (the shell turns
//! its own modes, such as bracketed paste, off before it runs a command); only what the agent
//! left different from that is undone, with the reset sequence of each (xterm's
//! "ctlseqs" documentation, the kitty keyboard protocol specification).

use std::collections::{BTreeMap, BTreeSet};

/// The DEC private modes followed, each with its usual value (true: set) when a program
/// starts.
pub const PRIVATE: &[(u16, bool)] = &[
    (1, false),    // DECCKM: application cursor keys
    (5, false),    // DECSCNM: reverse video
    (6, false),    // DECOM: origin mode
    (7, true),     // DECAWM: autowrap
    (9, false),    // X10 mouse reporting
    (25, true),    // DECTCEM: cursor visible
    (45, false),   // reverse wraparound
    (47, false),   // alternate screen
    (66, false),   // DECNKM: application keypad
    (1000, false), // mouse: button press and release
    (1001, false), // mouse: highlight tracking
    (1002, false), // mouse: button motion
    (1003, false), // mouse: any motion
    (1004, false), // focus in and out events
    (1005, false), // mouse: UTF-8 coordinates
    (1006, false), // mouse: SGR coordinates
    (1007, false), // alternate scroll
    (1015, false), // mouse: urxvt coordinates
    (1016, false), // mouse: SGR pixel coordinates
    (1047, false), // alternate screen
    (1049, false), // alternate screen, cursor saved
    (2004, false), // bracketed paste
    (2026, false), // synchronized output
];

/// Saves the terminal's window and icon titles on its title stack (xterm's XTWINOPS 22, also
/// tmux): the launcher writes it before the agent starts and [`TITLE_POP`] after, so a title
/// the agent set is replaced by the user's own, which nothing else could know.
pub const TITLE_PUSH: &[u8] = b"\x1b[22;0t";
/// Restores the titles saved by [`TITLE_PUSH`] (XTWINOPS 23).
pub const TITLE_POP: &[u8] = b"\x1b[23;0t";

/// The alternate screen modes, undone after everything that is drawn on that screen.
const ALT_SCREENS: [u16; 3] = [1049, 1047, 47];

/// OSC colour settings and the OSC that resets each.
const OSC_COLOURS: &[(u16, u16)] = &[
    (4, 104),
    (10, 110),
    (11, 111),
    (12, 112),
    (17, 117),
    (19, 119),
];

/// The terminal state the agent's output left, as far as it differs from the start.
#[derive(Debug, Clone, Default)]
pub struct State {
    /// DEC private modes from [`PRIVATE`] the agent set or reset, with their value now.
    private: BTreeMap<u16, bool>,
    /// Values saved by `CSI ? Pm s`.
    saved: BTreeMap<u16, bool>,
    insert: bool,
    keypad: bool,
    /// Kitty keyboard entries the agent pushed and has not popped.
    kitty_pushed: u32,
    /// The agent changed the kitty flags of the entry it found (`CSI = … u`).
    kitty_set: bool,
    /// xterm key modifier resources (`CSI > Pp ; Pv m`) the agent set.
    modify_keys: BTreeSet<u16>,
    scroll_region: bool,
    sgr: bool,
    cursor_shape: bool,
    titles_pushed: u32,
    /// The agent popped more titles than it pushed (it took the launcher's entry too).
    titles_underflow: bool,
    g0_changed: bool,
    shifted_out: bool,
    osc_colours: BTreeSet<u16>,
    /// Whether the cursor is at the start of a line, on the main screen and on the alternate
    /// one (`None`: unknown).
    at_line_start: Option<bool>,
    main_at_line_start: Option<bool>,
    /// How many characters were printed (for [`Tracker::feed`] to learn that the parser is
    /// in its ground state).
    prints: u64,
}

fn default_of(mode: u16) -> Option<bool> {
    PRIVATE.iter().find(|(m, _)| *m == mode).map(|(_, d)| *d)
}

impl State {
    /// A private mode's value now (its usual value when the agent did not change it).
    pub fn private(&self, mode: u16) -> Option<bool> {
        self.private
            .get(&mode)
            .copied()
            .or_else(|| default_of(mode))
    }

    fn set_private(&mut self, mode: u16, on: bool) {
        if default_of(mode).is_none() {
            return;
        }
        if ALT_SCREENS.contains(&mode) && self.private(mode) != Some(on) {
            if on {
                self.main_at_line_start = self.at_line_start;
            } else {
                self.at_line_start = self.main_at_line_start;
            }
        }
        self.private.insert(mode, on);
    }

    /// Whether the cursor is known to be at the start of a line (false when unknown). The
    /// launcher starts its summary on a fresh line otherwise.
    pub fn at_line_start(&self) -> bool {
        self.at_line_start.unwrap_or(false)
    }

    /// Whether the title the launcher pushed before the agent started ([`TITLE_PUSH`]) is
    /// still on the terminal's title stack, under the agent's own entries.
    pub fn title_stack_intact(&self) -> bool {
        !self.titles_underflow
    }

    /// The bytes that undo everything the agent left on, in an order that keeps each step
    /// meaningful: synchronized output off first (else the rest might be held back), the
    /// attributes, character sets and regions of the screen in use, then the alternate screen,
    /// then the input and cursor modes. Empty when nothing is left on.
    pub fn reset_bytes(&self) -> Vec<u8> {
        let mut out = String::new();
        let changed = |m: u16| {
            self.private
                .get(&m)
                .is_some_and(|v| Some(*v) != default_of(m))
        };
        if changed(2026) {
            out.push_str("\x1b[?2026l");
        }
        if self.sgr {
            out.push_str("\x1b[0m");
        }
        if self.insert {
            out.push_str("\x1b[4l");
        }
        if changed(6) {
            out.push_str("\x1b[?6l");
        }
        if self.scroll_region {
            // DECSTBM homes the cursor: keep it where it is.
            out.push_str("\x1b7\x1b[r\x1b8");
        }
        if self.shifted_out {
            out.push('\x0f');
        }
        if self.g0_changed {
            out.push_str("\x1b(B");
        }
        for m in ALT_SCREENS {
            if changed(m) {
                out.push_str(&format!("\x1b[?{m}l"));
            }
        }
        for (m, default) in PRIVATE {
            if changed(*m) && !ALT_SCREENS.contains(m) && ![2026, 6].contains(m) {
                out.push_str(&format!("\x1b[?{m}{}", if *default { 'h' } else { 'l' }));
            }
        }
        if self.kitty_pushed > 0 {
            out.push_str(&format!("\x1b[<{}u", self.kitty_pushed));
        }
        if self.kitty_set {
            out.push_str("\x1b[=0;1u");
        }
        for r in &self.modify_keys {
            out.push_str(&format!("\x1b[>{r}m"));
        }
        if self.cursor_shape {
            out.push_str("\x1b[0 q");
        }
        for _ in 0..self.titles_pushed.min(64) {
            out.push_str("\x1b[23;0t");
        }
        if self.keypad {
            out.push_str("\x1b>");
        }
        for (set, reset) in OSC_COLOURS {
            if self.osc_colours.contains(set) {
                out.push_str(&format!("\x1b]{reset}\x1b\\"));
            }
        }
        out.into_bytes()
    }

    /// The bytes that turn the agent's modes on again after [`State::reset_bytes`] (the run
    /// resumes after a stop): the alternate screen, then the private modes and the keypad.
    pub fn reapply_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let changed: Vec<(u16, bool)> = self
            .private
            .iter()
            .filter(|(m, v)| Some(**v) != default_of(**m))
            .map(|(m, v)| (*m, *v))
            .collect();
        for (m, v) in changed
            .iter()
            .filter(|(m, _)| ALT_SCREENS.contains(m))
            .chain(changed.iter().filter(|(m, _)| !ALT_SCREENS.contains(m)))
        {
            out.extend_from_slice(format!("\x1b[?{m}{}", if *v { 'h' } else { 'l' }).as_bytes());
        }
        if self.keypad {
            out.extend_from_slice(b"\x1b=");
        }
        out
    }
}

impl vte::Perform for State {
    fn print(&mut self, _c: char) {
        self.at_line_start = Some(false);
        self.prints = self.prints.wrapping_add(1);
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\r' => self.at_line_start = Some(true),
            0x08 | b'\t' => self.at_line_start = None,
            0x0e => self.shifted_out = true,
            0x0f => self.shifted_out = false,
            _ => {}
        }
    }

    fn csi_dispatch(&mut self, params: &vte::Params, inter: &[u8], _ignore: bool, action: char) {
        let values: Vec<u16> = params
            .iter()
            .map(|p| p.first().copied().unwrap_or(0))
            .collect();
        let first = values.first().copied().unwrap_or(0);
        match (inter, action) {
            ([b'?'], 'h' | 'l') => {
                for m in &values {
                    self.set_private(*m, action == 'h');
                }
            }
            ([b'?'], 's') => {
                for m in &values {
                    if let Some(v) = self.private(*m) {
                        self.saved.insert(*m, v);
                    }
                }
            }
            ([b'?'], 'r') => {
                for m in &values {
                    if let Some(v) = self.saved.get(m).copied() {
                        self.set_private(*m, v);
                    }
                }
            }
            ([], 'h' | 'l') if values.contains(&4) => self.insert = action == 'h',
            ([], 'm') => {
                // Any attribute or colour; a reset alone (`CSI m`, `CSI 0 m`) clears them.
                self.sgr = values.iter().any(|v| *v != 0);
            }
            ([], 'r') => {
                // DECSTBM: no parameters, or the whole screen, is the usual state; anything
                // else is a region. The screen's height is not known here, so a region that
                // happens to be the whole screen still counts (its reset is harmless).
                self.scroll_region = !(values.iter().all(|v| *v == 0) || values.is_empty());
                self.at_line_start = Some(true);
            }
            ([], 'H' | 'f') => {
                self.at_line_start = Some(values.get(1).copied().unwrap_or(0) <= 1);
            }
            ([], 'G' | '`') => self.at_line_start = Some(first <= 1),
            ([], 'C') => self.at_line_start = Some(false),
            ([], 'D') => self.at_line_start = None,
            ([], 'E' | 'F') => self.at_line_start = Some(true),
            ([], 't') => match first {
                22 => self.titles_pushed += 1,
                23 => match self.titles_pushed.checked_sub(1) {
                    Some(n) => self.titles_pushed = n,
                    None => self.titles_underflow = true,
                },
                _ => {}
            },
            ([b'>'], 'u') => self.kitty_pushed += 1,
            ([b'<'], 'u') => {
                self.kitty_pushed = self.kitty_pushed.saturating_sub(u32::from(first.max(1)));
            }
            ([b'='], 'u') if self.kitty_pushed == 0 => self.kitty_set = true,
            ([b'>'], 'm') => {
                if params.is_empty() {
                    self.modify_keys.clear();
                } else if values.len() >= 2 {
                    self.modify_keys.insert(first);
                } else {
                    self.modify_keys.remove(&first);
                }
            }
            ([b' '], 'q') => self.cursor_shape = first != 0,
            ([b'!'], 'p') => {
                // DECSTR, soft reset.
                for m in [1, 6, 25, 66] {
                    self.private.remove(&m);
                }
                self.insert = false;
                self.keypad = false;
                self.sgr = false;
                self.scroll_region = false;
                self.g0_changed = false;
                self.shifted_out = false;
            }
            _ => {}
        }
    }

    fn esc_dispatch(&mut self, inter: &[u8], _ignore: bool, byte: u8) {
        match (inter, byte) {
            ([], b'=') => self.keypad = true,
            ([], b'>') => self.keypad = false,
            ([], b'c') => {
                *self = State {
                    at_line_start: Some(true),
                    ..State::default()
                }
            }
            ([b'('], b'B') => self.g0_changed = false,
            ([b'('], _) => self.g0_changed = true,
            _ => {}
        }
    }

    fn osc_dispatch(&mut self, params: &[&[u8]], _bell_terminated: bool) {
        let Some(n) = params
            .first()
            .and_then(|p| std::str::from_utf8(p).ok())
            .and_then(|p| p.parse::<u16>().ok())
        else {
            return;
        };
        // `OSC 10 ; ?` asks for the colour: only a real setting counts.
        let sets = params.get(1).is_some_and(|v| *v != b"?");
        if OSC_COLOURS.iter().any(|(s, _)| *s == n) && sets {
            self.osc_colours.insert(n);
        } else if let Some((s, _)) = OSC_COLOURS.iter().find(|(_, r)| *r == n) {
            self.osc_colours.remove(s);
        }
    }
}

/// Follows an output stream: [`Tracker::feed`] every chunk written to the terminal.
#[derive(Default)]
pub struct Tracker {
    parser: vte::Parser,
    /// The state so far.
    pub state: State,
    /// The parser is known to be in its ground state (it printed the last printable byte it
    /// was fed, and everything after that was plain text).
    ground: bool,
}

/// Text that, in the parser's ground state, only prints or moves the cursor (`\n`, `\r`,
/// `\t`): it cannot start a sequence or change a mode.
fn plain(b: u8) -> bool {
    matches!(b, 0x20..=0x7e | b'\n' | b'\r' | b'\t')
}

/// How many bytes at the start of `bytes` are plain text ([`plain`]). Eight bytes are looked
/// at together (a word with no byte below 0x20, none at 0x7F and none above is plain), a word
/// that may hold another byte one by one: the relay calls this for every byte of output, and
/// a byte-by-byte scan costs about a nanosecond a byte there.
pub fn plain_prefix(bytes: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut words = bytes.chunks_exact(8);
    let mut at = 0;
    for word in words.by_ref() {
        let w = u64::from_le_bytes(word.try_into().expect("chunks of 8"));
        // Bit 7 of a byte is set here when the byte is below 0x20 (or a borrow from a byte
        // below it went through: a false alarm, settled byte by byte), is 0x7F, or is
        // above 0x7F.
        let below = w.wrapping_sub(ONES * 0x20) & !w;
        let del = w ^ (ONES * 0x7f);
        let del = del.wrapping_sub(ONES) & !del;
        if (below | del | w) & HIGH != 0
            && let Some(i) = word.iter().position(|&b| !plain(b))
        {
            return at + i;
        }
        at += 8;
    }
    let rest = words.remainder();
    at + rest.iter().position(|&b| !plain(b)).unwrap_or(rest.len())
}

impl Tracker {
    /// Follows `bytes` of output. Runs of plain text ([`plain`]) fed while the parser is
    /// known to be in its ground state are not parsed: their only effect, on whether the
    /// cursor is at a line start, is applied directly. The relay calls this for every chunk
    /// of the agent's output, most of which is such text.
    ///
    /// Returns whether [`State::reset_bytes`] may differ from what it was before: `bytes`
    /// hold a byte that can start a mode change (ESC, SO, SI or a C1 CSI), or the parser was
    /// not known to be in its ground state (a sequence cut between reads ends in this one).
    /// Plain text is looked at once, eight bytes at a time ([`plain_prefix`]), for both
    /// answers.
    pub fn feed(&mut self, bytes: &[u8]) -> bool {
        let plain_len = plain_prefix(bytes);
        let changes = !self.ground
            || bytes[plain_len..]
                .iter()
                .any(|b| matches!(b, 0x1b | 0x0e | 0x0f | 0x9b));
        self.feed_past(bytes, plain_len);
        changes
    }

    /// [`Tracker::feed`] of `bytes`, whose first `plain_len` bytes are plain text.
    fn feed_past(&mut self, bytes: &[u8], plain_len: usize) {
        let mut rest = bytes;
        if self.ground {
            let n = plain_len;
            self.skip(&rest[..n]);
            rest = &rest[n..];
            if rest.is_empty() {
                return;
            }
        }
        // Everything up to the last byte that is not plain text goes through the parser.
        let head = rest.iter().rposition(|&b| !plain(b)).map_or(0, |p| p + 1);
        self.parser.advance(&mut self.state, &rest[..head]);
        let tail = &rest[head..];
        // Then the plain tail, one printable byte at a time (the end of a sequence, a few
        // bytes), until one is printed: the parser is then in its ground state (a byte in a
        // sequence never prints) and stays there for the rest of the tail. A long string
        // (a title) is parsed whole after a few tries.
        self.ground = false;
        let mut at = 0;
        for _ in 0..32 {
            let Some(i) = tail[at..].iter().position(|b| (0x20..=0x7e).contains(b)) else {
                break;
            };
            let before = self.state.prints;
            self.parser.advance(&mut self.state, &tail[at..=at + i]);
            at += i + 1;
            if self.state.prints != before {
                self.ground = true;
                self.skip(&tail[at..]);
                return;
            }
        }
        self.parser.advance(&mut self.state, &tail[at..]);
    }

    /// What plain text does in the ground state: a printable byte leaves the cursor mid-line,
    /// `\r` at a line start, `\t` somewhere unknown, `\n` changes nothing.
    fn skip(&mut self, text: &[u8]) {
        if let Some(&b) = text.iter().rev().find(|&&b| b != b'\n') {
            self.state.at_line_start = match b {
                b'\r' => Some(true),
                b'\t' => None,
                _ => Some(false),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The state as a reference parser fed everything at once leaves it (print count aside).
    fn comparable(state: &State) -> String {
        let mut s = state.clone();
        s.prints = 0;
        format!("{s:?}")
    }

    proptest::proptest! {
        /// Skipping plain text in the ground state changes nothing: the state is the one
        /// the parser reaches when fed every chunk, however the output is cut.
        #[test]
        fn chunked_feeding_with_skips_matches_one_parse(
            parts in proptest::collection::vec(proptest::sample::select(vec![
                "a", "xyz ", "\r", "\n", "\t", "\x1b", "[", "?", "1049", "25", "2004", ";",
                "h", "l", "m", "0", "1", "]", "11;#000", "\x07", "\\", "c", "(", "B", "=",
                ">", "\x0e", "\x0f", "\u{e9}", "\u{9b}", "P", "\x1b[?1049h", "\x1b[0m",
                "\x1bc", "\x1b]0;title\x07", "\x1bP1$r\x1b\\", "\x7f", "\x08",
            ]), 0..60),
            cuts in proptest::collection::vec(0usize..200, 0..12),
        ) {
            let input: Vec<u8> = parts.concat().into_bytes();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(input.len())).collect();
            cuts.push(0);
            cuts.push(input.len());
            cuts.sort_unstable();
            // The reference: the parser fed every chunk whole (vte's own handling of a
            // character cut between chunks included).
            let mut reference = State::default();
            let mut parser = vte::Parser::new();
            let mut t = Tracker::default();
            for w in cuts.windows(2) {
                parser.advance(&mut reference, &input[w[0]..w[1]]);
                let reset = t.state.reset_bytes();
                // The relay updates the emergency reset only when `feed` says it may change.
                if !t.feed(&input[w[0]..w[1]]) {
                    proptest::prop_assert_eq!(t.state.reset_bytes(), reset);
                }
            }
            proptest::prop_assert_eq!(comparable(&t.state), comparable(&reference));
            proptest::prop_assert_eq!(t.state.reset_bytes(), reference.reset_bytes());
        }
    }

    #[test]
    fn plain_text_after_a_sequence_is_skipped_and_still_counted() {
        let mut t = Tracker::default();
        t.feed(b"\x1b[?25lhello");
        assert!(t.ground);
        let prints = t.state.prints;
        t.feed(b" world\r\n");
        // Skipped: not printed one by one, but the cursor is at a line start.
        assert_eq!(t.state.prints, prints);
        assert!(t.state.at_line_start());
        t.feed(b"more");
        assert!(!t.state.at_line_start());
        // Inside an unfinished sequence nothing is skipped.
        t.feed(b"\x1b]0;a title");
        assert!(!t.ground);
        t.feed(b" goes on\x07\x1b[?25h");
        assert_eq!(t.state.reset_bytes(), Vec::<u8>::new());
    }

    fn reset_after(output: &str) -> String {
        let mut t = Tracker::default();
        t.feed(output.as_bytes());
        String::from_utf8(t.state.reset_bytes()).unwrap()
    }

    #[test]
    fn nothing_changed_nothing_to_undo() {
        assert_eq!(reset_after("plain text\r\n\x1b[1mbold\x1b[0m\r\n"), "");
        assert_eq!(reset_after("\x1b[?1049h\x1b[?25l\x1b[?25h\x1b[?1049l"), "");
        assert_eq!(reset_after("\x1b[>1u\x1b[<u\x1b=\x1b>"), "");
        assert_eq!(reset_after("\x1b[?1000;1006h\x1b[?1000;1006l"), "");
        assert_eq!(
            reset_after("\x1b[?2004h\x1b[?2004s\x1b[?2004l\x1b[?2004r\x1b[?2004l"),
            ""
        );
    }

    #[test]
    fn what_was_left_on_is_undone() {
        let all = "\x1b[?2026h\x1b[?1049h\x1b[?1h\x1b=\x1b[?25l\x1b[?2004h\x1b[?1000;1002;1003;1005;1006;1015h\x1b[?1004h\x1b[>1u\x1b[>3u\x1b[>4;2m\x1b[3;10r\x1b[4h\x1b[?6h\x1b[?7l\x1b[1;31m\x1b[5 q\x1b[22;0t\x1b(0\x0e\x1b]11;#000000\x1b\\";
        let r = reset_after(all);
        for want in [
            "\x1b[?2026l",
            "\x1b[0m",
            "\x1b[4l",
            "\x1b[?6l",
            "\x1b7\x1b[r\x1b8",
            "\x0f",
            "\x1b(B",
            "\x1b[?1049l",
            "\x1b[?1l",
            "\x1b[?7h",
            "\x1b[?25h",
            "\x1b[?1000l",
            "\x1b[?1002l",
            "\x1b[?1003l",
            "\x1b[?1004l",
            "\x1b[?1005l",
            "\x1b[?1006l",
            "\x1b[?1015l",
            "\x1b[?2004l",
            "\x1b[<2u",
            "\x1b[>4m",
            "\x1b[0 q",
            "\x1b[23;0t",
            "\x1b>",
            "\x1b]111\x1b\\",
        ] {
            assert!(r.contains(want), "{want:?} missing from {r:?}");
        }
        // Synchronized output ends first, the alternate screen after what is drawn on it.
        assert!(r.starts_with("\x1b[?2026l"), "{r:?}");
        assert!(r.find("\x1b[?1049l") > r.find("\x1b[r"), "{r:?}");
        // A full reset leaves nothing to undo.
        assert_eq!(reset_after(&format!("{all}\x1bc")), "");
    }

    #[test]
    fn the_launchers_title_entry_is_popped_unless_the_agent_took_it() {
        let mut t = Tracker::default();
        t.feed(b"\x1b]2;agent title\x07\x1b[22;0t\x1b[23;0t");
        assert!(t.state.title_stack_intact());
        t.feed(b"\x1b[23;0t");
        assert!(!t.state.title_stack_intact());
    }

    #[test]
    fn a_split_sequence_is_followed_as_a_whole() {
        let mut t = Tracker::default();
        for b in b"\x1b[?1049;1000h\x1b[>1u" {
            t.feed(&[*b]);
        }
        let r = String::from_utf8(t.state.reset_bytes()).unwrap();
        assert_eq!(r, "\x1b[?1049l\x1b[?1000l\x1b[<1u");
    }

    #[test]
    fn the_line_start_is_followed_across_screens() {
        let mut t = Tracker::default();
        t.feed(b"prompt\r\n");
        assert!(t.state.at_line_start());
        t.feed(b"^C");
        assert!(!t.state.at_line_start());
        t.feed(b"\r\n\x1b[?1049hdrawn");
        assert!(!t.state.at_line_start());
        t.feed(b"\x1b[?1049l");
        assert!(t.state.at_line_start());
    }

    use proptest::prelude::*;

    proptest! {
        /// What is undone depends on the output, not on how it was cut into reads.
        #[test]
        fn reset_does_not_depend_on_chunking(
            pieces in prop::collection::vec(prop::sample::select(vec![
                "\x1b[?1049h", "\x1b[?1049l", "\x1b[?25l", "\x1b[?25h", "\x1b[?1000;1006h",
                "\x1b[?1006l", "\x1b[>1u", "\x1b[<u", "\x1b=", "\x1b>", "\x1b[1;31m", "\x1b[m",
                "\x1b[3;9r", "\x1b[r", "\x1b(0", "\x1b(B", "\x1b]11;#000\x07", "\x1b]111\x07",
                "\x1b[?2004s", "\x1b[?2004h", "\x1b[?2004r", "\x1bc", "é😀", "text\r\n",
            ]), 0..30),
            cut in 1usize..=5,
        ) {
            let bytes = pieces.concat().into_bytes();
            let mut whole = Tracker::default();
            whole.feed(&bytes);
            let mut chunked = Tracker::default();
            for chunk in bytes.chunks(cut) {
                chunked.feed(chunk);
            }
            prop_assert_eq!(whole.state.reset_bytes(), chunked.state.reset_bytes());
        }
    }

    proptest::proptest! {
        /// The word-at-a-time scan stops where the byte-by-byte one does.
        #[test]
        fn plain_prefix_is_the_first_byte_that_is_not_plain(
            bytes in proptest::collection::vec(proptest::prop_oneof![
                0x20u8..=0x7e, proptest::sample::select(vec![0u8, 9, 10, 13, 0x1b, 0x1f, 0x7f, 0x80, 0x9b, 0xc3, 0xff])
            ], 0..70),
            plain_first in 0usize..64,
        ) {
            let mut bytes = bytes;
            let n = plain_first.min(bytes.len());
            for b in &mut bytes[..n] {
                if !plain(*b) {
                    *b = b'a';
                }
            }
            let expected = bytes.iter().position(|&b| !plain(b)).unwrap_or(bytes.len());
            proptest::prop_assert_eq!(plain_prefix(&bytes), expected);
        }
    }
}
