#!/usr/bin/env bash
# Benchmark: `pas-agent doctor` on a large repository with the agents installed ("it answers in
# about a second on a 10,000-file repository with four agents installed"), against git status
# in the same repository.
#
# Builds a repository of 10,000 committed files (100 then modified, 20 untracked), starts a
# session with a checkpoint and commits once more (HEAD moved since the checkpoint: information
# doctor reports), integrates Claude Code and Codex (project) and Gemini CLI (user), and times
# with hyperfine, printing medians:
#   - pas-agent doctor            (the agents on PATH: ./.ci/npm/bin, or those already on PATH)
#   - pas-agent doctor --json
#   - git status                  (the yardstick)
#
# Usage: bench/doctor.sh [FILES] [BINARY]   (needs hyperfine and python3; BINARY: an older
# pas-agent to compare, e.g. one built from an earlier commit)
set -euo pipefail
cd "$(dirname "$0")/.."
files=${1:-10000}
other=${2:-}
if [ -d .ci/npm/bin ]; then
  export PATH="$PWD/.ci/npm/bin:$PATH"
fi
. bench/lib.sh
start_bench
make_repo "$work/repo" "$files"
export HOME="$work/home" XDG_STATE_HOME="$work/home/.local/state"
export XDG_CONFIG_HOME="$work/home/.config" CODEX_HOME="$work/home/.codex"
mkdir -p "$HOME"
cd "$work/repo"
"$bin" init --task bench >/dev/null
"$bin" checkpoint "baseline" >/dev/null
git -c user.name=b -c user.email=b@b commit -q --allow-empty -m "after the checkpoint"
"$bin" integrate claude >/dev/null
"$bin" integrate codex >/dev/null
"$bin" integrate gemini --user >/dev/null
installed=0
for a in claude codex gemini opencode copilot qwen cursor-agent kiro-cli agy aider amp goose; do
  command -v "$a" >/dev/null && installed=$((installed + 1))
done
echo "repository: $(git ls-files | wc -l) tracked files; $installed agents on PATH"
args=(--command-name "pas-agent doctor" "$bin doctor"
  --command-name "pas-agent doctor --json" "$bin doctor --json"
  --command-name "git status" "git status")
if [ -n "$other" ]; then
  args+=(--command-name "other pas-agent doctor" "$other doctor")
fi
hyperfine --warmup 2 --runs 15 -N -i "${args[@]}" --export-json "$work/doctor.json" >/dev/null
python3 - "$work/doctor.json" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
base = next(r["median"] for r in results if r["command"] == "git status")
print(f"{'command':<32} {'median':>10} {'vs git status':>14}")
for r in results:
    print(f"{r['command']:<32} {r['median'] * 1000:8.1f} ms {r['median'] / base:13.2f}x")
PY
