# shellcheck shell=bash
# pas-agent shell integration for bash 4.4 or later.
# Load it from ~/.bashrc with:   eval "$(pas-agent hook bash)"
#
# What it does (docs/hooks.md has the details):
# - keeps PAS_AGENT_PROMPT set to a short summary of the session for your prompt, asking
#   pas-agent only when the directory, the session file or git's HEAD changed;
# - prints one line with the task and the next action when the shell enters a project with a
#   session (PAS_AGENT_NOTICE=0 turns it off);
# - inside a session, sends the agent commands (claude, codex, ...) through `pas-agent run`
#   (PAS_AGENT_WRAP=0 turns it off; `command codex` bypasses it).
# It does nothing in non-interactive shells and in shells started by an agent run. It never
# evaluates text read from a session: the prompt text is only ever assigned and printed.
# Everything below is one `if` block: a `return` here would end the user's ~/.bashrc.

if [[ $- == *i* && -z ${PAS_AGENT_RUN_ID-} && -z ${CLAUDECODE-} ]]; then

    __pas_agent_bin=__PAS_AGENT_BIN__

    # State kept between prompts. A second load keeps it, and forces one refresh.
    __pas_agent_root=${__pas_agent_root-}
    __pas_agent_stamp=${__pas_agent_stamp-}
    __pas_agent_here=
    __pas_agent_off=
    __pas_agent_dirty=1
    __pas_agent_wrapped=${__pas_agent_wrapped-}
    if [[ -z ${__pas_agent_watch+set} ]]; then
        __pas_agent_watch=()
    fi

    # Sets __pas_agent_here to the nearest directory at or above $PWD that holds
    # .pas-agent/session.json, or to "" when there is none. Builtins only: no process.
    __pas_agent_find() {
        local dir=${PWD-}
        __pas_agent_here=
        while :; do
            if [[ -f $dir/.pas-agent/session.json ]]; then
                __pas_agent_here=${dir:-/}
                return 0
            fi
            if [[ $dir != */* ]]; then
                return 0
            fi
            dir=${dir%/*}
        done
    }

    # Succeeds when a watched file (the session, git's HEAD and its log) is newer than the
    # stamp that pas-agent left at the last refresh. Builtins only.
    __pas_agent_changed() {
        local file
        if [[ -n $__pas_agent_dirty ]]; then
            return 0
        fi
        if [[ -z $__pas_agent_stamp ]]; then
            return 1
        fi
        if [[ ! -e $__pas_agent_stamp ]]; then
            return 0
        fi
        for file in ${__pas_agent_watch[@]+"${__pas_agent_watch[@]}"}; do
            if [[ $file -nt $__pas_agent_stamp ]]; then
                return 0
            fi
        done
        return 1
    }

    # The binary went away (uninstalled, upgraded to another path): say so once, stop.
    __pas_agent_gone() {
        __pas_agent_off=1
        unset PAS_AGENT_PROMPT
        printf 'pas-agent: %s is gone; the shell hooks are off in this shell (load them again once it is back)\n' \
            "$__pas_agent_bin" >&2
    }

    # Asks pas-agent for the prompt text (line 1), the notice (line 2), its stamp (line 3)
    # and the files to watch (the rest). $1 is --notice or empty.
    __pas_agent_refresh() {
        local out
        local -a lines=()
        if [[ ! -x $__pas_agent_bin ]]; then
            __pas_agent_gone
            return 0
        fi
        out=$(command "$__pas_agent_bin" prompt --hook "$$" ${1:+"$1"} 2>/dev/null) || out=
        if [[ -n $out ]]; then
            mapfile -t lines <<<"$out"
        fi
        __pas_agent_dirty=
        __pas_agent_stamp=${lines[2]-}
        __pas_agent_watch=("${lines[@]:3}")
        if [[ -n ${lines[0]-} ]]; then
            export PAS_AGENT_PROMPT="${lines[0]}"
        else
            unset PAS_AGENT_PROMPT
        fi
        if [[ -n ${lines[1]-} ]]; then
            printf '%s\n' "${lines[1]}" >&2
        fi
    }

    # Runs before each prompt. $? is saved first and returned last, for the prompt commands
    # after this one; "$_" is passed in by PROMPT_COMMAND so that it survives too. Under
    # `set -e` a failing prompt command would end the shell, so there it returns 0.
    __pas_agent_precmd() {
        local status=$?
        if [[ -z $__pas_agent_off ]]; then
            __pas_agent_find
            if [[ -z $__pas_agent_here ]]; then
                if [[ -n $__pas_agent_root || -n ${PAS_AGENT_PROMPT+set} ]]; then
                    __pas_agent_root=
                    __pas_agent_stamp=
                    __pas_agent_watch=()
                    unset PAS_AGENT_PROMPT
                fi
            elif [[ $__pas_agent_here != "$__pas_agent_root" ]]; then
                __pas_agent_root=$__pas_agent_here
                __pas_agent_refresh --notice
            elif __pas_agent_changed; then
                __pas_agent_refresh
            fi
        fi
        if [[ $- == *e* ]]; then
            return 0
        fi
        return "$status"
    }

    # Runs agent command $1 with the rest as its arguments: through `pas-agent run` inside a
    # session, as itself everywhere else.
    __pas_agent_wrap() {
        local name=$1
        shift
        # Checked first, and with defaults: agents copy functions into non-interactive shells
        # where the hook's variables do not exist.
        if [[ $- == *i* && ${PAS_AGENT_WRAP-1} != 0 && -z ${__pas_agent_off-} && -z ${PAS_AGENT_RUN_ID-} ]]; then
            __pas_agent_find
            if [[ -n $__pas_agent_here ]]; then
                if [[ -x $__pas_agent_bin ]]; then
                    command "$__pas_agent_bin" run "$name" -- "$@"
                    return
                fi
                __pas_agent_gone
            fi
        fi
        command "$name" "$@"
    }

    # A function the user defined under an agent's name is theirs: leave it alone.
    __pas_agent_may_wrap() {
        if declare -F "$1" >/dev/null && [[ " $__pas_agent_wrapped " != *" $1 "* ]]; then
            return 1
        fi
        if [[ " $__pas_agent_wrapped " != *" $1 "* ]]; then
            __pas_agent_wrapped+=" $1"
        fi
        return 0
    }

    __PAS_AGENT_WRAPPERS__

    # Register before anything else in the prompt, so prompt renderers see the new text,
    # and keep PROMPT_COMMAND as it was: a string stays a string, an array keeps its length.
    # With bash-preexec, through its precmd_functions; otherwise at the front of the first
    # (or only) command, where VS Code's shell integration, which keeps and runs only that one,
    # runs it before its own prompt mark (a command after that mark would count as a command
    # the user ran). VS Code's copy of it is checked too, so a second load adds nothing.
    if [[ " ${PROMPT_COMMAND[*]-} ${__vsc_original_prompt_command[*]-} " != *__pas_agent_precmd* && " ${precmd_functions[*]-} " != *" __pas_agent_precmd "* ]]; then
        __pas_agent_attrs=
        if [[ -n ${PROMPT_COMMAND+set} ]] && ((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] >= 404)); then
            __pas_agent_attrs=${PROMPT_COMMAND@a}
        fi
        if [[ -n ${bash_preexec_imported-}${__bp_imported-} ]]; then
            precmd_functions=(__pas_agent_precmd ${precmd_functions[@]+"${precmd_functions[@]}"})
        elif [[ $__pas_agent_attrs == *r* ]]; then
            printf 'pas-agent: PROMPT_COMMAND is read-only, so the prompt hook is not installed\n' >&2
        else
            # Strip leading blanks and semicolons so that the joined string stays valid. For an
            # array this reads and sets its first element only.
            __pas_agent_rest=${PROMPT_COMMAND-}
            __pas_agent_rest=${__pas_agent_rest#"${__pas_agent_rest%%[![:space:];]*}"}
            # shellcheck disable=SC2016,SC2178 # "$_" is for PROMPT_COMMAND to expand, at each prompt.
            PROMPT_COMMAND='__pas_agent_precmd "$_"'${__pas_agent_rest:+;$__pas_agent_rest}
            unset __pas_agent_rest
        fi
        unset __pas_agent_attrs
    fi
fi
