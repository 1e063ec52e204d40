//! Resources over `kyro mcp`: the inventory, descriptors, receipts and workspace files,
//! the file template's completion, and how far each is served.

use serde_json::{Value, json};

use super::Server;

#[test]
fn resources_serve_the_inventory_descriptors_receipts_and_confined_files() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "one\ntwo\n").unwrap();
    let mut server = Server::start(ws.path());
    let listed = server.request(2, "resources/list", json!({}));
    let uris: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert!(
        uris.contains(&"kyro://inventory") && uris.contains(&"kyro://tools/read_file"),
        "{uris:?}"
    );
    let templates = server.request(3, "resources/templates/list", json!({}));
    assert!(templates.to_string().contains("kyro://workspace/{path}"), "{templates}");
    let read = |server: &mut Server, id: u64, uri: &str| server.request(id, "resources/read", json!({"uri": uri}));
    let inventory = read(&mut server, 4, "kyro://inventory");
    assert!(
        inventory["result"]["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("read_file")
    );
    let descriptor = read(&mut server, 5, "kyro://tools/read_file");
    let descriptor: Value =
        serde_json::from_str(descriptor["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert!(
        descriptor["outputSchema"]["properties"]["content"]["description"].is_string(),
        "prose kept here"
    );
    let file = read(&mut server, 6, "kyro://workspace/a.txt");
    assert_eq!(file["result"]["contents"][0]["text"], "one\ntwo\n");
    // Confined exactly as read_file: a path out of the workspace is refused.
    let outside = read(&mut server, 7, "kyro://workspace/../outside.txt");
    assert!(
        outside["error"]["message"].as_str().unwrap().contains("denied"),
        "{outside}"
    );
    // The read was a call like any other: its receipt is a resource too.
    let receipts = std::fs::read_to_string(ws.path().join(".kyro/receipts.jsonl")).unwrap();
    let first: Value = serde_json::from_str(receipts.lines().next().unwrap()).unwrap();
    assert_eq!(first["tool"], "read_file");
    let receipt = read(
        &mut server,
        8,
        &format!("kyro://receipts/{}", first["call_id"].as_str().unwrap()),
    );
    assert!(
        receipt["result"]["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("\"read_file\"")
    );
    let missing = read(&mut server, 9, "kyro://receipts/nope");
    assert!(missing["error"].is_object(), "{missing}");
}

#[test]
fn the_file_templates_path_completes_within_the_workspace_only() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join("src/inner")).unwrap();
    std::fs::write(ws.path().join("src/lib.rs"), "").unwrap();
    std::fs::write(ws.path().join("src/.hidden"), "").unwrap();
    std::fs::write(ws.path().join("README.md"), "").unwrap();
    let mut server = Server::start(ws.path());
    let mut complete = |id: u64, value: &str| -> Vec<String> {
        let answer = server.request(
            id,
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": "kyro://workspace/{path}"},
                   "argument": {"name": "path", "value": value}}),
        );
        answer["result"]["completion"]["values"]
            .as_array()
            .unwrap_or_else(|| panic!("{answer}"))
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(complete(2, "src/"), ["src/inner/", "src/lib.rs"]);
    assert_eq!(complete(3, "src/l"), ["src/lib.rs"]);
    assert_eq!(complete(4, "src/.h"), ["src/.hidden"]);
    assert_eq!(complete(5, "REA"), ["README.md"]);
    assert!(complete(6, "../").is_empty(), "nothing outside the workspace");
    assert!(complete(7, "/etc/").is_empty(), "nothing outside the workspace");
}

/// What reads the workspace is served only as far as `read_file` is, as the file template
/// is: with `read_file` left out of the selection or denied, no file template, completion
/// or receipt; while reads ask for approval (which a completion or a receipt cannot), the
/// template only; and receipts only to a caller whose roots hold the receipt log.
#[test]
fn completion_and_receipts_are_served_only_as_far_as_read_file_is() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join("sub/inner")).unwrap();
    std::fs::write(ws.path().join("secret.txt"), "").unwrap();
    let policy = |name: &str, text: &str| {
        let path = ws.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let deny = policy("deny.toml", "[approvals]\nread = \"deny\"\n");
    let ask = policy("ask.toml", "[approvals]\nread = \"ask\"\n");
    let sub = policy("sub.toml", "[[roots]]\npath = \"sub\"\naccess = \"read\"\n");
    // The flags; whether the file template and the receipts are served; an entry `path`
    // completes to from "" (none: nothing at all).
    type Case<'a> = (&'a [&'a str], (bool, bool), Option<&'a str>);
    let cases: [Case; 5] = [
        (&[], (true, true), Some("secret.txt")),
        (&["--exclude-tools", "read_file"], (false, false), None),
        (&["--policy", deny.as_str()], (false, false), None),
        (&["--policy", ask.as_str()], (true, false), None),
        (&["--policy", sub.as_str()], (true, false), Some("inner/")),
    ];
    for (flags, (file, receipts), completes) in cases {
        let mut server = Server::start_with(ws.path(), flags);
        let calc = server.request(
            2,
            "tools/call",
            json!({"name": "calculate", "arguments": {"expression": "1+1"}}),
        );
        assert_eq!(calc["result"]["structuredContent"]["value"], 2, "{flags:?}: {calc}");
        let log = std::fs::read_to_string(ws.path().join(".kyro/receipts.jsonl")).unwrap();
        let last: Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
        assert_eq!(last["tool"], "calculate");
        let uri = format!("kyro://receipts/{}", last["call_id"].as_str().unwrap());

        let templates = server.request(3, "resources/templates/list", json!({})).to_string();
        assert_eq!(
            templates.contains("kyro://workspace/{path}"),
            file,
            "{flags:?}: {templates}"
        );
        assert_eq!(
            templates.contains("kyro://receipts/{call_id}"),
            receipts,
            "{flags:?}: {templates}"
        );
        let read = server.request(4, "resources/read", json!({"uri": uri}));
        let served = read["result"]["contents"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("\"calculate\""));
        assert_eq!(served, receipts, "{flags:?}: {read}");
        assert_eq!(read["error"].is_object(), !receipts, "{flags:?}: {read}");

        let completed = server.request(
            5,
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": "kyro://workspace/{path}"},
                   "argument": {"name": "path", "value": ""}}),
        );
        let values: Vec<&str> = completed["result"]["completion"]["values"]
            .as_array()
            .unwrap_or_else(|| panic!("{completed}"))
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        match completes {
            Some(entry) => assert!(values.contains(&entry), "{flags:?}: {values:?}"),
            None => assert!(values.is_empty(), "{flags:?}: {values:?}"),
        }
    }
}
