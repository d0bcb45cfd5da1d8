//! A unified diff of two texts by lines, for `policy fmt --check`.
//!
//! Policy files are small, so a plain longest-common-subsequence table is fast
//! enough and keeps this dependency-free.

use std::fmt::Write as _;

enum Op<'a> {
    Same(&'a str),
    Del(&'a str),
    Add(&'a str),
}

fn ops<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<Op<'a>> {
    // lcs[i][j]: length of the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push(Op::Same(a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push(Op::Del(a[i]));
            i += 1;
        } else {
            out.push(Op::Add(b[j]));
            j += 1;
        }
    }
    out
}

/// `--- name` / `+++ name (formatted)` and hunks with three lines of context;
/// empty when the texts are equal. `color` paints removed lines red and
/// added ones green.
pub fn unified(name: &str, old: &str, new: &str, color: bool) -> String {
    if old == new {
        return String::new();
    }
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let ops = ops(&a, &b);
    let paint = |code: &str, s: String| {
        if color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s
        }
    };
    let mut out = String::new();
    let _ = writeln!(out, "--- {name}");
    let _ = writeln!(out, "+++ {name} (formatted)");
    const CONTEXT: usize = 3;
    let changed: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, o)| !matches!(o, Op::Same(_)))
        .map(|(k, _)| k)
        .collect();
    let mut k = 0;
    while k < changed.len() {
        // A hunk spans changes closer than twice the context to each other.
        let start = changed[k].saturating_sub(CONTEXT);
        let mut last = changed[k];
        while k + 1 < changed.len() && changed[k + 1] <= last + 2 * CONTEXT {
            k += 1;
            last = changed[k];
        }
        let end = (last + CONTEXT + 1).min(ops.len());
        // Line numbers where the hunk starts, in each text.
        let (mut la, mut lb) = (1, 1);
        for o in &ops[..start] {
            match o {
                Op::Same(_) => (la, lb) = (la + 1, lb + 1),
                Op::Del(_) => la += 1,
                Op::Add(_) => lb += 1,
            }
        }
        let hunk = &ops[start..end];
        let na = hunk.iter().filter(|o| !matches!(o, Op::Add(_))).count();
        let nb = hunk.iter().filter(|o| !matches!(o, Op::Del(_))).count();
        let _ = writeln!(out, "@@ -{la},{na} +{lb},{nb} @@");
        for o in hunk {
            match o {
                Op::Same(l) => {
                    let _ = writeln!(out, " {l}");
                }
                Op::Del(l) => {
                    let _ = writeln!(out, "{}", paint("31", format!("-{l}")));
                }
                Op::Add(l) => {
                    let _ = writeln!(out, "{}", paint("32", format!("+{l}")));
                }
            }
        }
        k += 1;
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
}
