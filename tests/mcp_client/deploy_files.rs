//! The files of a deployment: every file docs/deploy.md, the README and the files in
//! docs/deploy/ cite is there, and what the guide shows of one is that file; and the
//! image, built and run where a Docker engine is, on request only (`KYRO_TEST_IMAGE=1`: a
//! release build, far longer than the rest of the suite).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::compose_yaml::Yaml;
use super::{compose, deploy_dir, read, repository, request};

/// The files the operator writes, holding secrets: shown in the guide, never shipped.
const SECRETS: [&str; 2] = ["tokens", "env"];

/// The names after each `prefix` in `text` (a file name's characters).
fn names_after<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    text.match_indices(prefix)
        .map(|(i, _)| {
            let rest = &text[i + prefix.len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || "._@-".contains(c)))
                .unwrap_or(rest.len());
            rest[..end].trim_end_matches('.')
        })
        .filter(|name| !name.is_empty())
        .collect()
}

/// The fenced code blocks of a Markdown text, each as its lines joined.
fn code_blocks(markdown: &str) -> Vec<String> {
    let (mut blocks, mut open): (Vec<String>, Option<String>) = (Vec::new(), None);
    for line in markdown.lines() {
        match (&mut open, line.starts_with("```")) {
            (None, true) => open = Some(String::new()),
            (Some(_), true) => blocks.push(open.take().unwrap()),
            (Some(block), false) => block.push_str(&format!("{line}\n")),
            (None, false) => {}
        }
    }
    blocks
}

#[test]
fn every_file_the_deploy_guide_and_its_files_cite_is_there() {
    let (root, deploy) = (repository(), deploy_dir());
    let guide = read(&root.join("docs/deploy.md"));
    let mut texts = vec![("docs/deploy.md".to_owned(), guide.clone())];
    texts.push(("README.md".into(), read(&root.join("README.md"))));
    for entry in std::fs::read_dir(&deploy).unwrap() {
        let path = entry.unwrap().path();
        texts.push((
            format!("docs/deploy/{}", path.file_name().unwrap().to_str().unwrap()),
            read(&path),
        ));
    }
    let mut cited = BTreeSet::new();
    for (from, text) in &texts {
        for name in names_after(text, "docs/deploy/") {
            cited.insert((from.clone(), name.to_owned()));
        }
    }
    for name in names_after(&guide, "](deploy/") {
        cited.insert(("docs/deploy.md".into(), name.to_owned()));
    }
    // A file the guide installs in /etc/kyro is one of docs/deploy/, but for the secrets.
    for name in names_after(&guide, "/etc/kyro/") {
        if !SECRETS.contains(&name) {
            cited.insert(("docs/deploy.md".into(), name.to_owned()));
        }
    }
    for (from, name) in &cited {
        assert!(
            deploy.join(name).is_file(),
            "{from} cites docs/deploy/{name}, which is not there"
        );
    }
    let names: BTreeSet<&str> = cited.iter().map(|(_, n)| n.as_str()).collect();
    for expected in [
        "Dockerfile",
        "compose.yaml",
        "nginx.conf",
        "policy.toml",
        "read.toml",
        "write.toml",
        "ci.toml",
    ] {
        assert!(
            names.contains(expected),
            "the guide does not point to docs/deploy/{expected}"
        );
    }
    // What the guide shows of a file (a block headed `# docs/deploy/NAME`) is the file.
    let mut shown = 0;
    for block in code_blocks(&guide) {
        if let Some(name) = names_after(block.lines().next().unwrap_or_default(), "# docs/deploy/").first() {
            assert_eq!(
                block,
                read(&deploy.join(name)),
                "docs/deploy.md shows docs/deploy/{name} otherwise"
            );
            shown += 1;
        }
    }
    assert!(shown >= 2, "the guide shows the policy file and the unit whole");
    // The guide's nginx server and the compose file's proxy the same paths the same way.
    let locations = |text: &str| {
        let start = text.find("    client_max_body_size").expect("nginx's server block");
        let end = text[start..]
            .find("    location / { return 404; }")
            .expect("nginx's last location");
        text[start..start + end].to_owned()
    };
    assert_eq!(locations(&guide), locations(&read(&deploy.join("nginx.conf"))));
    // The Dockerfile's context and copies, and the compose file's builds and mounts.
    let dockerfile = read(&deploy.join("Dockerfile"));
    for line in dockerfile
        .lines()
        .filter(|l| l.starts_with("COPY ") && !l.contains("--from"))
    {
        let words: Vec<&str> = line.split_whitespace().collect();
        for source in &words[1..words.len() - 1] {
            assert!(
                root.join(source).exists(),
                "the Dockerfile copies {source}, which is not there"
            );
        }
    }
    let compose = compose();
    for (name, service) in compose.get("services").unwrap().entries() {
        if let Some(build) = service.get("build") {
            let context = deploy.join(build.get("context").and_then(Yaml::str).unwrap_or("."));
            let file = build.get("dockerfile").and_then(Yaml::str).unwrap_or("Dockerfile");
            assert!(
                context.join(file).is_file(),
                "{name} builds {}",
                context.join(file).display()
            );
            assert_eq!(
                context.canonicalize().unwrap(),
                root.canonicalize().unwrap(),
                "{name} builds from the root"
            );
        }
        for mount in service.get("volumes").map(Yaml::strings).unwrap_or_default() {
            if mount.starts_with("./") || mount.starts_with("../") {
                let source = mount.split(':').next().unwrap();
                assert!(
                    deploy.join(source).exists(),
                    "{name} mounts {source}, which is not there"
                );
            }
        }
    }
}

