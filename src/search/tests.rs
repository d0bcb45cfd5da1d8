//! Behaviour of the whole pipeline: what a query finds in small registries.

use super::query::W_CEDICT;
use super::shape::shape_hints;
use super::test_support::{activated, registry};
use super::*;
use crate::registry::{Registry, Tool};
use serde_json::{Value, json};

fn tool(name: &str, description: &str, params: Value) -> Tool {
    Tool {
        name: name.into(),
        description: description.into(),
        parameters: params,
        source: None,
        defer_loading: false,
        ..Default::default()
    }
}

fn names(reg: &Registry, idx: &SearchIndex, q: &str) -> Vec<String> {
    idx.rank(q, |_| true)
        .into_iter()
        .map(|i| reg.tools()[i].name.clone())
        .collect()
}

#[test]
fn cjk_substring_finds_tools() {
    let reg = registry(&[
        ("grep", "Search file contents"),
        ("zh_grep", "搜索文件内容"),
        ("weather", "根据城市名称查询天气"),
        ("noise", "地图服务"),
    ]);
    let idx = SearchIndex::new(&reg);
    assert_eq!(names(&reg, &idx, "文件")[0], "zh_grep");
    assert_eq!(names(&reg, &idx, "天气")[0], "weather");
    assert_eq!(names(&reg, &idx, "查询北京的天气")[0], "weather");
    // Mixed English and Chinese.
    let mixed = names(&reg, &idx, "search 文件内容");
    assert_eq!(mixed[0], "zh_grep", "{mixed:?}");
    assert!(mixed.contains(&"grep".to_string()));
}

#[test]
fn exact_name_ranks_first() {
    let reg = registry(&[
        (
            "read_file_contents",
            "Read the file contents read file read",
        ),
        ("read_file", "Something else entirely"),
        ("file", "read file"),
    ]);
    let idx = SearchIndex::new(&reg);
    assert_eq!(names(&reg, &idx, "read_file")[0], "read_file");
    assert_eq!(names(&reg, &idx, "  READ_FILE ")[0], "read_file");
    assert_eq!(names(&reg, &idx, "file")[0], "file");
    // A name mentioned verbatim inside a longer query comes first too.
    assert_eq!(names(&reg, &idx, "call read_file please")[0], "read_file");
}

#[test]
fn name_outweighs_description_outweighs_parameters() {
    let reg = Registry::new(vec![
        tool(
            "alpha",
            "nothing",
            json!({"properties": {"screenshot": {"type": "string"}}}),
        ),
        tool("beta", "take a screenshot", json!({})),
        tool("take_screenshot", "capture", json!({})),
        tool(
            "gamma",
            "nothing",
            json!({"properties": {"x": {"description": "screenshot"}}}),
        ),
    ])
    .unwrap();
    let idx = SearchIndex::new(&reg);
    assert_eq!(
        names(&reg, &idx, "screenshot"),
        ["take_screenshot", "beta", "alpha", "gamma"]
    );
}

#[test]
fn eligibility_is_respected() {
    let reg = registry(&[
        ("list_files", "List files"),
        ("list_dirs", "List directories"),
        ("files", "files"),
    ]);
    let idx = SearchIndex::new(&reg);
    for q in ["list files", "list_files", "LIST_FILES"] {
        let r = idx.rank(q, |i| i != 0);
        assert!(!r.contains(&0) && r.len() == 2, "{q}: {r:?}");
    }
    assert_eq!(idx.rank("list_files", |_| true)[0], 0);
    assert!(idx.rank("list files", |_| false).is_empty());
}

#[test]
fn ties_break_by_registry_order_and_results_are_deterministic() {
    let reg = registry(&[
        ("one", "open the door"),
        ("two", "close the window"),
        ("three", "open the door"),
        ("four", "open the door"),
    ]);
    let idx = SearchIndex::new(&reg);
    let first = idx.rank("door", |_| true);
    assert_eq!(first, vec![0, 2, 3]);
    for _ in 0..10 {
        assert_eq!(idx.rank("door", |_| true), first);
        assert_eq!(SearchIndex::new(&reg).rank("door", |_| true), first);
    }
}

#[test]
fn empty_and_odd_queries_return_nothing_or_do_not_panic() {
    let reg = registry(&[("a_tool", "does things"), ("b", "文件")]);
    let idx = SearchIndex::new(&reg);
    assert!(idx.rank("", |_| true).is_empty());
    assert!(idx.rank("   \t\n", |_| true).is_empty());
    assert!(idx.rank("?!.,;:-_/", |_| true).is_empty());
    assert!(idx.rank("the a of", |_| true).is_empty());
    assert!(idx.rank("🦀🔥 \u{0}\u{200b}", |_| true).is_empty());
    let huge = "文件 things ".repeat(100_000);
    assert_eq!(idx.rank(&huge, |_| true), vec![1, 0]);
    let odd = "\u{10FFFF}é\u{301}ÅΩ𝔘 ＡＢＣ 123 __ -- ::";
    let _ = idx.rank(odd, |_| true);
    let empty = SearchIndex::new(&Registry::default());
    assert!(empty.rank("anything", |_| true).is_empty());
    assert!(idx.rank("zzzz", |_| true).is_empty(), "no match, no result");
}

