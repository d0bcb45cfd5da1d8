//! Questions about what patterns and selectors can match, answered without a
//! registry: does one pattern match everything another does, can two ever match
//! the same name.
//!
//! Both are exact for this language, where `*` is the only wildcard. Inclusion:
//! `L(p) ⊆ L(q)` exactly when `q` matches the text of `p` with each `*` of `p`
//! taken as a symbol only a `*` of `q` can absorb (replace `p`'s stars by runs of
//! a character `q` does not contain: `q` must absorb each run in one star).
//! Overlap: a walk over both patterns at once, where a star of either may absorb
//! a character of the other.

use crate::ast::{Selector, SelectorKind};
use crate::decision::ItemKind;

/// Whether every name `inner` matches is also matched by `outer`.
pub fn subsumes(outer: &str, inner: &str) -> bool {
    // `None` is a star of `inner`, which only a star of `outer` can absorb.
    let inner: Vec<Option<char>> = inner.chars().map(|c| (c != '*').then_some(c)).collect();
    let mut row = vec![false; inner.len() + 1];
    row[0] = true;
    for oc in outer.chars() {
        let mut next = vec![false; inner.len() + 1];
        if oc == '*' {
            let mut any = false;
            for j in 0..=inner.len() {
                any |= row[j];
                next[j] = any;
            }
        } else {
            for j in 0..inner.len() {
                next[j + 1] = row[j] && inner[j] == Some(oc);
            }
        }
        row = next;
    }
    row[inner.len()]
}

/// Whether some name matches both patterns.
pub fn overlap(a: &str, b: &str) -> bool {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // reach[i][j]: the first i symbols of `a` and the first j of `b` can produce
    // the same text.
    let mut reach = vec![vec![false; b.len() + 1]; a.len() + 1];
    reach[0][0] = true;
    for i in 0..=a.len() {
        for j in 0..=b.len() {
            if !reach[i][j] {
                continue;
            }
            let sa = a.get(i).copied();
            let sb = b.get(j).copied();
            // A star may produce nothing, or absorb the other side's next symbol.
            if sa == Some('*') {
                reach[i + 1][j] = true;
                if j < b.len() {
                    reach[i][j + 1] = true;
                }
            }
            if sb == Some('*') {
                reach[i][j + 1] = true;
                if i < a.len() {
                    reach[i + 1][j] = true;
                }
            }
            if let (Some(x), Some(y)) = (sa, sb)
                && x != '*'
                && x == y
            {
                reach[i + 1][j + 1] = true;
            }
        }
    }
    reach[a.len()][b.len()]
}

/// Whether a selector can pick items of this kind at all.
pub fn picks(sel: &Selector, kind: ItemKind) -> bool {
    matches!(
        (sel.kind, kind),
        (SelectorKind::Source, _)
            | (SelectorKind::Tool | SelectorKind::Hint, ItemKind::Tool)
            | (SelectorKind::Skill, ItemKind::Skill)
    )
}

fn is_everything(pattern: &str) -> bool {
    pattern.chars().all(|c| c == '*') && !pattern.is_empty()
}

/// Whether `outer` matches every item of `kind` that `inner` matches, whatever
/// the item's name and source. A name selector never covers a `source:` one
/// unless it matches every name, and a `source:` selector never covers a name
/// one (an item may have no source).
pub fn covers(outer: &Selector, inner: &Selector, kind: ItemKind) -> bool {
    if !picks(inner, kind) {
        return true;
    }
    if !picks(outer, kind) {
        return false;
    }
    match (outer.kind, inner.kind) {
        // A hint covers only itself: a read-only tool is idempotent, but
        // the lints need not know it to stay right (they err towards silence).
        (SelectorKind::Hint, SelectorKind::Hint) => outer.pattern == inner.pattern,
        (SelectorKind::Hint, _) => false,
        (_, SelectorKind::Hint) => {
            outer.kind == SelectorKind::Tool && is_everything(&outer.pattern)
        }
        (SelectorKind::Source, SelectorKind::Source) => subsumes(&outer.pattern, &inner.pattern),
        (SelectorKind::Source, _) => false,
        (_, SelectorKind::Source) => is_everything(&outer.pattern),
        _ => subsumes(&outer.pattern, &inner.pattern),
    }
}

