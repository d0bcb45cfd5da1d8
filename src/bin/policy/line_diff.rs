//! A unified diff of two texts by lines, for `policy fmt --check`.
//!
//! The lines are compared with `similar`'s Myers diff, which works in space
//! linear in the texts: a table of every line of one text against every line
//! of the other took 3.5 GB for a 30,000-line file. Only the rendering is
//! ours, so the output keeps the shape `fmt --check` always had (hunk ranges
//! as `start,count` even for one line, removed lines red, added ones green).

use std::collections::HashSet;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use similar::{Algorithm, ChangeTag, DiffOp};
use toolpolicy::chars::escape;

/// Lines of context around each change.
const CONTEXT: usize = 3;

/// How long the search for the smallest diff may take. Past it, what is left
/// is shown as removed and added whole: still a correct diff, only a longer
/// one, and only for files of tens of thousands of lines moved around.
const DEADLINE: Duration = Duration::from_secs(2);

/// The lines the two texts keep in common, as `(old, new)` indices, in order.
///
/// A line that only one text has cannot be among them, so such lines are
/// left out before the search (as GNU diff does): reformatting changes most
/// lines of a file, and the search then works on the few that can match
/// instead of taking time in the square of the changes.
fn common(a: &[&str], b: &[&str]) -> Vec<(usize, usize)> {
    let (ia, ka) = shared(a, b);
    let (ib, kb) = shared(b, a);
    let deadline = Instant::now().checked_add(DEADLINE);
    let mut pairs = Vec::new();
    for op in similar::capture_diff_slices_deadline(Algorithm::Myers, &ka, &kb, deadline) {
        if let DiffOp::Equal {
            old_index,
            new_index,
            len,
        } = op
        {
            pairs.extend((0..len).map(|k| (ia[old_index + k], ib[new_index + k])));
        }
    }
    pairs
}

/// The lines of `lines` that `other` has too, with their indices.
fn shared<'a>(lines: &[&'a str], other: &[&str]) -> (Vec<usize>, Vec<&'a str>) {
    let other: HashSet<&str> = other.iter().copied().collect();
    (0..lines.len())
        .filter(|&i| other.contains(lines[i]))
        .map(|i| (i, lines[i]))
        .unzip()
}

/// The diff of `a` and `b` as runs of equal, removed and added lines.
fn ops(a: &[&str], b: &[&str]) -> Vec<DiffOp> {
    let mut out: Vec<DiffOp> = Vec::new();
    let (mut i, mut j) = (0, 0);
    for (pi, pj) in common(a, b).into_iter().chain([(a.len(), b.len())]) {
        if pi > i {
            out.push(DiffOp::Delete {
                old_index: i,
                old_len: pi - i,
                new_index: j,
            });
        }
        if pj > j {
            out.push(DiffOp::Insert {
                old_index: pi,
                new_index: j,
                new_len: pj - j,
            });
        }
        if pi == a.len() {
            break;
        }
        match out.last_mut() {
            Some(DiffOp::Equal { len, .. }) if pi == i && pj == j => *len += 1,
            _ => out.push(DiffOp::Equal {
                old_index: pi,
                new_index: pj,
                len: 1,
            }),
        }
        (i, j) = (pi + 1, pj + 1);
    }
    out
}

/// The lines of `text` as the parser and the diagnostics count them (a lone
/// `\r` ends one too, so hunk ranges name the lines `check` would), each
/// escaped for the terminal with any line break but `\n` shown: a change of
/// line breaks alone shows in the diff.
fn display_lines(text: &str) -> Vec<String> {
    let mut starts = toolpolicy::diag::line_starts(text);
    starts.push(text.len());
    starts
        .windows(2)
        .filter(|w| w[0] < w[1])
        .map(|w| {
            let line = &text[w[0]..w[1]];
            escape(line.strip_suffix('\n').unwrap_or(line)).into_owned()
        })
        .collect()
}

/// `--- name` / `+++ name (formatted)` and hunks with three lines of context;
/// empty when the texts are equal. `color` paints removed lines red and
/// added ones green.
pub fn unified(name: &str, old: &str, new: &str, color: bool) -> String {
    if old == new {
        return String::new();
    }
    let (a, b) = (display_lines(old), display_lines(new));
    let (a, b): (Vec<&str>, Vec<&str>) = (
        a.iter().map(String::as_str).collect(),
        b.iter().map(String::as_str).collect(),
    );
    let ops = ops(&a, &b);
    let paint = |code: &str, sign: char, line: &str| {
        if color {
            format!("\x1b[{code}m{sign}{line}\x1b[0m")
        } else {
            format!("{sign}{line}")
        }
    };
    let mut out = String::new();
    let _ = writeln!(out, "--- {name}");
    let _ = writeln!(out, "+++ {name} (formatted)");
    for hunk in similar::group_diff_ops(ops, CONTEXT) {
        let (Some(first), Some(last)) = (hunk.first(), hunk.last()) else {
            continue;
        };
        let (la, lb) = (first.old_range().start, first.new_range().start);
        let (na, nb) = (last.old_range().end - la, last.new_range().end - lb);
        let _ = writeln!(out, "@@ -{},{na} +{},{nb} @@", la + 1, lb + 1);
        for op in &hunk {
            for change in op.iter_changes(&a, &b) {
                let line = change.value();
                let _ = match change.tag() {
                    ChangeTag::Equal => writeln!(out, " {line}"),
                    ChangeTag::Delete => writeln!(out, "{}", paint("31", '-', line)),
                    ChangeTag::Insert => writeln!(out, "{}", paint("32", '+', line)),
                };
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunks_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
        let new = "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\n";
        assert_eq!(
            unified("p", old, new, false),
            "--- p\n+++ p (formatted)\n@@ -1,5 +1,5 @@\n a\n-b\n+B\n c\n d\n e\n@@ -8,3 +8,4 @@\n h\n i\n j\n+k\n"
        );
        assert_eq!(unified("p", old, old, false), "");
    }

    /// A lone `\r` breaks a line for the diff as it does for the parser, and
    /// shows where it changes.
    #[test]
    fn a_lone_carriage_return_breaks_a_line() {
        assert_eq!(
            unified(
                "p",
                "Defer(x) # c\rNoDefer(y)\n",
                "Defer(x)  # c\nNoDefer(y)\n",
                false
            ),
            "--- p\n+++ p (formatted)\n@@ -1,2 +1,2 @@\n-Defer(x) # c\\u{d}\n+Defer(x)  # c\n NoDefer(y)\n"
        );
    }

    /// Every line changed in a file of 50,000 lines: a table of lines by lines
    /// would need 10 GB; the diff must stay small and list every line once.
    #[test]
    fn large_files_diff_in_linear_space() {
        let n = 50_000;
        let old: String = (0..n).map(|i| format!("nodefer( t{i} )\n")).collect();
        let new: String = (0..n).map(|i| format!("NoDefer(t{i})\n")).collect();
        let diff = unified("p", &old, &new, false);
        let removed = diff.lines().filter(|l| l.starts_with("-n")).count();
        let added = diff.lines().filter(|l| l.starts_with("+N")).count();
        assert_eq!((removed, added), (n, n));
        assert!(diff.contains(&format!("@@ -1,{n} +1,{n} @@")));
    }
}
