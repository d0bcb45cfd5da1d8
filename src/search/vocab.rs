//! Query vocabulary: generic English synonyms and abbreviations, Chinese
//! equivalences, and a small Chinese-to-English glossary of common software
//! words. Everything here is ordinary vocabulary of software actions and of
//! everyday requests (maps, weather, food); none of it names a particular tool.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::tokenize::{is_stopword, stem};

/// Query-term weights of the vocabulary's expansions: an abbreviation's
/// words, a synonym, a Chinese word's Chinese equivalents, and its English
/// glossary terms.
pub(super) const W_ABBREVIATION: f32 = 0.9;
pub(super) const W_SYNONYM: f32 = 0.75;
pub(super) const W_CJK_SYNONYM: f32 = 0.7;
pub(super) const W_GLOSSARY: f32 = 0.6;

/// Groups of interchangeable English words: each expands to the others.
const GROUPS: &[&[&str]] = &[
    &[
        "delete", "remove", "erase", "discard", "clear", "wipe", "purge", "destroy",
    ],
    &["detach", "unlink", "remove"],
    &["find", "search", "lookup", "locate", "look", "query"],
    &["create", "add", "new", "make"],
    &[
        "get", "show", "read", "view", "display", "retrieve", "fetch", "see", "inspect", "grab",
        "obtain",
    ],
    &["screenshot", "picture", "image", "photo", "snap"],
    &[
        "update", "modify", "edit", "change", "alter", "adjust", "tweak", "patch",
    ],
    &["list", "enumerate"],
    &["open", "navigate", "visit", "goto", "browse", "load"],
    &[
        "run", "execute", "exec", "invoke", "launch", "trigger", "kick",
    ],
    &["close", "shut", "exit", "quit"],
    &["directory", "folder"],
    &["url", "link", "website", "webpage", "site"],
    &["rename", "move"],
    &["download", "fetch"],
    &["save", "store", "persist", "write"],
    &["start", "begin"],
    &["favorite", "favourite", "star", "bookmark"],
    &["stop", "end", "halt", "finish"],
    &["type", "enter", "input"],
    &["press", "hit", "tap"],
    &["weather", "forecast", "temperature", "rain"],
    &["time", "clock"],
    &["timezone", "tz"],
    &["user", "person", "account", "profile", "people"],
    &["login", "signin", "authenticate", "authenticated"],
    &["makesure", "verify"],
    &["kickoff", "trigger"],
    &["cleanup", "delete"],
    &["apikey", "secret", "credential"],
    &["organization", "org", "company"],
    &["bug", "issue", "ticket"],
    &["log", "history"],
    &["diff", "difference", "compare"],
    &["label", "tag"],
    &["comment", "reply"],
    &["doc", "document", "documentation"],
    &["approve", "accept"],
    &["cancel", "abort"],
    &["scroll", "wheel"],
    &["copy", "duplicate"],
    &["location", "position", "coordinate"],
    &["multiple", "several", "many", "bulk"],
    &["now", "current"],
    &["ask", "request"],
    &["shell", "bash", "terminal", "command"],
    &["show", "list"],
    &["script", "javascript", "js"],
    &["verify", "assert", "ensure", "check", "validate"],
    &["visible", "shown", "displayed", "appear"],
    &["last", "latest", "recent", "newest"],
    &["dialog", "popup", "modal", "prompt"],
    &["mock", "stub", "fake", "intercept"],
    &["emulate", "simulate"],
    &["undo", "revert", "reset", "rollback", "unstage"],
    &["secret", "credential", "password", "token"],
    &["size", "big", "large", "bytes"],
    &["wait", "pause", "sleep", "delay"],
    &["upload", "attach"],
    &["vulnerability", "vulnerable", "cve", "advisory"],
    &["member", "membership"],
    &["text", "phrase", "string", "wording"],
];

