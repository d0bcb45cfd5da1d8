//! The HTTP gateway's clients file (`--clients`): every error in the file
//! with its JSON path; static tokens by environment variable and by digest;
//! JWT access tokens signed by keys each test makes (rcgen), checked through
//! a JWKS file and through a JWKS served on 127.0.0.1; and refusals that all
//! look the same to the caller.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use toolpolicy::Context;
use toolpolicy::gateway::clients::{Caller, CallerKind, Clients, ClientsError, Denied, Timing};

use crate::gateway::support::{TempDir, temp_dir};

pub const ISSUER: &str = "https://id.example.com";
pub const AUDIENCE: &str = "toolpolicy";

fn env(pairs: &[(&str, &str)]) -> toolpolicy::gateway::clients::Env {
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Arc::new(move |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
}

fn load_in(dir: &Path, file: &Value, vars: &[(&str, &str)]) -> Result<Clients, ClientsError> {
    let path = dir.join("clients.json");
    std::fs::write(&path, serde_json::to_string_pretty(file).unwrap()).unwrap();
    Clients::load_with_env(&path, env(vars))
}

/// The problems of a clients file given as text (a JSON value cannot hold
/// a key twice).
fn load_in_text(dir: &Path, text: &str, vars: &[(&str, &str)]) -> ClientsError {
    let path = dir.join("clients.json");
    std::fs::write(&path, text).unwrap();
    Clients::load_with_env(&path, env(vars)).unwrap_err()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn headers(authorization: Option<&str>) -> http::HeaderMap {
    let mut h = http::HeaderMap::new();
    if let Some(a) = authorization {
        h.insert(http::header::AUTHORIZATION, a.parse().unwrap());
    }
    h
}

fn bearer(token: &str) -> http::HeaderMap {
    headers(Some(&format!("Bearer {token}")))
}

fn auth(
    rt: &tokio::runtime::Runtime,
    clients: &Clients,
    h: &http::HeaderMap,
) -> Result<Caller, Denied> {
    rt.block_on(clients.authenticate(h))
}

const METADATA: &str = "https://gw.example.com/.well-known/oauth-protected-resource/mcp";

/// The one answer every refused token gets.
fn assert_refused(result: Result<Caller, Denied>, what: &str) -> Denied {
    let denied = match result {
        Ok(c) => panic!("{what}: accepted as {c:?}"),
        Err(d) => d,
    };
    assert_eq!(denied.status(), http::StatusCode::UNAUTHORIZED, "{what}");
    assert_eq!(
        denied.www_authenticate(METADATA),
        format!("Bearer resource_metadata=\"{METADATA}\", error=\"invalid_token\""),
        "{what}"
    );
    denied
}

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

// ---------------------------------------------------------------- the file

#[test]
fn every_error_in_the_file_is_refused_with_its_path() {
    let dir = temp_dir("clients-errors");
    let vars = [
        ("ALICE", "alice-token-0123456789"),
        ("EMPTY", "  "),
        ("SPACED", "two words"),
    ];
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            json!({"clients": {"a": {"token": "s3cret-in-clear"}}}),
            "clients.a.token",
            "never written in the file in clear",
        ),
        (
            json!({"clients": {"a": {"token": "${ALICE:-dflt}"}}}),
            "clients.a.token",
            "one environment variable alone",
        ),
        (
            json!({"clients": {"a": {"token": "Bearer ${ALICE}"}}}),
            "clients.a.token",
            "one environment variable alone",
        ),
        (
            json!({"clients": {"a": {"token": "${NOPE}"}}}),
            "clients.a.token",
            "environment variable `NOPE` is not set",
        ),
        (
            json!({"clients": {"a": {"token": "${EMPTY}"}}}),
            "clients.a.token",
            "environment variable `EMPTY` is empty",
        ),
        (
            json!({"clients": {"a": {"token": "${SPACED}"}}}),
            "clients.a.token",
            "the token in `SPACED` has characters a bearer token cannot carry",
        ),
        (
            json!({"clients": {"a": {"token": 7}}}),
            "clients.a.token",
            "expected `${ENV_VAR}`",
        ),
        (
            json!({"clients": {"a": {"token_sha256": "abc"}}}),
            "clients.a.token_sha256",
            "is not a SHA-256 digest",
        ),
        (
            json!({"clients": {"a": {"token_sha256": "zz".repeat(32)}}}),
            "clients.a.token_sha256",
            "is not a SHA-256 digest",
        ),
        (
            json!({"clients": {"a": {"token": "${ALICE}", "token_sha256": sha256_hex("x")}}}),
            "clients.a",
            "both `token` and `token_sha256`",
        ),
        (
            json!({"clients": {"a": {"mode": "ops"}}}),
            "clients.a",
            "missing `token` (or `token_sha256`)",
        ),
        (
            json!({"clients": {"a": {"token": "${ALICE}"}, "b": {"token_sha256": sha256_hex("alice-token-0123456789")}}}),
            "clients.b",
            "the same token as `clients.a`",
        ),
        (
            json!({"clients": {"a": {"token": "${ALICE}", "flag": ["x"]}}}),
            "clients.a.flag",
            "unknown key `flag`",
        ),
        (
            json!({"clients": {"a": {"token": "${ALICE}", "flags": "x"}}}),
            "clients.a.flags",
            "expected an array of strings",
        ),
        (
            json!({"clients": {"a": {"token": "${ALICE}", "grants": ["ok", 3]}}}),
            "clients.a.grants[1]",
            "expected printable text",
        ),
        (
            json!({"clients": {"a": {"token": "${ALICE}", "mode": ""}}}),
            "clients.a.mode",
            "not blank",
        ),
        (
            json!({"clients": {"a": "x"}}),
            "clients.a",
            "expected an object",
        ),
        (json!({"client": {}}), "client", "unknown key `client`"),
        (json!({}), "", "nobody could be let in"),
        (
            json!({"clients": {"a": {"token": "${ALICE}"}}, "authorization_servers": ["http://id.example.com"]}),
            "authorization_servers[0]",
            "is not `https`",
        ),
        (
            json!({"jwt": {"audience": AUDIENCE, "jwks_url": "https://id.example.com/jwks"}}),
            "jwt",
            "missing `issuer`",
        ),
        (
            json!({"jwt": {"issuer": ISSUER, "jwks_url": "https://id.example.com/jwks"}}),
            "jwt",
            "missing `audience`",
        ),
        (
            json!({"jwt": {"issuer": ISSUER, "audience": AUDIENCE}}),
            "jwt",
            "missing `jwks_file` (or `jwks_url`)",
        ),
        (
            json!({"jwt": {"issuer": ISSUER, "audience": AUDIENCE, "jwks_file": "k.json", "jwks_url": "https://id.example.com/jwks"}}),
            "jwt",
            "both `jwks_file` and `jwks_url`",
        ),
        (
            json!({"jwt": {"issuer": ISSUER, "audience": AUDIENCE, "jwks_url": "http://id.example.com/jwks"}}),
            "jwt.jwks_url",
            "only from a loopback address",
        ),
        (
            json!({"jwt": {"issuer": ISSUER, "audience": AUDIENCE, "jwks_url": "ftp://id.example.com/jwks"}}),
            "jwt.jwks_url",
            "scheme `ftp`",
        ),
        (
            json!({"jwt": {"issuer": ISSUER, "audience": AUDIENCE, "jwks_file": "missing.json"}}),
            "jwt.jwks_file",
            "cannot read",
        ),
        (
            json!({"jwt": {"issuer": ISSUER, "audience": AUDIENCE, "jwks_url": "https://id.example.com/jwks", "claims": {"mode": "a..b"}}}),
            "jwt.claims.mode",
            "can be read two ways",
        ),
        (
            json!({"jwt": {"issuer": ISSUER, "audience": AUDIENCE, "jwks_url": "https://id.example.com/jwks", "claims": {"mode": " "}}}),
            "jwt.claims.mode",
            "not blank",
        ),
        (
            json!({"jwt": {"issuer": ISSUER, "audience": AUDIENCE, "jwks_url": "https://id.example.com/jwks", "claims": {"mode": ["ext", ""]}}}),
            "jwt.claims.mode[1]",
            "expected a claim's name",
        ),
        (
            json!({"jwt": {"issuer": ISSUER, "audience": AUDIENCE, "jwks_url": "https://id.example.com/jwks", "claims": {"mode": []}}}),
            "jwt.claims.mode",
            "an array of names for a claim inside objects",
        ),
        (
            json!({"jwt": {"issuer": ISSUER, "audience": AUDIENCE, "jwks_url": "https://id.example.com/jwks", "claims": {"modes": "m"}}}),
            "jwt.claims.modes",
            "unknown key `modes`",
        ),
        (
            json!({"jwt": {"issuer": ISSUER, "audience": AUDIENCE, "jwks_url": "https://id.example.com/jwks", "defaults": {"flags": "x"}}}),
            "jwt.defaults.flags",
            "expected an array",
        ),
        (
            json!({"jwt": {"issuer": ISSUER, "audience": AUDIENCE, "jwks_url": "https://id.example.com/jwks", "audiance": "x"}}),
            "jwt.audiance",
            "unknown key `audiance`",
        ),
    ];
    let twice = load_in_text(
        &dir,
        r#"{"clients": {"a": {"token": "${ALICE}"}, "a": {"token": "${EMPTY:-x}"}}, "jwt": 1}"#,
        &vars,
    );
    let paths: Vec<String> = twice.problems.iter().map(ToString::to_string).collect();
    assert_eq!(
        paths,
        [
            "`clients.a`: client `a` is given twice",
            "`clients.a.token`: a token is named by one environment variable alone, `${NAME}`, with no default or other text\n  help: put the token in an environment variable and write `\"token\": \"${NAME}\"`, or give its SHA-256 digest as `token_sha256`",
            "`jwt`: expected an object"
        ]
    );
    for (file, path, message) in cases {
        let err = match load_in(&dir, &file, &vars) {
            Ok(_) => panic!("{file} was accepted"),
            Err(e) => e,
        };
        assert!(
            err.problems
                .iter()
                .any(|p| p.path == path && p.message.contains(message)),
            "{file}: expected `{path}`: {message}; got:\n{err}"
        );
        let shown = err.to_string();
        assert!(
            shown.starts_with(&format!(
                "`{}` is not a valid clients file:",
                dir.join("clients.json").display()
            )),
            "{shown}"
        );
        // A token never shows up in an error.
        assert!(!shown.contains("alice-token-0123456789"), "{shown}");
    }
}

