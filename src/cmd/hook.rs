//! `pas-agent hook <shell>`: prints the shell integration script (docs/hooks.md), rendered from
//! `shell/` with this binary's path and the agent table's commands.

use crate::cli::HookArgs;
use crate::error::Result;
use crate::hook;

pub fn run(args: HookArgs) -> Result<i32> {
    let bin = hook::binary_path()?;
    let script = hook::render(args.shell.into(), &bin, &crate::agents::executables())?;
    crate::term::print_data(&script)?;
    Ok(0)
}