/// Whether no item of `kind` can match both selectors.
pub fn disjoint(a: &Selector, b: &Selector, kind: ItemKind) -> bool {
    if !picks(a, kind) || !picks(b, kind) {
        return true;
    }
    match (a.kind, b.kind) {
        // Only a read-only tool is never destructive; other hints go together.
        (SelectorKind::Hint, SelectorKind::Hint) => {
            let pair = [a.pattern.as_str(), b.pattern.as_str()];
            pair == ["read_only", "destructive"] || pair == ["destructive", "read_only"]
        }
        (SelectorKind::Hint, _) | (_, SelectorKind::Hint) => false,
        // A name and a source constrain different fields: some item meets both.
        (SelectorKind::Source, SelectorKind::Source) => !overlap(&a.pattern, &b.pattern),
        (SelectorKind::Source, _) | (_, SelectorKind::Source) => false,
        _ => !overlap(&a.pattern, &b.pattern),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::glob;
    use proptest::prelude::*;

    fn sel(text: &str) -> Selector {
        let (kind, pattern) = crate::decision::split_selector(text);
        Selector {
            kind,
            pattern: pattern.to_string(),
            quoted: false,
            span: Default::default(),
        }
    }

    #[test]
    fn inclusion() {
        assert!(subsumes("*", "bash"));
        assert!(subsumes("*", "a*b"));
        assert!(subsumes("a*", "ab*"));
        assert!(subsumes("*a*", "a*"));
        assert!(subsumes("a*b*", "ab*"));
        assert!(!subsumes("a*", "*"));
        assert!(!subsumes("ab*", "a*"));
        assert!(!subsumes("bash", "bash*"));
        assert!(subsumes("bash", "bash"));
        // Over a two-letter alphabet every `b…a` contains `ba`; over names it
        // need not (`bca`).
        assert!(!subsumes("*ba*", "b*a"));
    }

    #[test]
    fn overlaps() {
        assert!(overlap("a*", "*b"));
        assert!(!overlap("a*", "b*"));
        assert!(!overlap("*a", "*b"));
        assert!(overlap("a*c", "ab*"));
        assert!(!overlap("abc", "ab"));
        assert!(overlap("*", ""));
    }

    #[test]
    fn selectors_of_different_kinds() {
        let k = ItemKind::Tool;
        assert!(covers(&sel("*"), &sel("source:mcp:*"), k));
        assert!(!covers(&sel("a*"), &sel("source:mcp:*"), k));
        assert!(!covers(&sel("source:*"), &sel("bash"), k));
        assert!(covers(&sel("source:mcp:*"), &sel("source:mcp:git"), k));
        assert!(!covers(&sel("skill:*"), &sel("bash"), k));
        assert!(disjoint(&sel("skill:a"), &sel("a"), k));
        assert!(!disjoint(&sel("source:x"), &sel("a"), k));
        assert!(disjoint(&sel("a*"), &sel("b*"), k));
    }

    /// Every string over `a`, `b`, `c` up to length `n`: enough to witness any
    /// difference between patterns over `a`, `b`, `*` of length 4. The `c`,
    /// which no pattern contains, stands for every other character: over `a`
    /// and `b` alone `b*a` would seem to be inside `*ba*`.
    fn words(n: usize) -> Vec<String> {
        let mut out = vec![String::new()];
        let mut last = vec![String::new()];
        for _ in 0..n {
            let next: Vec<String> = last
                .iter()
                .flat_map(|w| [format!("{w}a"), format!("{w}b"), format!("{w}c")])
                .collect();
            out.extend(next.iter().cloned());
            last = next;
        }
        out
    }

    proptest! {
        #[test]
        fn agree_with_enumeration(p in "[ab*]{0,4}", q in "[ab*]{0,4}") {
            let ws = words(8);
            let included = ws.iter().all(|w| !glob(&p, w) || glob(&q, w));
            prop_assert_eq!(subsumes(&q, &p), included, "{} ⊆ {}", p, q);
            let meets = ws.iter().any(|w| glob(&p, w) && glob(&q, w));
            prop_assert_eq!(overlap(&p, &q), meets, "{} ∩ {}", p, q);
        }
    }
}