#[test]
fn unknown_keys_suggest_the_known_one_and_every_problem_is_reported() {
    let dir = temp_dir("clients-all");
    let err = load_in(
        &dir,
        &json!({"clients": {
            "a": {"token": "in clear", "grnats": []},
            "b": {"token_sha256": "nope"}}}),
        &[],
    )
    .unwrap_err();
    let paths: Vec<&str> = err.problems.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "clients.a.grnats",
            "clients.a.token",
            "clients.b.token_sha256"
        ],
        "{err}"
    );
    assert_eq!(
        err.problems[0].help.as_deref(),
        Some("did you mean `grants`")
    );
    assert!(
        err.problems[1]
            .help
            .as_deref()
            .unwrap()
            .contains("`token_sha256`"),
        "{err}"
    );
}

#[test]
fn a_short_token_is_a_warning() {
    let dir = temp_dir("clients-short");
    let clients = load_in(
        &dir,
        &json!({"clients": {"a": {"token": "${A}"}, "b": {"token": "${B}"}}}),
        &[("A", "short"), ("B", "0123456789abcdef")],
    )
    .unwrap();
    let warnings: Vec<String> = clients.warnings().iter().map(ToString::to_string).collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("`clients.a.token`: the token in `A` is 5 characters"),
        "{warnings:?}"
    );
}

// ---------------------------------------------------------- static tokens

#[test]
fn tokens_by_variable_and_by_digest_are_accepted_and_others_refused() {
    let dir = temp_dir("clients-tokens");
    let rt = runtime();
    let clients = load_in(
        &dir,
        &json!({"clients": {
            "alice": {"token": "${ALICE_TOKEN}", "mode": "ops", "bot": "builder",
                      "flags": ["readonly"], "grants": ["source:mcp:github"]},
            "ci": {"token_sha256": sha256_hex("ci-token-abcdef").to_uppercase(), "mode": "ci"}}}),
        &[("ALICE_TOKEN", "alice-token-0123456789")],
    )
    .unwrap();
    let alice = auth(&rt, &clients, &bearer("alice-token-0123456789")).unwrap();
    assert_eq!(alice.name, "alice");
    assert_eq!(alice.kind, CallerKind::Token);
    let base = Context::mode("view")
        .with_bot("cli-bot")
        .with_flag("cli-flag");
    let ctx = alice.context(&base);
    assert_eq!(ctx.mode.as_deref(), Some("ops"));
    assert_eq!(ctx.bot.as_deref(), Some("builder"));
    assert_eq!(ctx.flags, BTreeSet::from(["readonly".to_string()]));
    assert_eq!(ctx.grants, Some(vec!["source:mcp:github".to_string()]));
    // Fields an entry leaves out are the command line's.
    let ci = auth(&rt, &clients, &headers(Some("bearer   ci-token-abcdef"))).unwrap();
    assert_eq!(ci.name, "ci");
    let ctx = ci.context(&base);
    assert_eq!(ctx.mode.as_deref(), Some("ci"));
    assert_eq!(ctx.bot.as_deref(), Some("cli-bot"));
    assert_eq!(ctx.flags, BTreeSet::from(["cli-flag".to_string()]));
    assert_eq!(ctx.grants, None);
    assert_ne!(alice.key(), ci.key());

    for (what, h) in [
        ("a wrong token", bearer("alice-token-012345678")),
        ("a longer token", bearer("alice-token-0123456789x")),
        ("the digest itself", bearer(&sha256_hex("ci-token-abcdef"))),
        ("the variable's name", bearer("ALICE_TOKEN")),
        ("another scheme", headers(Some("Basic YWxpY2U6cHc="))),
        ("an empty bearer", headers(Some("Bearer "))),
        (
            "a token with spaces",
            headers(Some("Bearer alice-token-0123456789 x")),
        ),
    ] {
        assert_refused(auth(&rt, &clients, &h), what);
    }
    let mut two = bearer("alice-token-0123456789");
    two.append(
        http::header::AUTHORIZATION,
        "Bearer ci-token-abcdef".parse().unwrap(),
    );
    assert_refused(auth(&rt, &clients, &two), "two Authorization headers");

    // No credential at all: the challenge without an error code.
    let missing = auth(&rt, &clients, &headers(None)).unwrap_err();
    assert!(!missing.presented());
    assert_eq!(missing.status(), http::StatusCode::UNAUTHORIZED);
    assert_eq!(
        missing.www_authenticate(METADATA),
        format!("Bearer resource_metadata=\"{METADATA}\"")
    );
}

