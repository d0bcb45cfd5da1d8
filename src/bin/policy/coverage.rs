//! `policy test --coverage`: the rules of each tested policy that decide no
//! case, in words, and the share that do.

use std::fmt::Write as _;

use toolpolicy::coverage::Coverage;

/// The share of rules that decide a case over every file: a policy tested
/// by two files counts once per file.
pub fn total(files: &[Coverage]) -> f64 {
    let rules: usize = files.iter().map(|c| c.rules).sum();
    let covered: usize = files.iter().map(|c| c.covered).sum();
    if rules == 0 {
        100.0
    } else {
        100.0 * covered as f64 / rules as f64
    }
}

pub fn human(out: &mut String, files: &[Coverage], total: f64, min: Option<f64>) {
    for c in files {
        let _ = writeln!(
            out,
            "\ncoverage of {}: {} of {} rules decide a case ({:.1}%)",
            c.file, c.covered, c.rules, c.percent
        );
        for u in &c.untested {
            let head = format!("  {}:{}: `{}`", u.rule.file, u.rule.line, u.rule.text);
            match (&u.lint, u.whole) {
                (Some(l), _) => {
                    let _ = writeln!(out, "{head} can decide nothing: {} [{}]", l.message, l.code);
                }
                (None, true) => {
                    let _ = writeln!(out, "{head} decides no case: untested");
                }
                (None, false) => {
                    let sels: Vec<String> = u
                        .selectors
                        .iter()
                        .map(|s| format!("`{}` ({}:{})", s.text, s.line, s.column))
                        .collect();
                    let _ = writeln!(
                        out,
                        "{head}: no case is decided through {}",
                        sels.join(", ")
                    );
                }
            }
        }
    }
    let _ = write!(out, "\ncoverage: {total:.1}% of rules decide a case");
    match min {
        Some(p) if total < p => {
            let _ = writeln!(out, ", under the minimum of {p}%");
        }
        Some(p) => {
            let _ = writeln!(out, " (minimum {p}%)");
        }
        None => out.push('\n'),
    }
}
