//! What a caller's credential gives it, through the real HTTP listener
//! (`policy gateway --listen --clients F`): the grants of a static token's
//! client, of a JWT's claims and of `jwt.defaults`, over `--grant`; claims
//! named by URI; and what a token whose context the policy refuses is told.
//! Each is tried in a session (2025-11-25) and without one (2026-07-28).

use serde_json::{Value, json};

use crate::gateway::clients::{AUDIENCE, ISSUER, SigningKey, claims, jwks};
use crate::gateway::listen::{Listening, Session, stateless};
use crate::gateway::support::*;
use jsonwebtoken::Algorithm;

/// Every tool deferred, none hidden: only grants keep a tool from a caller.
const POLICY: &str = "Defer(*)\n";
/// The tools a caller may reach, in the order [`reached`] tries them.
const ALL: [&str; 2] = ["fx__pid", "fx__secret"];

const OPEN: &str = "open-token-0123456789";
const NONE: &str = "none-token-0123456789";

fn as_bearer(token: &str) -> [(&'static str, String); 1] {
    [("Authorization", format!("Bearer {token}"))]
}

/// The tools of [`ALL`] a caller reaches through the call-through tool,
/// without a session and in one (after a search); the two must agree.
fn reached(addr: &str, token: &str) -> Vec<&'static str> {
    let auth = as_bearer(token);
    let headers: Vec<(&str, &str)> = auth.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut session = Session::open_with(addr, &headers);
    let mut out = Vec::new();
    for tool in ALL {
        let through = stateless(
            addr,
            &headers,
            "tools/call",
            json!({"name": "call_tool", "arguments": {"name": tool}}),
        )
        .result();
        // In a session a deferred tool is found first, then called. A
        // caller granted nothing has no search tool nor call-through tool.
        let found = session.call("tool_search", json!({"query": "", "names": [tool]}));
        assert_eq!(
            is_error(&through),
            is_error(&found) || text(&found).contains("Not available"),
            "{tool}: the search and the call disagree: {found} / {through}"
        );
        let in_session = session.call("call_tool", json!({"name": tool}));
        assert_eq!(
            is_error(&through),
            is_error(&in_session),
            "{tool}: without a session {through}, in one {in_session}"
        );
        if !is_error(&through) {
            out.push(tool);
        }
    }
    out
}

/// A JWKS file of `key` in `dir`, by absolute path (the clients file is
/// written into the listener's own folder).
fn jwks_file(dir: &std::path::Path, key: &SigningKey) -> String {
    let path = dir.join("jwks.json");
    std::fs::write(&path, jwks(&[key.jwk(true)])).unwrap();
    path.to_str().unwrap().to_string()
}

fn token(key: &SigningKey, sub: &str, extra: Value) -> String {
    let mut c = claims(sub);
    for (k, v) in extra.as_object().unwrap() {
        c[k] = v.clone();
    }
    key.sign(&c)
}

#[test]
fn an_empty_grant_list_grants_nothing_on_every_path() {
    let keys = temp_dir("callers-grants-keys");
    let key = SigningKey::new("k", Algorithm::ES256);
    let file = json!({
        "clients": {
            "open": {"token": "${OPEN_TOKEN}"},
            "none": {"token": "${NONE_TOKEN}", "grants": []}},
        "jwt": {"issuer": ISSUER, "audience": AUDIENCE, "jwks_file": jwks_file(&keys, &key),
                "claims": {"grants": "scope"}}});
    let l = Listening::with_clients(
        POLICY,
        &file,
        &[("OPEN_TOKEN", OPEN), ("NONE_TOKEN", NONE)],
        &["--grant", "fx__pid"],
    );
    let addr = &l.addr;
    // A client that names no grants has the command line's.
    assert_eq!(reached(addr, OPEN), ["fx__pid"]);
    // One whose list is empty has none at all: not the command line's,
    // and not "no allow-list".
    assert_eq!(reached(addr, NONE), Vec::<&str>::new());
    // A token without the claim: the command line's grants.
    assert_eq!(reached(addr, &token(&key, "t0", json!({}))), ["fx__pid"]);
    // A token that grants one tool gets that one.
    assert_eq!(
        reached(addr, &token(&key, "t1", json!({"scope": "fx__secret"}))),
        ["fx__secret"]
    );
    // An OAuth client that asked for no scope: nothing, however the issuer
    // writes "no scope".
    for empty in [json!(""), json!("   "), json!([])] {
        let t = token(&key, "t2", json!({"scope": empty}));
        assert_eq!(reached(addr, &t), Vec::<&str>::new(), "scope {empty}");
    }
}

