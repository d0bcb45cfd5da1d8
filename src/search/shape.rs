//! What the shape of a query word implies: a file name or path means a
//! file, a web address a url (part of query expansion).

/// Known file extensions and what they say beyond "a file".
const EXTENSIONS: &[(&str, &str)] = &[
    ("bmp", "image"),
    ("c", ""),
    ("cfg", "configuration"),
    ("conf", "configuration"),
    ("cpp", ""),
    ("css", ""),
    ("csv", ""),
    ("gif", "image"),
    ("go", ""),
    ("h", ""),
    ("html", ""),
    ("ini", "configuration"),
    ("java", ""),
    ("jpeg", "image"),
    ("jpg", "image"),
    ("js", ""),
    ("json", ""),
    ("lock", ""),
    ("log", ""),
    ("md", "markdown"),
    ("pdf", "pdf"),
    ("png", "image"),
    ("py", ""),
    ("rb", ""),
    ("rs", ""),
    ("sh", ""),
    ("svg", "image"),
    ("toml", "configuration"),
    ("ts", ""),
    ("tsx", ""),
    ("txt", "text"),
    ("webp", "image"),
    ("xml", ""),
    ("yaml", "configuration"),
    ("yml", "configuration"),
    ("zip", ""),
];

/// Words that name a file type: in a request that asks for something else
/// (`read the notes in notes.md and mail them`), they say what the file is,
/// not what to do with it. Extensions that are also ordinary words (`log`,
/// `lock`, `go`) are not among them.
const FILE_TYPES: &[&str] = &[
    "csv", "doc", "docx", "gif", "htm", "html", "jpeg", "jpg", "json", "markdown", "md", "pdf",
    "png", "ppt", "pptx", "svg", "toml", "tsv", "txt", "webp", "xls", "xlsx", "xml", "yaml", "yml",
];

/// Whether `word` (lowercase) names a file type (`pdf`, `markdown`).
pub(super) fn is_file_type(word: &str) -> bool {
    FILE_TYPES.binary_search(&word).is_ok()
}

/// Top-level domains that make `name.tld` a web address rather than a file.
const DOMAINS: &[&str] = &[
    "ai", "app", "cn", "co", "com", "de", "dev", "edu", "gov", "io", "jp", "net", "org", "uk",
];

/// Index terms implied by the shape of one whitespace-separated query word:
/// a web address means `url`, a file name or path means `file` (and an image
/// extension `image`, and so on).
pub(super) fn shape_hints(word: &str) -> Vec<&'static str> {
    let word = word.trim_matches(|c: char| "`'\",;()[]{}<>?!“”‘’，。；：（）".contains(c));
    let lower = word.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("www.") {
        return vec!["url"];
    }
    let Some((stem_part, ext)) = lower.rsplit_once('.') else {
        return Vec::new();
    };
    let base = stem_part.rsplit('/').next().unwrap_or("");
    if ext.is_empty() || !ext.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Vec::new();
    }
    if !base.is_empty() && DOMAINS.binary_search(&ext).is_ok() && !stem_part.contains('/') {
        return vec!["url"];
    }
    match EXTENSIONS.binary_search_by(|(e, _)| (*e).cmp(ext)) {
        Ok(i) if !base.is_empty() || lower.starts_with('.') => {
            let extra = EXTENSIONS[i].1;
            if extra.is_empty() {
                vec!["file"]
            } else {
                vec!["file", extra]
            }
        }
        _ => Vec::new(),
    }
}
