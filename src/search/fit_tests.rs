//! Fitting: which ranked tools a search activates.
use crate::search::SearchIndex;
use crate::search::test_support::{activated, registry};

#[test]
fn a_match_on_light_words_only_activates_nothing() {
    let reg = registry(&[
        ("toggle_logging", "Turn logging off or on"),
        ("close_page", "Close the current page"),
        ("next_issue", "Show the next issue in a large project"),
    ]);
    let idx = SearchIndex::new(&reg);
    let q = "turn off the living room lights";
    assert!(
        !idx.rank(q, |_| true).is_empty(),
        "the ranking finds loose matches"
    );
    assert_eq!(activated(&reg, &idx, q), Vec::<String>::new());
    let fit = idx.fit(q, 0).unwrap();
    assert!(!fit.fits);
    assert!(fit.reason().starts_with("falls short"), "{}", fit.reason());
    assert!(fit.units.iter().any(|u| u.word == "turn" && u.light));
    // A word the tools have, said directly, fits.
    assert_eq!(
        activated(&reg, &idx, "turn logging off"),
        ["toggle_logging"]
    );
}

#[test]
fn a_search_does_not_pad_with_weak_matches() {
    let reg = registry(&[
        ("glob", "Find files by glob pattern"),
        ("grep", "Search file contents with a regular expression"),
        ("read", "Read a file"),
        ("write", "Write a file"),
    ]);
    let idx = SearchIndex::new(&reg);
    let ranked = idx.rank("find files by glob pattern", |_| true);
    assert!(ranked.len() >= 3, "{ranked:?}");
    assert_eq!(
        activated(&reg, &idx, "find files by glob pattern"),
        ["glob"]
    );
    // Two tools that match as well as each other are both activated.
    assert_eq!(
        activated(&reg, &idx, "read or write a file"),
        ["read", "write"]
    );
}

#[test]
fn names_in_the_query_are_never_held_back() {
    let reg = registry(&[
        ("read_file", "Something else entirely"),
        ("list_files", "List the files of a folder"),
    ]);
    let idx = SearchIndex::new(&reg);
    assert_eq!(activated(&reg, &idx, "read_file"), ["read_file"]);
    let got = activated(&reg, &idx, "the living room read_file");
    assert!(got.contains(&"read_file".to_string()), "{got:?}");
}

#[test]
fn a_request_mostly_about_what_no_tool_has_activates_nothing() {
    let reg = registry(&[
        ("list_cards", "List the saved cards of a dashboard"),
        ("delete_card", "Delete a card from a dashboard"),
        ("list_users", "List the users of the customer account"),
    ]);
    let idx = SearchIndex::new(&reg);
    // `card` is a word the tools have, directly; `charge`, `credit` and
    // `dollars` no tool has at all.
    let q = "charge the credit card 49 dollars";
    assert!(!idx.rank(q, |_| true).is_empty());
    assert_eq!(activated(&reg, &idx, q), Vec::<String>::new());
    let fit = idx.fit(q, 0).unwrap();
    assert!(fit.mostly_unknown && !fit.fits, "{fit:?}");
    let reason = fit.reason();
    assert!(reason.contains("no tool has"), "{reason}");
    assert!(reason.contains("`charg`"), "{reason}");
    // The same one direct match, where the other words are the tools'
    // too, still fits.
    assert_eq!(
        activated(&reg, &idx, "delete the card from my dashboard"),
        ["delete_card"]
    );
    // And so does a tool matching two of the words directly.
    let q = "list the customer cards and their dollars";
    assert!(activated(&reg, &idx, q).contains(&"list_cards".to_string()));
}

#[test]
fn words_known_only_loosely_count_as_little_as_their_evidence() {
    let reg = registry(&[
        ("publish_package", "Publish a package to the registry"),
        ("list_team_members", "List the members of a team"),
        ("list_dashboards", "List the dashboards"),
    ]);
    let idx = SearchIndex::new(&reg);
    // `issue` and `squad` reach the tools only through WordNet
    // (`publish`, `team`), `refund` not at all: of four words the
    // registry knows one for sure.
    let q = "issue a refund to the squad on the dashboard";
    assert!(!idx.rank(q, |_| true).is_empty());
    assert_eq!(activated(&reg, &idx, q), Vec::<String>::new());
    let fit = idx.fit(q, 2).unwrap();
    assert!(fit.mostly_unknown && !fit.fits, "{fit:?}");
    let squad = fit.units.iter().find(|u| u.word == "squad").unwrap();
    assert!(squad.known > 0.0 && squad.known < 0.5, "{squad:?}");
    assert!(fit.reason().contains("`squad`"), "{}", fit.reason());
    // Said with the tools' own words, a request fits.
    let got = activated(&reg, &idx, "list the dashboards of the team");
    assert!(got.contains(&"list_dashboards".to_string()), "{got:?}");
}

