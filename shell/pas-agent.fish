# pas-agent shell integration for fish 3.1 or later.
# Load it from ~/.config/fish/config.fish with:   pas-agent hook fish | source
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
# fish keeps $status across event handlers, and the user's fish_prompt is left alone.

if status is-interactive; and not set -q PAS_AGENT_RUN_ID; and not set -q CLAUDECODE

    set -g __pas_agent_bin __PAS_AGENT_BIN__

    # State kept between prompts. A second load keeps it, and forces one refresh.
    set -q __pas_agent_root; or set -g __pas_agent_root ''
    set -q __pas_agent_stamp; or set -g __pas_agent_stamp ''
    set -q __pas_agent_watch; or set -g __pas_agent_watch
    set -q __pas_agent_wrapped; or set -g __pas_agent_wrapped
    set -q __pas_agent_names; or set -g __pas_agent_names
    set -g __pas_agent_here ''
    set -g __pas_agent_off ''
    set -g __pas_agent_dirty 1

    # Sets __pas_agent_here to the nearest directory at or above $PWD that holds
    # .pas-agent/session.json, or to "" when there is none. Builtins only: no process.
    function __pas_agent_find
        set -l dir $PWD
        set -g __pas_agent_here ''
        while true
            if test -f "$dir/.pas-agent/session.json"
                if test -n "$dir"
                    set -g __pas_agent_here $dir
                else
                    set -g __pas_agent_here /
                end
                return 0
            end
            if not string match -q '*/*' -- $dir
                return 0
            end
            set dir (string replace -r '/[^/]*$' '' -- $dir)
        end
    end

    # Succeeds when a watched file (the session, git's HEAD and its log) is newer than the
    # stamp that pas-agent left at the last refresh. Builtins only.
    function __pas_agent_changed
        if test -n "$__pas_agent_dirty"
            return 0
        end
        if test -z "$__pas_agent_stamp"
            return 1
        end
        if not test -e "$__pas_agent_stamp"
            return 0
        end
        for file in $__pas_agent_watch
            if test "$file" -nt "$__pas_agent_stamp"
                return 0
            end
        end
        return 1
    end

    # The binary went away (uninstalled, upgraded to another path): say so once, stop.
    function __pas_agent_gone
        set -g __pas_agent_off 1
        set -e PAS_AGENT_PROMPT
        printf 'pas-agent: %s is gone; the shell hooks are off in this shell (load them again once it is back)\n' \
            $__pas_agent_bin >&2
    end

    # Asks pas-agent for the prompt text (line 1), the notice (line 2), its stamp (line 3)
    # and the files to watch (the rest). $argv is --notice or nothing.
    function __pas_agent_refresh
        if not test -x "$__pas_agent_bin"
            __pas_agent_gone
            return 0
        end
        set -l lines (command $__pas_agent_bin prompt --hook $fish_pid $argv 2>/dev/null)
        set -g __pas_agent_dirty ''
        set -g __pas_agent_stamp ''
        set -g __pas_agent_watch
        if set -q lines[3]
            set -g __pas_agent_stamp $lines[3]
            set -g __pas_agent_watch $lines[4..-1]
        end
        if test -n "$lines[1]"
            set -gx PAS_AGENT_PROMPT $lines[1]
        else
            set -e PAS_AGENT_PROMPT
        end
        if test -n "$lines[2]"
            printf '%s\n' $lines[2] >&2
        end
    end

    # Runs before each prompt is drawn, before fish_prompt.
    function __pas_agent_precmd --on-event fish_prompt
        if test -n "$__pas_agent_off"
            return 0
        end
        # Where `alias` could not be wrapped (below), an alias defined since the last prompt.
        if test -n "$__pas_agent_alias_check"
            for name in $__pas_agent_names
                __pas_agent_unalias $name
            end
        end
        __pas_agent_find
        if test -z "$__pas_agent_here"
            if test -n "$__pas_agent_root"; or set -q PAS_AGENT_PROMPT
                set -g __pas_agent_root ''
                set -g __pas_agent_stamp ''
                set -g __pas_agent_watch
                set -e PAS_AGENT_PROMPT
            end
        else if test "$__pas_agent_here" != "$__pas_agent_root"
            set -g __pas_agent_root $__pas_agent_here
            __pas_agent_refresh --notice
        else if __pas_agent_changed
            __pas_agent_refresh
        end
        return 0
    end

    # Runs agent command $argv[1] with the rest as its arguments: through `pas-agent run`
    # inside a session, as itself everywhere else.
    function __pas_agent_wrap
        set -l name $argv[1]
        set -e argv[1]
        if status is-interactive; and test "$PAS_AGENT_WRAP" != 0; and test -z "$__pas_agent_off"; and not set -q PAS_AGENT_RUN_ID
            __pas_agent_find
            if test -n "$__pas_agent_here"
                if test -x "$__pas_agent_bin"
                    command $__pas_agent_bin run $name -- $argv
                    return $status
                end
                __pas_agent_gone
            end
        end
        command $name $argv
    end

    # In fish an alias is a function: `alias claude 'claude --model opus'` runs
    # `command claude --model opus $argv`, which would pass the launcher by, where bash and zsh
    # expand the alias and reach the wrapper. Such an alias is made to call the wrapper with the
    # same words, whether it was defined before the hook or after it (see `alias` below).
    # Succeeds when $argv[1] is an alias of that kind (now calling the wrapper).
    function __pas_agent_unalias
        set -l name $argv[1]
        set -l desc (functions --details --verbose -- $name 2>/dev/null)
        set desc "$desc[5]"
        if string match -q -- '* (through pas-agent)' $desc
            return 0
        end
        # "alias NAME BODY" (fish 3), "alias NAME=BODY" (`alias NAME=BODY` and newer fish).
        set -l body (string replace -r -- '^alias '(string escape --style=regex -- $name)'[ =]' '' $desc)
        or return 1
        set -l words (string split -n ' ' -- $body)
        if test "$words[1]" != "$name"
            return 1
        end
        printf 'function %s --description %s; __pas_agent_wrap %s $argv; end\n' \
            $name (string escape -- "$desc (through pas-agent)") $body | source
        return 0
    end

    # A function the user defined under an agent's name is theirs: leave it alone. An alias of
    # the agent's own name is not left behind (see __pas_agent_unalias).
    function __pas_agent_may_wrap
        contains -- $argv[1] $__pas_agent_names; or set -g -a __pas_agent_names $argv[1]
        if functions -q -- $argv[1]; and not contains -- $argv[1] $__pas_agent_wrapped
            if __pas_agent_unalias $argv[1]
                set -g -a __pas_agent_wrapped $argv[1]
            end
            return 1
        end
        if not contains -- $argv[1] $__pas_agent_wrapped
            set -g -a __pas_agent_wrapped $argv[1]
        end
        return 0
    end

    __PAS_AGENT_WRAPPERS__

    # An alias defined after this point is routed as soon as it is made: fish's own `alias`
    # function is wrapped (once, however often this is loaded). Where `alias` is not a
    # function, each prompt checks the agent names instead (about 2 ms).
    set -g __pas_agent_alias_check ''
    if functions -q __pas_agent_fish_alias
    else if functions -q alias
        functions -c alias __pas_agent_fish_alias
        function alias --wraps __pas_agent_fish_alias --description 'alias, with aliases of agent names sent through pas-agent'
            __pas_agent_fish_alias $argv
            set -l result $status
            if functions -q __pas_agent_unalias
                for name in $__pas_agent_names
                    __pas_agent_unalias $name
                end
            end
            return $result
        end
    else
        set -g __pas_agent_alias_check 1
    end
end
