# shellcheck shell=bash disable=SC2034  # bin and work are for the scripts that source this
# Shared set-up for the benchmarks (sourced, not run, from the repository's top level).

# start_bench: builds the release binary as `cargo install` builds it (`cargo build --release`)
# and sets `bin` to it and `work` to a fresh temporary directory, removed when the script exits.
# BENCH_BIN=path uses that binary instead (e.g. a build of another branch, kept aside).
start_bench() {
  if [ -n "${BENCH_BIN:-}" ]; then
    bin=$(realpath "$BENCH_BIN")
  else
    cargo build --release --locked -q
    bin="${CARGO_TARGET_DIR:-$PWD/target}/release/pas-agent"
  fi
  work=$(mktemp -d "${TMPDIR:-/tmp}/pas-agent-bench.XXXXXX")
  trap 'rm -rf "$work"' EXIT
}

# make_repo DIR FILES: a git repository in DIR of FILES committed files in 100 directories, then
# 100 of them modified and 20 files untracked, with git's index refreshed once — as any
# `git status` of the user's would — so that no reader re-hashes "racily clean" files.
make_repo() {
  local dir=$1 files=$2 d f u
  mkdir -p "$dir"
  (
    cd "$dir" || exit 1
    export GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@b GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@b
    git init -q -b main
    for d in $(seq 0 99); do
      mkdir -p "src/d$d"
      for f in $(seq 0 $((files / 100 - 1))); do printf 'file %s %s\n' "$d" "$f" > "src/d$d/f$f.txt"; done
    done
    git add -A && git commit -q -m "$files files"
    for d in $(seq 0 99); do echo changed >> "src/d$d/f0.txt"; done
    for u in $(seq 0 19); do echo new > "untracked$u.txt"; done
    sleep 1.1
    git status >/dev/null
  )
}

# template_repo: the environment of the session benchmarks (bench/history.sh, bench/runs.sh)
# and the repository of bench/status.sh in "$work/template", to be copied once per session.
template_repo() {
  export LC_ALL=C PAS_AGENT_NOTICE=0 XDG_RUNTIME_DIR="$work/run"
  mkdir -p "$XDG_RUNTIME_DIR"
  export GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@b GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@b
  # No automatic gc: a detached one repacking the template while it is copied breaks the copy.
  export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=gc.auto GIT_CONFIG_VALUE_0=0
  make_repo "$work/template" 10000
}
