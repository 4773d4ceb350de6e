# pas-agent shell integration for zsh 5.3 or later.
# Load it from ~/.zshrc with:   eval "$(pas-agent hook zsh)"
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
# Every function starts with `emulate -L zsh`, so the user's options (ksh_arrays, no_unset,
# err_exit, sh_word_split, ...) do not apply inside. zsh restores $? after precmd hooks.

if [[ -o interactive && -z ${PAS_AGENT_RUN_ID-} && -z ${CLAUDECODE-} ]]; then

    typeset -g __pas_agent_bin=__PAS_AGENT_BIN__

    # State kept between prompts. A second load keeps it, and forces one refresh.
    typeset -g __pas_agent_root=${__pas_agent_root-}
    typeset -g __pas_agent_stamp=${__pas_agent_stamp-}
    typeset -g __pas_agent_here=
    typeset -g __pas_agent_off=
    typeset -g __pas_agent_dirty=1
    typeset -g __pas_agent_wrapped=${__pas_agent_wrapped-}
    if [[ -z ${__pas_agent_watch+set} ]]; then
        typeset -ga __pas_agent_watch
    fi

    # Sets __pas_agent_here to the nearest directory at or above $PWD that holds
    # .pas-agent/session.json, or to "" when there is none. Builtins only: no process.
    function __pas_agent_find {
        emulate -L zsh
        local dir=$PWD
        __pas_agent_here=
        while true; do
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
    function __pas_agent_changed {
        emulate -L zsh
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
        for file in $__pas_agent_watch; do
            if [[ $file -nt $__pas_agent_stamp ]]; then
                return 0
            fi
        done
        return 1
    }

    # The binary went away (uninstalled, upgraded to another path): say so once, stop.
    function __pas_agent_gone {
        emulate -L zsh
        __pas_agent_off=1
        unset PAS_AGENT_PROMPT
        print -ru2 -- "pas-agent: $__pas_agent_bin is gone; the shell hooks are off in this shell (load them again once it is back)"
    }

    # Asks pas-agent for the prompt text (line 1), the notice (line 2), its stamp (line 3)
    # and the files to watch (the rest). $1 is --notice or empty.
    function __pas_agent_refresh {
        emulate -L zsh
        local out
        local -a lines
        if [[ ! -x $__pas_agent_bin ]]; then
            __pas_agent_gone
            return 0
        fi
        out=$(command $__pas_agent_bin prompt --hook $$ $@ 2>/dev/null) || out=
        if [[ -n $out ]]; then
            lines=("${(@f)out}")
        fi
        __pas_agent_dirty=
        __pas_agent_stamp=${lines[3]-}
        __pas_agent_watch=("${(@)lines[4,-1]}")
        if [[ -n ${lines[1]-} ]]; then
            export PAS_AGENT_PROMPT=${lines[1]}
        else
            unset PAS_AGENT_PROMPT
        fi
        if [[ -n ${lines[2]-} ]]; then
            print -ru2 -- ${lines[2]}
        fi
    }

    # Runs before each prompt.
    function __pas_agent_precmd {
        emulate -L zsh
        if [[ -n $__pas_agent_off ]]; then
            return 0
        fi
        __pas_agent_find
        if [[ -z $__pas_agent_here ]]; then
            if [[ -n $__pas_agent_root || -n ${PAS_AGENT_PROMPT+set} ]]; then
                __pas_agent_root=
                __pas_agent_stamp=
                __pas_agent_watch=()
                unset PAS_AGENT_PROMPT
            fi
        elif [[ $__pas_agent_here != $__pas_agent_root ]]; then
            __pas_agent_root=$__pas_agent_here
            __pas_agent_refresh --notice
        elif __pas_agent_changed; then
            __pas_agent_refresh
        fi
        return 0
    }

    # Runs agent command $1 with the rest as its arguments: through `pas-agent run` inside a
    # session, as itself everywhere else.
    function __pas_agent_wrap {
        emulate -L zsh
        local name=$1
        shift
        # Checked first, and with defaults: agents copy functions into non-interactive shells
        # where the hook's variables do not exist.
        if [[ -o interactive && ${PAS_AGENT_WRAP-1} != 0 && -z ${__pas_agent_off-} && -z ${PAS_AGENT_RUN_ID-} ]]; then
            __pas_agent_find
            if [[ -n $__pas_agent_here ]]; then
                if [[ -x $__pas_agent_bin ]]; then
                    command $__pas_agent_bin run $name -- "$@"
                    return
                fi
                __pas_agent_gone
            fi
        fi
        command $name "$@"
    }

    # A function the user defined under an agent's name is theirs: leave it alone.
    function __pas_agent_may_wrap {
        emulate -L zsh
        if functions -- $1 >/dev/null 2>&1 && [[ " $__pas_agent_wrapped " != *" $1 "* ]]; then
            return 1
        fi
        if [[ " $__pas_agent_wrapped " != *" $1 "* ]]; then
            __pas_agent_wrapped+=" $1"
        fi
        return 0
    }

    __PAS_AGENT_WRAPPERS__

    # Register first among the precmd hooks (once, however often this is loaded), so prompt
    # renderers that run in precmd see the new text.
    function {
        emulate -L zsh
        typeset -ga precmd_functions
        precmd_functions=(__pas_agent_precmd ${precmd_functions:#__pas_agent_precmd})
    }
fi