#[test]
fn empty_grants_in_the_jwt_defaults_grant_nothing() {
    let keys = temp_dir("callers-defaults-keys");
    let key = SigningKey::new("k", Algorithm::ES256);
    let file = json!({
        "jwt": {"issuer": ISSUER, "audience": AUDIENCE, "jwks_file": jwks_file(&keys, &key),
                "claims": {"grants": "scope"}, "defaults": {"grants": []}}});
    let l = Listening::with_clients(POLICY, &file, &[], &["--grant", "fx__pid"]);
    assert_eq!(
        reached(&l.addr, &token(&key, "t0", json!({}))),
        Vec::<&str>::new()
    );
    assert_eq!(
        reached(
            &l.addr,
            &token(&key, "t1", json!({"scope": "fx__pid fx__secret"}))
        ),
        ["fx__pid", "fx__secret"]
    );
}

#[test]
fn a_mapped_claim_no_token_carries_is_said_once() {
    let keys = temp_dir("callers-unseen-keys");
    let key = SigningKey::new("k", Algorithm::ES256);
    // The issuer writes `…/grants`; the file names `…/grant`.
    let file = json!({
        "jwt": {"issuer": ISSUER, "audience": AUDIENCE, "jwks_file": jwks_file(&keys, &key),
                "claims": {"mode": "tp_mode", "grants": "https://toolpolicy.example.com/grant"},
                "defaults": {"grants": ["fx__pid"]}}});
    let l = Listening::with_clients(POLICY, &file, &[], &[]);
    for sub in ["a", "b", "c"] {
        let t = token(
            &key,
            sub,
            json!({"tp_mode": "m", "https://toolpolicy.example.com/grants": ["fx__secret"]}),
        );
        assert_eq!(reached(&l.addr, &t), ["fx__pid"], "the defaults");
    }
    // Standard error is written in order: once the refusal after the
    // tokens is there, so is every line their requests wrote.
    assert_eq!(stateless(&l.addr, &[], "tools/list", json!({})).status, 401);
    assert!(l.gw.wait_stderr("refused a request with 401", 1));
    let err = l.gw.stderr();
    let said = "no token accepted so far carries the claim `https://toolpolicy.example.com/grant` that `jwt.claims.grants` names";
    assert_eq!(err.matches(said).count(), 1, "{err}");
    // A claim the tokens carry is not worth a word.
    assert!(!err.contains("jwt.claims.mode"), "{err}");
}

/// A policy whose modes and flags are not every caller's business.
const PRIVATE: &str = "\
Defer(*)
mode ops {
  NoDefer(fx__pid)
}
mode incident-breakglass {
  NoDefer(*)
}
when nightly-audit {
  Hide(fx__secret)
}
";

#[test]
fn a_token_the_policy_cannot_serve_is_told_its_own_value_only() {
    let keys = temp_dir("callers-refused-keys");
    let key = SigningKey::new("k", Algorithm::ES256);
    let file = json!({
        "jwt": {"issuer": ISSUER, "audience": AUDIENCE, "jwks_file": jwks_file(&keys, &key),
                "claims": {"mode": "tp_mode", "flags": "tp_flags"}}});
    let l = Listening::with_clients(PRIVATE, &file, &[], &["--mode", "ops"]);
    let cases = [
        (json!({"tp_mode": "opz"}), "opz"),
        (json!({"tp_flags": ["nightly-audi"]}), "nightly-audi"),
    ];
    for (extra, own) in cases {
        let t = token(&key, "mallory", extra);
        let auth = as_bearer(&t);
        let headers: Vec<(&str, &str)> = auth.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let without = stateless(&l.addr, &headers, "tools/list", json!({}));
        let mut session = Session::open_with(&l.addr, &headers);
        let within = session.request("tools/list", json!({}));
        for answer in [&without, &within] {
            let body = &answer.body;
            assert!(body.contains(own), "{body}");
            assert!(body.contains("\"error\""), "{body}");
            for private in ["breakglass", "`ops`", "nightly-audit`", "did you mean"] {
                assert!(!body.contains(private), "`{private}` in {body}");
            }
        }
    }
    // The gateway's own log has it all, naming the caller.
    assert!(l.gw.wait_stderr("did you mean", 4), "{}", l.gw.stderr());
    let err = l.gw.stderr();
    assert!(err.contains("`mallory`"), "{err}");
    assert!(err.contains("did you mean `ops`"), "{err}");
    assert!(err.contains("did you mean `nightly-audit`"), "{err}");
}