/// One-way expansions of abbreviations and shorthand, including common shell
/// commands and things that imply a shell.
const ABBREVIATIONS: &[(&str, &[&str])] = &[
    ("pr", &["pull", "request"]),
    ("prs", &["pull", "request"]),
    ("mr", &["pull", "request"]),
    ("repo", &["repository"]),
    ("repos", &["repository"]),
    ("dir", &["directory"]),
    ("dirs", &["directory"]),
    ("cwd", &["current", "directory"]),
    ("pwd", &["current", "directory"]),
    ("mkdir", &["create", "directory"]),
    ("rmdir", &["delete", "directory"]),
    ("rm", &["delete", "file"]),
    ("mv", &["move", "file"]),
    ("cp", &["copy", "file"]),
    ("cat", &["read", "file"]),
    ("ls", &["list", "directory"]),
    ("info", &["information", "detail"]),
    ("hierarchy", &["tree"]),
    ("config", &["configuration"]),
    ("cfg", &["configuration"]),
    ("env", &["environment"]),
    ("img", &["image"]),
    ("pic", &["image"]),
    ("msg", &["message"]),
    ("gh", &["github"]),
    ("ci", &["workflow", "action"]),
    ("auth", &["authenticated"]),
    ("creds", &["credential"]),
    ("vuln", &["vulnerability"]),
    ("vulns", &["vulnerability"]),
    ("npm", &["command"]),
    ("pip", &["command"]),
    ("yarn", &["command"]),
    ("cargo", &["command"]),
    ("cli", &["command"]),
    ("esc", &["key"]),
    ("escape", &["key"]),
    ("backspace", &["key"]),
    ("keystroke", &["key"]),
    ("arrowdown", &["key"]),
    ("arrowup", &["key"]),
    ("shortcut", &["key"]),
    ("keyboard", &["key"]),
    ("md", &["markdown"]),
    ("txt", &["text"]),
    ("utc", &["timezone", "time"]),
    ("gmt", &["timezone", "time"]),
    ("whoami", &["authenticated", "user"]),
];

/// Question words (stopwords in the index) and what they ask for.
pub(super) const QUESTION_WORDS: &[(&str, &str)] =
    &[("when", "time"), ("where", "location"), ("who", "user")];

/// Groups of interchangeable Chinese words (general vocabulary).
const CJK_GROUPS: &[&[&str]] = &[
    &["附近", "周边", "周围", "旁边"],
    &["坐标", "经纬度"],
    &["地址", "位置"],
    &["地点", "地方"],
    &["路线", "导航", "路径", "怎么走", "线路"],
    &["菜谱", "食谱", "做法", "怎么做", "烹饪"],
    &["菜品", "饭菜", "菜肴"],
    &["天气", "气候", "气温", "温度", "下雨", "降温", "预报"],
    &["开车", "驾车", "自驾"],
    &["骑车", "骑行", "自行车", "单车"],
    &["走路", "步行", "徒步"],
    &["公交", "地铁", "公共交通"],
    &["距离", "多远"],
    &["多久", "多长时间", "用时", "耗时"],
    &["搜索", "查找", "找", "检索", "搜"],
    &["详情", "详细信息"],
    &["堵车", "拥堵", "交通", "路况"],
    &["早饭", "早餐"],
    &["午饭", "午餐"],
    &["晚饭", "晚餐"],
    &["景点", "景区", "名胜"],
    &["提取", "识别", "标注"],
    &["归属地", "位置"],
    &["几点", "时间"],
    &["全部", "所有"],
];

/// Chinese software and everyday words with their English equivalents, so a
/// Chinese query also finds tools described in English.
const GLOSSARY: &[(&str, &[&str])] = &[
    ("文件", &["file"]),
    ("读取", &["read"]),
    ("打开", &["open"]),
    ("写入", &["write"]),
    ("保存", &["save"]),
    ("编辑", &["edit"]),
    ("修改", &["edit", "update"]),
    ("删除", &["delete"]),
    ("创建", &["create"]),
    ("新建", &["create", "new"]),
    ("目录", &["directory"]),
    ("文件夹", &["directory"]),
    ("列出", &["list"]),
    ("列表", &["list"]),
    ("搜索", &["search"]),
    ("查找", &["find", "search"]),
    ("代码", &["code"]),
    ("关键字", &["pattern"]),
    ("关键词", &["pattern"]),
    ("执行", &["execute", "run"]),
    ("运行", &["run"]),
    ("命令", &["command"]),
    ("截图", &["screenshot"]),
    ("截个图", &["screenshot"]),
    ("网页", &["page"]),
    ("页面", &["page"]),
    ("浏览器", &["browser"]),
    ("点击", &["click"]),
    ("按钮", &["button"]),
    ("输入框", &["input"]),
    ("表单", &["form"]),
    ("仓库", &["repository"]),
    ("分支", &["branch"]),
    ("提交", &["commit"]),
    ("合并", &["merge"]),
    ("拉取请求", &["pull", "request"]),
    ("合并请求", &["pull", "request"]),
    ("评论", &["comment"]),
    ("标签", &["label"]),
    ("发布", &["release"]),
    ("通知", &["notification"]),
    ("用户", &["user"]),
    ("时间", &["time"]),
    ("几点", &["time"]),
    ("现在", &["current"]),
    ("当前", &["current"]),
    ("时区", &["timezone"]),
    ("转换", &["convert"]),
    ("差异", &["diff"]),
    ("状态", &["status"]),
    ("日志", &["log"]),
    ("下载", &["download"]),
    ("上传", &["upload"]),
    ("链接", &["url"]),
    ("网址", &["url"]),
    ("知识图谱", &["knowledge", "graph"]),
    ("实体", &["entity"]),
    ("关系", &["relation"]),
    ("工作流", &["workflow"]),
    ("漏洞", &["vulnerability"]),
    ("图片", &["image"]),
    // Everyday words of maps, travel, weather and food.
    ("附近", &["nearby", "around"]),
    ("周边", &["around"]),
    ("周围", &["around"]),
    ("步行", &["walking"]),
    ("走路", &["walking"]),
    ("驾车", &["driving"]),
    ("开车", &["driving"]),
    ("骑行", &["cycling", "bicycling"]),
    ("骑车", &["cycling", "bicycling"]),
    ("自行车", &["bicycle"]),
    ("公交", &["transit"]),
    ("地铁", &["transit", "subway"]),
    ("路线", &["route", "directions"]),
    ("导航", &["directions"]),
    ("距离", &["distance"]),
    ("天气", &["weather"]),
    ("预报", &["forecast"]),
    ("交通", &["traffic"]),
    ("路况", &["traffic"]),
    ("拥堵", &["traffic"]),
    ("堵车", &["traffic"]),
    ("地图", &["map"]),
    ("地址", &["address"]),
    ("坐标", &["coordinate"]),
    ("经纬度", &["coordinate"]),
    ("地理编码", &["geocode"]),
    ("位置", &["location"]),
    ("定位", &["location"]),
    ("地点", &["place"]),
    ("详情", &["detail"]),
    ("详细", &["detail"]),
    ("菜谱", &["recipe"]),
    ("食谱", &["recipe"]),
    ("做法", &["recipe"]),
    ("推荐", &["recommend"]),
    ("分类", &["category"]),
    ("吃什么", &["eat"]),
];

