//! Learned terms: matched as phrases, never word by word, and never for a
//! tool the index leaves out.

use crate::registry::Registry;
use crate::search::SearchIndex;
use crate::search::test_support::{activated, assert_explanations_add_up, registry};
use crate::terms::TermsFile;

fn terms(text: &str) -> TermsFile {
    TermsFile::parse(text).unwrap()
}

fn tools() -> Registry {
    registry(&[
        ("svc__notes", "Store a short text note"),
        ("svc__weather", "Current weather for a city"),
        ("svc__alarm", "Schedule a reminder at a time"),
        ("fs__list_directory", "List the entries of a directory"),
    ])
}

const TERMS: &str = r#"
[svc__notes]
terms = ["jot memos down quickly", "记一下备忘"]
[fs__list_directory]
terms = ["what is in this folder"]
"#;

#[test]
fn a_term_finds_its_tool_by_the_request_that_taught_it_and_its_paraphrases() {
    let reg = tools();
    let plain = SearchIndex::new(&reg);
    let learned = plain.with_terms(&terms(TERMS));
    assert_eq!(learned.learned_terms(), 3);
    for q in [
        "jot memos down quickly",
        "jot down a memo",
        "quickly jot memos",
    ] {
        assert_eq!(activated(&reg, &plain, q), Vec::<String>::new(), "{q}");
        assert_eq!(activated(&reg, &learned, q), ["svc__notes"], "{q}");
    }
    for q in ["记一下备忘", "帮我记一下备忘"] {
        assert_eq!(activated(&reg, &learned, q), ["svc__notes"], "{q}");
    }
    let got = activated(&reg, &learned, "what is in this folder?");
    assert_eq!(got, ["fs__list_directory"]);
    let fit = learned.fit("jot down a memo", 0).unwrap();
    let term = fit.term.as_ref().expect("the term is named");
    assert_eq!(term.term, "jot memos down quickly");
    assert!(term.cover >= super::learned::TERM_COVER && term.cover < 1.0);
    assert!(
        fit.reason()
            .contains("learned term `jot memos down quickly`")
    );
}

#[test]
fn a_term_counts_as_a_phrase_never_word_by_word() {
    let reg = tools();
    let plain = SearchIndex::new(&reg);
    let learned = plain.with_terms(&terms(TERMS));
    // One word of four is no fit: it ranks the tool a little higher, and
    // activates nothing the search without terms would not.
    for q in [
        "quickly",
        "memos about the weather",
        "what time is it in this city",
    ] {
        assert_eq!(
            activated(&reg, &learned, q),
            activated(&reg, &plain, q),
            "{q}"
        );
        for tool in 0..reg.tools().len() {
            let (a, b) = (
                learned.explain(q, tool).unwrap(),
                plain.explain(q, tool).unwrap(),
            );
            assert!(a.score >= b.score - 1e-4, "{q}: {a:?} {b:?}");
            assert!(
                a.score - b.score < super::learned::TERM_WEIGHT,
                "{q}: {a:?} {b:?}"
            );
            assert_eq!(a.fit.fits, b.fit.fits, "{q}: {a:?} {b:?}");
            assert!(a.fit.term.is_none(), "{q}: {a:?}");
        }
    }
}

#[test]
fn a_tool_takes_its_best_term_not_the_sum_of_them() {
    let reg = tools();
    let one = SearchIndex::new(&reg)
        .with_terms(&terms("[svc__alarm]\nterms = [\"wake me up at six\"]\n"));
    let many = SearchIndex::new(&reg).with_terms(&terms(
        "[svc__alarm]\nterms = [\"wake me up at six\", \"wake me up\", \"wake up at six\", \"up at six\"]\n",
    ));
    let q = "wake me up at six";
    let (a, b) = (one.explain(q, 2).unwrap(), many.explain(q, 2).unwrap());
    assert!(a.fit.term.is_some());
    assert!((a.score - b.score).abs() < 1e-4, "{a:?} {b:?}");
}

#[test]
fn the_terms_of_a_tool_left_out_are_never_searched() {
    let reg = tools();
    let learned = SearchIndex::new(&reg).with_terms(&terms(TERMS));
    let hidden = learned.without(&[0]);
    assert_eq!(hidden.learned_terms(), 1);
    assert_eq!(
        activated(&reg, &hidden, "jot memos down quickly"),
        Vec::<String>::new()
    );
    assert!(hidden.explain("jot memos down quickly", 0).is_none());
    // Words only its terms have are no words of the index at all.
    assert!(learned.term("memo").is_some());
    assert!(hidden.term("memo").is_none());
    assert!(hidden.term("folder").is_some());
    // Nor does anything of it move another tool's ranking.
    let other = SearchIndex::new(&reg)
        .with_terms(&terms(
            "[fs__list_directory]\nterms = [\"what is in this folder\"]\n",
        ))
        .without(&[0]);
    for q in [
        "jot memos down quickly",
        "what is in this folder",
        "记一下备忘",
    ] {
        assert_eq!(hidden.rank(q, |_| true), other.rank(q, |_| true), "{q}");
    }
}