#[test]
fn a_chinese_character_left_alone_weighs_half_a_word() {
    let reg = registry(&[
        ("get_weather", "查询城市的天气预报"),
        ("read_file", "读取文件内容"),
    ]);
    let idx = SearchIndex::new(&reg);
    // `杭州` is a name the dictionary lacks: two characters no tool has,
    // which together weigh as much as `天气`, which the tool has.
    let q = "杭州天气";
    let fit = idx.fit(q, 0).unwrap();
    let chars: Vec<&str> = fit
        .units
        .iter()
        .filter(|u| u.known == 0.0)
        .map(|u| u.word.as_str())
        .collect();
    assert_eq!(chars, ["杭", "州"], "{fit:?}");
    assert!(!fit.mostly_unknown, "{fit:?}");
    assert_eq!(activated(&reg, &idx, q), ["get_weather"]);
    // A request whose one word the tools have is among more words no
    // tool has still activates nothing.
    assert_eq!(
        activated(&reg, &idx, "帮我预订杭州西湖边的酒店和机票"),
        Vec::<String>::new()
    );
}

#[test]
fn characters_left_alone_side_by_side_are_read_as_one_word() {
    let reg = registry(&[
        ("get_weather", "查询城市的天气预报"),
        ("read_file", "读取文件内容"),
    ]);
    let idx = SearchIndex::new(&reg);
    // `带伞` (bring an umbrella) and `杭州` are not in the dictionary:
    // each is two characters left alone, side by side, which read as
    // one word the dictionary lacks, half a word each; `天气` the tool
    // has. Counted a character at a time, the request would be two
    // thirds about what no tool has.
    let q = "明天要带伞吗，杭州天气";
    let fit = idx.fit(q, 0).unwrap();
    let alone: Vec<&str> = fit
        .units
        .iter()
        .filter(|u| u.known == 0.0)
        .map(|u| u.word.as_str())
        .collect();
    assert_eq!(alone, ["带", "伞", "杭", "州"], "{fit:?}");
    assert!(!fit.mostly_unknown, "{fit:?}");
    assert_eq!(activated(&reg, &idx, q), ["get_weather"]);
    // A longer run is more words, a pair of characters each: six
    // characters no tool has weigh more than the one word it has.
    let q = "杭州带伞穿靴天气";
    let fit = idx.fit(q, 0).unwrap();
    assert!(fit.mostly_unknown, "{fit:?}");
    assert_eq!(activated(&reg, &idx, q), Vec::<String>::new());
}

#[test]
fn a_weaker_match_on_no_word_the_best_lacks_is_not_loaded() {
    let reg = registry(&[
        ("open_issue", "Open an issue"),
        (
            "tracker_overview",
            "Shows an overview of the tracker, where one can open an issue, read the \
             long guide about the workflow, its states and labels, and much more",
        ),
        ("create_pull_request", "Create a pull request"),
    ]);
    let idx = SearchIndex::new(&reg);
    // The overview covers `open` and `issue` as fully as the best match
    // does (so it is about as good a match by cover), but scores well
    // under it, and says nothing the best does not.
    let q = "open an issue";
    let ranked = idx.rank_fitting(q, |_| true, 4, |_| false);
    assert_eq!(ranked[1].tool, 1, "{ranked:?}");
    let (best, second) = (idx.explain(q, 0).unwrap(), idx.explain(q, 1).unwrap());
    assert!(
        second.fit.fits && second.fit.cover >= best.fit.cover,
        "{second:?}"
    );
    assert!(second.score < super::CLOSE_SCORE * best.score);
    assert_eq!(activated(&reg, &idx, q), ["open_issue"]);
    // A tool that says directly what the best does not is still loaded.
    let got = activated(&reg, &idx, "open an issue or create a pull request");
    assert!(got.contains(&"create_pull_request".to_string()), "{got:?}");
}

#[test]
fn a_match_on_only_some_of_the_best_matchs_words_is_not_loaded() {
    let reg = registry(&[
        ("install_helm_chart", "Install a Helm chart"),
        ("upgrade_helm_chart", "Upgrade a Helm chart"),
        ("install_package", "Install a package"),
        ("install_plugin", "Install a plugin"),
    ]);
    let idx = SearchIndex::new(&reg);
    // `upgrade_helm_chart` scores close to the best (`install` is a
    // common word here), but matches only words the best has too.
    let q = "install the helm chart";
    let ranked = idx.rank_fitting(q, |_| true, 4, |_| false);
    assert_eq!(ranked[1].tool, 1, "{ranked:?}");
    assert!(idx.fit(q, 1).unwrap().fits);
    assert_eq!(activated(&reg, &idx, q), ["install_helm_chart"]);
    // Tools matching the same words are both loaded, and so is one
    // that matches a word the best does not.
    assert_eq!(
        activated(&reg, &idx, "helm chart"),
        ["install_helm_chart", "upgrade_helm_chart"]
    );
    let mut both = activated(&reg, &idx, "install or upgrade a helm chart");
    both.sort();
    assert_eq!(both, ["install_helm_chart", "upgrade_helm_chart"]);
}

