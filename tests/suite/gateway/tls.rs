//! `policy gateway` in front of remote servers over HTTPS: the MCP fixture
//! serving streamable HTTP with TLS on 127.0.0.1, under a throw-away
//! certificate authority made for each test (rcgen), trusted or not through
//! `SSL_CERT_FILE` in the gateway's environment only.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use serde_json::json;

use crate::gateway::support::*;

const POLICY: &str = "\
guard web__echo
Hide(web__secret)
Defer(*)
";

/// A certificate authority of its own, written as `NAME-ca.pem` in a folder.
struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
    pem: PathBuf,
}

impl Ca {
    fn new(dir: &Path, name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, format!("toolpolicy test CA {name}"));
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        let pem = dir.join(format!("{name}-ca.pem"));
        std::fs::write(&pem, issuer.pem()).unwrap();
        Ca { issuer, pem }
    }

    /// A server certificate for `names` (DNS names or IP addresses) and its
    /// key, written as `NAME-cert.pem` and `NAME-key.pem`; the fixture's
    /// environment to serve HTTPS with them.
    fn server(&self, dir: &Path, name: &str, names: &[&str]) -> [(&'static str, String); 2] {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "toolpolicy test server");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let cert_path = dir.join(format!("{name}-cert.pem"));
        let key_path = dir.join(format!("{name}-key.pem"));
        std::fs::write(&cert_path, cert.pem()).unwrap();
        std::fs::write(&key_path, key.serialize_pem()).unwrap();
        [
            ("FIXTURE_TLS_CERT", cert_path.display().to_string()),
            ("FIXTURE_TLS_KEY", key_path.display().to_string()),
        ]
    }
}