#[test]
fn synonyms_and_joins_help() {
    let reg = registry(&[
        ("remove_thing", "Remove a thing"),
        ("browser_localstorage_get", "Get a localStorage item"),
        ("list_pull_requests", "List pull requests"),
        ("list_issues", "List issues"),
    ]);
    let idx = SearchIndex::new(&reg);
    assert_eq!(names(&reg, &idx, "delete a thing")[0], "remove_thing");
    assert_eq!(
        names(&reg, &idx, "read local storage")[0],
        "browser_localstorage_get"
    );
    assert_eq!(names(&reg, &idx, "list open PRs")[0], "list_pull_requests");
}

#[test]
fn word_shapes_imply_files_and_urls() {
    assert_eq!(shape_hints("notes.txt"), ["file", "text"]);
    assert_eq!(shape_hints("src/main.rs"), ["file"]);
    assert_eq!(shape_hints("`logo.png`"), ["file", "image"]);
    assert_eq!(shape_hints("https://example.com/a"), ["url"]);
    assert_eq!(shape_hints("example.com"), ["url"]);
    assert!(shape_hints("document.title").is_empty());
    assert!(shape_hints("3.5").is_empty());
    assert!(shape_hints("end.").is_empty());
}

#[test]
fn synonyms_count_once_per_concept() {
    // `look` expands to find/search/locate/query; a tool matching all of
    // them must not beat one matching the query's other word as well.
    let reg = registry(&[
        ("finder", "find search locate query things"),
        ("page_finder", "find text in the page"),
    ]);
    let idx = SearchIndex::new(&reg);
    assert_eq!(names(&reg, &idx, "look in the page")[0], "page_finder");
}

#[test]
fn query_shapes_negation_and_phrases_help() {
    let reg = registry(&[
        ("write_file", "Write content to a file"),
        ("save_page", "Save the page as PDF"),
        ("merge_pull_request", "Merge a pull request"),
        ("close_pull_request", "Close a pull request"),
        ("verify_visible", "Verify an element is visible"),
        ("click_button", "Click a button"),
        ("diff_unstaged", "Shows unstaged changes"),
        ("diff_staged", "Shows staged changes"),
    ]);
    let idx = SearchIndex::new(&reg);
    assert_eq!(names(&reg, &idx, "save this to notes.txt")[0], "write_file");
    assert_eq!(
        names(&reg, &idx, "close the pull request without merging")[0],
        "close_pull_request"
    );
    assert_eq!(
        names(&reg, &idx, "make sure the banner is there")[0],
        "verify_visible"
    );
    assert_eq!(
        names(&reg, &idx, "changes that are not staged")[0],
        "diff_unstaged"
    );
}

#[test]
fn abbreviated_words_find_name_terms() {
    let reg = registry(&[
        ("get_authenticated_user", "Who is signed in"),
        ("get_author", "The writer of a book"),
    ]);
    let idx = SearchIndex::new(&reg);
    assert_eq!(names(&reg, &idx, "authent")[0], "get_authenticated_user");
}

#[test]
fn plurals_hint_at_listing() {
    let reg = registry(&[("get_tag", "Get a tag"), ("list_tags", "List tags")]);
    let idx = SearchIndex::new(&reg);
    assert_eq!(names(&reg, &idx, "which tags exist")[0], "list_tags");
    assert_eq!(names(&reg, &idx, "tag v1.0")[0], "get_tag");
}

#[test]
fn chinese_equivalents_and_glossary_help() {
    let reg = registry(&[
        ("walking_route", "步行路径规划"),
        ("driving_route", "驾车路径规划"),
        ("around_search", "周边搜索"),
        ("read_file", "Read a file"),
        ("click", "Click on the page"),
    ]);
    let idx = SearchIndex::new(&reg);
    assert_eq!(names(&reg, &idx, "走路去公园的路线")[0], "walking_route");
    assert_eq!(names(&reg, &idx, "开车去公司")[0], "driving_route");
    assert_eq!(names(&reg, &idx, "附近的酒店")[0], "around_search");
    assert_eq!(names(&reg, &idx, "读取文件内容")[0], "read_file");
    assert_eq!(names(&reg, &idx, "点击按钮")[0], "click");
}

#[test]
fn a_query_naming_a_server_prefers_its_tools() {
    let mut a = tool("list_users", "List all users", json!({}));
    a.source = Some("mcp:metabase".into());
    let mut b = tool("get_users", "List all users", json!({}));
    b.source = Some("mcp:notion".into());
    let reg = Registry::new(vec![a, b]).unwrap();
    let idx = SearchIndex::new(&reg);
    assert_eq!(names(&reg, &idx, "all users in Notion")[0], "get_users");
    assert_eq!(names(&reg, &idx, "all users in metabase")[0], "list_users");
    // A hidden server's tools name nothing.
    assert_eq!(
        idx.without(&[1]).rank("notion", |_| true),
        Vec::<usize>::new()
    );
}