#[test]
fn every_client_is_found_wherever_it_stands_in_the_list() {
    // The digests are compared to the end of the list whatever matches,
    // the match picked by a constant-time select: each position must come out.
    let dir = temp_dir("clients-many");
    let mut clients = serde_json::Map::new();
    for i in 0..25 {
        clients.insert(
            format!("c{i}"),
            json!({"token_sha256": sha256_hex(&format!("token-number-{i}")), "bot": format!("bot{i}")}),
        );
    }
    let rt = runtime();
    let loaded = load_in(&dir, &json!({"clients": clients}), &[]).unwrap();
    for i in 0..25 {
        let caller = auth(&rt, &loaded, &bearer(&format!("token-number-{i}"))).unwrap();
        assert_eq!(caller.name, format!("c{i}"));
        assert_eq!(caller.overrides.bot, Some(format!("bot{i}")));
    }
    assert_refused(
        auth(&rt, &loaded, &bearer("token-number-25")),
        "not in the list",
    );
}

#[test]
fn protected_resource_metadata_names_the_files_authorization_servers() {
    let dir = temp_dir("clients-metadata");
    let clients = load_in(
        &dir,
        &json!({"clients": {"a": {"token": "${A}"}}, "authorization_servers": [ISSUER]}),
        &[("A", "aaaaaaaaaaaaaaaa")],
    )
    .unwrap();
    assert_eq!(
        clients.protected_resource_metadata("https://gw.example.com/mcp"),
        json!({"resource": "https://gw.example.com/mcp", "bearer_methods_supported": ["header"],
               "authorization_servers": [ISSUER]})
    );
    assert_eq!(
        toolpolicy::gateway::clients::metadata_url("https://gw.example.com/mcp").as_deref(),
        Some(METADATA)
    );
    assert_eq!(
        toolpolicy::gateway::clients::metadata_url("http://127.0.0.1:8080/").as_deref(),
        Some("http://127.0.0.1:8080/.well-known/oauth-protected-resource")
    );
}

#[test]
fn a_reload_that_fails_keeps_the_last_good_file() {
    let dir = temp_dir("clients-reload");
    let rt = runtime();
    let vars = [("A", "token-a-0123456789"), ("B", "token-b-0123456789")];
    let clients = load_in(
        &dir,
        &json!({"clients": {"a": {"token": "${A}", "mode": "one"}}}),
        &vars,
    )
    .unwrap();
    let path = dir.join("clients.json");
    std::fs::write(&path, r#"{"clients": {"a": {"token": "in clear"}}}"#).unwrap();
    let err = clients.reload().unwrap_err();
    assert_eq!(err.problems[0].path, "clients.a.token");
    assert_eq!(
        auth(&rt, &clients, &bearer("token-a-0123456789"))
            .unwrap()
            .overrides
            .mode
            .as_deref(),
        Some("one")
    );
    std::fs::write(&path, "").unwrap();
    assert!(clients.reload().is_err());
    std::fs::write(
        &path,
        r#"{"clients": {"b": {"token": "${B}", "mode": "two"}}}"#,
    )
    .unwrap();
    clients.reload().unwrap();
    assert_refused(
        auth(&rt, &clients, &bearer("token-a-0123456789")),
        "a token the new file dropped",
    );
    assert_eq!(
        auth(&rt, &clients, &bearer("token-b-0123456789"))
            .unwrap()
            .overrides
            .mode
            .as_deref(),
        Some("two")
    );
}

// -------------------------------------------------------------------- JWT

/// A signing key made for the test, and its public JWK.
pub struct SigningKey {
    key: EncodingKey,
    alg: Algorithm,
    kid: String,
}

impl SigningKey {
    pub fn new(kid: &str, alg: Algorithm) -> SigningKey {
        let pair = match alg {
            Algorithm::ES256 => rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256),
            Algorithm::ES384 => rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384),
            other => panic!("no test key for {other:?}"),
        }
        .unwrap();
        SigningKey {
            key: EncodingKey::from_ec_der(&pair.serialize_der()),
            alg,
            kid: kid.to_string(),
        }
    }

    /// The committed RSA test key, for `RS*` and `PS*`.
    fn rsa(kid: &str, alg: Algorithm) -> SigningKey {
        let pem = std::fs::read_to_string(
            crate::cli::support::root().join("tests/data/jwt/rsa-2048.pem"),
        )
        .unwrap();
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(body)
            .unwrap();
        SigningKey {
            key: EncodingKey::from_rsa_der(&der),
            alg,
            kid: kid.to_string(),
        }
    }

    /// The public key as a JWK, without `alg` unless `with_alg`.
    pub fn jwk(&self, with_alg: bool) -> Value {
        let mut jwk = Jwk::from_encoding_key(&self.key, self.alg).unwrap();
        jwk.common.key_id = Some(self.kid.clone());
        if !with_alg {
            jwk.common.key_algorithm = None;
        }
        serde_json::to_value(&jwk).unwrap()
    }

    pub fn sign(&self, claims: &Value) -> String {
        self.sign_as(claims, Some(&self.kid))
    }

    fn sign_as(&self, claims: &Value, kid: Option<&str>) -> String {
        self.sign_with(self.alg, claims, kid)
    }

    fn sign_with(&self, alg: Algorithm, claims: &Value, kid: Option<&str>) -> String {
        let mut header = Header::new(alg);
        header.kid = kid.map(str::to_string);
        jsonwebtoken::encode(&header, claims, &self.key).unwrap()
    }
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

pub fn claims(sub: &str) -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "exp": now() + 600, "iat": now()})
}

pub fn jwks(keys: &[Value]) -> String {
    let set: JwkSet = serde_json::from_value(json!({"keys": keys})).unwrap();
    drop(set); // the document is one jsonwebtoken reads
    json!({"keys": keys}).to_string()
}