/// The fixture serving HTTPS with this certificate environment.
fn https_fixture(
    tools: &str,
    tls: &[(&'static str, String)],
    extra: &[(&str, &str)],
) -> HttpFixture {
    let mut env: Vec<(&str, &str)> = tls.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.extend_from_slice(extra);
    let web = HttpFixture::start(tools, &env);
    assert!(web.url.starts_with("https://127.0.0.1:"), "{}", web.url);
    web
}

/// The gateway's environment that trusts `ca` (and nothing else).
fn trusting(ca: &Ca) -> [(&'static str, &str); 1] {
    [("SSL_CERT_FILE", ca.pem.to_str().unwrap())]
}

#[test]
fn an_https_server_under_a_trusted_ca_is_listed_searched_and_called() {
    let dir = temp_dir("tls");
    let ca = Ca::new(&dir, "test");
    let tls = ca.server(&dir, "server", &["127.0.0.1", "localhost"]);
    let web = https_fixture("echo,secret,slow", &tls, &[]);
    let by_name = web.url.replace("127.0.0.1", "localhost");
    let (p, s) = files(
        &dir,
        POLICY,
        &[
            ("web", json!({"url": web.url})),
            ("named", json!({"url": by_name})),
        ],
    );
    let mut g = Gateway::connect_env(&file_args(&p, &s, &[]), &trusting(&ca), "2025-11-25");
    assert_eq!(
        g.list(),
        ["web__echo", "tool_search", "call_tool"],
        "{}",
        g.stderr()
    );
    assert_web_echoes_and_calls_through(&mut g);
    // The same server by its DNS name, which the certificate also holds.
    g.call(
        "tool_search",
        json!({"query": "", "names": ["named__echo"]}),
    );
    let r = g.call("named__echo", json!({"text": "dns"}));
    assert_eq!(text(&r), "echo: {\"text\":\"dns\"}", "{r}");
    let err = g.stderr();
    assert!(
        err.contains("note: server `web` started with 3 tools"),
        "{err}"
    );
    assert!(
        err.contains("note: server `named` started with 3 tools"),
        "{err}"
    );
}

/// The message of a server refused because no trusted authority issued its
/// certificate.
const UNTRUSTED: &str = "the server's TLS certificate is not accepted: it is not issued by a \
     certificate authority this machine trusts (for a private authority, point `SSL_CERT_FILE` \
     or `SSL_CERT_DIR` at its certificate)";

#[test]
fn an_https_server_whose_certificate_is_not_trusted_is_refused_in_plain_words() {
    let dir = temp_dir("tls-untrusted");
    let ca = Ca::new(&dir, "test");
    let other = Ca::new(&dir, "other");
    let tls = ca.server(&dir, "server", &["127.0.0.1"]);
    let web = https_fixture("echo", &tls, &[]);
    let (p, s) = files(&dir, "NoDefer(*)\n", &[("web", json!({"url": web.url}))]);
    // Trusting another authority, then the system's roots only: refused
    // either way, nothing of the server offered, the reason on stderr.
    for env in [&trusting(&other)[..], &[]] {
        let mut g = Gateway::connect_env(&file_args(&p, &s, &[]), env, "2025-11-25");
        assert!(g.list().is_empty(), "{}", g.stderr());
        let r = g.call("web__echo", json!({}));
        assert!(is_error(&r), "{r}");
        assert_eq!(text(&r), "Tool `web__echo` not found.", "{r}");
        assert!(
            g.wait_stderr("error: server `web` did not start: ", 1),
            "{}",
            g.stderr()
        );
        let err = g.stderr();
        if env.is_empty() {
            // Without roots on the machine, the message says that instead.
            assert!(err.contains("TLS certificate"), "{err}");
        } else {
            assert!(
                err.contains(&format!("error: server `web` did not start: {UNTRUSTED}\n")),
                "{err}"
            );
        }
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn a_certificate_no_longer_trusted_after_a_restart_fails_the_call_naming_it() {
    let dir = temp_dir("tls-rotated");
    let ca = Ca::new(&dir, "test");
    let other = Ca::new(&dir, "other");
    let mut web = https_fixture("echo", &ca.server(&dir, "first", &["127.0.0.1"]), &[]);
    let port = web.port();
    let (p, s) = files(&dir, "NoDefer(*)\n", &[("web", json!({"url": web.url}))]);
    let mut g = Gateway::connect_env(&file_args(&p, &s, &[]), &trusting(&ca), "2025-11-25");
    assert_eq!(text(&g.call("web__echo", json!({}))), "echo: {}");
    // The server comes back with a certificate from an authority the
    // gateway does not trust: every call fails closed, saying why.
    let _ = web.child.kill();
    assert!(web.wait_gone());
    let rotated = other.server(&dir, "second", &["127.0.0.1"]);
    let _web = https_fixture("echo", &rotated, &[("FIXTURE_PORT", &port)]);
    let until = Instant::now() + DEADLINE;
    let mut seen = Vec::new();
    while Instant::now() < until && seen.len() < 3 {
        let r = g.call("web__echo", json!({}));
        assert!(is_error(&r), "{r}");
        let t = text(&r);
        assert!(t.starts_with("server `web` "), "{r}");
        if t.contains(UNTRUSTED) {
            seen.push(t);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(!seen.is_empty(), "{}", g.stderr());
    assert!(g.stderr().contains(UNTRUSTED), "{}", g.stderr());
}

#[test]
fn a_certificate_for_another_name_is_refused_naming_both() {
    let dir = temp_dir("tls-name");
    let ca = Ca::new(&dir, "test");
    let tls = ca.server(&dir, "server", &["example.test"]);
    let web = https_fixture("echo", &tls, &[]);
    let (p, s) = files(&dir, "NoDefer(*)\n", &[("web", json!({"url": web.url}))]);
    let mut g = Gateway::connect_env(&file_args(&p, &s, &[]), &trusting(&ca), "2025-11-25");
    assert!(g.list().is_empty(), "{}", g.stderr());
    assert!(
        g.wait_stderr(
            "error: server `web` did not start: the server's TLS certificate is not accepted: \
             it is for another host: it names `example.test`, not `127.0.0.1`\n",
            1
        ),
        "{}",
        g.stderr()
    );
}

#[test]
fn an_https_url_to_a_plain_http_server_says_so() {
    let dir = temp_dir("tls-plain");
    let web = HttpFixture::start("echo", &[]);
    let url = web.url.replace("http://", "https://");
    let (p, s) = files(&dir, "NoDefer(*)\n", &[("web", json!({"url": url}))]);
    let (code, out, err) = run_to_end(&file_args(&p, &s, &["--dry-run"]));
    assert_eq!(code, Some(1), "{err}");
    assert!(
        out.contains("is the server serving plain HTTP on this port? Then its URL is `http://`"),
        "{out}"
    );
}

#[test]
fn roots_that_cannot_be_loaded_fail_https_servers_only_without_a_panic() {
    let dir = temp_dir("tls-roots");
    let ca = Ca::new(&dir, "test");
    let secure = https_fixture("echo", &ca.server(&dir, "server", &["127.0.0.1"]), &[]);
    let plain = HttpFixture::start("echo", &[]);
    let (p, s) = files(
        &dir,
        "NoDefer(*)\n",
        &[
            ("secure", json!({"url": secure.url})),
            ("plain", json!({"url": plain.url})),
        ],
    );
    let missing = dir.join("no-such-bundle.pem");
    let missing = missing.to_str().unwrap();
    let mut g = Gateway::connect_env(
        &file_args(&p, &s, &[]),
        &[("SSL_CERT_FILE", missing)],
        "2025-11-25",
    );
    assert_eq!(g.list(), ["plain__echo"], "{}", g.stderr());
    assert_eq!(text(&g.call("plain__echo", json!({}))), "echo: {}");
    assert!(
        g.wait_stderr(
            &format!(
                "error: server `secure` did not start: cannot check TLS certificates \
                 (`SSL_CERT_FILE` is `{missing}`): "
            ),
            1
        ),
        "{}",
        g.stderr()
    );
    assert!(!g.stderr().contains("panicked"), "{}", g.stderr());
}

#[test]
fn dry_run_shows_an_https_server_by_its_origin_only() {
    let dir = temp_dir("tls-dry");
    let ca = Ca::new(&dir, "test");
    let other = Ca::new(&dir, "other");
    let web = https_fixture("echo,slow", &ca.server(&dir, "web", &["127.0.0.1"]), &[]);
    let shady = https_fixture("echo", &other.server(&dir, "shady", &["127.0.0.1"]), &[]);
    let (p, s) = files(
        &dir,
        "NoDefer(*)\n",
        &[
            ("web", json!({"url": format!("{}?key=k", web.url)})),
            ("shady", json!({"url": format!("{}?key=k", shady.url)})),
        ],
    );
    let args = file_args(&p, &s, &["--dry-run"]);
    let (code, out, err) = run_to_end_env(&args, &trusting(&ca));
    assert_eq!(code, Some(1), "{err}");
    let origin = web.url.trim_end_matches("/mcp");
    assert!(
        out.contains(&format!("  web (remote, {origin}): 2 tools\n")),
        "{out}"
    );
    let shady_origin = shady.url.trim_end_matches("/mcp");
    assert!(
        out.contains(&format!(
            "  shady (remote, {shady_origin}): failed: server `shady` did not start: {UNTRUSTED}\n"
        )),
        "{out}"
    );
    assert!(!out.contains("key=k") && !out.contains("/mcp"), "{out}");
    assert!(!err.contains("key=k") && !err.contains("/mcp"), "{err}");
}