#[test]
fn terms_of_tools_the_registry_lacks_are_left_out() {
    let reg = tools();
    let learned = SearchIndex::new(&reg).with_terms(&terms(
        "[gone__tool]\nterms = [\"jot memos down quickly\"]\n",
    ));
    assert_eq!(learned.learned_terms(), 0);
    assert_eq!(
        activated(&reg, &learned, "jot memos down quickly"),
        Vec::<String>::new()
    );
}

#[test]
fn an_explanation_with_a_term_adds_up_and_agrees_with_the_ranking() {
    let reg = tools();
    let learned = SearchIndex::new(&reg).with_terms(&terms(TERMS));
    for q in [
        "jot down a memo about the weather",
        "帮我记一下备忘",
        "list what is in this folder",
    ] {
        assert_explanations_add_up(&reg, &learned, q);
    }
    let e = learned.explain("jot down a memo", 0).unwrap();
    assert!(
        e.bonuses
            .iter()
            .any(|b| b.what.starts_with("learned term `jot memos down quickly`")),
        "{e:?}"
    );
}

#[test]
fn the_same_terms_give_the_same_answers() {
    let reg = tools();
    let a = SearchIndex::new(&reg).with_terms(&terms(TERMS));
    let b = SearchIndex::new_with_terms(&reg, Some(&terms(TERMS)));
    for q in [
        "jot down a memo",
        "记一下备忘",
        "what is in this folder",
        "weather",
    ] {
        let first = a.rank_fitting(q, |_| true, 4, |_| false);
        assert_eq!(first, b.rank_fitting(q, |_| true, 4, |_| false), "{q}");
        assert_eq!(first, a.rank_fitting(q, |_| true, 4, |_| false), "{q}");
    }
    // Without terms, the index is the registry's alone again.
    let plain = a.without_terms();
    assert_eq!(plain.learned_terms(), 0);
    assert_eq!(
        activated(&reg, &plain, "jot memos down quickly"),
        Vec::<String>::new()
    );
}

#[test]
fn a_word_of_a_term_ranks_its_tool_unless_many_terms_have_it() {
    let reg = tools();
    let plain = SearchIndex::new(&reg);
    // `memos` is one term's: a query with it alone ranks svc__notes a
    // little higher, and still makes no fit.
    let learned = plain.with_terms(&terms(TERMS));
    let q = "memos please";
    let (a, b) = (learned.explain(q, 0).unwrap(), plain.explain(q, 0).unwrap());
    assert!(a.score > b.score, "{a:?} {b:?}");
    assert_eq!(a.fit.fits, b.fit.fits);
    // Twelve terms of every tool that all say `memos`: the word is common,
    // and a query with only it ranks nothing higher.
    let mut text = String::new();
    for (i, t) in reg.tools().iter().enumerate() {
        let list: Vec<String> = (0..12)
            .map(|k| format!("\"memos of kind{i}x{k} and more words\""))
            .collect();
        text += &format!("[\"{}\"]\nterms = [{}]\n", t.name, list.join(", "));
    }
    let common = plain.with_terms(&terms(&text));
    for tool in 0..reg.tools().len() {
        let (a, b) = (
            common.explain(q, tool).unwrap(),
            plain.explain(q, tool).unwrap(),
        );
        assert!((a.score - b.score).abs() < 1e-4, "{a:?} {b:?}");
    }
}

#[test]
fn the_same_terms_and_query_give_the_same_ranking() {
    let reg = tools();
    let a = SearchIndex::new(&reg).with_terms(&terms(TERMS));
    let b = SearchIndex::new_with_terms(&reg, Some(&terms(TERMS)));
    for q in [
        "jot memos",
        "what is in this folder",
        "memos please",
        "记一下",
    ] {
        let first = a.rank_fitting(q, |_| true, 4, |_| false);
        for index in [&a, &b, &a] {
            let again = index.rank_fitting(q, |_| true, 4, |_| false);
            let key = |r: &[crate::search::Ranked]| -> Vec<(usize, bool)> {
                r.iter().map(|x| (x.tool, x.activate)).collect()
            };
            assert_eq!(key(&first), key(&again), "{q}");
        }
    }
}