fn jwt_file(dir: &TempDir, jwks_text: &str, extra: Value) -> Clients {
    std::fs::create_dir_all(dir.join("keys")).unwrap();
    std::fs::write(dir.join("keys").join("jwks.json"), jwks_text).unwrap();
    let mut jwt = json!({"issuer": ISSUER, "audience": AUDIENCE, "jwks_file": "keys/jwks.json"});
    for (k, v) in extra.as_object().unwrap() {
        jwt[k] = v.clone();
    }
    load_in(dir, &json!({"jwt": jwt}), &[]).unwrap()
}

/// `header.payload.` with the signature of nobody.
fn unsigned(header: &Value, claims: &Value) -> String {
    format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    )
}

#[test]
fn jwts_signed_by_a_key_of_the_jwks_file_are_accepted_with_their_claims() {
    let dir = temp_dir("clients-jwt");
    let rt = runtime();
    let one = SigningKey::new("one", Algorithm::ES256);
    let two = SigningKey::new("two", Algorithm::ES384);
    let clients = jwt_file(
        &dir,
        &jwks(&[one.jwk(false), two.jwk(true)]),
        json!({"claims": {"mode": ["tp", "mode"], "bot": "tp_bot", "flags": "tp_flags", "grants": "scope"},
               "defaults": {"mode": "view", "flags": ["from-default"]}}),
    );
    let base = Context::mode("cli").with_bot("cli-bot");

    let mut c = claims("alice@example.com");
    c["tp"] = json!({"mode": "ops"});
    c["tp_bot"] = json!("builder");
    c["tp_flags"] = json!(["readonly", "night"]);
    c["scope"] = json!("source:mcp:github Read");
    let caller = auth(&rt, &clients, &bearer(&one.sign(&c))).unwrap();
    assert_eq!(caller.name, "alice@example.com");
    assert_eq!(caller.kind, CallerKind::Jwt);
    let ctx = caller.context(&base);
    assert_eq!(ctx.mode.as_deref(), Some("ops"));
    assert_eq!(ctx.bot.as_deref(), Some("builder"));
    assert_eq!(
        ctx.flags,
        BTreeSet::from(["night".to_string(), "readonly".to_string()])
    );
    assert_eq!(
        ctx.grants,
        Some(vec!["source:mcp:github".to_string(), "Read".to_string()])
    );

    // Claims left out: the defaults, then the command line's.
    let caller = auth(&rt, &clients, &bearer(&two.sign(&claims("bob")))).unwrap();
    let ctx = caller.context(&base);
    assert_eq!(ctx.mode.as_deref(), Some("view"));
    assert_eq!(ctx.bot.as_deref(), Some("cli-bot"));
    assert_eq!(ctx.flags, BTreeSet::from(["from-default".to_string()]));
    assert_eq!(ctx.grants, None);

    // Within the minute of leeway either side.
    let mut late = claims("carol");
    late["exp"] = json!(now() - 20);
    late["nbf"] = json!(now() + 20);
    assert_eq!(
        auth(&rt, &clients, &bearer(&one.sign(&late))).unwrap().name,
        "carol"
    );

    // A claim of the wrong shape refuses the token rather than falling back.
    let mut bad = claims("dave");
    bad["tp"] = json!({"mode": 3});
    assert_refused(
        auth(&rt, &clients, &bearer(&one.sign(&bad))),
        "a mode that is a number",
    );
    let mut bad = claims("dave");
    bad["tp_flags"] = json!(["ok", 1]);
    assert_refused(
        auth(&rt, &clients, &bearer(&one.sign(&bad))),
        "flags that are not strings",
    );
}

#[test]
fn a_token_is_named_by_the_claim_the_file_says() {
    let dir = temp_dir("clients-jwt-name");
    let rt = runtime();
    let key = SigningKey::new("k", Algorithm::ES256);
    let clients = jwt_file(
        &dir,
        &jwks(&[key.jwk(true)]),
        json!({"claims": {"name": ["ext", "user"]}}),
    );
    let mut c = claims("subject-id");
    c["ext"] = json!({"user": "erin"});
    assert_eq!(
        auth(&rt, &clients, &bearer(&key.sign(&c))).unwrap().name,
        "erin"
    );
    assert_refused(
        auth(&rt, &clients, &bearer(&key.sign(&claims("x")))),
        "no name claim",
    );
}

#[test]
fn a_claim_named_by_a_uri_is_found_whole() {
    let dir = temp_dir("clients-jwt-uri");
    let rt = runtime();
    let key = SigningKey::new("k", Algorithm::ES256);
    let grants = "https://toolpolicy.example.com/grants";
    let clients = jwt_file(
        &dir,
        &jwks(&[key.jwk(true)]),
        json!({"claims": {"grants": grants, "mode": "urn:example:tp.mode"},
               "defaults": {"mode": "view", "grants": ["from-default"]}}),
    );
    let mut c = claims("alice");
    c[grants] = json!(["source:mcp:github"]);
    c["urn:example:tp.mode"] = json!("ops");
    let ctx = auth(&rt, &clients, &bearer(&key.sign(&c)))
        .unwrap()
        .context(&Context::default());
    assert_eq!(ctx.grants, Some(vec!["source:mcp:github".to_string()]));
    assert_eq!(ctx.mode.as_deref(), Some("ops"));
    // The nested reading of the URI's dots is not a way to reach it.
    let mut nested = claims("bob");
    nested["https://toolpolicy"] = json!({"example": {"com/grants": ["Read"]}});
    let ctx = auth(&rt, &clients, &bearer(&key.sign(&nested)))
        .unwrap()
        .context(&Context::default());
    assert_eq!(ctx.grants, Some(vec!["from-default".to_string()]));
}