#[test]
fn chinese_words_reach_english_names_through_the_dictionary() {
    let reg = registry(&[
        ("calendar_event_patch", "日历-更新日程"),
        ("calendar_event_delete", "日历-删除日程"),
        ("dashboard_create", "Create a dashboard"),
        ("comment_create", "任务-新建评论"),
    ]);
    let idx = SearchIndex::new(&reg);
    // 改 -> change -> update, patch: a colloquial verb finds the formal one.
    assert_eq!(names(&reg, &idx, "把日程改一下")[0], "calendar_event_patch");
    // 仪表盘 -> dashboard, though the registry has 新建 in Chinese only.
    assert_eq!(names(&reg, &idx, "新建一个仪表盘")[0], "dashboard_create");
}

#[test]
fn chinese_words_bring_their_english_where_the_registry_has_them_too() {
    // 仓库 is in the registry in Chinese; the glossary's `repository`
    // (CC-CEDICT says depot, storehouse) still finds the English tool.
    let reg = registry(&[
        ("zh_repo", "查看仓库信息"),
        ("get_repository", "Get a repository"),
        ("noise", "地图服务"),
    ]);
    let idx = SearchIndex::new(&reg);
    assert_eq!(names(&reg, &idx, "仓库"), ["zh_repo", "get_repository"]);
}

#[test]
fn a_chinese_verb_split_by_a_measure_word_is_the_word() {
    let reg = registry(&[
        ("approval_task_approve", "审批-同意审批单"),
        ("approval_comment_create", "审批-在审批单下留言"),
        ("message_post", "Post a message"),
    ]);
    let idx = SearchIndex::new(&reg);
    // 留个言 is 留言 (leave a message): its bigram and its English.
    let terms = idx.query_terms("审批单上留个言");
    for term in ["留言", "messag"] {
        let id = idx.term(term).unwrap();
        assert!(
            terms.iter().any(|t| t.id == id && t.weight >= W_CEDICT),
            "{term}: {terms:?}"
        );
    }
    assert_eq!(
        names(&reg, &idx, "审批单上留个言")[0],
        "approval_comment_create"
    );
}

#[test]
fn a_request_to_see_prefers_the_reading_sibling() {
    let reg = registry(&[
        ("create_comment", "Comment on a page"),
        ("retrieve_comment", "Comment on a page"),
    ]);
    let idx = SearchIndex::new(&reg);
    assert_eq!(
        names(&reg, &idx, "what do the comments on the page say")[0],
        "retrieve_comment"
    );
    assert_eq!(
        names(&reg, &idx, "看看页面的 comment")[0],
        "retrieve_comment"
    );
    assert_eq!(
        names(&reg, &idx, "comment on the page")[0],
        "create_comment"
    );
}

#[test]
fn index_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<SearchIndex>();
}

#[test]
fn an_english_request_finds_a_tool_described_in_chinese() {
    let reg = registry(&[
        ("tool_a", "查询菜谱"),
        ("tool_b", "查询城市天气"),
        ("tool_c", "删除文件"),
    ]);
    let idx = SearchIndex::new(&reg);
    assert_eq!(names(&reg, &idx, "find a recipe"), ["tool_a"]);
    assert_eq!(activated(&reg, &idx, "recipes"), ["tool_a"]);
    assert_eq!(activated(&reg, &idx, "the weather"), ["tool_b"]);
    assert_eq!(activated(&reg, &idx, "delete the file"), ["tool_c"]);
    // A request none of them serves loads nothing.
    assert!(activated(&reg, &idx, "book a flight to Tokyo").is_empty());
    assert!(activated(&reg, &idx, "set the thermostat to 21 degrees").is_empty());
}

#[test]
fn file_names_and_file_types_that_qualify_a_word_are_weak() {
    let weak = |q: &str| super::query::weak_words(q);
    // read, notes, notes, md: the pieces of `notes.md` name a file.
    assert_eq!(weak("read notes.md"), [false, true, true]);
    assert_eq!(
        weak("copy /tmp/x.csv now"),
        [false, true, true, true, false]
    );
    // `markdown` qualifies `notes`; `yaml` and `pdf` stand on their own.
    assert_eq!(weak("move the markdown notes"), [false, false, true, false]);
    assert_eq!(weak("deploy this yaml to the cluster"), [false; 6]);
    assert_eq!(weak("save the page as a pdf"), [false; 6]);
}

#[test]
fn a_file_name_alone_does_not_make_a_format_tool_fit() {
    let reg = registry(&[
        ("convert_report", "Convert a report to markdown"),
        ("send_email", "Send an email to a person"),
        ("read_file", "Read a file"),
    ]);
    let idx = SearchIndex::new(&reg);
    let found = activated(&reg, &idx, "read report.md and email a summary to bob");
    assert!(found.contains(&"send_email".to_string()), "{found:?}");
    assert!(!found.contains(&"convert_report".to_string()), "{found:?}");
    // Asked for, the format still fits.
    assert_eq!(
        activated(&reg, &idx, "convert the report to markdown"),
        ["convert_report"]
    );
}
