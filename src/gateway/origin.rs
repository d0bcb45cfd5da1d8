//! A remote server's URL is shown by its origin, `scheme://host[:port]`,
//! everywhere the gateway writes it: a path or a query may hold a key
//! (`/mcp/KEY`, `?api_key=...`), and user info a password. Messages are
//! scrubbed by parsing every URL in them, not by matching the servers
//! file's spelling, since the HTTP client writes a URL its own way (without
//! the user info, with a default port dropped, with its host lowercased).

/// `url`'s origin, `scheme://host[:port]`, without user info, path, query
/// or fragment; `None` when it has no `scheme://` or no host.
pub fn origin(url: &str) -> Option<String> {
    let url = url.trim();
    if let Ok(parsed) = reqwest::Url::parse(url)
        && let Some(host) = parsed.host_str()
        && !host.is_empty()
    {
        let port = parsed.port().map(|p| format!(":{p}")).unwrap_or_default();
        return Some(format!("{}://{host}{port}", parsed.scheme()));
    }
    // Not a URL the parser takes: its authority, cut by hand.
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#', '\\']).next().unwrap_or_default();
    let host = authority.rsplit('@').next().unwrap_or_default();
    (!scheme.is_empty() && !host.is_empty()).then(|| format!("{scheme}://{host}"))
}

/// A URL from the servers file as a message may show it: its origin, or,
/// for text that is not a URL, what comes before any path, query or user
/// info (`htp:` of `htp:/nowhere`).
pub fn shown(url: &str) -> String {
    if let Some(o) = origin(url) {
        return crate::chars::escape(&o).into_owned();
    }
    let head = url.trim().split(['/', '?', '#']).next().unwrap_or_default();
    let head = head.rsplit('@').next().unwrap_or_default();
    crate::chars::escape(head).into_owned()
}

/// Characters that end a URL inside a message: white space, quotes and
/// brackets that enclose it.
fn ends_url(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>')
}

/// `text` with every `http://` or `https://` URL in it (in any case)
/// replaced by its origin. Punctuation that closes the URL's sentence or
/// brackets (`)`, `]`, `,`, `.`, `;`, `:`) stays after the origin.
pub fn origins_only(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(found) = next_url(&lower, at) {
        out.push_str(&text[at..found]);
        let len = text[found..].find(ends_url).unwrap_or(text.len() - found);
        let token = &text[found..found + len];
        let kept = token.trim_end_matches([')', ']', ',', '.', ';', ':']);
        let tail = &token[kept.len()..];
        match origin(kept) {
            Some(o) => out.push_str(&o),
            None => out.push_str(&kept[..kept.find("://").map_or(0, |i| i + 3)]),
        }
        out.push_str(tail);
        at = found + len;
    }
    out.push_str(&text[at..]);
    out
}

/// Where the next `http://` or `https://` starts in `lower`, from `from`.
fn next_url(lower: &str, from: usize) -> Option<usize> {
    let rest = &lower[from..];
    let http = rest.find("http://");
    let https = rest.find("https://");
    let first = match (http, https) {
        (Some(a), Some(b)) => a.min(b),
        (a, b) => a.or(b)?,
    };
    Some(from + first)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "http://user:pw@host.example/mcp/KEY?api_key=s3cret#frag";

    #[test]
    fn an_origin_has_no_user_info_path_or_query() {
        assert_eq!(origin(SECRET).as_deref(), Some("http://host.example"));
        assert_eq!(
            origin("https://H.example:8443/x").as_deref(),
            Some("https://h.example:8443")
        );
        assert_eq!(
            origin(" http://[::1]:9/mcp ").as_deref(),
            Some("http://[::1]:9")
        );
        assert_eq!(
            origin("https://h.example:443/x").as_deref(),
            Some("https://h.example")
        );
        assert_eq!(origin("localhost:8080/mcp"), None);
        assert_eq!(
            origin("ftp://u:p@files.example/KEY").as_deref(),
            Some("ftp://files.example")
        );
        assert_eq!(shown("htp:/nowhere"), "htp:");
        assert_eq!(shown("u:pw@h.example/KEY?k=1"), "h.example");
        assert_eq!(shown(SECRET), "http://host.example");
    }

    #[test]
    fn every_url_in_a_message_is_shown_by_its_origin_whatever_its_spelling() {
        for text in [
            "error sending request for url (http://host.example/mcp/KEY?api_key=s3cret)",
            "error sending request for url (HTTP://user:pw@Host.Example:80/mcp/KEY?api_key=s3cret).",
            &format!("at {SECRET}, then at {SECRET}"),
            "`http://user:pw@host.example/mcp/KEY?api_key=s3cret`",
            "http://host.example/mcp/KEY?api_key=s3cret",
        ] {
            let shown = origins_only(text);
            for leak in ["KEY", "s3cret", "user", "pw", "/mcp", "frag"] {
                assert!(!shown.contains(leak), "{text} -> {shown}");
            }
            assert!(
                shown.to_ascii_lowercase().contains("http://host.example"),
                "{shown}"
            );
        }
        assert_eq!(
            origins_only("error sending request for url (https://h.example/mcp?key=k)"),
            "error sending request for url (https://h.example)"
        );
        assert_eq!(origins_only("at http://h:8/mcp?key=k."), "at http://h:8.");
        assert_eq!(
            origins_only("no url here: http:// alone"),
            "no url here: http:// alone"
        );
        assert_eq!(
            origins_only("ünïcode http://h/ü?k=ü ok"),
            "ünïcode http://h ok"
        );
    }
}
