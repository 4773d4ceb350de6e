#!/usr/bin/env bash
# Builds pas-agent and runs its main job on a scratch repository: a session is started, an
# "agent" is launched through `pas-agent run` (a small stand-in script that edits a file and
# commits, so no account or network is needed), and the run record is shown. The scratch
# folder is removed at the end (`--keep` keeps it and says where it is).
#
# Usage: scripts/demo.sh [--keep]
#
# It builds in release mode (link-time optimised, one codegen unit), which is slow the first
# time: on a shared two-core machine (load average about 11) the first run took 20 min 12 s
# with the crates already downloaded (add their download on a fresh machine; a quiet machine
# is faster), a second one 1.9 s. The binary is found wherever cargo puts it
# (`CARGO_TARGET_DIR`, a `build.target-dir` in cargo's configuration): cargo itself names it.
set -euo pipefail
cd "$(dirname "$0")/.."

keep=
case "${1-}" in
  --keep) keep=1 ;;
  "") ;;
  *) echo "usage: scripts/demo.sh [--keep]" >&2; exit 2 ;;
esac

# cargo names the executable it built in its JSON messages (stdout); its progress and any
# warnings still go to the terminal.
bin=$(cargo build --release --locked --message-format=json-render-diagnostics \
  | sed -n 's/.*"executable":"\([^"]*\/pas-agent\)".*/\1/p' | tail -n 1)
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
  echo "demo.sh: cargo did not name the pas-agent binary it built" >&2
  exit 1
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/pas-agent-demo.XXXXXX")
if [ -n "$keep" ]; then
  trap 'printf "\nThe scratch repository is %s\n" "$scratch/repo"' EXIT
else
  trap 'rm -rf "$scratch"' EXIT
fi
mkdir -p "$scratch/repo" "$scratch/bin" "$scratch/home"
cd "$scratch/repo"
# The demo's own home and git identity: nothing of the user's is read or changed (the run
# registry and caches go under the scratch folder too).
export HOME="$scratch/home" XDG_STATE_HOME="$scratch/home/.local/state"
export XDG_CACHE_HOME="$scratch/home/.cache" XDG_CONFIG_HOME="$scratch/home/.config"
unset XDG_RUNTIME_DIR PAS_AGENT_STATE_DIR
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
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
printf '\nThe binary is %s\n' "$bin"
