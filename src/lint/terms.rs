//! PL125: learned terms for a tool the registry lacks.
//!
//! With a registry and a policy whose terms file was read, every tool the
//! file has terms for and the registry has no tool of that name is one
//! warning at the `terms` setting, with the closest registry name where one
//! is close. Such terms are never searched: the tool was renamed or its
//! server removed, and the file should follow.

use crate::diag::{Code, Diagnostic, did_you_mean};

use super::world::World;

pub(super) fn check(w: &World<'_>, out: &mut Vec<Diagnostic>) {
    let (Some(registry), Some(setting)) = (w.registry, &w.policy.terms) else {
        return;
    };
    let Some(file) = &setting.file else {
        return;
    };
    let path = crate::chars::escape(&setting.path);
    let names = || registry.tools().iter().map(|t| t.name.as_str());
    for (tool, terms) in file.tools() {
        if registry.get(tool).is_some() {
            continue;
        }
        let shown = crate::chars::escape_name(tool);
        let count = terms.len();
        let help = did_you_mean(tool, names()).unwrap_or_else(|| {
            "remove its table, or run `policy learn` again on logs of the current tools".to_string()
        });
        out.push(
            Diagnostic::new(
                Code::TermsForUnknownTool,
                setting.value_span,
                format!(
                    "the terms file `{path}` has {count} {} for `{shown}`, which the registry lacks",
                    if count == 1 { "term" } else { "terms" }
                ),
            )
            .with_help(help),
        );
    }
}
