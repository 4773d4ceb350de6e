//! Terminal input and output: the one sanitiser for text shown to people, warnings on stderr,
//! and prompts that only ever read from a terminal.
//!
//! Every byte this process writes to stdout or stderr leaves through this module ([`print`],
//! [`warn`], [`note`], [`error`], [`print_json`]; `clippy.toml` disallows the `print!` family
//! elsewhere), and each of those cleans what it writes with [`clean_output`] at that edge. So a
//! string read from a file (a commit id, a branch, a path, an argument echoed in an error) is
//! treated exactly like text typed by the user, whichever command prints it and however the
//! message was assembled. There is no way around it: the shell scripts of `hook` and the
//! block of `export -o -` go through [`print`] too (they hold no control character).
//! The agent's own output under `run` is the agent's, passed on by `crate::launch`.

use std::borrow::Cow;
use std::io::{BufRead, IsTerminal, Write};

use crate::error::{Error, Result};

/// Makes session text or a file name safe to print: C0 and C1 control characters, DEL and the
/// Unicode bidirectional overrides become `?`, so stored text cannot move the cursor, change
/// colours or reorder what the user sees.
pub fn clean(text: &str) -> String {
    text.chars()
        .map(|c| if is_unsafe(c) { '?' } else { c })
        .collect()
}

/// [`clean`], and also collapses every whitespace run (newlines included) to one space, for
/// text that must stay on one line.
pub fn clean_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&clean(word));
    }
    out
}

/// Whether `c` may never reach a terminal raw: C0 and C1 controls, DEL, the bidirectional
/// embeddings, overrides, isolates and marks (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F,
/// U+061C), and the Unicode line and paragraph separators (U+2028, U+2029).
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{202A}'..='\u{202E}'
                | '\u{2066}'..='\u{2069}'
                | '\u{200E}'
                | '\u{200F}'
                | '\u{061C}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

/// [`clean`] for whole messages: like it, but newlines and tabs (the layout this program
/// writes) are kept. Applied by every function here that writes to stdout or stderr.
pub fn clean_output(text: &str) -> Cow<'_, str> {
    let keep = |c: char| c == '\n' || c == '\t' || !is_unsafe(c);
    if text.chars().all(keep) {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(
            text.chars()
                .map(|c| if keep(c) { c } else { '?' })
                .collect(),
        )
    }
}

/// Whether the locale's character set is UTF-8: the first of `LC_ALL`, `LC_CTYPE` and `LANG`
/// that is set and not empty names it (`en_US.UTF-8`, `C.utf8`, macOS's bare `UTF-8`); none
/// set means the C locale, which is ASCII. Read once per process. Always true on Windows,
/// whose consoles pas-agent writes UTF-8 to.
pub fn utf8_locale() -> bool {
    static UTF8: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *UTF8.get_or_init(|| {
        if cfg!(windows) {
            return true;
        }
        let name = ["LC_ALL", "LC_CTYPE", "LANG"]
            .iter()
            .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
            .unwrap_or_default()
            .to_ascii_lowercase();
        name.contains("utf-8") || name.contains("utf8")
    })
}

/// `text` in ASCII, for a locale whose character set is not UTF-8: pas-agent's own marks become
/// their ASCII forms (`·` `|`, `…` `...`, `—` `--`, `→` `->`, `⚠` `!`, `✓` `ok`, box lines `-`,
/// curly quotes straight), and any other character outside ASCII (in session text, a file name)
/// becomes `?`, as the terminal could not show it. Unchanged text is borrowed.
pub fn ascii(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            c if c.is_ascii() => out.push(c),
            '\u{b7}' | '\u{2022}' => out.push('|'),
            '\u{2026}' => out.push_str("..."),
            '\u{2014}' => out.push_str("--"),
            '\u{2013}' | '\u{2010}' | '\u{2011}' | '\u{2212}' => out.push('-'),
            '\u{2500}'..='\u{257f}' => out.push('-'),
            '\u{2192}' => out.push_str("->"),
            '\u{2190}' => out.push_str("<-"),
            '\u{26a0}' => out.push('!'),
            '\u{2713}' | '\u{2714}' => out.push_str("ok"),
            '\u{2717}' | '\u{2718}' | '\u{d7}' => out.push('x'),
            '\u{2018}' | '\u{2019}' => out.push('\''),
            '\u{201c}' | '\u{201d}' => out.push('"'),
            '\u{2264}' => out.push_str("<="),
            '\u{2265}' => out.push_str(">="),
            '\u{a0}' | '\u{2009}' | '\u{202f}' => out.push(' '),
            _ => out.push('?'),
        }
    }
    Cow::Owned(out)
}

