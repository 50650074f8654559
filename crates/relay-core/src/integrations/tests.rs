use super::*;
use serde_json::json;

pub(crate) const SID: &str = "S-1";

pub(crate) fn job(id: &str, command: &str) -> Value {
    json!({"id": id, "label": format!("label {id}"), "kind": "job", "command": command,
           "cwd": "/work", "logPath": format!("/tmp/{id}.log"), "status": "running"})
}

pub(crate) fn fixture() -> IntegrationFacts {
    IntegrationFacts {
        jobs: Some(vec![
            job("j1", "cargo build --release"),
            json!({"id": "w1", "label": "ci", "kind": "watch", "until": "2026-12-02T10:00:00Z",
                   "intervalSeconds": 60, "command": "gh run watch 77", "status": "waiting"}),
            json!({"id": "j2", "command": "make lint", "status": "completed"}),
            json!({"id": "j3", "command": "sleep 9", "sessionId": "OTHER"}),
            json!({"label": "no id"}),
            json!("not an object"),
        ]),
        subagents: Some(vec![
            json!({"id": "a1", "status": "running", "description": "review the parser"}),
            json!({"id": "a2", "status": "queued", "description": "write docs"}),
            json!({"id": "a3", "status": "completed", "description": "done already"}),
            json!({"status": "running"}),
        ]),
        stores: Some(StoreContents {
            questions: Some(vec![
                json!({"id": "q2", "sessionId": SID, "status": "open", "title": "Which CSV dialect?"}),
                json!({"id": "q1", "sessionId": SID, "status": "answered", "title": "Done"}),
                json!({"id": "q9", "sessionId": "OTHER", "status": "open", "title": "not ours"}),
            ]),
            questions_corrupt: 1,
            claims: Some(vec![
                json!({"sessionId": SID, "repo": "acme/relay", "issue": 12, "title": "importer v2"}),
                json!({"sessionId": SID, "repo": "acme/relay", "issue": 13, "title": "old"}),
                json!({"sessionId": SID, "repo": "acme/relay", "issue": 13, "status": "released"}),
                json!({"sessionId": "OTHER", "issue": 99}),
            ]),
            claims_corrupt: 2,
            task_ids: None,
        }),
    }
}

#[test]
fn store_paths_follow_the_environment_and_the_agent_dir() {
    let mut facts = StoreFacts {
        agent_dir: Some("/home/u/.pi/agent/".into()),
        questions_home: None,
        tmp_dir: Some("/tmp".into()),
        uid: Some(1000),
        session_id: "S-1".into(),
        cwd: "/work/my project".into(),
    };
    assert_eq!(
        facts.paths(),
        StorePaths {
            questions_home: Some("/home/u/.pi/agent/user-questions".into()),
            claims_file: Some("/home/u/.pi/agent/issue-work/registry.jsonl".into()),
            task_dir: Some("/tmp/pi-subagents-1000/-work-my-project/S-1/tasks".into()),
        }
    );
    facts.questions_home = Some("/q".into());
    facts.uid = None;
    let p = facts.paths();
    assert_eq!(p.questions_home.as_deref(), Some("/q"));
    assert_eq!(p.task_dir, None);
}

#[test]
fn pending_jobs_count_only_this_sessions_unfinished_records() {
    let list = fixture().jobs.unwrap();
    assert_eq!(pending_jobs(Some(&list), SID), 2);
    assert_eq!(pending_jobs(None, SID), 0);
}

#[test]
fn subagent_ids_are_taken_from_agent_id_lines_only() {
    let text = "Agent started in background.\nAgent ID: sa-42\n  Agent ID:  b_7 \nAgent ID: not an id\nAgent ID: \nthe Agent ID: x1 in prose\nAgent ID: ../etc";
    assert_eq!(subagent_ids_in(text), vec!["sa-42", "b_7"]);
    let long = format!("Agent ID: {}", "a".repeat(65));
    assert!(subagent_ids_in(&long).is_empty());
}

#[test]
fn subagent_lookup_joins_the_task_directory_and_the_tool_results() {
    let dir = vec!["a".to_string(), "b".to_string()];
    let known = vec!["b".to_string(), "c".to_string()];
    assert_eq!(
        subagent_lookup_ids(Some(&dir), &known),
        Some(vec!["a".into(), "b".into(), "c".into()])
    );
    // An unreadable task directory: the tool results' ids are still asked about.
    assert_eq!(subagent_lookup_ids(None, &known), Some(known.clone()));
    // No id from either source: the registry is not asked, the section stays unavailable,
    // whether the task directory was unreadable or readable and empty (issue 34).
    assert_eq!(subagent_lookup_ids(None, &[]), None);
    assert_eq!(subagent_lookup_ids(Some(&[]), &[]), None);
}
