//! Terminal input and output: the one sanitiser for text shown to people, warnings on stderr,
//! and prompts that only ever read from a terminal.

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

fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}')
}

/// Prints `warning: <message>` on stderr. Errors writing stderr are ignored: there is nowhere
/// left to report them.
pub fn warn(message: &str) {
    let _ = writeln!(std::io::stderr(), "warning: {message}");
}

/// Prints a line on stderr (notes and hints that are not the command's output).
pub fn note(message: &str) {
    let _ = writeln!(std::io::stderr(), "{message}");
}

/// Writes `text` to stdout. A closed pipe (`pas-agent list | head -1`) becomes
/// [`Error::BrokenPipe`], which exits quietly.
pub fn print(text: &str) -> Result<()> {
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
    fn control_characters_never_survive() {
        assert_eq!(clean("a\u{1b}[31mb\u{7}"), "a?[31mb?");
        assert_eq!(clean("x\u{9b}2J\u{202e}"), "x?2J?");
        assert_eq!(clean_line(" one\n two\t\r\nthree "), "one two three");
        assert_eq!(clean("héllo ✓"), "héllo ✓");
    }
}