#[test]
fn a_claim_path_is_read_one_way_only() {
    let dir = temp_dir("clients-jwt-paths");
    let rt = runtime();
    let key = SigningKey::new("k", Algorithm::ES256);
    // An array names each member exactly: a top-level claim with a dot in
    // its name, and a claim inside an object, side by side.
    let clients = jwt_file(
        &dir,
        &jwks(&[key.jwk(true)]),
        json!({"claims": {"mode": ["tp.mode"], "bot": ["tp", "bot"],
                          "flags": ["https://toolpolicy.example.com/ns", "flags"]}}),
    );
    let mut c = claims("alice");
    c["tp.mode"] = json!("ops");
    c["tp"] = json!({"mode": "other", "bot": "builder"});
    c["tp.bot"] = json!("not-this-one");
    c["https://toolpolicy.example.com/ns"] = json!({"flags": ["readonly"]});
    let ctx = auth(&rt, &clients, &bearer(&key.sign(&c)))
        .unwrap()
        .context(&Context::default());
    assert_eq!(ctx.mode.as_deref(), Some("ops"));
    assert_eq!(ctx.bot.as_deref(), Some("builder"));
    assert_eq!(ctx.flags, BTreeSet::from(["readonly".to_string()]));

    // A string with a dot that is not a URI could be either: refused with
    // its JSON path, saying how to write each, every one of them at once.
    std::fs::write(dir.join("keys").join("jwks.json"), jwks(&[key.jwk(true)])).unwrap();
    let err = load_in(
        &dir,
        &json!({"jwt": {"issuer": ISSUER, "audience": AUDIENCE, "jwks_file": "keys/jwks.json",
                        "claims": {"mode": "tp.mode", "grants": "realm_access.roles"}}}),
        &[],
    )
    .unwrap_err();
    let shown: Vec<String> = err.problems.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "`jwt.claims.mode`: `tp.mode` can be read two ways: the claim named `tp.mode`, or a claim inside an object\n  help: write `[\"tp\",\"mode\"]` for a claim inside objects, or `[\"tp.mode\"]` for the claim named `tp.mode`",
            "`jwt.claims.grants`: `realm_access.roles` can be read two ways: the claim named `realm_access.roles`, or a claim inside an object\n  help: write `[\"realm_access\",\"roles\"]` for a claim inside objects, or `[\"realm_access.roles\"]` for the claim named `realm_access.roles`",
        ]
    );
}

#[test]
fn every_bad_jwt_gets_the_same_answer() {
    let dir = temp_dir("clients-jwt-bad");
    let rt = runtime();
    let good = SigningKey::new("good", Algorithm::ES256);
    let other = SigningKey::new("other", Algorithm::ES256);
    let p384 = SigningKey::new("good", Algorithm::ES384);
    let clients = jwt_file(&dir, &jwks(&[good.jwk(false)]), json!({}));
    assert_eq!(
        auth(&rt, &clients, &bearer(&good.sign(&claims("ok"))))
            .unwrap()
            .name,
        "ok"
    );

    let with = |k: &str, v: Value| {
        let mut c = claims("mallory");
        c[k] = v;
        good.sign(&c)
    };
    let without = |k: &str| {
        let mut c = claims("mallory");
        c.as_object_mut().unwrap().remove(k);
        good.sign(&c)
    };
    let public_x = good.jwk(false)["x"].as_str().unwrap().to_string();
    let hs256 = {
        let mut h = Header::new(Algorithm::HS256);
        h.kid = Some("good".into());
        jsonwebtoken::encode(
            &h,
            &claims("mallory"),
            &EncodingKey::from_secret(public_x.as_bytes()).unwrap(),
        )
        .unwrap()
    };
    let good_token = good.sign(&claims("mallory"));
    let mut parts: Vec<&str> = good_token.split('.').collect();
    let forged_payload = URL_SAFE_NO_PAD.encode(
        json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "root", "exp": now() + 600}).to_string(),
    );
    parts[1] = &forged_payload;
    let forged = parts.join(".");
    let cases = [
        (
            "wrong issuer",
            "another issuer",
            with("iss", json!("https://evil.example.com")),
        ),
        (
            "wrong audience",
            "another audience",
            with("aud", json!("someone-else")),
        ),
        (
            "audiences without ours",
            "another audience",
            with("aud", json!(["a", "b"])),
        ),
        ("expired", "expired", with("exp", json!(now() - 120))),
        (
            "not yet valid",
            "not valid yet",
            with("nbf", json!(now() + 120)),
        ),
        ("no exp", "no `exp` claim", without("exp")),
        ("no iss", "no `iss` claim", without("iss")),
        ("no aud", "no `aud` claim", without("aud")),
        ("no sub", "no claim `sub`", without("sub")),
        (
            "signed by another key",
            "signature does not match",
            other.sign_as(&claims("mallory"), Some("good")),
        ),
        (
            "unknown kid",
            "no key with its `kid`",
            other.sign(&claims("mallory")),
        ),
        (
            "wrong alg for the key (ES384)",
            "algorithm ES384, which its key does not sign with",
            p384.sign(&claims("mallory")),
        ),
        (
            "HS256 with the public key as secret",
            "algorithm HS256, which its key does not sign with",
            hs256,
        ),
        (
            "alg none",
            "unknown variant `none`",
            unsigned(&json!({"alg": "none", "kid": "good"}), &claims("mallory")),
        ),
        (
            "alg none, no kid",
            "unknown variant `none`",
            unsigned(&json!({"alg": "none"}), &claims("mallory")),
        ),
        (
            "alg None",
            "unknown variant `None`",
            unsigned(&json!({"alg": "None", "typ": "JWT"}), &claims("mallory")),
        ),
        ("a critical header extension", "`crit`", {
            let mut h = Header::new(Algorithm::ES256);
            h.kid = Some("good".into());
            h.crit = Some(vec!["exp2".into()]);
            jsonwebtoken::encode(&h, &claims("mallory"), &good.key).unwrap()
        }),
        ("a forged payload", "signature does not match", forged),
        (
            "not a JWT",
            "a header this gateway does not accept",
            "abc.def.ghi".to_string(),
        ),
    ];
    for (what, why, token) in cases {
        let denied = assert_refused(auth(&rt, &clients, &bearer(&token)), what);
        assert!(denied.presented());
        // Why is for the gateway's log alone.
        assert!(
            denied.reason().starts_with("JWT: ") && denied.reason().contains(why),
            "{what}: {}",
            denied.reason()
        );
    }
}

#[test]
fn a_jwks_holds_public_keys_for_signatures_only() {
    let dir = temp_dir("clients-jwks-keys");
    let rt = runtime();
    let good = SigningKey::new("good", Algorithm::ES256);
    let mut rs_named = good.jwk(false);
    rs_named["alg"] = json!("RS256");
    rs_named["kid"] = json!("rs-named");
    let mut enc = good.jwk(false);
    enc["use"] = json!("enc");
    enc["kid"] = json!("enc");
    let oct = json!({"kty": "oct", "k": "c2VjcmV0", "kid": "oct", "alg": "HS256"});
    // Only the usable key is kept; the others are warnings with the path.
    let clients = jwt_file(
        &dir,
        &jwks(&[oct.clone(), rs_named.clone(), enc.clone(), good.jwk(true)]),
        json!({}),
    );
    let warnings: Vec<String> = clients.warnings().iter().map(ToString::to_string).collect();
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert!(
        warnings
            .iter()
            .all(|w| w.starts_with("`jwt.jwks_file`: key ")),
        "{warnings:?}"
    );
    assert!(warnings[0].contains("shared secret"), "{warnings:?}");
    let hs = {
        let mut h = Header::new(Algorithm::HS256);
        h.kid = Some("oct".into());
        jsonwebtoken::encode(
            &h,
            &claims("m"),
            &EncodingKey::from_secret(b"secret").unwrap(),
        )
        .unwrap()
    };
    assert_refused(
        auth(&rt, &clients, &bearer(&hs)),
        "HS256 with an `oct` key of the set",
    );
    assert_eq!(
        auth(&rt, &clients, &bearer(&good.sign(&claims("ok"))))
            .unwrap()
            .name,
        "ok"
    );
    // A token without a `kid` is checked only when the set has one key.
    assert_eq!(
        auth(&rt, &clients, &bearer(&good.sign_as(&claims("ok"), None)))
            .unwrap()
            .name,
        "ok"
    );

    // A set with no usable key at all is an error with its path.
    std::fs::write(dir.join("keys").join("jwks.json"), jwks(&[oct])).unwrap();
    let err = load_in(
        &dir,
        &json!({"jwt": {"issuer": ISSUER, "audience": AUDIENCE, "jwks_file": "keys/jwks.json"}}),
        &[],
    )
    .unwrap_err();
    assert_eq!(err.problems[0].path, "jwt.jwks_file");
    assert!(
        err.problems[0]
            .message
            .contains("no key in the set can check a signature"),
        "{err}"
    );
    std::fs::write(dir.join("keys").join("jwks.json"), "{\"keys\": 3}").unwrap();
    let err = load_in(
        &dir,
        &json!({"jwt": {"issuer": ISSUER, "audience": AUDIENCE, "jwks_file": "keys/jwks.json"}}),
        &[],
    )
    .unwrap_err();
    assert!(err.problems[0].message.contains("no `keys` array"), "{err}");
}

