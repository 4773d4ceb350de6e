#!/usr/bin/env bash
# Benchmark: the size of the binary as `cargo install` builds it (`cargo build --release`,
# stripped by the release profile), in bytes and MB (10^6 bytes).
#
# Usage: bench/size.sh    (BENCH_BIN=path measures that binary instead)
# Where the bytes go: `size -A` on the binary (sections), and the symbols of an unstripped build
# (`cargo rustc --release --bin pas-agent -- -C strip=none`, then `nm -S --size-sort -C`), summed
# by the crate that starts each name.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
start_bench
bytes=$(stat -c %s "$bin")
echo "pas-agent $("$bin" --version | awk '{ print $2 }'), $(uname -m) $(uname -s): $bytes bytes ($(awk -v b="$bytes" 'BEGIN { printf "%.2f", b / 1e6 }') MB) stripped, $bin"
