//! docs/replay.md: a path a replay scenario or a `.test.toml` names is relative to
//! that file's folder and may not leave it, and nothing that is not a policy
//! is ever echoed: a CI job that replays contributed scenarios must not
//! publish its secrets.

use std::path::Path;

use crate::cli::support::{policy as run_policy, scratch};

/// One expectation, so that a test file is refused for its path, not for
/// being empty.
const CASE: &str = "[[case]]\nitem = \"x\"\nexpect = \"deferred\"\n";

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p.to_str().expect("utf-8 path").to_string()
}

#[test]
fn data_files_name_only_files_in_their_folder() {
    let folder = scratch("data-paths");
    let dir = folder.join("");
    let secret = write(&dir, "secret.txt", "API_KEY=hunter2\n");
    let sub = dir.join("sub");
    std::fs::create_dir_all(&sub).expect("sub");
    write(&sub, "r.json", "[]");
    write(&sub, "env.txt", "API_KEY=hunter2\n");
    for (named, why) in [
        ("/proc/self/environ", "is absolute"),
        (secret.as_str(), "is absolute"),
        ("../secret.txt", "leaves the folder"),
        ("env.txt", "is not a `.policy` file"),
    ] {
        let scenario = format!(
            r#"{{"policy": {}, "registry": "r.json", "steps": [{{"prompt": "x"}}]}}"#,
            serde_json::to_string(named).expect("json")
        );
        let s = write(&sub, "s.json", &scenario);
        let out = run_policy(&["replay", &s]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{named}: {err}");
        assert!(
            err.contains(why) && err.contains("--policy"),
            "{named}: {err}"
        );
        assert!(!err.contains("hunter2") && out.stdout.is_empty(), "{err}");

        let test = format!(
            "policy = {}\n{CASE}",
            serde_json::to_string(named).expect("json")
        );
        let t = write(&sub, "t.test.toml", &test);
        let out = run_policy(&["test", &t]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{named}: {err}");
        assert!(err.contains(why), "{named}: {err}");
        assert!(!err.contains("hunter2"), "{err}");
    }
    // The flags still point anywhere, and a path inside the folder is fine.
    let p = write(&dir, "p.policy", "Defer(Bash)\n");
    let s = write(
        &sub,
        "s.json",
        r#"{"registry": "r.json", "steps": [{"prompt": "x"}]}"#,
    );
    let out = run_policy(&["replay", &s, "--policy", &p]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[cfg(unix)]
#[test]
fn a_symbolic_link_out_of_the_folder_is_refused() {
    let folder = scratch("data-links");
    let dir = folder.join("");
    write(&dir, "outside.policy", "Defer(x)\n");
    let sub = dir.join("sub");
    std::fs::create_dir_all(&sub).expect("sub");
    std::os::unix::fs::symlink(dir.join("outside.policy"), sub.join("in.policy")).expect("link");
    let t = write(&sub, "in.test.toml", CASE);
    let out = run_policy(&["test", &t]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("leads out of the folder"), "{err}");
}
