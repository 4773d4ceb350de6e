#!/usr/bin/env bash
# Benchmark: what the shell hook costs per prompt ("a prompt segment costs about as much
# as starting a trivial process"), beside `true` and `git status`.
#
# Builds a repository of 10,000 committed files (100 modified, 20 untracked, as bench/status.sh
# does) with a session, a checkpoint and some progress, then measures:
#   1. processes, with hyperfine (-N, no shell in between):
#        true                          a trivial process
#        pas-agent --version           starting this binary at all
#        pas-agent prompt              the segment, as a prompt or starship would ask for it
#        pas-agent prompt --hook ID    what the hook runs when something changed
#        git status                    what a git-aware prompt runs at every prompt
#   2. the hook function itself, inside bash and zsh (loaded with `-i`, as from an rc file),
#      timed call by call with EPOCHREALTIME:
#        nothing changed               the common case: builtins only, no process
#        outside a session             the walk up from a directory 14 levels below /, no session
#        session changed               after a `pas-agent update` (run outside the timing)
#        $(true)                       a command substitution of /bin/true, for scale
#   3. how many processes the hook started over 200 unchanged prompts (must be 0);
#   4. `pas-agent prompt` again once the session holds 200 checkpoints of the 121 changed files
#      (the prompt reads the whole session file; this shows how that grows), beside the
#      `pas-agent update` that would have changed it.
# Medians are what docs/performance.md reports.
#
# Usage: bench/prompt.sh [FILES]    (needs hyperfine, zsh: apt-get install hyperfine zsh)
set -euo pipefail
cd "$(dirname "$0")/.."
files=${1:-10000}
. bench/lib.sh
start_bench
export LC_ALL=C XDG_RUNTIME_DIR="$work/run" PAS_AGENT_NOTICE=0
mkdir -p "$XDG_RUNTIME_DIR"
make_repo "$work/repo" "$files"
cd "$work/repo"
export GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@b GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@b
"$bin" init --task "Migrate auth to OAuth2" >/dev/null
"$bin" update --completed "Plan" --remaining "PKCE login" --remaining "Token refresh" >/dev/null
"$bin" checkpoint "baseline" >/dev/null
echo "repository: $(git ls-files | wc -l) tracked files, $(git status --porcelain | wc -l) changed"
echo "segment: $("$bin" prompt)"

echo
echo "## 1. Processes (hyperfine, milliseconds)"
hyperfine --warmup 10 --runs 300 -N --style none \
  --command-name "true" "true" \
  --command-name "pas-agent --version" "$bin --version" \
  --command-name "pas-agent prompt" "$bin prompt" \
  --command-name "pas-agent prompt --hook" "$bin prompt --hook 1" \
  --export-json "$work/processes.json" >/dev/null 2>&1
hyperfine --warmup 3 --runs 30 -N --style none \
  --command-name "git status" "git status" \
  --export-json "$work/git.json" >/dev/null 2>&1