/// `text` as the terminal's locale can show it: as it is under UTF-8, else [`ascii`].
pub fn for_locale(text: &str) -> Cow<'_, str> {
    if utf8_locale() {
        Cow::Borrowed(text)
    } else {
        ascii(text)
    }
}

/// [`clean_output`], then [`for_locale`]: what every message for people goes through.
fn for_people(text: &str) -> Cow<'_, str> {
    match clean_output(text) {
        Cow::Borrowed(t) => for_locale(t),
        Cow::Owned(t) => Cow::Owned(for_locale(&t).into_owned()),
    }
}

/// Writes `text`, cleaned and in the locale's character set ([`for_locale`]), to stderr.
/// Errors writing stderr are ignored: there is nowhere left to report them.
fn to_stderr(text: &str) {
    let _ = std::io::stderr()
        .lock()
        .write_all(for_people(text).as_bytes());
}

/// Prints `warning: <message>` on stderr, cleaned.
pub fn warn(message: &str) {
    to_stderr(&format!("warning: {message}\n"));
}

/// Prints a line on stderr (notes and hints that are not the command's output), cleaned.
pub fn note(message: &str) {
    to_stderr(&format!("{message}\n"));
}

/// Prints `error: <message>` on stderr, cleaned: the last words of a failed command.
pub fn error(message: &str) {
    to_stderr(&format!("error: {message}\n"));
}

/// Writes `text` to stdout, cleaned by [`clean_output`] and in the locale's character set
/// ([`for_locale`]). A closed pipe (`pas-agent list | head -1`) becomes [`Error::BrokenPipe`],
/// which exits quietly.
pub fn print(text: &str) -> Result<()> {
    write_stdout(&for_people(text))
}

/// [`print`] for text that other programs read back byte for byte (a shell script, a
/// completion list, the exported block, a registration snippet, paths): cleaned, never
/// changed for the locale.
pub fn print_data(text: &str) -> Result<()> {
    write_stdout(&clean_output(text))
}

/// Writes `value` as pretty JSON and a newline on stdout. Strings are escaped by
/// [`JsonFormatter`], so the document holds no control character raw (serde_json escapes only
/// the C0 controls).
pub fn print_json(value: &impl serde::Serialize) -> Result<()> {
    let mut text = to_json(value)?;
    text.push('\n');
    print(&text)
}

/// `value` as pretty JSON (two-space indent) whose strings escape, besides what JSON requires,
/// every character [`is_unsafe`] names (C1 controls, DEL, bidi controls, U+2028/U+2029) as
/// `\uXXXX`. Decoding gives back the same strings.
pub fn to_json(value: &impl serde::Serialize) -> Result<String> {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, JsonFormatter::default());
    value
        .serialize(&mut ser)
        .map_err(|e| Error::Message(format!("cannot encode JSON: {e}")))?;
    String::from_utf8(out).map_err(|e| Error::Message(format!("cannot encode JSON: {e}")))
}

