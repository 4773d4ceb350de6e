#!/usr/bin/env bash
# Makes scripts/link-order.txt again: the functions the prompt hook and `status` run, for
# scripts/link-ordered to place first and together when `cargo build-static` links the binary.
#
#   scripts/link-order.sh
#
# Builds the binary as shipped but with its symbols (target/link-order), runs it under
# callgrind in a 1,000-file repository with a session and a checkpoint (`prompt --hook`, the
# same outside git, and `status`), and writes every function they run, demangled (so without the
# hashes and crate disambiguators rustc puts in symbol names), the prompt's first. Run it after a change to the prompt's or status's code, or to the
# dependencies; a function missing from the list only costs a page fault, never a wrong
# binary. Needs valgrind, binutils (c++filt), git and an x86_64 Linux host.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "link-order: valgrind is required" >&2; exit 1; }
# shellcheck source=bench/lib.sh
. bench/lib.sh
export CARGO_TARGET_DIR="$PWD/target/link-order" CARGO_PROFILE_RELEASE_STRIP=none
start_bench
rustc_version=$(rustc --version)
export HOME="$work/home" XDG_STATE_HOME="$work/home/.local/state" GIT_CONFIG_NOSYSTEM=1
export GIT_CONFIG_GLOBAL="$work/home/.gitconfig"
mkdir -p "$HOME" "$work/outside"
printf '[user]\n\tname = Bench\n\temail = bench@example.invalid\n' > "$GIT_CONFIG_GLOBAL"
make_repo "$work/repo" 1000
(cd "$work/repo" && "$bin" init --task "Order the functions" >/dev/null && "$bin" checkpoint one >/dev/null)
(cd "$work/outside" && "$bin" init --task "Outside git" >/dev/null)

# functions DIR ARGS...: the demangled names of the functions one run of ARGS in DIR runs,
# after a first run that leaves the caches as a shell's prompt finds them.
functions() {
  local dir=$1; shift
  (cd "$dir" || exit 1
   "$bin" "$@" >/dev/null 2>&1 || true
   valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/cg.out" "$bin" "$@" >/dev/null 2>&1)
  sed -nE 's/^c?fn=\([0-9]+\) (.+)$/\1/p' "$work/cg.out" | sed -E "s/'[0-9]+$//; s/\.llvm\.[0-9]+$//" |
    grep -vE '^(0x[0-9a-f]+|\(below main\))$' | c++filt |
    sed -E 's/\[[0-9a-f]+\]//g; s/::h[0-9a-f]{16}$//' | LC_ALL=C sort -u
}
functions "$work/repo" prompt --hook 1 > "$work/prompt"
functions "$work/outside" prompt --hook 1 >> "$work/prompt"
LC_ALL=C sort -u -o "$work/prompt" "$work/prompt"
functions "$work/repo" status > "$work/status"
{
  echo "# The functions \`pas-agent prompt --hook\` runs (in a repository and outside git), then"
  echo "# those \`status\` adds, demangled: made by scripts/link-order.sh, read by"
  echo "# scripts/link-ordered (see there). $rustc_version."
  cat "$work/prompt"
  LC_ALL=C comm -13 "$work/prompt" "$work/status"
} > scripts/link-order.txt
echo "scripts/link-order.txt: $(grep -vc '^#' scripts/link-order.txt) functions"
