#!/usr/bin/env bash
# Benchmark: what an agent's lifecycle hooks cost on the agent's clock (`pas-agent integrate`):
# session start stays under 50 ms, and session end at or below half of `git status` on a
# 10,000-file repository: it only marks the end and starts the run's completion detached.
#
# Builds a repository of FILES committed files (100 modified, 20 untracked, as bench/status.sh
# does) with a session, then measures with hyperfine, each hook through `sh -c` so that the
# payload reaches stdin as it does from an agent (the `sh -c 'true < payload'` row is that
# shell's own cost, to subtract):
#   session-start   the block as context, and the session's marker (no tree scan)
#   stop            the last message kept in the marker
#   session-end     the end marked, the completion started detached (before each run: the
#                   previous completion finished, and a fresh session started)
#   git status      the yardstick
#   session-end + completion   the end and the work done off the agent's clock (files
#                   changed, commits, transcript, the run and its checkpoint saved), waited for
# Prints the medians' ratio session-end / git status (goal: at most 0.5).
#
# Usage: bench/lifecycle.sh [FILES]    (needs hyperfine and jq: apt-get install hyperfine jq)
set -euo pipefail
cd "$(dirname "$0")/.."
files=${1:-10000}
. bench/lib.sh
start_bench
export LC_ALL=C XDG_RUNTIME_DIR="$work/run" HOME="$work/home" PAS_AGENT_NOTICE=0
mkdir -p "$XDG_RUNTIME_DIR" "$HOME"
make_repo "$work/repo" "$files"
cd "$work/repo"
"$bin" init --task "Migrate auth to OAuth2" >/dev/null
"$bin" update --remaining "PKCE login" --next "PKCE login" >/dev/null
"$bin" integrate claude >/dev/null
payload="$work/payload.json"
printf '{"session_id":"0f0e0d0c-1111-4222-8333-444455556666","cwd":"%s","source":"startup"}' "$PWD" > "$payload"
stop="$work/stop.json"
printf '{"session_id":"0f0e0d0c-1111-4222-8333-444455556666","cwd":"%s","last_assistant_message":"done"}' "$PWD" > "$stop"
# Before each session-end: the previous completion done, then a new session started (its
# payload in end.json), and its turn's files changed.
end="$work/end.json"
cat > "$work/prepare.sh" <<PREP
#!/bin/sh
while grep -qs '"ended_at"' "$PWD"/.pas-agent/runs/hooks/*.json; do sleep 0.01; done
id=\$(cat /proc/sys/kernel/random/uuid)
printf '{"session_id":"%s","cwd":"%s","reason":"other"}' "\$id" "$PWD" > "$end"
"$bin" lifecycle claude session-start < "$end" > /dev/null
touch src/d1/f1.txt src/d2/f0.txt
PREP
cat > "$work/settle.sh" <<SETTLE
#!/bin/sh
while grep -qs '"ended_at"' "$PWD"/.pas-agent/runs/hooks/*.json; do sleep 0.005; done
SETTLE
chmod +x "$work/prepare.sh" "$work/settle.sh"
echo "repository: $(git ls-files | wc -l) tracked files, $(git status --porcelain | wc -l) changed"
# One --prepare per command, in order.
hyperfine -w 3 -r 30 --style basic --export-json "$work/times.json" \
  --prepare true --prepare true --prepare true --prepare true \
  --prepare "$work/prepare.sh" --prepare "$work/prepare.sh" \
  -n "sh -c 'true < payload'" "sh -c 'true < $payload'" \
  -n "session-start" "sh -c '$bin lifecycle claude session-start < $payload > /dev/null'" \
  -n "stop" "sh -c '$bin lifecycle claude stop < $stop'" \
  -n "git status" "git status --porcelain" \
  -n "session-end" "sh -c '$bin lifecycle claude session-end < $end'" \
  -n "session-end + completion" "sh -c '$bin lifecycle claude session-end < $end; $work/settle.sh'"
jq -r '.results[] | "| \(.command) | \(.median * 1000 | . * 10 | round / 10) ms | \(.mean * 1000 | . * 10 | round / 10) ms |"' "$work/times.json" \
  | { echo "| command | median | mean |"; echo "|---|---:|---:|"; cat; }
median() { jq -r --arg n "$1" '.results[] | select(.command == $n) | .median' "$work/times.json"; }
printf 'session-end / git status (medians): %.2f (goal: at most 0.5)\n' \
  "$(echo "$(median session-end) / $(median 'git status')" | bc -l)"
