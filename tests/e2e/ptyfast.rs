//! `capture.txt` of a long plain output (the bare launcher's PTY relay): most of it
//! takes the text's short cut for plain lines, and the text is still what was on the screen,
//! line for line, through the real binary, a real terminal (tmux) and the kernel's
//! pseudo-terminal.

use crate::common::{Sandbox, last_run};
use crate::launcher_support::{Tmux, read};

/// Lines of several widths on an 80-column screen (empty, shorter, exactly 80, 120 and 240
/// wide, trailing blanks), then a coloured line and a progress line redrawn after a carriage
/// return, then plain lines again: the text has every line once, trimmed, in order.
#[test]
fn a_long_plain_output_reads_as_its_lines() {
    let sb = Sandbox::with_session();
    let mut file = String::new();
    let mut expected = String::new();
    let plain = |file: &mut String, expected: &mut String, from: u32, to: u32| {
        for i in from..to {
            let width = [120usize, 80, 0, 7, 240, 79][i as usize % 6];
            let body: String = (0..width)
                .map(|j| char::from(b'A' + ((i as usize + j) % 26) as u8))
                .collect();
            let blanks = if i % 5 == 0 { "   " } else { "" };
            file.push_str(&format!("{body}{blanks}\n"));
            expected.push_str(&format!("{body}\n"));
        }
    };
    plain(&mut file, &mut expected, 0, 3000);
    file.push_str("\x1b[1;32mgreen\x1b[0m line\n50%\r100%\n");
    expected.push_str("green line\n100%\n");
    plain(&mut file, &mut expected, 3000, 4000);
    let path = sb.tmp.path().join("out.txt");
    std::fs::write(&path, &file).unwrap();
    sb.stand_in("catter", &format!("cat '{}'", path.display()));

    let t = Tmux::start(&sb, &["run", "--", "catter"], 80, 24);
    assert_eq!(t.exit_code(), 0);
    let run = last_run(&sb);
    let capture = run["capture"].as_str().expect("capture path");
    let text = read(&sb.path(&capture.replace("capture.ansi", "capture.txt")));
    assert_eq!(text.len(), expected.len());
    assert!(
        text == expected,
        "capture.txt differs from the lines written"
    );
}
