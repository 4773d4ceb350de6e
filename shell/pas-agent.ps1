# pas-agent shell integration for PowerShell 7 and Windows PowerShell 5.1.
# Load it from $PROFILE with:
#   Invoke-Expression (& pas-agent hook powershell | Out-String)
#
# What it does (docs/hooks.md has the details):
# - keeps $env:PAS_AGENT_PROMPT set to a short summary of the session, asking pas-agent only
#   when the directory, the session file or git's HEAD changed;
# - prints one line with the task and the next action when the shell enters a project with a
#   session ($env:PAS_AGENT_NOTICE = '0' turns it off);
# - inside a session, sends the agent commands (claude, codex, ...) through `pas-agent run`
#   ($env:PAS_AGENT_WRAP = '0' turns it off; `& (Get-Command codex -CommandType Application)`
#   bypasses it).
# It does nothing in -NonInteractive sessions and in shells started by an agent run. It never
# evaluates text read from a session. The prompt keeps $? and $LASTEXITCODE, and calls the
# prompt function that was there before (yours, starship's, ...).

$__pasAgentInteractive = -not ([Environment]::GetCommandLineArgs() | Where-Object { $_ -like '-noni*' })
if ($__pasAgentInteractive -and -not $env:PAS_AGENT_RUN_ID -and -not $env:CLAUDECODE) {

    $global:__PasAgentBin = __PAS_AGENT_BIN__

    # State kept between prompts. A second load keeps it, and forces one refresh.
    if (-not (Test-Path variable:global:__PasAgentRoot)) {
        $global:__PasAgentRoot = ''
        $global:__PasAgentStamp = ''
        $global:__PasAgentWatch = @()
    }
    $global:__PasAgentOff = $false
    $global:__PasAgentDirty = $true

    # The nearest directory at or above the current location that holds
    # .pas-agent/session.json, or '' when there is none (or the location is not a folder).
    function global:__PasAgentFind {
        $location = Get-Location
        if ($location.Provider.Name -ne 'FileSystem') {
            return ''
        }
        $dir = $location.ProviderPath
        while ($dir) {
            if ([System.IO.File]::Exists([System.IO.Path]::Combine($dir, '.pas-agent', 'session.json'))) {
                return $dir
            }
            $dir = [System.IO.Path]::GetDirectoryName($dir)
        }
        return ''
    }

    # Whether a watched file (the session, git's HEAD and its log) is newer than the stamp
    # that pas-agent left at the last refresh. No process is started.
    function global:__PasAgentChanged {
        if ($global:__PasAgentDirty) {
            return $true
        }
        if (-not $global:__PasAgentStamp) {
            return $false
        }
        if (-not [System.IO.File]::Exists($global:__PasAgentStamp)) {
            return $true
        }
        $stampTime = [System.IO.File]::GetLastWriteTimeUtc($global:__PasAgentStamp)
        foreach ($file in $global:__PasAgentWatch) {
            if ([System.IO.File]::Exists($file) -and [System.IO.File]::GetLastWriteTimeUtc($file) -gt $stampTime) {
                return $true
            }
        }
        return $false
    }

    # The binary went away (uninstalled, upgraded to another path): say so once, stop.
    function global:__PasAgentGone {
        $global:__PasAgentOff = $true
        Remove-Item -LiteralPath 'env:PAS_AGENT_PROMPT' -ErrorAction Ignore
        [Console]::Error.WriteLine("pas-agent: $($global:__PasAgentBin) is gone; the shell hooks are off in this shell (load them again once it is back)")
    }

    # Asks pas-agent for the prompt text (line 1), the notice (line 2), its stamp (line 3)
    # and the files to watch (the rest).
    function global:__PasAgentRefresh([string[]] $Extra) {
        if (-not [System.IO.File]::Exists($global:__PasAgentBin)) {
            __PasAgentGone
            return
        }
        $encoding = [Console]::OutputEncoding
        try {
            [Console]::OutputEncoding = [System.Text.Encoding]::UTF8
            $lines = @(& $global:__PasAgentBin prompt --hook $PID @Extra 2>$null)
        } catch {
            $lines = @()
        } finally {
            [Console]::OutputEncoding = $encoding
        }
        $global:__PasAgentDirty = $false
        $global:__PasAgentStamp = ''
        $global:__PasAgentWatch = @()
        if ($lines.Count -ge 3) {
            $global:__PasAgentStamp = [string] $lines[2]
            $global:__PasAgentWatch = @($lines | Select-Object -Skip 3)
        }
        if ($lines.Count -ge 1 -and $lines[0]) {
            $env:PAS_AGENT_PROMPT = [string] $lines[0]
        } else {
            Remove-Item -LiteralPath 'env:PAS_AGENT_PROMPT' -ErrorAction Ignore
        }
        if ($lines.Count -ge 2 -and $lines[1]) {
            [Console]::Error.WriteLine([string] $lines[1])
        }
    }

    # Runs at each prompt, before the previous prompt function.
    function global:__PasAgentUpdate {
        if ($global:__PasAgentOff) {
            return
        }
        $here = __PasAgentFind
        if (-not $here) {
            $global:__PasAgentRoot = ''
            $global:__PasAgentStamp = ''
            $global:__PasAgentWatch = @()
            Remove-Item -LiteralPath 'env:PAS_AGENT_PROMPT' -ErrorAction Ignore
        } elseif ($here -ne $global:__PasAgentRoot) {
            $global:__PasAgentRoot = $here
            __PasAgentRefresh @('--notice')
        } elseif (__PasAgentChanged) {
            __PasAgentRefresh @()
        }
    }

    # Runs agent command $Name with $Arguments: through `pas-agent run` inside a session, as
    # itself everywhere else.
    function global:__PasAgentWrap([string] $Name, [object[]] $Arguments) {
        if ($env:PAS_AGENT_WRAP -ne '0' -and -not $global:__PasAgentOff -and -not $env:PAS_AGENT_RUN_ID -and (__PasAgentFind)) {
            if ([System.IO.File]::Exists($global:__PasAgentBin)) {
                & $global:__PasAgentBin run $Name '--' @Arguments
                return
            }
            __PasAgentGone
        }
        $application = Get-Command -Name $Name -CommandType Application -ErrorAction Ignore | Select-Object -First 1
        if ($application) {
            & $application @Arguments
        } else {
            Write-Error "${Name}: command not found"
        }
    }

    # A function the user defined under an agent's name is theirs: leave it alone.
    function global:__PasAgentMayWrap([string] $Name) {
        $existing = Get-Item -LiteralPath "function:$Name" -ErrorAction Ignore
        return (-not $existing) -or ($existing.Definition -like '*__PasAgentWrap*')
    }

    __PAS_AGENT_WRAPPERS__

    # Wrap the prompt once: keep the one that is there (unless it is already ours).
    $__pasAgentCurrent = Get-Item -LiteralPath 'function:prompt' -ErrorAction Ignore
    if (-not $__pasAgentCurrent -or $__pasAgentCurrent.Definition -notlike '*__PasAgentUpdate*') {
        $global:__PasAgentPreviousPrompt = if ($__pasAgentCurrent) { $__pasAgentCurrent.ScriptBlock } else { { 'PS> ' } }
        function global:prompt {
            # $? and $LASTEXITCODE first: every statement below changes $?.
            $pasAgentOk = $global:?
            # Read this way, a LASTEXITCODE that was never set is no error under StrictMode.
            $pasAgentExitCode = Get-Variable -Name 'LASTEXITCODE' -Scope Global -ValueOnly -ErrorAction Ignore
            try {
                __PasAgentUpdate
            } catch {
            }
            $global:LASTEXITCODE = $pasAgentExitCode
            if (-not $pasAgentOk) {
                Write-Error '' -ErrorAction Ignore
            }
            & $global:__PasAgentPreviousPrompt
            $global:LASTEXITCODE = $pasAgentExitCode
            # The last statement decides $? after the prompt: false again when it was false.
            if (-not $pasAgentOk) {
                Write-Error '' -ErrorAction Ignore
            }
        }
    }
    Remove-Variable -Name '__pasAgentCurrent' -ErrorAction Ignore
}
Remove-Variable -Name '__pasAgentInteractive' -ErrorAction Ignore
