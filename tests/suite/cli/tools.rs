//! `policy fmt`, `policy test`, and the edges of `check` and `explain`, run as
//! a user runs them. Every bundled policy ships an expectation file, and CI
//! runs them all through this test.

use crate::cli::support::{policy, policy_with_stdin, root, scratch};

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn every_bundled_policy_has_passing_expectations() {
    for entry in std::fs::read_dir(root().join("policies")).expect("policies/") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "policy") {
            let tests = path.with_extension("test.toml");
            assert!(
                tests.exists(),
                "{} has no {}",
                path.display(),
                tests.display()
            );
        }
    }
    let out = policy(&["test", "policies"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let last = stdout.lines().last().unwrap_or_default();
    assert!(last.ends_with(" passed, 0 failed"), "{stdout}");
}

#[test]
fn bundled_policies_are_formatted_and_clean() {
    let out = policy(&["fmt", "--check", "policies"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let out = policy(&["check", "--deny-warnings", "policies"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

#[test]
fn fmt_rewrites_in_place_and_then_has_nothing_to_do() {
    let dir = scratch("fmt");
    let file = dir.join("messy.policy");
    std::fs::copy(root().join("tests/data/fmt/messy.policy"), &file).expect("copy");
    let f = file.to_str().expect("utf-8 path");
    assert_eq!(policy(&["fmt", "--check", f]).status.code(), Some(1));
    let out = policy(&["fmt", f]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("1 file reformatted"),
        "{}",
        text(&out.stderr)
    );
    let formatted = std::fs::read_to_string(&file).expect("readable");
    assert!(formatted.contains("mode agent {\n  NoDefer(Read, Bash)  # the everyday tools\n"));
    let out = policy(&["fmt", "--check", f]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).is_empty());
}

#[test]
fn fmt_refuses_a_policy_with_errors_and_leaves_it_alone() {
    let dir = scratch("fmt-bad");
    let file = dir.join("bad.policy");
    std::fs::write(&file, "Defr(x)\n").expect("write");
    let out = policy(&["fmt", file.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("PL004"), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(&file).expect("readable"),
        "Defr(x)\n"
    );
}

#[test]
fn fmt_reads_standard_input() {
    let out = policy_with_stdin(&["fmt", "-"], b"defer( a ,b )\n");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "Defer(a, b)\n");
}

#[test]
fn fmt_stdout_prints_without_writing() {
    let out = policy(&["fmt", "--stdout", "tests/data/fmt/messy.policy"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).starts_with("# A policy written in a hurry.\nguard new_context\n"));
    let on_disk =
        std::fs::read_to_string(root().join("tests/data/fmt/messy.policy")).expect("readable");
    assert!(
        on_disk.contains("GUARD new_context"),
        "--stdout must not write"
    );
}

#[test]
fn test_exit_codes() {
    let dir = scratch("test");
    std::fs::copy(
        root().join("policies/pi-desktop.policy"),
        dir.join("p.policy"),
    )
    .expect("copy");
    let case = |body: &str| {
        let file = dir.join("p.test.toml");
        std::fs::write(&file, body).expect("write");
        policy(&["test", file.to_str().expect("utf-8 path")])
    };
    let pass = case("[[case]]\nmode = \"agent\"\nitem = \"Bash\"\nexpect = \"active\"\n");
    assert_eq!(pass.status.code(), Some(0));
    assert_eq!(text(&pass.stdout), "1 passed, 0 failed\n");
    let fail = case("[[case]]\nmode = \"chat\"\nitem = \"Bash\"\nexpect = \"active\"\n");
    assert_eq!(fail.status.code(), Some(1));
    assert!(text(&fail.stdout).ends_with("0 passed, 1 failed\n"));
    // A typo in the file, a missing mode, an unknown cause: usage errors.
    let typo = case("[[case]]\nmode = \"chat\"\nitem = \"Bash\"\nexpcet = \"active\"\n");
    assert_eq!(typo.status.code(), Some(2));
    assert!(text(&typo.stderr).contains("unknown field `expcet`"));
    let no_mode = case("[[case]]\nitem = \"Bash\"\nexpect = \"active\"\n");
    assert_eq!(no_mode.status.code(), Some(2));
    let cause = case(
        "[[case]]\nmode = \"chat\"\nitem = \"Bash\"\nexpect = \"deferred\"\ncause = \"deferred\"\n",
    );
    assert_eq!(cause.status.code(), Some(2));
    assert_eq!(
        policy(&["test", "no/such.test.toml"]).status.code(),
        Some(2)
    );
}

/// A file with bad cases still runs the cases it can: the problems come
/// first, then every failing case, and the file still exits 2, so one run
/// shows all there is to fix.
#[test]
fn test_reports_a_files_problems_and_still_runs_its_good_cases() {
    let dir = scratch("test-problems-and-cases");
    std::fs::copy(
        root().join("policies/pi-desktop.policy"),
        dir.join("p.policy"),
    )
    .expect("copy");
    let file = dir.join("p.test.toml");
    std::fs::write(
        &file,
        "regsitry = \"tools.json\"\n\
         [[case]]\nmode = \"agent\"\nitem = \"Bash\"\nexpect = \"active\"\n\
         [[case]]\nmode = \"chat\"\nitem = \"Bash\"\nexpect = \"active\"\n\
         [[case]]\nmode = \"chat\"\nitem = \"Bash\"\nexpcet = \"active\"\n\
         [[case]]\nitem = \"Bash\"\nexpect = \"active\"\n\
         [[case]]\nmode = \"chat\"\nitem = \"Bash\"\nexpect = \"activ\"\n",
    )
    .expect("write");
    let out = policy(&["test", file.to_str().expect("utf-8 path")]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    for (line, what) in [
        (1, "unknown key `regsitry` (did you mean `registry`)"),
        (10, "unknown field `expcet`"),
        (14, "the case has no `mode`"),
        (17, "`expect` is `activ`"),
    ] {
        assert!(
            stderr.contains(&format!("p.test.toml:{line}: {what}")),
            "{line}: {stderr}"
        );
    }
    assert!(stderr.contains("has 4 problems"), "{stderr}");
    assert!(stdout.contains("FAIL"), "{stdout}");
    assert!(
        stdout.contains("p.test.toml:6: `Bash` in mode `chat`"),
        "{stdout}"
    );
    assert!(
        stdout.ends_with("1 passed, 1 failed, 3 not run\n"),
        "{stdout}"
    );
    // The same in JSON: the problems beside the cases that ran.
    let out = policy(&[
        "test",
        "--format",
        "json",
        file.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["passed"], 1, "{v}");
    assert_eq!(v["failed"], 1, "{v}");
    assert_eq!(v["not_run"], 3, "{v}");
    assert_eq!(v["problems"].as_array().map(Vec::len), Some(4), "{v}");
    assert!(
        v["problems"][0].as_str().is_some_and(
            |p| p.ends_with("p.test.toml:1: unknown key `regsitry` (did you mean `registry`)")
        ),
        "{v}"
    );
}

/// A file that cannot be used at all does not hide the other files' cases.
#[test]
fn test_goes_on_past_a_file_it_cannot_use() {
    let dir = scratch("test-bad-file-among-good");
    std::fs::copy(
        root().join("policies/pi-desktop.policy"),
        dir.join("p.policy"),
    )
    .expect("copy");
    std::fs::write(dir.join("a.test.toml"), "[[case]\n").expect("write");
    std::fs::write(
        dir.join("p.test.toml"),
        "[[case]]\nmode = \"chat\"\nitem = \"Bash\"\nexpect = \"active\"\n",
    )
    .expect("write");
    let folder = dir.join("");
    let out = policy(&["test", folder.to_str().expect("utf-8 path")]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stderr.contains("a.test.toml"), "{stderr}");
    assert!(stdout.ends_with("0 passed, 1 failed\n"), "{stdout}");
}

#[test]
fn test_uses_a_registry_for_item_facts() {
    let dir = scratch("test-registry");
    std::fs::copy(
        root().join("policies/github-toolsets.policy"),
        dir.join("gh.policy"),
    )
    .expect("copy");
    std::fs::copy(
        root().join("tests/data/lint/registry.json"),
        dir.join("tools.json"),
    )
    .expect("copy");
    let file = dir.join("gh.test.toml");
    std::fs::write(
        &file,
        "registry = \"tools.json\"\n\n[[case]]\nmode = \"coding\"\nitem = \"create_issue\"\nexpect = \"deferred\"\ncause = \"defer\"\n",
    )
    .expect("write");
    let out = policy(&["test", file.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

#[test]
fn usage_errors_exit_2() {
    // The matrix needs a registry; --max-tokens needs one too.
    let out = policy(&["explain", "--policy", "policies/pi-desktop.policy"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--registry"));
    let out = policy(&["check", "--max-tokens", "100", "policies/pi-desktop.policy"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn explain_notes_an_item_the_registry_lacks() {
    let out = policy(&[
        "explain",
        "Raed",
        "--policy",
        "policies/pi-desktop.policy",
        "--mode",
        "agent",
        "--registry",
        "tests/data/lint/registry.json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stdout).starts_with(
            "note: `Raed` is not in the registry: decided by its name alone (did you mean `Read`)"
        ),
        "{}",
        text(&out.stdout)
    );
}

/// A policy without modes has no mode to name: the header says the
/// decision, and the bot where there is one, never "in no mode" (which
/// reads as "never").
#[test]
fn explain_without_modes_names_no_mode() {
    let dir = scratch("explain-no-modes");
    let file = dir.join("p.policy");
    std::fs::write(&file, "search ToolSearch\nDefer(x)\n").expect("write");
    let path = file.to_str().expect("utf-8 path");
    let out = policy(&["explain", "x", "--policy", path]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("`x` is deferred\n"),
        "{}",
        text(&out.stdout)
    );
    let out = policy(&["explain", "x", "--policy", path, "--bot", "b"]);
    assert!(
        text(&out.stdout).starts_with("`x` is deferred for bot `b`\n"),
        "{}",
        text(&out.stdout)
    );
}

/// `fmt --check` numbers lines as the parser does: a lone `\r` ends one.
#[test]
fn fmt_check_diffs_lines_a_lone_carriage_return_ends() {
    let dir = scratch("fmt-lone-cr");
    let file = dir.join("p.policy");
    std::fs::write(&file, "Defer(x) # c\rNoDefer(y)\n").expect("write");
    let out = policy(&["fmt", "--check", file.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout)
            .contains("@@ -1,2 +1,2 @@\n-Defer(x) # c\\u{d}\n+Defer(x)  # c\n NoDefer(y)\n"),
        "{}",
        text(&out.stdout)
    );
    // A change of line breaks alone shows in the diff.
    std::fs::write(&file, "Defer(x)\r\nDefer(y)\n").expect("write");
    let out = policy(&["fmt", "--check", file.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("@@ -1,2 +1,2 @@\n-Defer(x)\\u{d}\n+Defer(x)\n Defer(y)\n"),
        "{}",
        text(&out.stdout)
    );
}

/// A file with more errors than are rendered: every one is counted, the first
/// `MAX_RENDERED` are shown, and one line says how many more there are.
#[test]
fn check_counts_errors_past_the_rendered_limit() {
    let dir = scratch("many-errors");
    let file = dir.join("many.policy");
    let text: String = (0..1_234).map(|i| format!("Defer(a{i}\n")).collect();
    std::fs::write(&file, text).expect("write");
    let path = file.to_str().expect("utf-8 path");
    let limit = toolpolicy::render::MAX_RENDERED;

    let out = policy(&["check", path]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("error[PL001]").count(), limit);
    let rest = format!(
        "and {} more errors not shown",
        toolpolicy::render::thousands(1_234 - limit)
    );
    assert!(stdout.contains(&rest), "{stdout}");
    assert!(stdout.contains("1234 errors"), "{stdout}");

    let out = policy(&["check", path, "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["errors"], 1_234);
    assert_eq!(json["omitted"], 1_234 - limit);
    assert_eq!(json["diagnostics"].as_array().map(Vec::len), Some(limit));

    let out = policy(&["check", path, "--format", "plain"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), limit + 1, "{stdout}");
}

/// A lone `\r` is a line break for the parser, so it is for `fmt` too: the
/// file is reformatted with `\n`, not a crash.
#[test]
fn fmt_reads_a_lone_carriage_return_as_a_line_break() {
    let dir = scratch("lone-cr");
    let file = dir.join("cr.policy");
    std::fs::write(&file, "Defer(x) # c\rNoDefer(y)\n").expect("write");
    let path = file.to_str().expect("utf-8 path");
    let out = policy(&["fmt", "--check", path]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let out = policy(&["fmt", path]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let formatted = std::fs::read_to_string(&file).expect("read");
    assert_eq!(formatted, "Defer(x)  # c\nNoDefer(y)\n");
    // Positions count the lone `\r` as a line break as well.
    std::fs::write(&file, "Defer(x) # c\rDefr(y)\n").expect("write");
    let out = policy(&["check", path, "--format", "plain"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("cr.policy:2:1: error[PL004]"), "{stdout}");
}
