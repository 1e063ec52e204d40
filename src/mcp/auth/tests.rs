//! The bearer token's parsing, allowed origins and token files.

use super::bearer;

#[test]
fn an_allowed_origin_is_a_scheme_a_host_and_a_port_and_nothing_else() {
    for (value, kept) in [
        ("http://localhost:*", "http://localhost:*"),
        ("https://app.example:8443", "https://app.example:8443"),
        ("HTTPS://App.Example", "https://app.example:443"),
        ("http://localhost", "http://localhost:80"),
        ("http://[::1]:8080", "http://[::1]:8080"),
        ("null", "null"),
    ] {
        assert_eq!(super::origin(value).as_deref(), Ok(kept), "{value}");
    }
    for value in [
        "localhost",
        "ftp://x",
        "http://",
        "http://x/path",
        "https://a@b",
        "*",
        "http://a b",
        "http://app.example:99999",
        "http://app.example:0",
        "https://*.example.com",
        "http://[::1",
        "http://x:80:80",
        "http://x:+80",
    ] {
        assert!(super::origin(value).is_err(), "{value}");
    }
}

#[test]
fn a_token_file_names_callers_but_never_with_a_name_kyro_gives_itself() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens");
    std::fs::write(
        &file,
        "alice alice-token-0123456789\nci ci-token-0123456789ab ci.toml\n",
    )
    .unwrap();
    let auth = super::HttpAuth::token_file(&file).unwrap();
    assert_eq!(auth.tokens().unwrap().len(), 2);
    assert_eq!(auth.caller_policies()[0].1, dir.path().join("ci.toml"));
    for reserved in ["local", "http", "anonymous", "cli:alice"] {
        std::fs::write(&file, format!("{reserved} some-token-0123456789\n")).unwrap();
        let refused = super::HttpAuth::token_file(&file).unwrap_err();
        assert!(refused.to_string().contains("kyro gives callers itself"), "{refused}");
    }
    for bad in [
        "alice short\n",
        "alice a-token-0123456789 x.toml extra\n",
        "a b-token-0123456789\na c-token-0123456789\n",
    ] {
        std::fs::write(&file, bad).unwrap();
        assert!(super::HttpAuth::token_file(&file).is_err(), "{bad:?}");
    }
}

#[test]
fn the_bearer_scheme_is_matched_in_any_case_and_nothing_else_is() {
    for value in ["Bearer tok", "bearer tok", "BEARER tok", "bEaReR   tok"] {
        assert_eq!(bearer(value), Some("tok"), "{value}");
    }
    for value in ["Basic tok", "Bearertok", "Bearer", "tok", "Bearer-x tok", " Bearer tok"] {
        assert_eq!(bearer(value), None, "{value}");
    }
}