echo
echo "| command | median | mean | min |"
echo "|---|---:|---:|---:|"
# hyperfine's JSON has one key per line: pick each result's command, median, mean and min.
awk -F': ' '
  /"command"/ { gsub(/[",]/, "", $2); cmd = $2 }
  /"mean"/ { gsub(/,/, "", $2); mean = $2 }
  /"median"/ { gsub(/,/, "", $2); median = $2 }
  /"min"/ { gsub(/,/, "", $2); printf "| %s | %.2f | %.2f | %.2f |\n", cmd, median * 1000, mean * 1000, $2 * 1000 }
' "$work/processes.json" "$work/git.json"

# Prints the median of the numbers on stdin (one per line).
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo
echo "## 2. The hook function, per prompt (median microseconds)"
echo
echo "| shell | nothing changed | outside a session | session changed | \$(true) |"
echo "|---|---:|---:|---:|---:|"

# shellcheck disable=SC2016 # the drivers are expanded by the shells that run them
bash_driver='
eval "$("$PAS" hook bash)"
__pas_agent_precmd
us() { local s=${1/./} e=${2/./}; echo $(( 10#$e - 10#$s )); }
for i in $(seq 500); do
  s=$EPOCHREALTIME; __pas_agent_precmd; e=$EPOCHREALTIME; us "$s" "$e" >> "$OUT.same"
done
for i in $(seq 100); do
  "$PAS" update --next "step $i" >/dev/null
  s=$EPOCHREALTIME; __pas_agent_precmd; e=$EPOCHREALTIME; us "$s" "$e" >> "$OUT.changed"
done
for i in $(seq 200); do
  s=$EPOCHREALTIME; x=$(/bin/true); e=$EPOCHREALTIME; us "$s" "$e" >> "$OUT.true"
done
cd "$DEEP"
__pas_agent_precmd
for i in $(seq 500); do
  s=$EPOCHREALTIME; __pas_agent_precmd; e=$EPOCHREALTIME; us "$s" "$e" >> "$OUT.outside"
done
'
# shellcheck disable=SC2016
zsh_driver='
zmodload zsh/datetime
eval "$("$PAS" hook zsh)"
__pas_agent_precmd
us() { printf "%.0f\n" $(( ($2 - $1) * 1e6 )); }
for i in {1..500}; do
  s=$EPOCHREALTIME; __pas_agent_precmd; e=$EPOCHREALTIME; us $s $e >> $OUT.same
done
for i in {1..100}; do
  $PAS update --next "step $i" >/dev/null
  s=$EPOCHREALTIME; __pas_agent_precmd; e=$EPOCHREALTIME; us $s $e >> $OUT.changed
done
for i in {1..200}; do
  s=$EPOCHREALTIME; x=$(/bin/true); e=$EPOCHREALTIME; us $s $e >> $OUT.true
done
cd $DEEP
__pas_agent_precmd
for i in {1..500}; do
  s=$EPOCHREALTIME; __pas_agent_precmd; e=$EPOCHREALTIME; us $s $e >> $OUT.outside
done
'
export DEEP="$work/outside/a/b/c/d/e/f/g/h/i/j/k"
mkdir -p "$DEEP"
for shell in bash zsh; do
  out="$work/$shell"
  case $shell in
    bash) PAS="$bin" OUT="$out" bash --norc --noprofile -i -c "$bash_driver" 2>/dev/null ;;
    zsh) PAS="$bin" OUT="$out" zsh -f -i -c "$zsh_driver" 2>/dev/null ;;
  esac
  echo "| $shell | $(median < "$out.same") | $(median < "$out.outside") | $(median < "$out.changed") | $(median < "$out.true") |"
done

echo
echo "## 3. Processes started by the hook over 200 unchanged prompts"
cat > "$work/logged" <<EOF
#!/bin/sh
echo "\$*" >> "$work/calls"
exec "$bin" "\$@"
EOF
chmod +x "$work/logged"
: > "$work/calls"
PAS="$bin" LOGGED="$work/logged" bash --norc --noprofile -i -c '
eval "$("$PAS" hook bash)"
__pas_agent_bin=$LOGGED
__pas_agent_precmd
for i in $(seq 200); do __pas_agent_precmd; done
' 2>/dev/null
echo "bash: $(($(wc -l < "$work/calls") - 1)) (plus 1 for the first prompt)"

echo
echo "## 4. A larger session"
for i in $(seq 199); do "$bin" checkpoint "step $i" >/dev/null; done
echo "session.json: $(wc -c < .pas-agent/session.json) bytes, 200 checkpoints"
hyperfine --warmup 3 --runs 50 -N --style none \
  --command-name "pas-agent prompt (200 checkpoints)" "$bin prompt" \
  --command-name "pas-agent update (200 checkpoints)" "$bin update --remaining bench" \
  --export-json "$work/large.json" >/dev/null 2>&1
awk -F': ' '
  /"command"/ { gsub(/[",]/, "", $2); cmd = $2 }
  /"mean"/ { gsub(/,/, "", $2); mean = $2 }
  /"median"/ { gsub(/,/, "", $2); median = $2 }
  /"min"/ { gsub(/,/, "", $2); printf "| %s | %.2f | %.2f | %.2f |\n", cmd, median * 1000, mean * 1000, $2 * 1000 }
' "$work/large.json"