/// Runs `command` to its end, or kills it after `limit`: whether it succeeded, and its
/// output.
fn run_for(command: &mut Command, limit: Duration) -> (bool, String) {
    let out = tempfile::NamedTempFile::new().unwrap();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(out.reopen().unwrap())
        .stderr(out.reopen().unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let output = std::fs::read_to_string(out.path()).unwrap_or_default();
    (status.is_some_and(|s| s.success()), output)
}

/// `docker build -f docs/deploy/Dockerfile .`, then the image's `--version` and a replica
/// on loopback (the host's network) answering `/healthz`. Only with KYRO_TEST_IMAGE=1: the
/// build is a release build from nothing (the base images pulled, every crate fetched).
#[test]
fn the_image_builds_and_serves() {
    if std::env::var("KYRO_TEST_IMAGE").as_deref() != Ok("1") {
        eprintln!("skipped: set KYRO_TEST_IMAGE=1 (and have a Docker engine) to build and run docs/deploy/Dockerfile");
        return;
    }
    let root = repository();
    let tag = "kyro:test";
    let dockerfile = Path::new("docs/deploy/Dockerfile");
    let (built, log) = run_for(
        Command::new("docker")
            .args(["build", "--network", "host", "-t", tag, "-f"])
            .arg(dockerfile)
            .arg(".")
            .current_dir(&root),
        Duration::from_secs(90 * 60),
    );
    assert!(built, "docker build: {}", &log[log.len().saturating_sub(4000)..]);
    let (ran, version) = run_for(
        Command::new("docker").args(["run", "--rm", tag, "--version"]),
        Duration::from_secs(60),
    );
    assert!(ran && version.contains(env!("CARGO_PKG_VERSION")), "{version}");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let address = format!("127.0.0.1:{port}");
    let (started, id) = run_for(
        Command::new("docker").args([
            "run",
            "-d",
            "--rm",
            "--network",
            "host",
            tag,
            "mcp",
            "--http",
            &address,
            "--no-auth",
        ]),
        Duration::from_secs(60),
    );
    assert!(started, "{id}");
    let url = format!("http://{address}/mcp");
    let deadline = Instant::now() + Duration::from_secs(30);
    let answer = loop {
        if std::net::TcpStream::connect(&address).is_ok() {
            let answer = request(&url, "GET", "/healthz", "localhost", &[], "");
            if answer.0 == 200 {
                break Some(answer);
            }
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let _ = run_for(
        Command::new("docker").args(["rm", "-f", id.trim()]),
        Duration::from_secs(60),
    );
    let (status, body) = answer.expect("the image's replica answers /healthz");
    assert_eq!((status, body.trim()), (200, "ok"));
}
