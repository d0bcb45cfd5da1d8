//! A remote server's URL is shown by its origin everywhere the gateway
//! writes it, whatever form the HTTP client quotes it in: a URL with user
//! info, a key in its path and one in its query never shows any of them.

use serde_json::json;

use crate::gateway::support::*;

const LEAKS: [&str; 5] = ["user", "pw@", "KEY", "s3cret", "/mcp"];

fn assert_no_leak(place: &str, text: &str) {
    for leak in LEAKS {
        assert!(!text.contains(leak), "{place} shows `{leak}`:\n{text}");
    }
}

/// `http://user:pw@127.0.0.1:PORT/mcp/KEY?api_key=s3cret` for `url`'s port.
fn secret_url(port: &str) -> String {
    format!("http://user:pw@127.0.0.1:{port}/mcp/KEY?api_key=s3cret")
}

#[test]
fn a_url_with_user_info_shows_only_its_origin_everywhere() {
    let mut web = HttpFixture::start("echo,crash", &[]);
    let port = web.port();
    let origin = format!("http://127.0.0.1:{port}");
    let dir = temp_dir("url-secret");
    let (p, s) = files(
        &dir,
        "NoDefer(*)\n",
        &[("web", json!({"url": secret_url(&port)}))],
    );
    let mut g = Gateway::connect_files(&p, &s, "2025-11-25");
    assert_eq!(text(&g.call("web__echo", json!({}))), "echo: {}");
    // The server goes: the next calls fail to reconnect, quoting the URL.
    let r = g.call("web__crash", json!({}));
    assert!(is_error(&r), "{r}");
    assert!(web.wait_gone());
    let mut errors = Vec::new();
    for _ in 0..3 {
        let r = g.call("web__echo", json!({}));
        assert!(is_error(&r), "{r}");
        errors.push(text(&r));
        std::thread::sleep(std::time::Duration::from_millis(600));
    }
    let all = errors.join("\n");
    assert!(all.contains(&origin), "{all}");
    assert!(all.contains("did not start"), "{all}");
    assert_no_leak("a call's error", &all);
    let err = g.stderr();
    assert!(err.contains(&origin), "{err}");
    assert_no_leak("standard error", &err);
    drop(g);

    // The dry run, with the server gone: its failure quotes the URL too.
    let (code, out, err) = run_to_end(&file_args(&p, &s, &["--dry-run"]));
    assert_eq!(code, Some(1), "{err}");
    assert!(
        out.contains(&format!(
            "  web (remote, {origin}): failed: server `web` did not start"
        )),
        "{out}"
    );
    assert!(out.contains(&format!("({origin})")), "{out}");
    assert_no_leak("the dry run", &out);
    assert_no_leak("the dry run's standard error", &err);
    let (_, out, err) = run_to_end(&file_args(&p, &s, &["--dry-run", "--format", "json"]));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["servers"][0]["remote"], json!(origin));
    assert_no_leak("the JSON dry run", &out);
    assert_no_leak("the JSON dry run's standard error", &err);
}

/// A URL the servers file gets wrong is refused with its entry's path and
/// the URL's origin, never its path, query or user info.
#[test]
fn a_bad_url_is_refused_without_showing_its_secrets() {
    let dir = temp_dir("url-bad");
    for url in [
        "ftp://user:pw@127.0.0.1/mcp/KEY?api_key=s3cret",
        "user:pw@127.0.0.1/mcp/KEY?api_key=s3cret",
        "http://user:pw@/mcp/KEY?api_key=s3cret",
    ] {
        let (p, s) = files(&dir, "NoDefer(*)\n", &[("web", json!({"url": url}))]);
        let (code, out, err) = run_to_end(&file_args(&p, &s, &[]));
        assert_eq!(code, Some(2), "{url}: {err}");
        assert!(out.is_empty(), "{out}");
        assert!(
            err.contains("`mcpServers.web.url`: server `web`"),
            "{url}: {err}"
        );
        assert_no_leak("the refusal", &err);
    }
}
