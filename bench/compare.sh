#!/usr/bin/env bash
# The performance table of docs/performance.md, before and after, in one run: two pas-agent binaries measured side by side
# with their yardsticks (git status, true, script), on the same repositories, in the same
# minutes.
#
#   bench/compare.sh BEFORE AFTER [--quick]
#
# BEFORE and AFTER are pas-agent binaries (e.g. a release build of the branch you started from,
# kept aside, and target/release/pas-agent, as `cargo install` builds it). Paired: every figure
# comes from ROUNDS rounds, each a hyperfine run of all the commands of one row in a rotating
# order, so that the load of the moment weighs on all of them alike; it prints the median of all
# runs per command and the median over the rounds of each round's ratio to the yardstick.
# Instruction counts (callgrind, one run each; steadier than times on a shared machine) are
# printed for the status and prompt rows when valgrind is installed. The load (`uptime`) is printed before and after.
#
# Needs: hyperfine, git, python3, script (util-linux), strace; valgrind optional.
# Nothing is asserted: speed is measured, never tested. Everything lives in a temporary directory
# with its own HOME, removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: bench/compare.sh BEFORE AFTER [--quick]" >&2; exit 2; }
before=$(realpath "$1") after=$(realpath "$2")
quick=0
[ "${3:-}" = "--quick" ] && quick=1
rounds=$([ $quick = 1 ] && echo 3 || echo 7)
sizes=$([ $quick = 1 ] && echo "1000 10000" || echo "1000 10000 100000")
mb=$([ $quick = 1 ] && echo 20 || echo 200)
for tool in hyperfine git python3 script strace; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is required" >&2; exit 1; }
done
. bench/lib.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/pas-agent-compare.XXXXXX")
trap 'rm -rf "$work"' EXIT
export HOME="$work/home" XDG_STATE_HOME="$work/home/.local/state" GIT_CONFIG_NOSYSTEM=1
export GIT_CONFIG_GLOBAL="$work/home/.gitconfig"
mkdir -p "$HOME"
printf '[user]\n\tname = Bench\n\temail = bench@example.invalid\n[init]\n\tdefaultBranch = main\n' > "$GIT_CONFIG_GLOBAL"
results="$work/results.tsv"
: > "$results"

echo "load before: $(uptime)"
echo "before: $before ($(stat -c %s "$before") bytes)"
echo "after:  $after ($(stat -c %s "$after") bytes)"

