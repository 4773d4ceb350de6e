//! `pas-agent remove LIST N...`: delete items by number.

use chrono::Utc;

use super::project;
use crate::cli::RemoveArgs;
use crate::error::Result;
use crate::model::ListKind;
use crate::session::ops;
use crate::term::clean_line;

pub fn run(args: RemoveArgs) -> Result<i32> {
    let project = project()?;
    let kind = ListKind::from(args.list);
    let now = Utc::now();
    let removed = project.modify(|s| {
        let removed = ops::remove_items(&mut s.task, kind, &args.numbers)?;
        s.updated_at = now;
        Ok(removed)
    })?;
    let mut out = String::new();
    for item in removed {
        out.push_str(&format!(
            "Removed from {}: {}\n",
            kind.name(),
            clean_line(&item)
        ));
    }
    crate::term::print(&out)?;
    Ok(0)
}
