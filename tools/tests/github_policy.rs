//! The GitHub tools under the policy, against a local server this test starts and scripts:
//! every request passes the network policy's checks (as web_fetch's do), writes ask even
//! where `network = "auto"` lets reads run, a refusing answer is bounded, limits say how
//! long to wait, remote text shows as itself and the token is never written anywhere.

mod common;

#[path = "github/harness.rs"]
mod harness;

use std::sync::mpsc;

use harness::{failure, run_under, serve};
use kyro_core::policy::{ApprovalRule, ApprovalRules};
use kyro_core::{Capability, Outcome, Policy};
use kyro_tools::Failure;
use serde_json::{Value, json};

const TOKEN: &str = "ghp_s3cret-token-4242";

fn me(name: &str) -> Value {
    json!({"login": "me", "id": 1, "name": name, "html_url": "https://github.invalid/me",
           "public_repos": 0, "followers": 0})
}

fn network(table: Value) -> Policy {
    Policy {
        approvals: ApprovalRules::uniform(ApprovalRule::Auto),
        tools: [("network".to_owned(), table)].into(),
        ..Policy::default()
    }
}

/// The loopback server's own policy: reads and writes named auto, as the harness's.
fn loopback() -> Policy {
    let mut policy = network(json!({"allow_hosts": ["127.0.0.1"]}));
    policy.approvals.tools = [("github_merge_pull_request".to_owned(), ApprovalRule::Auto)].into();
    policy
}

fn nothing_sent(seen: &mpsc::Receiver<common::Request>) {
    assert!(seen.try_recv().is_err(), "a request reached the server");
}

fn refused_url(outcome: &Outcome) -> bool {
    matches!(failure(outcome), Some(Failure::UrlRefused { .. }))
}

const MERGE: fn() -> Value = || json!({"owner": "o", "repo": "r", "pull_number": 1});