/// Stemmed English word -> (stemmed term, weight).
pub(super) fn synonyms() -> &'static HashMap<String, Vec<(String, f32)>> {
    static MAP: OnceLock<HashMap<String, Vec<(String, f32)>>> = OnceLock::new();
    MAP.get_or_init(|| {
        let mut map: HashMap<String, Vec<(String, f32)>> = HashMap::new();
        for group in GROUPS {
            let stems: Vec<String> = group.iter().map(|w| stem(w)).collect();
            for a in &stems {
                for b in &stems {
                    if a != b {
                        add(map.entry(a.clone()).or_default(), b, W_SYNONYM);
                    }
                }
            }
        }
        for (short, long) in ABBREVIATIONS {
            let list = map.entry(stem(short)).or_default();
            for l in *long {
                add(list, &stem(l), W_ABBREVIATION);
            }
        }
        map
    })
}

/// A Chinese word -> its equivalents' index terms (CJK bigrams) and its
/// English glossary terms (stems), with weights.
pub(super) struct CjkVocab {
    pub(super) words: HashMap<String, CjkEntry>,
    /// Longest key, in characters.
    pub(super) max_len: usize,
}

#[derive(Default)]
pub(super) struct CjkEntry {
    pub(super) same: Vec<(String, f32)>,
    pub(super) english: Vec<(String, f32)>,
}

pub(super) fn cjk_vocab() -> &'static CjkVocab {
    static MAP: OnceLock<CjkVocab> = OnceLock::new();
    MAP.get_or_init(|| {
        let mut words: HashMap<String, CjkEntry> = HashMap::new();
        for group in CJK_GROUPS {
            for a in *group {
                for b in *group {
                    if a != b {
                        let entry = words.entry(a.to_string()).or_default();
                        for t in cjk_terms(b) {
                            add(&mut entry.same, &t, W_CJK_SYNONYM);
                        }
                    }
                }
            }
        }
        for (zh, en) in GLOSSARY {
            let entry = words.entry(zh.to_string()).or_default();
            for w in *en {
                let s = stem(w);
                if !is_stopword(&s) {
                    add(&mut entry.english, &s, W_GLOSSARY);
                }
            }
        }
        let max_len = words.keys().map(|k| k.chars().count()).max().unwrap_or(0);
        CjkVocab { words, max_len }
    })
}

/// The index terms a CJK word is found by: its bigrams, or the character itself.
fn cjk_terms(word: &str) -> Vec<String> {
    let chars: Vec<char> = word.chars().collect();
    if chars.len() == 1 {
        return vec![word.to_string()];
    }
    chars.windows(2).map(|w| w.iter().collect()).collect()
}

fn add(list: &mut Vec<(String, f32)>, term: &str, weight: f32) {
    match list.iter_mut().find(|(t, _)| t == term) {
        Some(e) => e.1 = e.1.max(weight),
        None => list.push((term.to_string(), weight)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocabulary_builds() {
        assert!(synonyms()["delet"].iter().any(|(t, _)| t == "remov"));
        let v = cjk_vocab();
        assert!(v.words["附近"].same.iter().any(|(t, _)| t == "周边"));
        assert!(v.words["文件"].english.iter().any(|(t, _)| t == "fil"));
        assert!(v.max_len >= 4);
    }
}
