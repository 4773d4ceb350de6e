#!/usr/bin/env bash
# Benchmark: what a session's recorded runs cost.
#
# Builds the repository of bench/status.sh (10,000 committed files, 100 modified, 20
# untracked) once per session size (1 and 1,000 runs by default), starts a session there and
# records one real run with the binary under test (`run --no-pty -- sh -c …`: it edits two files
# and commits). A generator then gives that record the words a real agent's run has (a
# transcript at this build's limits: prompts, 20 commands, edited files, a 4,000-character last
# answer, the model and tokens; about 12 KB per run, as measured on real sessions) and clones it
# with new ids and later times until the session holds that many runs. One `update` first lets
# the build shrink what it shrinks (a session written by an older version changes on its first
# change). Then it times, paired (every round runs each command once on every session, in a
# shuffled order; a figure is the median over rounds of its time divided by the yardstick's, or
# by the same command's on the 1-run session, in the same round):
#   - git status                        the yardstick of status and update
#   - pas-agent update --discovery x    a change: load, change, save under the lock
#   - pas-agent checkpoint m            a checkpoint (fingerprints the changed files too)
#   - pas-agent runs 1                  the oldest run in full (with 1,000 runs its details are
#                                       read back from history.jsonl)
#   - pas-agent runs N                  the latest run in full
#   - pas-agent status                  text status
#   - pas-agent export                  the context files
#   - pas-agent run --no-pty --no-checkpoint --no-export -- true
#                                       the launcher's two records (in a copy of the session
#                                       made at the start, which grows by a run each round)
# and prints the session file's and history file's sizes. With BEFORE=/path/to/another/pas-agent
# the same is done for that build in the same rounds, on its own sessions.
#
# Usage: [BEFORE=path] [BENCH_BIN=path] [ROUNDS=21] bench/runs.sh [COUNTS...]   (default: 1 1000)
set -euo pipefail
cd "$(dirname "$0")/.."
counts=("${@:-1 1000}")
read -r -a counts <<<"${counts[*]}"
rounds=${ROUNDS:-21}
. bench/lib.sh
start_bench
template_repo

builds=("after=$bin")
if [[ -n ${BEFORE:-} ]]; then builds=("before=$BEFORE" "${builds[@]}"); fi

sessions=()
for build in "${builds[@]}"; do
  name=${build%%=*}
  exe=${build#*=}
  for n in "${counts[@]}"; do
    repo="$work/$name-$n"
    cp -a "$work/template" "$repo"
    (
      cd "$repo"
      "$exe" init --task "Migrate auth to OAuth2" >/dev/null
      "$exe" update --completed "Plan" --remaining "PKCE login" --next "PKCE login" >/dev/null
      "$exe" run --no-pty -- sh -c 'echo a >> src/d1/f1.txt && echo b > notes.txt && git add -A && git commit -qm "agent work"' >/dev/null
      python3 - "$n" <<'PY'
import copy, datetime, json, sys, uuid
n = int(sys.argv[1])
path = ".pas-agent/session.json"
s = json.load(open(path))
run = s["runs"][0]
words = "Refactor the token refresh so that an expired token is renewed before the request. "
run["transcript"] = {
    "source": "/home/u/.claude/projects/-work-app/" + str(uuid.uuid4()) + ".jsonl",
    "prompts": [(words * 6)[:480], (words * 3)[:200]],
    "last_answer": (words * 60)[:4000],
    "model": "claude-sonnet-4-5",
    "tokens": {"input": 182345, "output": 9120, "cache_read": 1502311, "cache_write": 20411},
    "edits": [f"src/auth/module{i}.rs" for i in range(12)],
    "commands": [{"command": f"cargo test --test e2e auth_{i} -- --nocapture 2>&1 | tail -n 40", "exit_code": i % 3 == 0}
                 for i in range(20)],
}
for c in run["transcript"]["commands"]:
    c["exit_code"] = int(c["exit_code"])
run["agent"] = "claude-code"
run["agent_session_id"] = str(uuid.uuid4())
start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
runs = []
for i in range(n):
    r = copy.deepcopy(run)
    r["id"] = str(uuid.uuid4())
    r["agent_session_id"] = str(uuid.uuid4())
    at = start + datetime.timedelta(minutes=10 * i)
    r["started_at"] = at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    r["ended_at"] = (at + datetime.timedelta(minutes=7)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    r["duration_ms"] = 420000
    runs.append(r)
s["runs"] = runs
with open(path, "w") as f:
    json.dump(s, f, indent=2, ensure_ascii=False)
    f.write("\n")
PY
      "$exe" update --discovery "first change" >/dev/null
      git status >/dev/null
    )
    # The launcher adds a run each time: it runs in a copy, so the other rows keep their size.
    cp -a "$repo" "$repo-run"
    git -C "$repo-run" status >/dev/null
    sessions+=("$name:$n:$exe:$repo")
  done
done

python3 - "$rounds" "${sessions[@]}" <<'PY'
import os, random, statistics, subprocess, sys, time
rounds = int(sys.argv[1])
sessions = [s.split(":", 3) for s in sys.argv[2:]]
cmds = {}
for name, n, exe, repo in sessions:
    key = (name, int(n))
    cmds[key, "git status"] = (repo, ["git", "status"])
    cmds[key, "update"] = (repo, [exe, "update", "--discovery", "x"])
    cmds[key, "checkpoint"] = (repo, [exe, "checkpoint", "m"])
    cmds[key, "runs 1"] = (repo, [exe, "runs", "1"])
    cmds[key, "runs N"] = (repo, [exe, "runs", n])
    cmds[key, "status"] = (repo, [exe, "status"])
    cmds[key, "export"] = (repo, [exe, "export", "--to", "codex"])
    cmds[key, "bare run"] = (repo + "-run", [exe, "run", "--no-pty", "--no-checkpoint", "--no-export", "--", "true"])
def run(c):
    repo, argv = c
    t = time.perf_counter()
    p = subprocess.run(argv, cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if p.returncode != 0:
        sys.exit(f"{argv} failed in {repo}: {p.stderr.decode()}")
    return time.perf_counter() - t
for c in cmds.values():  # warm-up
    run(c)
times = {k: [] for k in cmds}
for _ in range(rounds):
    order = list(cmds)
    random.shuffle(order)
    for k in order:
        times[k].append(run(cmds[k]))
med = lambda xs: statistics.median(xs)
ratio = lambda a, b: med([x / y for x, y in zip(times[a], times[b])])
size = lambda p: os.path.getsize(p) // 1024 if os.path.exists(p) else 0
print("| build | runs | session.json | history.jsonl | command | median | vs git status | vs 1 run |")
print("|---|---:|---:|---:|---|---:|---:|---:|")
for name, n, exe, repo in sessions:
    key = (name, int(n))
    one = (name, min(int(s[1]) for s in sessions if s[0] == name))
    sj = size(os.path.join(repo, ".pas-agent/session.json"))
    hj = size(os.path.join(repo, ".pas-agent/history.jsonl"))
    for c in ["git status", "update", "checkpoint", "runs 1", "runs N", "status", "export", "bare run"]:
        vs_git = ratio((key, c), (key, "git status"))
        # "runs N" names a different run at each size: compared with the latest run of 1.
        vs_one = ratio((key, c), (one, c))
        print(f"| {name} | {n} | {sj} KB | {hj} KB | {c} | {med(times[key, c]) * 1000:.1f} ms | "
              f"{vs_git:.2f}x | {vs_one:.2f}x |", flush=True)
PY
