#!/usr/bin/env bash
# The PTY capture's text (`ScreenText`, src/launch/capture.rs) alone, in nanoseconds per byte
# of output: 32 MiB of plain 120-column lines, 8 MiB of a redrawing TUI's output and 8 MiB of
# plain lines in a scroll region (where the plain-line short cut never applies), each fed in
# 4 KiB reads to an 80x24 screen, with the short cut and through the emulator alone.
#
#   bench/capture-text.sh
#
# It runs the ignored unit test `screen_text_speed` in a release build (it needs the emulator-only
# path, which exists in test builds only). Nothing is asserted: speed is measured, never tested.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release --lib screen_text_speed -- --ignored --nocapture 2>&1 | grep -E "ns/byte"
