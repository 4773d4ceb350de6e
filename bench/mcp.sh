#!/usr/bin/env bash
# Benchmark for `pas-agent mcp`: what the MCP server costs the other commands, with two
# release binaries side by side — BEFORE (without the server) and AFTER (with it).
#
#   1. size of each binary;
#   2. start-up, paired: ROUNDS rounds of hyperfine (-N, no shell) over both binaries' commands in
#      a rotating order, in a 1,000-file repository with a session —
#        prompt          the prompt segment (`pas-agent prompt`, its fast path)
#        prompt outside  `pas-agent prompt` outside any session
#        --version       clap's parser built, nothing else
#        status          a command that reads the session and git
#      and the median over the rounds of AFTER's median / BEFORE's median for each;
#   3. instructions (callgrind, one run each) of the prompt and `--version`: steadier than times on
#      a shared machine;
#   4. AFTER's `mcp`: answering `initialize` and exiting when stdin closes.
#
# Usage: bench/mcp.sh BEFORE AFTER [ROUNDS]   (needs hyperfine, valgrind, jq)
set -euo pipefail
before=$(realpath "$1") after=$(realpath "$2") rounds=${3:-7}
cd "$(dirname "$0")/.."
. bench/lib.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/pas-agent-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
export LC_ALL=C PAS_AGENT_NOTICE=0 XDG_RUNTIME_DIR="$work/run"
mkdir -p "$XDG_RUNTIME_DIR" "$work/outside"
make_repo "$work/repo" 1000
cd "$work/repo"
"$after" init --task "Migrate auth to OAuth2" >/dev/null
"$after" update --completed "Plan" --remaining "PKCE login" --remaining "Token refresh" >/dev/null

echo "| binary | bytes |"
echo "|---|---:|"
echo "| before | $(stat -c %s "$before") |"
echo "| after | $(stat -c %s "$after") |"
echo

declare -A ratios
names=("prompt" "prompt outside" "--version" "status")
cmd() { # cmd BIN NAME
  case $2 in
    "prompt") echo "$1 prompt" ;;
    "prompt outside") echo "$1 -C $work/outside prompt" ;;
    "--version") echo "$1 --version" ;;
    "status") echo "$1 status" ;;
  esac
}
for r in $(seq 1 "$rounds"); do
  for name in "${names[@]}"; do
    if (( r % 2 )); then order=("$before" "$after"); else order=("$after" "$before"); fi
    hyperfine -N -w 10 -r 60 --export-json "$work/h.json" \
      "$(cmd "${order[0]}" "$name")" "$(cmd "${order[1]}" "$name")" >/dev/null 2>&1
    b=$(jq -r --arg c "$(cmd "$before" "$name")" '.results[] | select(.command == $c) | .median' "$work/h.json")
    a=$(jq -r --arg c "$(cmd "$after" "$name")" '.results[] | select(.command == $c) | .median' "$work/h.json")
    ratios[$name]+="$(echo "$a / $b" | bc -l) "
    echo "round $r, $name: before $(printf %.3f "$(echo "$b * 1000" | bc -l)") ms, after $(printf %.3f "$(echo "$a * 1000" | bc -l)") ms" >&2
  done
done
echo "| command | median of after/before over $rounds paired rounds |"
echo "|---|---:|"
for name in "${names[@]}"; do
  # shellcheck disable=SC2086
  m=$(printf '%s\n' ${ratios[$name]} | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  printf '| `%s` | %.3f× |\n' "$name" "$m"
done
echo

instructions() { # instructions BIN ARGS...
  valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$@" >/dev/null 2>"$work/cg.err"
  grep -E '^summary:|^totals:' "$work/cg.out" | head -1 | awk '{print $2}'
}
echo "| instructions | before | after |"
echo "|---|---:|---:|"
echo "| \`prompt\` | $(instructions "$before" prompt) | $(instructions "$after" prompt) |"
echo "| \`--version\` | $(instructions "$before" --version) | $(instructions "$after" --version) |"
echo

init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}'
printf '%s\n' "$init" > "$work/init.jsonl"
# Through a shell (hyperfine 1.15 has no --input); hyperfine subtracts the shell's own start.
hyperfine -w 5 -r 50 --export-json "$work/m.json" "$after mcp < $work/init.jsonl" >/dev/null 2>&1
echo "after \`mcp\`: initialize answered and exited on end of input in $(jq -r '.results[0].median * 1000' "$work/m.json" | xargs printf %.2f) ms (median)"
echo "after \`mcp\`: $(instructions "$after" mcp < "$work/init.jsonl") instructions for the same"