/// serde_json's pretty formatter, with string fragments that escape every [`is_unsafe`]
/// character serde_json would leave raw.
#[derive(Default)]
pub struct JsonFormatter(serde_json::ser::PrettyFormatter<'static>);

impl serde_json::ser::Formatter for JsonFormatter {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let mut rest = fragment;
        // Outside a UTF-8 locale the document is ASCII: every other character escaped too.
        let ascii = !utf8_locale();
        while let Some((i, c)) = rest
            .char_indices()
            .find(|&(_, c)| is_unsafe(c) || (ascii && !c.is_ascii()))
        {
            w.write_all(&rest.as_bytes()[..i])?;
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                write!(w, "\\u{unit:04x}")?;
            }
            rest = &rest[i + c.len_utf8()..];
        }
        w.write_all(rest.as_bytes())
    }
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object_value(w)
    }
}

fn write_stdout(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                Error::BrokenPipe
            } else {
                Error::io("<stdout>", e)
            }
        })
}

/// When to colour what this process prints on stdout (`--color`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set (to anything but "") or `TERM=dumb`
    #[default]
    Auto,
    /// Always, even into a pipe or a file
    Always,
    /// Never
    Never,
}

static COLOR: std::sync::OnceLock<ColorChoice> = std::sync::OnceLock::new();

/// Sets the colour choice for this process (from `--color`); the first call wins.
pub fn set_color(choice: ColorChoice) {
    let _ = COLOR.set(choice);
}

/// Whether text written to stdout gets colours: `--color always`, or `--color auto` (the
/// default) with stdout a terminal, `NO_COLOR` unset or empty (no-color.org) and `TERM` not
/// `dumb`.
pub fn color_stdout() -> bool {
    match COLOR.get().copied().unwrap_or_default() {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
                && std::io::stdout().is_terminal()
        }
    }
}

/// Text for stdout, cleaned as it is added, with optional colours.
///
/// Everything written into it with `write!`/`push_str` is cleaned by [`clean_output`] at once;
/// [`Out::paint`] adds cleaned text between SGR escape sequences when [`color_stdout`] said yes
/// when the `Out` was made. [`Out::print`] then writes it as it is: the only escape sequences
/// in it are the ones `paint` put there.
#[derive(Debug)]
pub struct Out {
    text: String,
    color: bool,
}

impl Default for Out {
    fn default() -> Self {
        Out::new()
    }
}

impl Out {
    /// An empty text, coloured if stdout gets colours ([`color_stdout`]).
    pub fn new() -> Out {
        Out {
            text: String::new(),
            color: color_stdout(),
        }
    }

    /// Whether [`Out::paint`] adds colours.
    pub fn colored(&self) -> bool {
        self.color
    }

    /// Adds `text`, cleaned.
    pub fn push_str(&mut self, text: &str) {
        self.text.push_str(&clean_output(text));
    }

    /// Adds one character, cleaned.
    pub fn push(&mut self, c: char) {
        let mut buf = [0u8; 4];
        self.push_str(c.encode_utf8(&mut buf));
    }

    /// Adds `text`, cleaned, in `style` when colours are on.
    pub fn paint(&mut self, style: anstyle::Style, text: &str) {
        if self.color && style != anstyle::Style::new() {
            use std::fmt::Write as _;
            let _ = write!(self.text, "{style}{}{style:#}", clean_output(text));
        } else {
            self.push_str(text);
        }
    }

    /// The text so far (escape sequences included when colours are on).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Writes the text to stdout, like [`print`].
    pub fn print(&self) -> Result<()> {
        write_stdout(&for_locale(&self.text))
    }
}

impl std::fmt::Write for Out {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.push_str(s);
        Ok(())
    }
}

/// Styles used on stdout: what needs attention, what is fine, what is going on, headings.
pub mod style {
    use anstyle::{AnsiColor, Style};
    /// A problem: red.
    pub const BAD: Style = AnsiColor::Red.on_default().bold();
    /// Needs attention: yellow.
    pub const WARN: Style = AnsiColor::Yellow.on_default();
    /// All well: green.
    pub const GOOD: Style = AnsiColor::Green.on_default();
    /// Running now: cyan.
    pub const LIVE: Style = AnsiColor::Cyan.on_default();
    /// Headings and labels: bold.
    pub const HEAD: Style = Style::new().bold();
    /// Less important: dimmed.
    pub const DIM: Style = Style::new().dimmed();
}