// One test: the base URL and token come from this process's environment.
#[test]
fn github_requests_obey_the_policy_and_write_nothing_they_should_not() {
    let nine_mib = "E".repeat(9 << 20);
    let hostile = "fix \u{1b}]52;c;cm0gLXJmIH4=\u{7}\u{1b}[2J\rall good\0 \u{202E}gnp.exe";
    let (base, seen) = serve(vec![
        (200, vec![], me("me")),
        (200, vec![], me("me")),
        (
            200,
            vec![],
            json!({"merged": true, "sha": "a".repeat(40), "message": "Pull Request successfully merged"}),
        ),
        (
            500,
            vec![("Content-Type", "text/plain".into())],
            Value::String(nine_mib),
        ),
        (
            500,
            vec![],
            json!({"message": "Server Error", "errors": [{"message": "E".repeat(100_000)}]}),
        ),
        (200, vec![], me(hostile)),
        (
            403,
            vec![hostile_header()],
            json!({"message": format!("Bad credentials {hostile}")}),
        ),
        (429, vec![("retry-after", "30".into())], json!({"message": "slow down"})),
        (
            403,
            vec![("retry-after", "45".into()), ("x-ratelimit-remaining", "4000".into())],
            json!({"message": "You have exceeded a secondary rate limit"}),
        ),
        (
            403,
            vec![
                ("x-ratelimit-remaining", "0".into()),
                ("x-ratelimit-reset", "4102444800".into()),
            ],
            json!({"message": "API rate limit exceeded"}),
        ),
        (401, vec![], json!({"message": format!("token {TOKEN} is not valid")})),
        (200, vec![], me(&format!("echo {TOKEN}"))),
        // The token written with a JSON escape, and percent-encoded in an address.
        (200, vec![], Value::String(escaped_me())),
        (
            401,
            vec![],
            Value::String(format!(r#"{{"message": "bad \u0067{}"}}"#, &TOKEN[1..])),
        ),
        (
            301,
            vec![(
                "Location",
                format!("https://x.invalid/?t={}", TOKEN.replace('_', "%5F")),
            )],
            json!({"message": "Moved"}),
        ),
        // A file that would drive a terminal, and one holding the token.
        (
            200,
            vec![],
            file(b"hi \x1b]52;c;cm0=\x07\x1b[2J\rok \xe2\x80\xae gnp.exe"),
        ),
        (200, vec![], file(format!("key={TOKEN}\n").as_bytes())),
        // A refusal that is not a limit, whatever its headers; a wait past reason.
        (
            403,
            vec![("retry-after", "1".into())],
            json!({"message": "Resource protected by organization SAML enforcement"}),
        ),
        (
            429,
            vec![("retry-after", u64::MAX.to_string())],
            json!({"message": "slow down"}),
        ),
        // Unicode tags: ASCII no reader sees and a model reads.
        (200, vec![], me("bob\u{E0049}\u{E0047}\u{E004E}\u{2028}")),
    ]);
    // SAFETY: this binary has this one test; nothing else reads the environment meanwhile.
    unsafe {
        std::env::set_var("KYRO_GITHUB_API_URL", &base);
        std::env::set_var("GITHUB_TOKEN", TOKEN);
    }

    // The network policy: loopback refused by default, by deny_hosts even with private
    // addresses allowed, and by an allow list naming only the public API.
    for table in [
        json!({}),
        json!({"allow_private": true, "deny_hosts": ["127.0.0.1"]}),
        json!({"allow_hosts": ["api.github.com"]}),
    ] {
        let outcome = run_under(&network(table.clone()), "github_get_me", json!({}));
        assert!(refused_url(&outcome), "{table}: {outcome:?}");
        nothing_sent(&seen);
    }
    // The cloud's metadata address is refused whatever the base says.
    unsafe { std::env::set_var("KYRO_GITHUB_API_URL", "http://169.254.169.254/latest") };
    let outcome = run_under(&network(json!({})), "github_get_me", json!({}));
    assert!(refused_url(&outcome), "{outcome:?}");
    unsafe { std::env::set_var("KYRO_GITHUB_API_URL", &base) };
    // Allowed by name, it is reached.
    assert!(matches!(
        run_under(&loopback(), "github_get_me", json!({})),
        Outcome::Ok { .. }
    ));
    seen.recv().unwrap();

    // Approvals: under the default rules a read asks like web_fetch, naming the host.
    let mut policy = loopback();
    policy.approvals = ApprovalRules::default();
    match run_under(&policy, "github_get_me", json!({})) {
        Outcome::ApprovalRequired { summary, .. } => {
            let host = base.trim_start_matches("http://");
            assert!(summary.contains(&format!("host: {host}")), "{summary}");
        }
        other => panic!("{other:?}"),
    }
    // `network = "auto"` lets reads run and leaves every write asking.
    policy.approvals.network = ApprovalRule::Auto;
    assert!(matches!(
        run_under(&policy, "github_get_me", json!({})),
        Outcome::Ok { .. }
    ));
    seen.recv().unwrap();
    for (tool, args) in [
        ("github_merge_pull_request", MERGE()),
        (
            "github_delete_file",
            json!({"owner": "o", "repo": "r", "path": "a", "message": "m", "branch": "main"}),
        ),
        ("github_create_repository", json!({"name": "n"})),
        ("github_fork_repository", json!({"owner": "o", "repo": "r"})),
    ] {
        let outcome = run_under(&policy, tool, args);
        assert!(
            matches!(outcome, Outcome::ApprovalRequired { .. }),
            "{tool}: {outcome:?}"
        );
    }
    nothing_sent(&seen);
    // A write runs unasked only where the policy names it.
    policy.approvals.tools = [("github_merge_pull_request".to_owned(), ApprovalRule::Auto)].into();
    let merged = run_under(&policy, "github_merge_pull_request", MERGE());
    assert!(matches!(merged, Outcome::Ok { .. }), "{merged:?}");
    assert_eq!(seen.recv().unwrap().method, "PUT");
    // A capability list without github.write refuses every write; network = "deny" every read.
    let mut narrow = loopback();
    narrow.capabilities = Some(vec![Capability::NETWORK]);
    match run_under(&narrow, "github_merge_pull_request", MERGE()) {
        outcome @ Outcome::Denied { .. } => {
            let json = outcome.to_json().to_string();
            assert!(
                json.contains("missing_capability") && json.contains("github.write"),
                "{json}"
            );
        }
        other => panic!("{other:?}"),
    }
    let mut denied = loopback();
    denied.approvals.network = ApprovalRule::Deny;
    assert!(matches!(
        run_under(&denied, "github_get_me", json!({})),
        Outcome::Denied { .. }
    ));
    nothing_sent(&seen);

    // A refusing answer is reported, not relayed: 9 MiB of body, or 100,000 characters of
    // errors, give a message of a few kilobytes.
    for _ in 0..2 {
        let outcome = run_under(&loopback(), "github_get_me", json!({}));
        match failure(&outcome) {
            Some(Failure::Remote {
                status: 500, message, ..
            }) => {
                assert!(message.len() < 4_000, "{} bytes", message.len());
                assert!(message.contains("more bytes"), "the cut is said");
            }
            other => panic!("{other:?}"),
        }
        assert!(outcome.to_json().to_string().len() < 8_000);
        seen.recv().unwrap();
    }

    // Remote text shows as itself: no escape sequence, bell, lone CR, NUL or override.
    let shown = match run_under(&loopback(), "github_get_me", json!({})) {
        Outcome::Ok { result, .. } => result["name"].as_str().unwrap().to_owned(),
        other => panic!("{other:?}"),
    };
    for hidden in ['\u{1b}', '\u{7}', '\r', '\0', '\u{202E}'] {
        assert!(!shown.contains(hidden), "{hidden:?} in {shown:?}");
    }
    assert!(shown.contains("all good") && shown.contains("\\u{202E}"), "{shown}");
    let outcome = run_under(&loopback(), "github_get_me", json!({}));
    let text = outcome.to_json().to_string();
    assert!(
        !text.contains("\\u001b") && !text.contains("\\u0007") && !text.contains('\u{202E}'),
        "{text}"
    );
    seen.recv().unwrap();
    seen.recv().unwrap();

    // Limits say how long to wait: 429 with retry-after, the secondary limit (403 with
    // retry-after), the primary one (403, none remaining, until the reset).
    for (wait, reset) in [(Some(30), None), (Some(45), None), (None, Some(4_102_444_800))] {
        match failure(&run_under(&loopback(), "github_get_me", json!({}))) {
            Some(Failure::RateLimited {
                retry_after_s,
                reset_at,
                ..
            }) => {
                if let Some(wait) = wait {
                    assert_eq!(retry_after_s, wait);
                }
                if let Some(reset) = reset {
                    assert_eq!(reset_at, reset);
                    assert!(retry_after_s > 0);
                }
            }
            other => panic!("{other:?}"),
        }
        seen.recv().unwrap();
    }

    // A server that reflects the token gets it written nowhere: not in an error, not in a
    // result.
    for _ in 0..2 {
        let outcome = run_under(&loopback(), "github_get_me", json!({}));
        let json = outcome.to_json().to_string();
        assert!(!json.contains(TOKEN), "{json}");
        assert!(json.contains("[token]"), "{json}");
        let request = seen.recv().unwrap();
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {TOKEN}").as_str())
        );
    }
    // Nor when the server escapes it in JSON, or percent-encodes it in an address.
    for _ in 0..3 {
        let json = run_under(&loopback(), "github_get_me", json!({})).to_json().to_string();
        assert!(
            !json.contains(TOKEN) && !json.contains(&TOKEN.replace('_', "%5F")),
            "{json}"
        );
        assert!(json.contains("[token]"), "{json}");
        seen.recv().unwrap();
    }

    // A file's text shows as itself, its exact bytes beside it; a file holding the token
    // has it taken out, and no exact bytes that would carry it.
    let read = |outcome: Outcome| match outcome {
        Outcome::Ok { result, .. } => result,
        other => panic!("{other:?}"),
    };
    let args = json!({"owner": "o", "repo": "r", "path": "a.txt"});
    let shown = read(run_under(&loopback(), "github_get_file_contents", args.clone()));
    let text = shown["content"].as_str().unwrap();
    for hidden in ['\u{1b}', '\u{7}', '\r', '\u{202E}'] {
        assert!(!text.contains(hidden), "{hidden:?} in {text:?}");
    }
    assert!(text.contains("ok") && shown["content_base64"].is_string(), "{shown}");
    let secret = read(run_under(&loopback(), "github_get_file_contents", args));
    assert_eq!(secret["content"], "key=[token]\n");
    assert!(secret["content_base64"].is_null(), "{secret}");
    seen.recv().unwrap();
    seen.recv().unwrap();

    // A 403 that is another refusal stays one, its message kept; a wait is a day at most.
    match failure(&run_under(&loopback(), "github_get_me", json!({}))) {
        Some(Failure::Remote {
            status: 403, message, ..
        }) => assert!(message.contains("SAML"), "{message}"),
        other => panic!("{other:?}"),
    }
    match failure(&run_under(&loopback(), "github_get_me", json!({}))) {
        Some(Failure::RateLimited { retry_after_s, .. }) => assert_eq!(retry_after_s, 86_400),
        other => panic!("{other:?}"),
    }
    seen.recv().unwrap();
    seen.recv().unwrap();
    let tagged = read(run_under(&loopback(), "github_get_me", json!({})));
    let name = tagged["name"].as_str().unwrap();
    assert!(!name.contains('\u{E0049}') && !name.contains('\u{2028}'), "{name:?}");
    assert!(name.starts_with("bob\\u{E0049}"), "{name}");
}

/// `/user` with the token in the name, its `g` written as a JSON escape.
fn escaped_me() -> String {
    format!(
        r#"{{"login": "me", "id": 1, "name": "\u0067{}", "html_url": "h", "public_repos": 0, "followers": 0}}"#,
        &TOKEN[1..]
    )
}

/// A contents answer for the file `a.txt` holding `bytes`.
fn file(bytes: &[u8]) -> Value {
    use base64::Engine;
    json!({"type": "file", "path": "a.txt", "sha": "f".repeat(40), "size": bytes.len(),
           "encoding": "base64", "content": base64::engine::general_purpose::STANDARD.encode(bytes)})
}

/// A header a hostile server sends (ignored: headers are not relayed).
fn hostile_header() -> (&'static str, String) {
    ("x-note", "ok".into())
}

/// Every GitHub write always asks and needs `github.write`; every read is read-only; the
/// README's counts are the catalog's.
#[test]
fn every_github_write_asks_and_the_readme_counts_them() {
    let github: Vec<_> = kyro_tools::BUILTINS
        .iter()
        .map(|t| t.spec)
        .filter(|s| s.name.starts_with("github_"))
        .collect();
    let (reads, writes): (Vec<&kyro_core::ToolSpec>, Vec<_>) =
        github.iter().partition(|s| s.hints.read_only == Some(true));
    for write in &writes {
        assert_eq!(write.approval, Some(kyro_core::Approval::Required), "{}", write.name);
        let capabilities: Vec<&str> = write
            .capabilities
            .unwrap_or_default()
            .iter()
            .map(|c| c.as_str())
            .collect();
        assert_eq!(capabilities, ["network", "github.write"], "{}", write.name);
    }
    for read in &reads {
        assert_eq!(read.approval, None, "{}", read.name);
        assert!(read.capabilities.is_none(), "{}", read.name);
    }
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    assert!(
        readme.contains(&format!("the {} that `--read-only` keeps", reads.len())),
        "README's count of GitHub reads"
    );
    assert!(
        readme.contains(&format!("(the other {}:", writes.len())),
        "README's count of GitHub writes"
    );
}
