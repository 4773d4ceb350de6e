#!/usr/bin/env bash
# Benchmark: reading a session on a large repository, against git itself ("status on a
# large repository no slower than git status").
#
# Builds a repository of 10,000 committed files (100 of them then modified, 20 untracked), takes
# a checkpoint so that `status` has to fingerprint and compare the changed files, and times with
# hyperfine, printing medians (what docs/performance.md reports):
#   - pas-agent status            (gix in process)
#   - pas-agent status            (PAS_AGENT_GIT=cli: the git CLI fallback)
#   - pas-agent checkpoint        (status + fingerprints + a locked atomic write)
#   - git status                  (what a user would run)
#   - git status --porcelain=v2 -z --untracked-files=all   (what the CLI fallback runs)
#
# Usage: bench/status.sh [FILES]    (needs hyperfine and python3: apt-get install hyperfine)
set -euo pipefail
cd "$(dirname "$0")/.."
files=${1:-10000}
. bench/lib.sh
start_bench
make_repo "$work" "$files"
cd "$work"
"$bin" init --task bench >/dev/null
"$bin" checkpoint "baseline" >/dev/null
echo "repository: $(git ls-files | wc -l) tracked files, $(git status --porcelain | wc -l) changed"
hyperfine --warmup 3 --runs 30 -N \
  --command-name "pas-agent status (gix)" "$bin status" \
  --command-name "pas-agent status (git CLI fallback)" "env PAS_AGENT_GIT=cli $bin status" \
  --command-name "git status" "git status" \
  --command-name "git status --porcelain=v2 -z -uall" "git --no-optional-locks status --porcelain=v2 -z --untracked-files=all" \
  --command-name "pas-agent checkpoint" "$bin checkpoint bench" \
  --command-name "pas-agent update" "$bin update --remaining bench" \
  --export-json "$work/status.json" >/dev/null
# Medians: a shared machine's outliers pull means around.
python3 - "$work/status.json" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
base = next(r["median"] for r in results if r["command"] == "git status")
print(f"{'command':<40} {'median':>9} {'vs git status':>14}")
for r in results:
    print(f"{r['command']:<40} {r['median'] * 1000:7.1f} ms {r['median'] / base:13.2f}x")
PY