# paired ROW YARDSTICK_NAME YARDSTICK_CMD [NAME CMD]...: ROUNDS rounds of hyperfine over all the
# commands in a rotating order; appends "row<TAB>command<TAB>median ms<TAB>ratio<TAB>CPU s" to
# results (CPU: the median over the rounds of the mean user + system time of the command and the
# processes it waited for, steadier than times on a shared machine).
paired() {
  local row=$1; shift
  local -a names=() cmds=()
  while [ $# -gt 0 ]; do names+=("$1"); cmds+=("$2"); shift 2; done
  local n=${#names[@]} r i j
  for r in $(seq 1 "$rounds"); do
    local -a args=()
    for j in $(seq 0 $((n - 1))); do
      i=$(( (j + r) % n ))
      args+=(-n "${names[$i]}" "${cmds[$i]}")
    done
    local -a prep=()
    [ -n "${prepare:-}" ] && prep=(--prepare "$prepare")
    hyperfine -N --warmup 2 --runs "${runs:-10}" --style none "${prep[@]}" --export-json "$work/round-$r.json" "${args[@]}" >/dev/null
  done
  python3 - "$work" "$rounds" "$row" "${names[0]}" >> "$results" <<'PY'
import json, statistics, sys
work, rounds, row, base = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
times, ratios, cpu = {}, {}, {}
for r in range(1, rounds + 1):
    res = {x["command"]: x for x in json.load(open(f"{work}/round-{r}.json"))["results"]}
    b = res[base]["median"]
    for name, x in res.items():
        times.setdefault(name, []).extend(x["times"])
        ratios.setdefault(name, []).append(x["median"] / b)
        cpu.setdefault(name, []).append(x["user"] + x["system"])
for name in times:
    print(f"{row}\t{name}\t{statistics.median(times[name]) * 1000:.2f}\t{statistics.median(ratios[name]):.2f}\t{statistics.median(cpu[name]):.3f}")
PY
}

instructions() {
  command -v valgrind >/dev/null || { echo "-"; return; }
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null \
    | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
icounts="$work/instructions.tsv"
: > "$icounts"
count() { # ROW NAME CMD...
  local row=$1 name=$2; shift 2
  printf '%s\t%s\t%s\n' "$row" "$name" "$(instructions "$@")" >> "$icounts"
}

# Status, checkpoint, export against git status, per repository size.
for files in $sizes; do
  repo="$work/r$files"
  make_repo "$repo" "$files" >/dev/null 2>&1
  cd "$repo"
  "$after" init --task bench >/dev/null
  "$after" checkpoint baseline >/dev/null
  cp .pas-agent/session.json "$work/session-1-$files.json"
  runs=$([ "$files" -ge 100000 ] && echo 5 || echo 10)
  paired "status, $files files" \
    "git status --porcelain=v2" "git --no-optional-locks status --porcelain=v2" \
    "before status" "$before status" \
    "after status" "$after status"
  count "status, $files files" "git status --porcelain=v2" git --no-optional-locks status --porcelain=v2
  count "status, $files files" "before status" "$before" status
  count "status, $files files" "after status" "$after" status
  # Against git's best configuration: its untracked cache on (what `feature.manyFiles` turns
  # on), both warm.
  git config core.untrackedCache true
  git status >/dev/null && git status >/dev/null
  "$before" status >/dev/null && "$after" status >/dev/null
  paired "status, $files files, git's untracked cache on" \
    "git status --porcelain=v2" "git --no-optional-locks status --porcelain=v2" \
    "before status" "$before status" \
    "after status" "$after status"
  git config --unset core.untrackedCache
  git update-index --no-untracked-cache
  if [ "$files" = 10000 ]; then
    prepare="cp $work/session-1-$files.json .pas-agent/session.json" paired "checkpoint, export, $files files" \
      "git status" "git status" \
      "before checkpoint" "$before checkpoint bench" \
      "after checkpoint" "$after checkpoint bench" \
      "before export" "$before export --to codex" \
      "after export" "$after export --to codex"
    # The prompt, nothing changed, in this repository (a session with one checkpoint).
    cp "$work/session-1-$files.json" .pas-agent/session.json
    runs=30 paired "prompt, $files-file repository" \
      "true" "true" \
      "before prompt" "$before prompt --hook 1" \
      "after prompt" "$after prompt --hook 1"
    count "prompt, $files-file repository" "true" true
    count "prompt, $files-file repository" "before prompt" "$before" prompt --hook 1
    count "prompt, $files-file repository" "after prompt" "$after" prompt --hook 1
  fi
  runs=10
  cd "$work"
done

# The full launcher on the 10,000-file repository: checkpoint and export before, record and
# checkpoint after (the session put back before each run, so that it does not grow).
cd "$work/r10000"
cp "$work/session-1-10000.json" "$work/session-run.json"
prepare="cp $work/session-run.json .pas-agent/session.json" paired "full run, 10000 files" \
  "git status" "git status" \
  "before run -- true" "$before run --no-pty -- true" \
  "after run -- true" "$after run --no-pty -- true"
cp "$work/session-run.json" .pas-agent/session.json

# The prompt outside git.
mkdir -p "$work/outside" && cd "$work/outside"
runs=30 paired "prompt, outside git" \
  "true" "true" \
  "before prompt" "$before prompt --hook 1" \
  "after prompt" "$after prompt --hook 1"
count "prompt, outside git" "true" true
count "prompt, outside git" "before prompt" "$before" prompt --hook 1
count "prompt, outside git" "after prompt" "$after" prompt --hook 1

# History: 1, 100 and 1,000 checkpoints of the 120 changed files of the 10,000-file repository
# (copies of the first checkpoint, as a long session would have them).
cd "$work/r10000"
cp "$work/session-1-10000.json" "$work/session-1.json"
for n in 100 1000; do
  python3 - "$work/session-1.json" "$n" > "$work/session-$n.json" <<'PY'
import json, sys, uuid, copy
s = json.load(open(sys.argv[1])); n = int(sys.argv[2])
first = s["checkpoints"][0]
s["checkpoints"] = []
for i in range(n):
    c = copy.deepcopy(first); c["id"] = str(uuid.uuid4()); c["message"] = f"checkpoint {i}"
    s["checkpoints"].append(c)
json.dump(s, sys.stdout, indent=2)
PY
done
for n in 1 100 1000; do
  cp "$work/session-$n.json" .pas-agent/session.json
  runs=10 paired "$n checkpoints ($(($(stat -c %s .pas-agent/session.json) / 1024)) KiB)" \
    "git status" "git status" \
    "before prompt" "$before prompt --hook 1" \
    "after prompt" "$after prompt --hook 1" \
    "before status" "$before status" \
    "after status" "$after status"
done
cp "$work/session-1.json" .pas-agent/session.json

# The bare launcher: fsyncs and tree scans (stat calls), then time against `true`.
for b in before after; do
  bin=$([ $b = before ] && echo "$before" || echo "$after")
  "$bin" run --no-checkpoint --no-export --no-pty -- true >/dev/null 2>&1
  strace -f -qq -o "$work/strace-$b" -e trace=fsync,fdatasync,newfstatat,statx,lstat,stat "$bin" run --no-checkpoint --no-export --no-pty -- true >/dev/null 2>&1
  printf 'bare run, 10000 files\t%s: fsyncs\t%s\t-\n' "$b" "$(grep -cE 'fsync|fdatasync' "$work/strace-$b")" >> "$results"
  printf 'bare run, 10000 files\t%s: stat calls\t%s\t-\n' "$b" "$(grep -cvE 'fsync|fdatasync' "$work/strace-$b")" >> "$results"
done
runs=10 paired "bare run, 10000 files" \
  "git status" "git status" \
  "before run --no-checkpoint --no-export -- true" "$before run --no-checkpoint --no-export --no-pty -- true" \
  "after run --no-checkpoint --no-export -- true" "$after run --no-checkpoint --no-export --no-pty -- true"

# The bare launcher outside git, against `true`.
mkdir -p "$work/bare" && cd "$work/bare"
"$after" init --task bench >/dev/null
cp .pas-agent/session.json "$work/session-bare.json"
runs=20 prepare="cp $work/session-bare.json .pas-agent/session.json" paired "bare run, outside git" \
  "true" "true" \
  "before run --no-checkpoint --no-export -- true" "$before run --no-checkpoint --no-export --no-pty -- true" \
  "after run --no-checkpoint --no-export -- true" "$after run --no-checkpoint --no-export --no-pty -- true"

# PTY throughput: ${mb} MB through `script` alone, and through pas-agent inside `script`.
mkdir -p "$work/small" && cd "$work/small"
git init -q && echo hi > README.md && git add . && git commit -qm init
"$after" init --task bench >/dev/null
head -c $((mb * 1024 * 1024)) /dev/urandom | base64 -w 120 > "$work/big.txt"
runs=$([ $quick = 1 ] && echo 3 || echo 3) paired "pty, $mb MB" \
  "script" "script -qfec 'cat $work/big.txt' /dev/null" \
  "script in script (the floor of any pty relay)" "script -qfec \"script -qfec 'cat $work/big.txt' /dev/null\" /dev/null" \
  "before run -- cat" "script -qfec '$before run --no-checkpoint --no-export -- cat $work/big.txt' /dev/null" \
  "after run -- cat" "script -qfec '$after run --no-checkpoint --no-export -- cat $work/big.txt' /dev/null"

echo "load after:  $(uptime)"
echo
python3 - "$results" "$icounts" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
ins = {}
for l in open(sys.argv[2]):
    if l.strip():
        row, name, n = l.rstrip("\n").split("\t")
        ins[(row, name)] = n
print(f"| row | command | median ms | ratio to the row's first | CPU s | instructions |")
print("|---|---|---:|---:|---:|---:|")
for row, name, ms, ratio, *cpu in rows:
    n = ins.get((row, name), "")
    n = f"{int(n) / 1e6:.1f} M" if n.isdigit() else n
    print(f"| {row} | {name} | {ms} | {ratio}{'×' if ratio != '-' else ''} | {''.join(cpu) or '-'} | {n} |")
PY
