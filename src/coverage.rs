//! Rule coverage of a policy's test cases: which rule statements (and which
//! selectors in them) decided no case. A rule the linter finds shadowed or
//! redundant (PL102, PL103) can decide nothing whatever the cases, and is
//! named as such rather than as merely untested.

use serde::Serialize;

use crate::decision::{Context, Decision, ItemRef, Origin};
use crate::diag::Code;
use crate::explain::{Located, RuleRef, matching_selector, rule_ref};
use crate::policy::{Policy, RuleKind};
use crate::reference::applies;

/// What the cases of a run exercised, gathered one case at a time.
#[derive(Debug, Clone)]
pub struct Tally {
    /// Per rule: whether it decided a case.
    decided: Vec<bool>,
    /// Per rule, per selector: whether it was the selector that matched.
    selectors: Vec<Vec<bool>>,
}

/// A rule that decided no case, or a selector of a rule that did.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Untested {
    pub rule: RuleRef,
    /// Whether the whole statement decided nothing (else only `selectors` did).
    pub whole: bool,
    /// The selectors that matched no case's item, as written and where.
    pub selectors: Vec<Located>,
    /// When the linter says it can never decide: its code and message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lint: Option<LintNote>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct LintNote {
    pub code: &'static str,
    pub message: String,
}

/// A policy's coverage: rule statements that decided a case, of all.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Coverage {
    pub file: String,
    pub rules: usize,
    pub covered: usize,
    /// `covered / rules` in percent; 100 for a policy without rules.
    pub percent: f64,
    pub untested: Vec<Untested>,
}

impl Tally {
    pub fn new(policy: &Policy) -> Tally {
        Tally {
            decided: vec![false; policy.rules.len()],
            selectors: policy
                .rules
                .iter()
                .map(|r| vec![false; r.selectors.len()])
                .collect(),
        }
    }

    /// Records one case: the rule that decided it and, for a grant, every
    /// grant that applies in the context and let the item through.
    pub fn record(&mut self, policy: &Policy, ctx: &Context, item: &ItemRef<'_>, d: &Decision) {
        if let Some(Origin::Rule(i)) = d.origin {
            self.mark(policy, i as usize, item);
        }
        for (i, r) in policy.rules.iter().enumerate() {
            if r.kind == RuleKind::Grant
                && applies(&r.scope, r.when.as_ref(), ctx)
                && matching_selector(r, item).is_some()
            {
                self.mark(policy, i, item);
            }
        }
    }

    fn mark(&mut self, policy: &Policy, i: usize, item: &ItemRef<'_>) {
        let Some(rule) = policy.rules.get(i) else {
            return;
        };
        self.decided[i] = true;
        if let Some(sel) = matching_selector(rule, item)
            && let Some(k) = rule.selectors.iter().position(|s| std::ptr::eq(s, sel))
        {
            self.selectors[i][k] = true;
        }
    }

    /// The coverage, with the lint findings of the policy (`crate::lint`) to
    /// name shadowed and redundant rules.
    pub fn finish(&self, policy: &Policy, lints: &[crate::diag::Diagnostic]) -> Coverage {
        let mut untested = Vec::new();
        for (i, r) in policy.rules.iter().enumerate() {
            let whole = !self.decided[i];
            let selectors: Vec<Located> = r
                .selectors
                .iter()
                .zip(&self.selectors[i])
                .filter(|(_, hit)| !**hit)
                .map(|(s, _)| {
                    let (line, column) = policy.source.line_col(s.span.start);
                    Located {
                        text: policy.source.slice(s.span).to_string(),
                        line,
                        column,
                    }
                })
                .collect();
            // A rule with one selector that decided is fully covered.
            if !whole && selectors.is_empty() {
                continue;
            }
            let lint = lints
                .iter()
                .find(|d| {
                    matches!(d.code, Code::Shadowed | Code::Redundant)
                        && d.span.start >= r.span.start
                        && d.span.start < r.span.end.max(r.span.start + 1)
                })
                .map(|d| LintNote {
                    code: d.code.as_str(),
                    message: d.message.to_string(),
                });
            untested.push(Untested {
                rule: rule_ref(policy, r.span),
                whole,
                selectors,
                lint,
            });
        }
        let rules = policy.rules.len();
        let covered = self.decided.iter().filter(|d| **d).count();
        Coverage {
            file: policy.source.name.clone(),
            rules,
            covered,
            percent: if rules == 0 {
                100.0
            } else {
                100.0 * covered as f64 / rules as f64
            },
            untested,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::Table;

    #[test]
    fn rules_that_decide_no_case_are_named_and_shadowed_ones_said() {
        let p = Policy::parse(
            "t.policy",
            "Defer(*)\nNoDefer(Read, Grep)\nHide(Bash)\nHide(Bash)\nmode m {\n}\n",
        )
        .unwrap();
        let t = Table::compile(&p);
        let ctx = Context::mode("m");
        let r = t.resolve(&ctx).unwrap();
        let mut tally = Tally::new(&p);
        for name in ["Read", "Web", "Bash"] {
            let item = ItemRef::tool(name);
            tally.record(&p, &ctx, &item, &t.decide(&r, &item));
        }
        let lints = crate::lint::lint(&p, None, None);
        let c = tally.finish(&p, &lints);
        assert_eq!((c.rules, c.covered), (4, 3));
        assert_eq!(c.percent, 75.0);
        let got: Vec<(usize, bool, Vec<&str>)> = c
            .untested
            .iter()
            .map(|u| {
                (
                    u.rule.line,
                    u.whole,
                    u.selectors.iter().map(|s| s.text.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(got, [(2, false, vec!["Grep"]), (4, true, vec!["Bash"])]);
        assert_eq!(c.untested[1].lint.as_ref().map(|l| l.code), Some("PL103"));
    }
}
