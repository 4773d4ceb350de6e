#!/usr/bin/env bash
# Launcher benchmark: what `pas-agent run` costs on top of the program it starts.
#
#   [BENCH_BIN=path] bench/launcher.sh [--quick]
#
# Measures, with hyperfine (Debian package `hyperfine`), medians of:
#   1. overhead:   `pas-agent run --no-checkpoint --no-export -- true`  vs  `true`, outside git
#                  (the run record is still written before and after)
#   2. bare run:   the same on a repository of 10,000 files  vs  `git status` on it (HEAD read
#                  before the program, one scan of the work tree after it)
#   3. full run:   `pas-agent run -- true` on that repository  vs  `git status`
#                  (checkpoint + record: one scan before the program, one after)
#   4. pty:        `pas-agent run -- cat <200 MB file>` inside a pseudo-terminal (util-linux
#                  `script` provides the terminal, so pas-agent uses its own pty and capture)
#                  vs  `cat` of the same file inside the same `script` terminal
# and prints each ratio (pas-agent median / baseline median). Nothing here is asserted: speed
# is measured, not tested. Results go to bench/results/launcher-*.json (ignored by git).
#
# Uses the release binary (cargo build --release), or BENCH_BIN's. Everything is created under
# a temporary directory with its own HOME, so nothing of the user's is read or written.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
[ "${1:-}" = "--quick" ] && quick=1
runs_fast=$([ $quick = 1 ] && echo 10 || echo 50)
runs_slow=$([ $quick = 1 ] && echo 3 || echo 10)
mb=$([ $quick = 1 ] && echo 20 || echo 200)

for tool in hyperfine git script python3; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is required" >&2; exit 1; }
done

if [ -n "${BENCH_BIN:-}" ]; then
  bin=$(realpath "$BENCH_BIN")
else
  cargo build --release --locked --quiet
  bin="$PWD/target/release/pas-agent"
fi
out="$PWD/bench/results"
mkdir -p "$out"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export HOME="$tmp/home" XDG_STATE_HOME="$tmp/home/.local/state" GIT_CONFIG_NOSYSTEM=1
export GIT_CONFIG_GLOBAL="$tmp/home/.gitconfig"
mkdir -p "$HOME"
printf '[user]\n\tname = Bench\n\temail = bench@example.invalid\n[init]\n\tdefaultBranch = main\n' > "$GIT_CONFIG_GLOBAL"

# 1. A directory outside git with a session.
small="$tmp/small"
mkdir -p "$small" && cd "$small"
"$bin" init --task "benchmark" > /dev/null
hyperfine --warmup 3 --runs "$runs_fast" -N \
  --export-json "$out/launcher-overhead.json" \
  -n 'true' 'true' \
  -n 'pas-agent run --no-checkpoint --no-export -- true' "$bin run --no-checkpoint --no-export -- true"

# 2, 3. A repository of 10,000 files (100 directories of 100), committed, with a session.
big="$tmp/big"
mkdir -p "$big" && cd "$big"
git init -q
python3 - <<'EOF'
import os
for d in range(100):
    os.makedirs(f"src/d{d:03}", exist_ok=True)
    for f in range(100):
        with open(f"src/d{d:03}/f{f:03}.txt", "w") as fh:
            fh.write(f"file {d}/{f}\n" * 20)
EOF
git add . && git commit -qm "10,000 files"
"$bin" init --task "benchmark" > /dev/null
git status > /dev/null
hyperfine --warmup 3 --runs "$runs_slow" \
  --export-json "$out/launcher-bare.json" \
  -n 'git status' 'git status' \
  -n 'pas-agent run --no-checkpoint --no-export -- true' "$bin run --no-checkpoint --no-export -- true"
hyperfine --warmup 3 --runs "$runs_slow" \
  --export-json "$out/launcher-full.json" \
  -n 'git status' 'git status' \
  -n 'pas-agent run -- true' "$bin run -- true"

# 4. PTY throughput: a file of ${mb} MB through cat, in a terminal.
cd "$small"
head -c $((mb * 1024 * 1024)) /dev/urandom | base64 -w 120 > "$tmp/big.txt"
hyperfine --warmup 1 --runs "$runs_slow" \
  --export-json "$out/launcher-pty.json" \
  -n "cat (script pty)" "script -qfec 'cat $tmp/big.txt' /dev/null" \
  -n "pas-agent run -- cat (script pty)" "script -qfec '$bin run --no-checkpoint --no-export -- cat $tmp/big.txt' /dev/null"

cd "$OLDPWD" 2>/dev/null || true
python3 - "$out" "$mb" <<'EOF'
import json, sys, os
out, mb = sys.argv[1], sys.argv[2]
def medians(name):
    with open(os.path.join(out, name)) as f:
        return [(r["command"], r["median"]) for r in json.load(f)["results"]]
print()
print(f"{'benchmark':<56} {'median':>10} {'ratio':>8}")
for name, label in [("launcher-overhead.json", "overhead, outside git"), ("launcher-bare.json", "bare run, 10,000 files"), ("launcher-full.json", "full run, 10,000 files"), ("launcher-pty.json", f"pty, {mb} MB")]:
    (base_cmd, base), (cmd, ours) = medians(name)
    print(f"{base_cmd:<56} {base*1000:>8.1f}ms")
    print(f"{cmd:<56} {ours*1000:>8.1f}ms {ours/base:>7.2f}x   ({label})")
EOF
