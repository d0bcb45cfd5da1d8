//! The team's setup as docs/team.md walks it, on the bundled files of
//! examples/team/, and the Kubernetes example of docs/gateway.md
//! (examples/kubernetes/gateway.yaml) read as the cluster reads it.

use std::collections::BTreeSet;

use yaml_rust2::{Yaml, YamlLoader};

use crate::cli::support::{policy, root};

fn said(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn the_team_page_s_checks_pass_on_the_bundled_files() {
    let page = std::fs::read_to_string(root().join("docs/team.md")).unwrap();
    for shown in [
        "policy check examples/team/team.policy --registry examples/team/registry.json",
        "policy check --deny-warnings examples/team/team.policy --registry examples/team/registry.json",
        "policy test examples/team/",
    ] {
        assert!(
            page.contains(shown),
            "docs/team.md no longer shows `{shown}`"
        );
        let args: Vec<&str> = shown.split_whitespace().skip(1).collect();
        let out = policy(&args);
        assert!(out.status.success(), "`{shown}`:\n{}", said(&out));
    }
    // The lock is the registry's, as `policy lock` wrote it.
    let out = policy(&[
        "lock",
        "--check",
        "--policy",
        "examples/team/team.policy",
        "--registry",
        "examples/team/registry.json",
    ]);
    assert!(out.status.success(), "{}", said(&out));
}

fn manifest() -> Vec<Yaml> {
    let path = root().join("examples/kubernetes/gateway.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn of_kind<'a>(docs: &'a [Yaml], kind: &str) -> &'a Yaml {
    docs.iter()
        .find(|d| d["kind"].as_str() == Some(kind))
        .unwrap_or_else(|| panic!("no {kind} in the manifest"))
}

fn strs(list: &Yaml) -> Vec<&str> {
    list.as_vec()
        .map(|v| v.iter().filter_map(Yaml::as_str).collect())
        .unwrap_or_default()
}

/// The value after `flag` in a command line.
fn flag<'a>(args: &[&'a str], flag: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| *a == flag)
        .and_then(|i| args.get(i + 1).copied())
}

#[test]
fn the_kubernetes_example_probes_drains_and_shares_its_key_from_a_secret() {
    let docs = manifest();
    let deployment = of_kind(&docs, "Deployment");
    let service = of_kind(&docs, "Service");
    assert!(deployment["spec"]["replicas"].as_i64().unwrap() >= 2);
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    assert_eq!(strs(&container["command"]), ["policy"]);
    let args = strs(&container["args"]);
    assert_eq!(args.first(), Some(&"gateway"));

    // Every flag is one `policy gateway` takes.
    let help = said(&policy(&["gateway", "--help"]));
    let flags: BTreeSet<&str> = args
        .iter()
        .copied()
        .filter(|a| a.starts_with("--"))
        .collect();
    for f in &flags {
        assert!(
            help.contains(&format!("{f} ")) || help.contains(&format!("{f}\n")),
            "`{f}` is not a flag of `policy gateway`:\n{help}"
        );
    }

    // Readiness on /readyz, liveness on /healthz, on the port it listens at.
    let listen = flag(&args, "--listen").unwrap();
    let port: i64 = listen.rsplit(':').next().unwrap().parse().unwrap();
    let ports = container["ports"].as_vec().unwrap();
    let named = ports
        .iter()
        .find(|p| p["containerPort"].as_i64() == Some(port))
        .expect("the listen port is a container port");
    let name = named["name"].as_str().unwrap();
    for (probe, path) in [("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")] {
        let get = &container[probe]["httpGet"];
        assert_eq!(get["path"].as_str(), Some(path), "{probe}");
        assert!(
            get["port"].as_str() == Some(name) || get["port"].as_i64() == Some(port),
            "{probe} asks another port"
        );
    }

    // Listening beyond loopback needs a clients file.
    assert!(flag(&args, "--clients").is_some());

    // The key is a file of a volume made from a Secret.
    let key = flag(&args, "--session-key-file").expect("a session key file");
    let mount = container["volumeMounts"]
        .as_vec()
        .unwrap()
        .iter()
        .find(|m| key.starts_with(&format!("{}/", m["mountPath"].as_str().unwrap())))
        .expect("the key's folder is mounted");
    let volume_name = mount["name"].as_str().unwrap();
    let volume = pod["volumes"]
        .as_vec()
        .unwrap()
        .iter()
        .find(|v| v["name"].as_str() == Some(volume_name))
        .unwrap();
    assert!(
        volume["secret"]["secretName"].as_str().is_some(),
        "the key comes from a Secret"
    );

    // The pod is given longer to stop than the gateway takes to drain.
    let drain: i64 = flag(&args, "--drain-timeout").unwrap().parse().unwrap();
    let grace = pod["terminationGracePeriodSeconds"].as_i64().unwrap();
    assert!(grace > drain, "grace {grace} s, drain {drain} s");

    // The Service selects the pods and holds no session affinity.
    let labels = &deployment["spec"]["template"]["metadata"]["labels"];
    for (k, v) in service["spec"]["selector"].as_hash().unwrap() {
        assert_eq!(&labels[k.as_str().unwrap()], v);
    }
    let affinity = service["spec"]["sessionAffinity"]
        .as_str()
        .unwrap_or("None");
    assert_eq!(affinity, "None");
}
