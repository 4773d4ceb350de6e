#!/usr/bin/env bash
# Benchmark: a warm `status` against git's best configuration, `git status` with its untracked
# cache on (`core.untrackedCache=true`, what `feature.manyFiles=true` turns on): both then read
# only the directories that changed (src/git/dircache.rs; git's `UNTR` index extension).
#
# Builds a repository of FILES committed files (default 10,000), five to a directory in a tree
# three levels deep (about FILES/5 directories), 100 of them modified and 20 untracked files
# spread over the tree; lets git fill its untracked cache and pas-agent its directory cache
# (after three seconds, so that no directory is "racy"), checks that `status --json` is byte
# for byte the full computation's, counts the directories each reads (`getdents64`, with
# strace when installed), and times with hyperfine, printing medians and the ratio to git:
#   - pas-agent status                       (warm directory cache)
#   - pas-agent status, caches off           (its cache directory cannot be made: neither the
#                                            directory cache nor the fingerprint cache)
#   - git status                             (core.untrackedCache=true, warm)
#
# Usage: [BENCH_BIN=target/release/pas-agent] bench/status-untracked-cache.sh [FILES]
# (needs hyperfine and python3)
set -euo pipefail
cd "$(dirname "$0")/.."
files=${1:-10000}
. bench/lib.sh
start_bench
export HOME="$work/home" XDG_RUNTIME_DIR="$work/runtime" GIT_CONFIG_NOSYSTEM=1
export GIT_CONFIG_GLOBAL="$work/home/.gitconfig"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"
printf '[user]\n\tname = Bench\n\temail = bench@example.invalid\n[init]\n\tdefaultBranch = main\n' > "$GIT_CONFIG_GLOBAL"
touch "$work/no-cache" # a file: a cache directory below it cannot be made
repo="$work/repo"
mkdir -p "$repo"
cd "$repo"
git init -q -b main
git config core.untrackedCache true
python3 - "$files" <<'PY'
import os, sys
files = int(sys.argv[1])
n = 0
for a in range(10):
    for b in range(10):
        for c in range(max(1, files // 500)):
            d = f"src/m{a}/p{b}/d{c}"
            os.makedirs(d, exist_ok=True)
            for f in range(5):
                with open(f"{d}/f{f}.txt", "w") as out:
                    out.write(f"file {n}\n")
                n += 1
PY
git add -A && git commit -q -m "$files files"
python3 - <<'PY'
import glob
for f in sorted(glob.glob("src/*/*/*/f0.txt"))[:100]:
    open(f, "a").write("changed\n")
for d in sorted(glob.glob("src/*/*/d1"))[:20]:
    open(f"{d}/untracked.txt", "w").write("new\n")
PY
"$bin" init --task bench >/dev/null
"$bin" checkpoint baseline >/dev/null
sleep 3.1
git status >/dev/null && git status >/dev/null
"$bin" status >/dev/null && "$bin" status >/dev/null
echo "repository: $(git ls-files | wc -l) tracked files in $(find src -type d | wc -l) directories, $(git status --porcelain | wc -l) changed"
cmp <("$bin" status --json) <(PAS_AGENT_FULL_STATUS=1 "$bin" status --json) \
  && echo "status --json: identical with the directory cache and without any fast path"
if command -v strace >/dev/null; then
  reads() { strace -f -c -e trace=getdents64 -o "$work/strace" "$@" >/dev/null; awk '/getdents64/ {print $4}' "$work/strace"; }
  echo "getdents64 calls: pas-agent status $(reads "$bin" status), git status $(reads git status)," \
    "caches off $(XDG_RUNTIME_DIR="$work/no-cache" reads "$bin" status)"
fi
hyperfine --warmup 3 --runs 30 -N \
  --command-name "pas-agent status" "$bin status" \
  --command-name "pas-agent status, caches off" "env XDG_RUNTIME_DIR=$work/no-cache $bin status" \
  --command-name "git status (untracked cache)" "git status" \
  --export-json "$work/status.json" >/dev/null
python3 - "$work/status.json" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
base = next(r["median"] for r in results if r["command"].startswith("git status"))
print(f"{'command':<40} {'median':>9} {'vs git status':>14}")
for r in results:
    print(f"{r['command']:<40} {r['median'] * 1000:7.1f} ms {r['median'] / base:13.2f}x")
PY
