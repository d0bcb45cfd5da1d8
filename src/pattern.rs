//! Name patterns (`*` is the only wildcard) and a set of them compiled for lookup.
//!
//! As in ripgrep's `globset`, each pattern is classified when the set is built
//! (exact, prefix, suffix, everything, general), so that asking which patterns
//! match a name costs a few hash lookups however many patterns there are.

use std::collections::HashMap;

/// One pattern, classified by shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pattern {
    /// No `*`: the name itself.
    Exact(String),
    /// `*` (or `**`...): every name.
    Any,
    /// `abc*`
    Prefix(String),
    /// `*abc`
    Suffix(String),
    /// Anything else: the literal pieces between `*`s, and whether the
    /// pattern is anchored at each end.
    General {
        pieces: Vec<String>,
        anchored_start: bool,
        anchored_end: bool,
    },
}

impl Pattern {
    pub fn new(text: &str) -> Pattern {
        if !text.contains('*') {
            return Pattern::Exact(text.to_string());
        }
        let anchored_start = !text.starts_with('*');
        let anchored_end = !text.ends_with('*');
        let pieces: Vec<String> = text
            .split('*')
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect();
        match (pieces.len(), anchored_start, anchored_end) {
            (0, _, _) => Pattern::Any,
            (1, true, false) => Pattern::Prefix(pieces[0].clone()),
            (1, false, true) => Pattern::Suffix(pieces[0].clone()),
            _ => Pattern::General {
                pieces,
                anchored_start,
                anchored_end,
            },
        }
    }

    pub fn matches(&self, name: &str) -> bool {
        match self {
            Pattern::Exact(e) => e == name,
            Pattern::Any => true,
            Pattern::Prefix(p) => name.starts_with(p.as_str()),
            Pattern::Suffix(s) => name.ends_with(s.as_str()),
            Pattern::General {
                pieces,
                anchored_start,
                anchored_end,
            } => general_match(pieces, *anchored_start, *anchored_end, name),
        }
    }

    pub fn is_exact(&self) -> bool {
        matches!(self, Pattern::Exact(_))
    }
}