/// Whether stdin is a terminal someone can answer on.
pub fn stdin_is_terminal() -> bool {
    std::io::stdin().is_terminal()
}

/// Asks for one line on stderr and reads it from stdin, trimmed; an empty answer asks again
/// (up to three times), and end of input gives "". Only on a terminal: without one this fails
/// at once with `missing`, a hint naming the flag to pass, instead of waiting or reading a pipe
/// the user did not mean as an answer.
pub fn prompt_line(question: &str, missing: &str) -> Result<String> {
    if !stdin_is_terminal() {
        return Err(Error::Usage(missing.to_string()));
    }
    for _ in 0..3 {
        let _ = write!(std::io::stderr(), "{question} ");
        let _ = std::io::stderr().flush();
        let mut line = String::new();
        let read = std::io::stdin()
            .lock()
            .read_line(&mut line)
            .map_err(|e| Error::io("<stdin>", e))?;
        let answer = line.trim();
        if read == 0 || !answer.is_empty() {
            return Ok(answer.to_string());
        }
    }
    Ok(String::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_keeps_the_meaning_of_pas_agents_marks() {
        assert_eq!(
            ascii("Task 1/2 · stale · codex running"),
            "Task 1/2 | stale | codex running"
        );
        assert_eq!(ascii("⚠ HEAD a → b — moved…"), "! HEAD a -> b -- moved...");
        assert_eq!(ascii("café ✓ 日本"), "caf? ok ??");
        assert!(matches!(ascii("plain"), Cow::Borrowed(_)));
        proptest::proptest!(|(text in "\\PC{0,40}")| {
            proptest::prop_assert!(ascii(&text).is_ascii());
        });
    }

    #[test]
    fn control_characters_never_survive() {
        assert_eq!(clean("a\u{1b}[31mb\u{7}"), "a?[31mb?");
        assert_eq!(clean("x\u{9b}2J\u{202e}"), "x?2J?");
        assert_eq!(clean_line(" one\n two\t\r\nthree "), "one two three");
        assert_eq!(clean("héllo ✓"), "héllo ✓");
        assert_eq!(clean_output("a\n\tb\r\u{7f}\u{2028}"), "a\n\tb???");
    }

    #[test]
    fn json_escapes_what_serde_json_leaves_raw() {
        let text = "a\u{1b}b\u{85}c\u{7f}d\u{202e}e\u{2028}f\u{9b}g\"h\\";
        let json = to_json(&serde_json::json!({ "k": [text] })).unwrap();
        assert!(json.chars().all(|c| c == '\n' || !is_unsafe(c)), "{json:?}");
        assert!(
            json.contains("\\u0085") && json.contains("\\u202e"),
            "{json}"
        );
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(back["k"][0], text);
        // Same layout as serde_json's own pretty printer.
        let plain = serde_json::json!({ "a": [1, {"b": "c"}], "d": {} });
        assert_eq!(
            to_json(&plain).unwrap(),
            serde_json::to_string_pretty(&plain).unwrap()
        );
    }

    proptest::proptest! {
        #[test]
        fn nothing_unsafe_survives_the_edge(text in "\\PC*|[\\x00-\\x{ff}\\x{2000}-\\x{206f}]{0,40}") {
            let out = clean_output(&text);
            proptest::prop_assert!(out.chars().all(|c| c == '\n' || c == '\t' || !is_unsafe(c)));
            proptest::prop_assert_eq!(out.chars().count(), text.chars().count());
            let json = to_json(&serde_json::json!({ text.clone(): [text.clone()] })).unwrap();
            proptest::prop_assert!(json.chars().all(|c| c == '\n' || !is_unsafe(c)));
            let back: serde_json::Value = serde_json::from_str(&json).unwrap();
            proptest::prop_assert_eq!(&back[&text][0], &serde_json::Value::String(text.clone()));
        }
    }
}
