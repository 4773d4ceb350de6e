//! The PTY relay's fifth round : the capture threads take a
//! stream's reads without a wake-up per read, and the cast's text is decoded with a short cut
//! for valid UTF-8. What the capture writes must not change: through the real binary, a real
//! terminal (tmux) and the kernel's pseudo-terminal, a stream of many reads, with characters
//! and escape sequences cut between reads and bytes that are not UTF-8, is in `capture.ansi`
//! byte for byte, and the cast's events, joined, are its text.

use crate::common::{Sandbox, last_run};
use crate::launcher_support::Tmux;

/// About 3 MB of 120-column lines (hundreds of reads of at most 4 KiB), with multi-byte
/// characters, colours, a title, a byte that is not UTF-8 and a character cut by the read
/// size at every offset: the raw capture is the output as the terminal got it (`\n` turned
/// into `\r\n` by the pseudo-terminal), the cast's `"o"` events joined are its lossy UTF-8
/// decoding, in order, with times that never go back, and `capture.txt` has every line.
#[test]
fn a_long_mixed_stream_is_captured_byte_for_byte() {
    let sb = Sandbox::with_session();
    let mut file: Vec<u8> = Vec::new();
    for i in 0..24_000usize {
        match i % 400 {
            7 => file.extend_from_slice("héllo ─ wörld 😀 ".repeat(6).as_bytes()),
            99 => file.extend_from_slice(b"\x1b[1;31mred\x1b[0m and \x1b]0;a title\x07plain"),
            201 => file.extend_from_slice(b"not utf-8: \xff\xfe end"),
            _ => {
                // A multi-byte character at a shifting offset, so that some fall on a read's
                // boundary.
                let at = i % 119;
                let mut line: Vec<u8> = (0..at).map(|j| b'A' + ((i + j) % 26) as u8).collect();
                line.extend_from_slice("é".as_bytes());
                line.extend((at + 1..119).map(|j| b'a' + ((i * 7 + j) % 26) as u8));
                file.extend_from_slice(&line);
            }
        }
        file.push(b'\n');
    }
    let path = sb.tmp.path().join("stream.bin");
    std::fs::write(&path, &file).unwrap();
    sb.stand_in("streamer", &format!("cat '{}'", path.display()));

    let t = Tmux::start(&sb, &["run", "--", "streamer"], 120, 30);
    assert_eq!(t.exit_code(), 0);
    let run = last_run(&sb);
    let ansi_path = sb.path(run["capture"].as_str().expect("capture path"));
    let raw = std::fs::read(&ansi_path).unwrap();
    let mut expected = Vec::with_capacity(file.len() * 2);
    for &b in &file {
        if b == b'\n' {
            expected.push(b'\r');
        }
        expected.push(b);
    }
    assert_eq!(raw.len(), expected.len(), "capture.ansi's length");
    assert!(raw == expected, "capture.ansi differs from the output");

    let cast = std::fs::read_to_string(ansi_path.with_file_name("capture.cast")).unwrap();
    let mut lines = cast.lines();
    let header: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(header["version"], 2);
    let mut text = String::new();
    let mut last = 0.0f64;
    let mut events = 0;
    for line in lines {
        let event: serde_json::Value = serde_json::from_str(line).unwrap();
        let t = event[0].as_f64().expect("a time");
        assert!(t >= last, "the cast's time went back: {t} after {last}");
        last = t;
        if event[1] == "o" {
            let data = event[2].as_str().unwrap();
            assert!(!data.is_empty(), "an empty output event");
            text.push_str(data);
            events += 1;
        }
    }
    assert!(events > 1, "one event for the whole stream");
    assert!(
        text == String::from_utf8_lossy(&expected),
        "the cast's text differs from the output's"
    );

    let txt = std::fs::read_to_string(ansi_path.with_file_name("capture.txt")).unwrap();
    for needle in [
        "héllo ─ wörld 😀",
        "red and plain",
        "not utf-8: \u{fffd}\u{fffd} end",
    ] {
        assert!(txt.contains(needle), "capture.txt lacks {needle:?}");
    }
    assert!(txt.lines().count() >= 24_000, "capture.txt lacks lines");
}
