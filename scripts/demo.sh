#!/usr/bin/env bash
# Builds pas-agent and runs its main job on a scratch repository: a session is started, an
# "agent" is launched through `pas-agent run` (a small stand-in script that edits a file and
# commits, so no account or network is needed), and the run record is shown.
#
# Usage: scripts/demo.sh            (builds in release mode; takes a few minutes the first time)
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --locked
bin="$PWD/target/release/pas-agent"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/pas-agent-demo.XXXXXX")
mkdir -p "$scratch/repo" "$scratch/bin"
cd "$scratch/repo"
export GIT_AUTHOR_NAME="Demo" GIT_AUTHOR_EMAIL="demo@example.invalid"
export GIT_COMMITTER_NAME="Demo" GIT_COMMITTER_EMAIL="demo@example.invalid"
git init -q -b main
printf '# Demo project\n' > README.md
git add README.md && git commit -q -m "Initial commit"

# The stand-in agent: reads the context pas-agent exported, writes code, commits.
cat > "$scratch/bin/demo-agent" <<'AGENT'
#!/bin/sh
echo "demo-agent: the exported context says the next action is:"
grep -A2 '^## Next Action' AGENTS.md 2>/dev/null | tail -n 1 || true
printf 'def greet(name):\n    return f"Hello, {name}!"\n' > greet.py
git add greet.py && git commit -q -m "Add greet()"
echo "demo-agent: wrote greet.py and committed it"
AGENT
chmod +x "$scratch/bin/demo-agent"
export PATH="$scratch/bin:$PATH"

step() { printf '\n$ pas-agent %s\n' "${*@Q}"; "$bin" "$@"; }
step init --task "Add a greeting module"
step update --remaining "Write greet()" --remaining "Test greet()" --next "Write greet()"
step export --to codex
step run -- demo-agent
step update --done 1 --next "Test greet()"
step runs
step status
printf '\nThe scratch repository is %s\n' "$scratch/repo"