#[test]
fn two_keys_and_a_token_without_kid_is_refused() {
    let dir = temp_dir("clients-jwks-two");
    let rt = runtime();
    let a = SigningKey::new("a", Algorithm::ES256);
    let b = SigningKey::new("b", Algorithm::ES256);
    let clients = jwt_file(&dir, &jwks(&[a.jwk(true), b.jwk(true)]), json!({}));
    assert_eq!(
        auth(&rt, &clients, &bearer(&b.sign(&claims("b"))))
            .unwrap()
            .name,
        "b"
    );
    assert_refused(
        auth(&rt, &clients, &bearer(&b.sign_as(&claims("b"), None))),
        "no kid among two keys",
    );
}

// ------------------------------------------------------- JWKS from a URL

/// A JWKS served on 127.0.0.1 from a body and status the test changes,
/// after a delay it sets, counting the requests.
struct JwksServer {
    url: String,
    state: Arc<Mutex<(u16, String)>>,
    delay: Arc<Mutex<Duration>>,
    hits: Arc<AtomicUsize>,
}

impl JwksServer {
    async fn start(body: String) -> JwksServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new((200u16, body)));
        let hits = Arc::new(AtomicUsize::new(0));
        let delay = Arc::new(Mutex::new(Duration::ZERO));
        let (s, h, d) = (state.clone(), hits.clone(), delay.clone());
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (s, h, d) = (s.clone(), h.clone(), d.clone());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(
                        move |_req: hyper::Request<hyper::body::Incoming>| {
                            h.fetch_add(1, Ordering::SeqCst);
                            let (status, body) = s.lock().unwrap().clone();
                            let mut response = hyper::Response::new(http_body_util::Full::new(
                                bytes::Bytes::from(body),
                            ));
                            *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
                            let delay = *d.lock().unwrap();
                            async move {
                                tokio::time::sleep(delay).await;
                                Ok::<_, std::convert::Infallible>(response)
                            }
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        JwksServer {
            url,
            state,
            delay,
            hits,
        }
    }

    fn set(&self, status: u16, body: String) {
        *self.state.lock().unwrap() = (status, body);
    }

    fn set_delay(&self, delay: Duration) {
        *self.delay.lock().unwrap() = delay;
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    /// Waits (10 s at most) until it has been asked `n` times.
    async fn wait_for_hits(&self, n: usize) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while self.hits() < n {
            assert!(
                tokio::time::Instant::now() < deadline,
                "asked {} times, not {n}",
                self.hits()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

#[test]
fn keys_from_a_loopback_url_are_fetched_cached_and_refetched_for_a_new_kid() {
    let dir = temp_dir("clients-jwks-url");
    let rt = runtime();
    let first = SigningKey::new("first", Algorithm::ES256);
    let second = SigningKey::new("second", Algorithm::ES256);
    let third = SigningKey::new("third", Algorithm::ES256);
    rt.block_on(async {
        let server = JwksServer::start(jwks(&[first.jwk(true)])).await;
        let clients = load_in(
            &dir,
            &json!({"jwt": {"issuer": ISSUER, "audience": AUDIENCE, "jwks_url": server.url,
                            "claims": {"mode": "m"}}}),
            &[],
        )
        .unwrap();
        // Not fetched before a token asks.
        assert_eq!(server.hits(), 0);
        let mut c = claims("alice");
        c["m"] = json!("ops");
        let caller = clients
            .authenticate(&bearer(&first.sign(&c)))
            .await
            .unwrap();
        assert_eq!(
            (caller.name.as_str(), caller.overrides.mode.as_deref()),
            ("alice", Some("ops"))
        );
        assert_eq!(server.hits(), 1);
        // Cached.
        clients
            .authenticate(&bearer(&first.sign(&claims("a2"))))
            .await
            .unwrap();
        assert_eq!(server.hits(), 1);

        // The issuer rotates: an unknown kid fetches once more...
        server.set(200, jwks(&[first.jwk(true), second.jwk(true)]));
        clients.set_jwks_timing(Timing {
            refresh: Duration::from_secs(300),
            pause: Duration::ZERO,
        });
        assert_eq!(
            clients
                .authenticate(&bearer(&second.sign(&claims("bob"))))
                .await
                .unwrap()
                .name,
            "bob"
        );
        assert_eq!(server.hits(), 2);
        // ...but not more than once per pause, whatever the tokens say.
        clients.set_jwks_timing(Timing {
            refresh: Duration::from_secs(300),
            pause: Duration::from_secs(60),
        });
        server.set(
            200,
            jwks(&[first.jwk(true), second.jwk(true), third.jwk(true)]),
        );
        for _ in 0..5 {
            let denied = clients
                .authenticate(&bearer(&third.sign(&claims("eve"))))
                .await
                .unwrap_err();
            assert_eq!(
                denied.www_authenticate(METADATA),
                format!("Bearer resource_metadata=\"{METADATA}\", error=\"invalid_token\"")
            );
        }
        assert_eq!(server.hits(), 2);

        // Keys past their refresh are used at once while a fetch runs
        // beside the request; a fetch that fails keeps the last good keys.
        clients.set_jwks_timing(Timing {
            refresh: Duration::ZERO,
            pause: Duration::ZERO,
        });
        for (status, body) in [(500, "oops"), (200, "{\"keys\": []}")] {
            server.set(status, body.into());
            for _ in 0..2 {
                let before = server.hits();
                for (key, name) in [(&first, "al"), (&second, "bob")] {
                    let h = bearer(&key.sign(&claims(name)));
                    assert_eq!(clients.authenticate(&h).await.unwrap().name, name);
                }
                server.wait_for_hits(before + 1).await;
            }
        }
        // And the refresh takes the new set once it is good.
        server.set(200, jwks(&[third.jwk(true)]));
        assert_eq!(
            clients
                .authenticate(&bearer(&third.sign(&claims("eve"))))
                .await
                .unwrap()
                .name,
            "eve"
        );
        clients.set_jwks_timing(Timing {
            refresh: Duration::from_secs(300),
            pause: Duration::from_secs(60),
        });
        assert!(
            clients
                .authenticate(&bearer(&first.sign(&claims("al"))))
                .await
                .is_err()
        );
    });
}

#[test]
fn a_jwks_url_that_cannot_be_fetched_refuses_tokens_alike() {
    let dir = temp_dir("clients-jwks-down");
    let rt = runtime();
    let key = SigningKey::new("k", Algorithm::ES256);
    // A port nothing listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let clients = load_in(
        &dir,
        &json!({"jwt": {"issuer": ISSUER, "audience": AUDIENCE,
                        "jwks_url": format!("http://127.0.0.1:{port}/jwks.json")}}),
        &[],
    )
    .unwrap();
    assert_refused(
        auth(&rt, &clients, &bearer(&key.sign(&claims("a")))),
        "keys that cannot be fetched",
    );
}

#[test]
fn the_watch_reloads_a_changed_file_and_keeps_the_last_good_one() {
    let dir = temp_dir("clients-watch");
    let rt = runtime();
    let vars = [("A", "token-a-0123456789"), ("B", "token-b-0123456789")];
    let clients =
        Arc::new(load_in(&dir, &json!({"clients": {"a": {"token": "${A}"}}}), &vars).unwrap());
    let path = dir.join("clients.json");
    let results: Arc<Mutex<Vec<bool>>> = Arc::default();
    rt.block_on(async {
        let seen = results.clone();
        let watch = tokio::spawn(
            clients
                .clone()
                .watch(move |r| seen.lock().unwrap().push(r.is_ok())),
        );
        let wait_for = |n: usize| {
            let results = results.clone();
            async move {
                let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
                while results.lock().unwrap().len() < n {
                    assert!(
                        tokio::time::Instant::now() < deadline,
                        "no reload within 20 s"
                    );
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        };
        // Let the watch take its first look.
        tokio::time::sleep(Duration::from_millis(200)).await;
        std::fs::write(&path, r#"{"clients": {"a": {"token": "now in clear!"}}}"#).unwrap();
        wait_for(1).await;
        assert_eq!(*results.lock().unwrap(), [false]);
        assert!(
            clients
                .authenticate(&bearer("token-a-0123456789"))
                .await
                .is_ok()
        );
        std::fs::write(
            &path,
            r#"{"clients": {"b": {"token": "${B}", "mode": "two"}}}"#,
        )
        .unwrap();
        wait_for(2).await;
        assert_eq!(*results.lock().unwrap(), [false, true]);
        assert!(
            clients
                .authenticate(&bearer("token-a-0123456789"))
                .await
                .is_err()
        );
        assert_eq!(
            clients
                .authenticate(&bearer("token-b-0123456789"))
                .await
                .unwrap()
                .name,
            "b"
        );
        watch.abort();
    });
}

#[test]
fn the_clients_file_the_gateway_page_shows_loads_and_lets_its_clients_in() {
    let page =
        std::fs::read_to_string(crate::cli::support::root().join("docs/gateway.md")).unwrap();
    let section = &page[page.find("\n## The clients file").expect("the section")..];
    let start = section.find("```json\n").expect("a JSON block") + "```json\n".len();
    let text = &section[start..start + section[start..].find("```").unwrap()];
    let dir = temp_dir("clients-doc");
    let key = SigningKey::new("doc", Algorithm::ES256);
    std::fs::write(dir.join("jwks.json"), jwks(&[key.jwk(true)])).unwrap();
    let path = dir.join("clients.json");
    std::fs::write(&path, text).unwrap();
    let clients =
        Clients::load_with_env(&path, env(&[("ALICE_TOKEN", "alice-token-0123456789")])).unwrap();
    let rt = runtime();
    let alice = auth(&rt, &clients, &bearer("alice-token-0123456789")).unwrap();
    assert_eq!(alice.overrides.mode.as_deref(), Some("ops"));
    // The page's digest is the one of the token `test`.
    let ci = auth(&rt, &clients, &bearer("test")).unwrap();
    assert_eq!(
        (ci.name.as_str(), ci.overrides.mode.as_deref()),
        ("ci", Some("ci"))
    );
    let mut c = claims("someone");
    c["iss"] = json!("https://id.example.com");
    c["tp_flags"] = json!(["readonly"]);
    let jwt = auth(&rt, &clients, &bearer(&key.sign(&c))).unwrap();
    assert_eq!(jwt.overrides.mode.as_deref(), Some("view"));
    assert_eq!(
        jwt.overrides.flags,
        Some(BTreeSet::from(["readonly".to_string()]))
    );
}

#[test]
fn authenticate_can_run_on_any_thread_of_a_runtime() {
    fn send<T: Send>(t: T) -> T {
        t
    }
    let dir = temp_dir("clients-send");
    let clients = load_in(
        &dir,
        &json!({"clients": {"a": {"token": "${A}"}}}),
        &[("A", "aaaaaaaaaaaaaaaa")],
    )
    .unwrap();
    let h = bearer("aaaaaaaaaaaaaaaa");
    assert!(runtime().block_on(send(clients.authenticate(&h))).is_ok());
}

#[test]
fn the_gateway_refuses_a_bad_clients_file_before_serving_with_exit_2() {
    let dir = temp_dir("clients-cli");
    std::fs::write(dir.join("p.policy"), "Defer(*)\n").unwrap();
    std::fs::write(dir.join("servers.json"), r#"{"mcpServers": {}}"#).unwrap();
    std::fs::write(
        dir.join("clients.json"),
        r#"{"clients": {"alice": {"token": "in clear", "flag": []}}}"#,
    )
    .unwrap();
    let out = std::process::Command::new(crate::gateway::support::policy_bin())
        .current_dir(&*dir)
        .args([
            "gateway",
            "--policy",
            "p.policy",
            "--servers",
            "servers.json",
        ])
        .args(["--listen", "127.0.0.1:0", "--clients", "clients.json"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("error: `clients.json` is not a valid clients file:\n"),
        "{err}"
    );
    assert!(
        err.contains("`clients.alice.flag`: unknown key `flag`\n  help: did you mean `flags`"),
        "{err}"
    );
    assert!(
        err.contains("`clients.alice.token`: a token is never written in the file in clear"),
        "{err}"
    );
    assert!(!err.contains("serving"), "{err}");
}

#[test]
fn rsa_and_ed25519_keys_check_the_algorithms_of_their_type() {
    let dir = temp_dir("clients-jwt-types");
    let rt = runtime();
    let rsa = SigningKey::rsa("rsa", Algorithm::RS256);
    let rsa_pinned = SigningKey::rsa("rsa-rs256", Algorithm::RS256);
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
    let ed = SigningKey {
        key: EncodingKey::from_ed_der(&pair.serialize_der()),
        alg: Algorithm::EdDSA,
        kid: "ed".into(),
    };
    let ed_jwk = json!({"kty": "OKP", "crv": "Ed25519", "kid": "ed",
                        "x": URL_SAFE_NO_PAD.encode(pair.public_key_raw())});
    let clients = jwt_file(
        &dir,
        &jwks(&[rsa.jwk(false), rsa_pinned.jwk(true), ed_jwk]),
        json!({}),
    );
    // An RSA key without `alg` checks every RSA algorithm...
    for alg in [
        Algorithm::RS256,
        Algorithm::RS512,
        Algorithm::PS256,
        Algorithm::PS384,
    ] {
        let token = rsa.sign_with(alg, &claims("r"), Some("rsa"));
        assert_eq!(
            auth(&rt, &clients, &bearer(&token)).unwrap().name,
            "r",
            "{alg:?}"
        );
    }
    // ...one with `alg` that one alone.
    let rs = rsa_pinned.sign_with(Algorithm::RS256, &claims("p"), Some("rsa-rs256"));
    assert_eq!(auth(&rt, &clients, &bearer(&rs)).unwrap().name, "p");
    let ps = rsa_pinned.sign_with(Algorithm::PS256, &claims("p"), Some("rsa-rs256"));
    let denied = assert_refused(auth(&rt, &clients, &bearer(&ps)), "PS256 with an RS256 key");
    assert!(
        denied
            .reason()
            .contains("PS256, which its key does not sign with"),
        "{}",
        denied.reason()
    );
    assert_eq!(
        auth(&rt, &clients, &bearer(&ed.sign(&claims("e"))))
            .unwrap()
            .name,
        "e"
    );
    // A key of one type never checks another type's algorithm.
    let es = SigningKey::new("rsa", Algorithm::ES256).sign(&claims("x"));
    assert_refused(
        auth(&rt, &clients, &bearer(&es)),
        "ES256 under an RSA key's kid",
    );
    let ed_as_rsa = ed.sign_as(&claims("x"), Some("rsa"));
    assert_refused(
        auth(&rt, &clients, &bearer(&ed_as_rsa)),
        "EdDSA under an RSA key's kid",
    );
}

#[test]
fn a_slow_issuer_holds_no_request_for_keys_already_in_hand() {
    let dir = temp_dir("clients-jwks-slow");
    let rt = runtime();
    let key = SigningKey::new("k", Algorithm::ES256);
    rt.block_on(async {
        let server = JwksServer::start(jwks(&[key.jwk(true)])).await;
        let clients = load_in(
            &dir,
            &json!({"jwt": {"issuer": ISSUER, "audience": AUDIENCE, "jwks_url": server.url}}),
            &[],
        )
        .unwrap();
        let h = bearer(&key.sign(&claims("a")));
        clients.authenticate(&h).await.unwrap();
        // The keys are due for a refresh and the issuer takes 5 s to answer:
        // requests go on with the keys in hand meanwhile.
        clients.set_jwks_timing(Timing {
            refresh: Duration::ZERO,
            pause: Duration::ZERO,
        });
        server.set_delay(Duration::from_secs(5));
        let answered = tokio::time::timeout(Duration::from_secs(2), async {
            for _ in 0..3 {
                clients.authenticate(&h).await.unwrap();
            }
        })
        .await;
        assert!(answered.is_ok(), "a request waited for the slow issuer");
        server.wait_for_hits(2).await;
    });
}

/// A `jwks_file` swapped for a FIFO for a while: the reload that sees it
/// refuses it at once, keeping the last good file, and says why; the
/// reloads after it go on, so a token removed from the clients file stops
/// working. Every wait is bounded, and the runtime is left without waiting
/// for a reload that might still be blocked.
#[cfg(unix)]
#[test]
fn a_fifo_at_the_jwks_file_never_stops_later_reloads() {
    let dir = temp_dir("clients-jwks-fifo");
    let key = SigningKey::new("one", Algorithm::ES256);
    std::fs::create_dir_all(dir.join("keys")).unwrap();
    let jwks_path = dir.join("keys").join("jwks.json");
    let jwks_text = jwks(&[key.jwk(true)]);
    std::fs::write(&jwks_path, &jwks_text).unwrap();
    let jwt = json!({"issuer": ISSUER, "audience": AUDIENCE, "jwks_file": "keys/jwks.json"});
    let vars = [("A", "token-a-0123456789"), ("B", "token-b-0123456789")];
    let clients = Arc::new(
        load_in(
            &dir,
            &json!({"clients": {"a": {"token": "${A}", "mode": "one"}}, "jwt": jwt.clone()}),
            &vars,
        )
        .unwrap(),
    );
    let said: Arc<Mutex<Vec<String>>> = Arc::default();
    let rt = runtime();
    let (refused_fifo, dropped_token_refused) = rt.block_on(async {
        let seen = Arc::clone(&said);
        let watch = tokio::spawn(Arc::clone(&clients).watch(move |r| {
            let line = match r {
                Ok(()) => "reloaded".to_string(),
                Err(e) => e.to_string(),
            };
            seen.lock().unwrap().push(line);
        }));
        let wait_for = |what: &'static str| {
            let said = Arc::clone(&said);
            async move {
                for _ in 0..200 {
                    if said.lock().unwrap().iter().any(|l| l.contains(what)) {
                        return true;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                false
            }
        };
        // The watch takes its first look before the swap.
        tokio::time::sleep(Duration::from_millis(1200)).await;
        std::fs::remove_file(&jwks_path).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(&jwks_path)
            .status();
        let refused_fifo = made.is_ok_and(|s| s.success())
            && wait_for("it is not a regular file (a pipe, a FIFO, a device or a folder)").await;
        tokio::time::sleep(Duration::from_millis(2500)).await;
        std::fs::remove_file(&jwks_path).unwrap();
        std::fs::write(&jwks_path, &jwks_text).unwrap();
        std::fs::write(
            dir.join("clients.json"),
            json!({"clients": {"b": {"token": "${B}", "mode": "two"}}, "jwt": jwt}).to_string(),
        )
        .unwrap();
        let mut refused = false;
        for _ in 0..200 {
            if clients
                .authenticate(&bearer("token-a-0123456789"))
                .await
                .is_err()
            {
                refused = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        watch.abort();
        (refused_fifo, refused)
    });
    rt.shutdown_background();
    let said = said.lock().unwrap().clone();
    assert!(refused_fifo, "the FIFO was never refused: {said:?}");
    assert!(
        dropped_token_refused,
        "a token removed from the file still works: {said:?}"
    );
    assert_eq!(
        said.last().map(String::as_str),
        Some("reloaded"),
        "{said:?}"
    );
}
