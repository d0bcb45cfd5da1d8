//! `policy test --coverage [--min-coverage P]`: the rules no case decides,
//! by file and line, shadowed ones named as such, and the exit code.

use crate::cli::support::{policy, scratch};
use crate::cli::tools::text;

#[test]
fn untested_and_shadowed_rules_are_named_and_the_minimum_is_held() {
    let dir = scratch("coverage");
    std::fs::write(
        dir.join("p.policy"),
        "Defer(*)\nNoDefer(Read, Grep)\nHide(Bash)\nHide(Bash)\nGrant(*)\n",
    )
    .expect("write");
    std::fs::write(
        dir.join("p.test.toml"),
        "[[case]]\nitem = \"Read\"\nexpect = \"active\"\n\n[[case]]\nitem = \"Web\"\nexpect = \"deferred\"\n",
    )
    .expect("write");
    let file = dir.join("p.test.toml");
    let f = file.to_str().expect("utf-8");
    let out = policy(&["test", f, "--coverage"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("3 of 5 rules decide a case (60.0%)"),
        "{stdout}"
    );
    assert!(
        stdout.contains(":2: `NoDefer(Read, Grep)`: no case is decided through `Grep` (2:15)"),
        "{stdout}"
    );
    assert!(
        stdout.contains(":3: `Hide(Bash)` decides no case: untested"),
        "{stdout}"
    );
    assert!(
        stdout.contains(":4: `Hide(Bash)` can decide nothing: "),
        "{stdout}"
    );
    assert!(stdout.contains("[PL103]"), "{stdout}");
    // The grant let both items through: it is exercised.
    assert!(!stdout.contains("`Grant(*)`"), "{stdout}");
    let out = policy(&["test", f, "--min-coverage", "75"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("under the minimum of 75%"));
    let out = policy(&["test", f, "--min-coverage", "60", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(doc["coverage"]["percent"], 60.0);
    assert_eq!(
        doc["coverage"]["files"][0]["untested"][2]["lint"]["code"],
        "PL103"
    );
    assert_eq!(
        policy(&["test", f, "--min-coverage", "120"]).status.code(),
        Some(2)
    );
}

#[test]
fn the_bundled_gateway_tests_decide_every_rule() {
    let out = policy(&[
        "test",
        "policies/gateway.test.toml",
        "--min-coverage",
        "100",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("5 of 5 rules decide a case (100.0%)"),
        "{stdout}"
    );
}
