//! A rule that asks about one command asks about each call of it: a person's "for the
//! session" about the tool does not pass it, and its question offers none.

use kyro_core::Policy;
use rmcp::model::CallToolRequestParams;
use serde_json::json;

use super::{connect_under, rt};

#[test]
fn a_rule_asking_about_a_command_asks_each_time_whatever_the_session_approved() {
    rt().block_on(async {
        let policy: Policy =
            toml::from_str("[[tools.shell.rules]]\nargv_prefix = [\"rm\"]\ndecision = \"ask\"\n").unwrap();
        let mut h = connect_under(Some(true), true, &policy).await;
        let root = h._workspace.path().to_owned();
        let run = |argv: serde_json::Value| {
            let args = json!({"argv": argv});
            CallToolRequestParams::new("run_command").with_arguments(args.as_object().unwrap().clone())
        };
        let mut asked = Vec::new();
        for (argv, made) in [
            (json!(["touch", "a"]), "a"),
            (json!(["touch", "b"]), "b"),
            (json!(["rm", "a"]), "a"),
            (json!(["rm", "b"]), "b"),
        ] {
            let result = h.client.call_tool(run(argv.clone())).await.unwrap();
            assert_ne!(result.is_error, Some(true), "{argv}: {result:?}");
            let exists = root.join(made).exists();
            assert_eq!(exists, argv[0] == "touch", "{argv}");
            let mut questions = Vec::new();
            while let Ok(event) = h.events.try_recv() {
                if let Some(question) = event.strip_prefix("asked: ") {
                    questions.push(question.ends_with(" (once)"));
                }
            }
            asked.push(questions);
        }
        // `touch a` asked (and was approved for the session), `touch b` ran on that; each
        // `rm` was asked about, once only, and stood on nothing earlier.
        assert_eq!(asked, [vec![false], vec![], vec![true], vec![true]]);
    });
}
