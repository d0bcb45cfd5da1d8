//! `policy gateway` in front of remote servers over HTTPS: the MCP fixture
//! serving streamable HTTP with TLS on 127.0.0.1, under a throw-away
//! certificate authority made for each test (rcgen), trusted or not through
//! `SSL_CERT_FILE` in the gateway's environment only.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use serde_json::json;

use super::gateway_support::*;

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
    assert_eq!(
        text(&g.call("web__echo", json!({"text": "hi"}))),
        "echo: {\"text\":\"hi\"}"
    );
    let r = g.call("tool_search", json!({"query": "slow"}));
    assert!(text(&r).contains("`web__slow`"), "{r}");
    let r = g.call(
        "call_tool",
        json!({"name": "web__slow", "arguments": {"text": "x"}}),
    );
    assert!(!is_error(&r), "{r}");
    assert_eq!(text(&r), "slow: {\"text\":\"x\"}");
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
