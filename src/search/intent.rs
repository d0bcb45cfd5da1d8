//! Whether a request reads or changes something, and whether a tool does:
//! the action of a request ("which dashboards", "看看") and of a tool name
//! (`list_*`, `delete_*`). A tool that matches the request's words and does
//! what it asks for ranks before its sibling that does the opposite (the
//! `get` tool before the `write` one when the user asks to see).

use super::tokenize::{Piece, scan, stem};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Intent {
    #[default]
    Unknown,
    Read,
    Change,
}

/// Verbs (stemmed) of names and requests that read.
const READ: &[&str] = &[
    "browse", "check", "describ", "explain", "fetch", "find", "get", "inspect", "list", "lookup",
    "query", "read", "retriev", "search", "see", "show", "view",
];

/// Verbs (stemmed) of names and requests that change something.
const CHANGE: &[&str] = &[
    "add", "append", "apply", "cancel", "chang", "clear", "copy", "creat", "delet", "edit",
    "insert", "mak", "modify", "mov", "patch", "post", "put", "remov", "renam", "replac", "reset",
    "revert", "send", "set", "updat", "upload", "writ",
];

/// Question words: a request that asks one wants to read.
const QUESTION: &[&str] = &[
    "how",
    "什么",
    "哪些",
    "哪个",
    "多少",
    "有没有",
    "是否",
    "what",
    "which",
    "who",
];

/// Chinese verbs of requests (as substrings).
const CJK_READ: &[&str] = &["看看", "查看", "查询", "查一下", "获取", "列出", "搜索"];
const CJK_CHANGE: &[&str] = &[
    "新建",
    "创建",
    "建一个",
    "添加",
    "加个",
    "删除",
    "删掉",
    "修改",
    "改成",
    "改到",
    "更新",
    "发送",
    "移除",
];

fn kind(stemmed: &str) -> Intent {
    if READ.contains(&stemmed) {
        Intent::Read
    } else if CHANGE.contains(&stemmed) {
        Intent::Change
    } else {
        Intent::Unknown
    }
}

/// What a tool name's first verb says (`list_tables` reads,
/// `calendar_v4_calendarEvent_create` changes).
pub(super) fn of_name(name: &str) -> Intent {
    let mut found = Intent::Unknown;
    scan(name, &mut |piece| {
        if let Piece::Word { parts, .. } = piece {
            for p in parts {
                if found == Intent::Unknown {
                    found = kind(&stem(&p));
                }
            }
        }
    });
    found
}

/// What a request asks for: the first action verb decides, a question word
/// means reading; unknown when it says neither, or both kinds of Chinese verb.
pub(super) fn of_query(query: &str) -> Intent {
    let read = CJK_READ.iter().any(|w| query.contains(w));
    let change = CJK_CHANGE.iter().any(|w| query.contains(w));
    match (read, change) {
        (true, false) => return Intent::Read,
        (false, true) => return Intent::Change,
        (true, true) => return Intent::Unknown,
        _ => {}
    }
    if QUESTION.iter().any(|w| query.contains(w) && !w.is_ascii()) {
        return Intent::Read;
    }
    let mut found = Intent::Unknown;
    scan(query, &mut |piece| {
        if let Piece::Word { raw, parts } = piece {
            if found != Intent::Unknown {
                return;
            }
            if QUESTION.contains(&raw.as_str()) {
                found = Intent::Read;
                return;
            }
            for p in parts {
                if found == Intent::Unknown {
                    found = kind(&stem(&p));
                }
            }
        }
    });
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_requests_read_or_change() {
        assert_eq!(of_name("list_tables"), Intent::Read);
        assert_eq!(of_name("API-retrieve-a-comment"), Intent::Read);
        assert_eq!(of_name("calendar_v4_calendarEvent_create"), Intent::Change);
        assert_eq!(of_name("kubectl_logs"), Intent::Unknown);
        assert_eq!(
            of_query("what did people say in the comments"),
            Intent::Read
        );
        assert_eq!(of_query("delete the old branch"), Intent::Change);
        assert_eq!(of_query("看看我这周有哪些安排"), Intent::Read);
        assert_eq!(of_query("新建一个仪表盘"), Intent::Change);
        assert_eq!(of_query("restart the app"), Intent::Unknown);
    }
}