#[test]
fn the_best_match_is_the_best_ranked_tool_that_fits() {
    let reg = registry(&[
        (
            "turn_off_next",
            "Turn off the next one, turn off all, turn off every other",
        ),
        ("heater_control", "Control the heater"),
    ]);
    let idx = SearchIndex::new(&reg);
    let q = "turn off the heater";
    let ranked = idx.rank(q, |_| true);
    assert_eq!(ranked, [0, 1], "the light words rank first");
    assert!(!idx.fit(q, 0).unwrap().fits);
    assert_eq!(activated(&reg, &idx, q), ["heater_control"]);
    // Only among the first `limit` ranked.
    let only_one = idx.rank_fitting(q, |_| true, 1, |_| false);
    assert!(only_one.iter().all(|r| !r.activate), "{only_one:?}");
}

#[test]
fn time_is_what_a_question_about_time_asks() {
    let reg = registry(&[
        (
            "get_current_time",
            "Get the current time in a given timezone",
        ),
        ("browser_wait_for", "Wait for some time to pass"),
        ("read_file", "Read a file"),
    ]);
    let idx = SearchIndex::new(&reg);
    let got = activated(&reg, &idx, "what's the time in London");
    assert!(got.contains(&"get_current_time".to_string()), "{got:?}");
    let fit = idx.fit("what's the time in London", 0).unwrap();
    assert!(
        fit.units.iter().any(|u| u.word == "tim" && !u.light),
        "{fit:?}"
    );
}

#[test]
fn to_star_something_is_to_make_it_a_favourite() {
    let reg = registry(&[
        ("favorite_dashboard", "Mark a dashboard as a favourite"),
        ("list_dashboards", "List the dashboards"),
        ("delete_dashboard", "Delete a dashboard"),
    ]);
    let idx = SearchIndex::new(&reg);
    // `revenue` is a dashboard's name, which no tool has: `star` is what
    // is asked, and tools say it as `favourite` (or `bookmark`).
    let q = "star the revenue dashboard";
    assert_eq!(activated(&reg, &idx, q), ["favorite_dashboard"]);
    let fit = idx.fit(q, 0).unwrap();
    assert!(
        fit.units.iter().any(|u| u.word == "star" && u.cover > 0.7),
        "{fit:?}"
    );
}

#[test]
fn fitting_is_deterministic() {
    let reg = registry(&[
        ("one", "open the door"),
        ("two", "close the window"),
        ("three", "open the door"),
    ]);
    let idx = SearchIndex::new(&reg);
    let first = idx.rank_fitting("open the door", |_| true, 4, |_| false);
    assert_eq!(first.iter().filter(|r| r.activate).count(), 2);
    for _ in 0..5 {
        assert_eq!(
            idx.rank_fitting("open the door", |_| true, 4, |_| false),
            first
        );
        assert_eq!(
            SearchIndex::new(&reg).rank_fitting("open the door", |_| true, 4, |_| false),
            first
        );
    }
}

#[test]
fn the_first_word_of_a_two_word_translation_alone_is_a_part() {
    // 体重 is `body weight`: a request's body is not it, a body weight
    // or a weight is.
    let reg = registry(&[
        (
            "patch_request",
            "Send a new request body to a saved endpoint",
        ),
        ("log_weight", "Log your body weight each morning"),
        ("scale_reading", "Read the weight on the bathroom scale"),
    ]);
    let idx = SearchIndex::new(&reg);
    let q = "体重";
    let body = idx.fit(q, 0).unwrap();
    let unit = body.units.iter().find(|u| u.word == "体重").unwrap();
    assert!(unit.cover > 0.0 && unit.cover < super::DIRECT, "{unit:?}");
    assert!(!body.fits, "{}", body.reason());
    for tool in [1, 2] {
        let fit = idx.fit(q, tool).unwrap();
        assert!(fit.fits, "{}: {}", reg.tools()[tool].name, fit.reason());
    }
    let loaded = activated(&reg, &idx, q);
    assert!(loaded.contains(&"log_weight".to_string()), "{loaded:?}");
    assert!(!loaded.contains(&"patch_request".to_string()), "{loaded:?}");
}
