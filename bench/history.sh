#!/usr/bin/env bash
# Benchmark: what the session's history costs .
#
# For each history size (1, 100 and 1,000 checkpoints by default) builds the repository of
# bench/status.sh (10,000 committed files, 100 modified, 20 untracked), starts a session and
# takes that many checkpoints with the binary under test, then times, paired (every round runs
# each command once, in a shuffled order, and each command's figure is the median over rounds
# of its time divided by the yardstick's time in the same round):
#   - true                              the yardstick of the prompt (a trivial process)
#   - git status                        the yardstick of status and update
#   - pas-agent prompt                  the shell prompt's segment
#   - pas-agent status                  text status (live git status included)
#   - pas-agent update --discovery x    a change: load, change, save under the lock
# and prints the session file's size. With BEFORE=/path/to/another/pas-agent the same is done
# for that build in the same run, on its own session (for a before/after table).
#
# Usage: [BEFORE=path] [ROUNDS=25] bench/history.sh [COUNTS...]   (default: 1 100 1000)
set -euo pipefail
cd "$(dirname "$0")/.."
counts=("${@:-1 100 1000}")
read -r -a counts <<<"${counts[*]}"
rounds=${ROUNDS:-25}
. bench/lib.sh
start_bench
template_repo

builds=("after=$bin")
if [[ -n ${BEFORE:-} ]]; then builds=("before=$BEFORE" "${builds[@]}"); fi

echo "| build | checkpoints | session.json | history.jsonl | prompt vs true | status vs git status | update vs git status | prompt | status | update | true | git status |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for build in "${builds[@]}"; do
  name=${build%%=*}
  exe=${build#*=}
  for n in "${counts[@]}"; do
    repo="$work/$name-$n"
    cp -a "$work/template" "$repo"
    (
      cd "$repo"
      "$exe" init --task "Migrate auth to OAuth2" >/dev/null
      "$exe" update --completed "Plan" --remaining "PKCE login" --remaining "Token refresh" \
        --next "PKCE login" --decision "Use the system browser" >/dev/null
      for i in $(seq 1 "$n"); do "$exe" checkpoint "step $i" >/dev/null; done
      git status >/dev/null
    )
    python3 - "$repo" "$exe" "$rounds" "$name" "$n" <<'PY'
import os, random, statistics, subprocess, sys, time
repo, exe, rounds, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
cmds = {
    "true": ["true"],
    "git status": ["git", "status"],
    "prompt": [exe, "prompt"],
    "status": [exe, "status"],
    "update": [exe, "update", "--discovery", "x"],
}
def run(argv):
    t = time.perf_counter()
    subprocess.run(argv, cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t
for argv in cmds.values():  # warm-up
    run(argv)
times = {k: [] for k in cmds}
for _ in range(rounds):
    order = list(cmds)
    random.shuffle(order)
    for k in order:
        times[k].append(run(cmds[k]))
def ratio(k, base):
    return statistics.median(a / b for a, b in zip(times[k], times[base]))
ms = {k: statistics.median(v) * 1000 for k, v in times.items()}
size = lambda p: os.path.getsize(p) // 1024 if os.path.exists(p) else 0
sj = size(os.path.join(repo, ".pas-agent/session.json"))
hj = size(os.path.join(repo, ".pas-agent/history.jsonl"))
print(f"| {name} | {n} | {sj} KB | {hj} KB | {ratio('prompt', 'true'):.2f}x | "
      f"{ratio('status', 'git status'):.2f}x | {ratio('update', 'git status'):.2f}x | "
      f"{ms['prompt']:.1f} ms | {ms['status']:.1f} ms | {ms['update']:.1f} ms | "
      f"{ms['true']:.1f} ms | {ms['git status']:.1f} ms |", flush=True)
PY
    rm -rf "$repo"
  done
done
