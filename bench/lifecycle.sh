#!/usr/bin/env bash
# Benchmark: what an agent's lifecycle hooks cost (`pas-agent integrate`: "session
# start stays under 50 ms on a 10,000-file repository").
#
# Builds a repository of FILES committed files (100 modified, 20 untracked, as bench/status.sh
# does) with a session, then measures with hyperfine, each through `sh -c` so that the payload
# reaches stdin as it does from an agent (the `sh -c 'true < payload'` row is that shell's own
# cost, to subtract):
#   session-start   the block as context, and a start marker (no tree scan)
#   stop            the last message kept in the marker
#   git status      for scale
# Medians are what docs/performance.md reports.
#
# Usage: bench/lifecycle.sh [FILES]    (needs hyperfine: apt-get install hyperfine)
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
echo "repository: $(git ls-files | wc -l) tracked files, $(git status --porcelain | wc -l) changed"
hyperfine -w 5 -r 40 --export-markdown /dev/stdout \
  -n "sh -c 'true < payload'" "sh -c 'true < $payload'" \
  -n "session-start" "sh -c '$bin lifecycle claude session-start < $payload > /dev/null'" \
  -n "stop" "sh -c '$bin lifecycle claude stop < $stop'" \
  -n "git status" "git status --porcelain"