/// Greedy piece-by-piece matching: each literal piece is found at its leftmost
/// place after the previous one, which is correct when `*` is the only wildcard.
fn general_match(pieces: &[String], anchored_start: bool, anchored_end: bool, name: &str) -> bool {
    let mut rest = name;
    let last = pieces.len().saturating_sub(1);
    for (i, piece) in pieces.iter().enumerate() {
        if i == 0 && anchored_start {
            match rest.strip_prefix(piece.as_str()) {
                Some(r) => rest = r,
                None => return false,
            }
            if i == last && anchored_end {
                return rest.is_empty();
            }
            continue;
        }
        if i == last && anchored_end {
            return rest.len() >= piece.len() && rest.ends_with(piece.as_str());
        }
        match rest.find(piece.as_str()) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    !anchored_end || rest.is_empty()
}

/// Patterns of one length, keyed by their literal part.
type ByLength<T> = Vec<(usize, HashMap<Box<str>, Vec<T>>)>;

/// Many patterns, each tagged with a value, compiled for "which match this name".
#[derive(Debug, Clone)]
pub struct PatternSet<T> {
    exact: HashMap<Box<str>, Vec<T>>,
    any: Vec<T>,
    /// Prefix patterns grouped by length, so one hash lookup per distinct length.
    prefix: ByLength<T>,
    suffix: ByLength<T>,
    general: Vec<(Pattern, T)>,
    len: usize,
}

impl<T> Default for PatternSet<T> {
    fn default() -> Self {
        PatternSet {
            exact: HashMap::new(),
            any: Vec::new(),
            prefix: Vec::new(),
            suffix: Vec::new(),
            general: Vec::new(),
            len: 0,
        }
    }
}

fn insert_by_len<T>(groups: &mut ByLength<T>, key: &str, value: T) {
    let n = key.len();
    let group = match groups.iter().position(|(l, _)| *l == n) {
        Some(i) => &mut groups[i].1,
        None => {
            groups.push((n, HashMap::new()));
            groups.sort_by_key(|(l, _)| *l);
            let i = groups.iter().position(|(l, _)| *l == n).unwrap_or(0);
            &mut groups[i].1
        }
    };
    group.entry(key.into()).or_default().push(value);
}

impl<T: Copy> PatternSet<T> {
    pub fn insert(&mut self, pattern: &Pattern, value: T) {
        self.len += 1;
        match pattern {
            Pattern::Exact(e) => self.exact.entry(e.as_str().into()).or_default().push(value),
            Pattern::Any => self.any.push(value),
            Pattern::Prefix(p) => insert_by_len(&mut self.prefix, p, value),
            Pattern::Suffix(s) => insert_by_len(&mut self.suffix, s, value),
            Pattern::General { .. } => self.general.push((pattern.clone(), value)),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends the value of every pattern that matches `name` (unordered, may repeat).
    pub fn matches_into(&self, name: &str, out: &mut Vec<T>) {
        if let Some(v) = self.exact.get(name) {
            out.extend_from_slice(v);
        }
        out.extend_from_slice(&self.any);
        for (n, group) in &self.prefix {
            if *n > name.len() {
                break;
            }
            if let Some(head) = name.get(..*n)
                && let Some(v) = group.get(head)
            {
                out.extend_from_slice(v);
            }
        }
        for (n, group) in &self.suffix {
            if *n > name.len() {
                break;
            }
            if let Some(tail) = name.get(name.len() - n..)
                && let Some(v) = group.get(tail)
            {
                out.extend_from_slice(v);
            }
        }
        for (p, v) in &self.general {
            if p.matches(name) {
                out.push(*v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The obvious backtracking matcher, as an oracle.
    fn slow(p: &[char], s: &[char]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some(('*', rest)) => (0..=s.len()).any(|i| slow(rest, &s[i..])),
            Some((c, rest)) => s.first() == Some(c) && slow(rest, &s[1..]),
        }
    }

    #[test]
    fn shapes() {
        assert_eq!(Pattern::new("a"), Pattern::Exact("a".into()));
        assert_eq!(Pattern::new("**"), Pattern::Any);
        assert_eq!(Pattern::new("ab*"), Pattern::Prefix("ab".into()));
        assert_eq!(Pattern::new("*ab"), Pattern::Suffix("ab".into()));
        assert!(matches!(Pattern::new("*a*"), Pattern::General { .. }));
        assert!(Pattern::new("a*b*a").matches("abba"));
        assert!(!Pattern::new("a*b*a").matches("ab"));
        assert!(Pattern::new("a*a").matches("aa"));
        assert!(!Pattern::new("a*a").matches("a"));
        assert!(Pattern::new("a?").matches("a?"));
        assert!(!Pattern::new("a?").matches("ab"));
    }

    #[test]
    fn set_finds_every_kind() {
        let mut set = PatternSet::default();
        for (i, p) in ["read", "*", "re*", "*ad", "r*d", "write"]
            .iter()
            .enumerate()
        {
            set.insert(&Pattern::new(p), i);
        }
        let mut out = Vec::new();
        set.matches_into("read", &mut out);
        out.sort();
        assert_eq!(out, [0, 1, 2, 3, 4]);
    }

    proptest! {
        #[test]
        fn agrees_with_backtracking(p in "[ab*]{0,6}", s in "[ab]{0,8}") {
            let pc: Vec<char> = p.chars().collect();
            let sc: Vec<char> = s.chars().collect();
            prop_assert_eq!(Pattern::new(&p).matches(&s), slow(&pc, &sc));
            let mut set = PatternSet::default();
            set.insert(&Pattern::new(&p), ());
            let mut out = Vec::new();
            set.matches_into(&s, &mut out);
            prop_assert_eq!(!out.is_empty(), slow(&pc, &sc));
        }
    }
}
