#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use super::*;
use serde_json::json;

const SID: &str = "S-1";

fn job(id: &str, command: &str) -> Value {
    json!({"id": id, "label": format!("label {id}"), "kind": "job", "command": command,
           "cwd": "/work", "logPath": format!("/tmp/{id}.log"), "status": "running"})
}

fn fixture() -> IntegrationFacts {
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
fn every_section_from_fixture_registries_and_stores() {
    let r = render(&fixture(), SID);
    insta::assert_snapshot!(r.markdown());
    let recorded = r.recorded_jobs.unwrap();
    assert_eq!(
        recorded.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(),
        ["j1", "w1"],
        "finished jobs and other sessions' are not pending"
    );
    assert_eq!(
        r.sidecar["jobs"]["records"][1]["command"],
        "gh run watch 77"
    );
    assert_eq!(r.sidecar["jobs"]["corrupt"], 2);
    assert_eq!(r.sidecar["claims"]["held"].as_array().unwrap().len(), 1);
}

#[test]
fn every_integration_absent_is_unavailable() {
    let r = render(&IntegrationFacts::default(), SID);
    insta::assert_snapshot!(r.markdown());
    assert_eq!(r.recorded_jobs, None);
    assert_eq!(
        r.sidecar,
        json!({"jobs": {"available": false}, "subagents": {"available": false},
               "questions": {"available": false}, "claims": {"available": false}})
    );
}

#[test]
fn empty_inventories_are_none() {
    let facts = IntegrationFacts {
        jobs: Some(vec![]),
        subagents: Some(vec![]),
        stores: Some(StoreContents {
            questions: Some(vec![]),
            claims: Some(vec![]),
            ..StoreContents::default()
        }),
    };
    insta::assert_snapshot!(render(&facts, SID).markdown());
}

#[test]
fn a_long_job_line_is_cut_to_600_chars_with_its_original_length_and_the_sidecar_keeps_it() {
    let command = format!("run {}", "x".repeat(900));
    let facts = IntegrationFacts {
        jobs: Some(vec![job("long", &command)]),
        ..IntegrationFacts::default()
    };
    let r = render(&facts, SID);
    let section = &r.sections[0].body;
    let line = section.lines().nth(1).unwrap();
    let full = JobRecord::parse(&job("long", &command)).unwrap();
    let original = [
        "long",
        "label long",
        "job",
        "-",
        "-",
        command.as_str(),
        "/work",
        "/tmp/long.log",
    ]
    .join(" | ");
    assert_eq!(char_count(line), JOB_LINE_MAX_CHARS);
    assert!(
        line.ends_with(&format!("…(cut, {} chars)", char_count(&original))),
        "{line}"
    );
    assert_eq!(full.command.as_deref(), Some(command.as_str()));
    assert_eq!(r.sidecar["jobs"]["records"][0]["command"], command.as_str());
    assert_eq!(
        r.recorded_jobs.unwrap()[0].command.as_deref(),
        Some(command.as_str())
    );
}

#[test]
fn oversized_jobs_stay_in_16_kib_with_an_explicit_omission_count() {
    let jobs: Vec<Value> = (0..40)
        .map(|i| job(&format!("j{i:02}"), &"y".repeat(700)))
        .collect();
    let facts = IntegrationFacts {
        jobs: Some(jobs),
        ..IntegrationFacts::default()
    };
    let r = render(&facts, SID);
    let body = &r.sections[0].body;
    assert!(body.len() <= JOBS_BUDGET_BYTES, "{}", body.len());
    let shown = body.lines().filter(|l| l.starts_with('j')).count();
    assert!(shown >= 20, "about twenty cut lines fit: {shown}");
    let last = body.lines().last().unwrap();
    assert_eq!(
        last,
        omission(40 - shown, "jobs/watches"),
        "every record that did not fit is counted"
    );
    insta::assert_snapshot!(last);
    assert_eq!(r.sidecar["jobs"]["records"].as_array().unwrap().len(), 40);
}

#[test]
fn subagents_stay_in_4_kib() {
    let agents: Vec<Value> = (0..100)
        .map(|i| json!({"id": format!("agent-{i}"), "status": "running", "description": "d".repeat(80)}))
        .collect();
    let facts = IntegrationFacts {
        subagents: Some(agents),
        ..IntegrationFacts::default()
    };
    let body = render(&facts, SID).sections[1].body.clone();
    assert!(body.len() <= SUBAGENTS_BUDGET_BYTES);
    insta::assert_snapshot!(body.lines().last().unwrap());
}

#[test]
fn questions_list_at_most_20_lines_of_200_chars() {
    let items: Vec<Value> = (0..25)
        .map(|i| json!({"id": format!("q{i}"), "sessionId": SID, "status": "open", "title": "t".repeat(300)}))
        .collect();
    let facts = IntegrationFacts {
        stores: Some(StoreContents {
            questions: Some(items),
            ..StoreContents::default()
        }),
        ..IntegrationFacts::default()
    };
    let body = render(&facts, SID).sections[2].body.clone();
    let lines: Vec<&str> = body.lines().filter(|l| l.starts_with('q')).collect();
    assert_eq!(lines.len(), QUESTIONS_MAX_LINES);
    assert!(lines
        .iter()
        .all(|l| char_count(l) <= QUESTION_LINE_MAX_CHARS));
    insta::assert_snapshot!(body.lines().last().unwrap());
}

#[test]
fn claims_stay_in_768_bytes_plus_the_omission_marker() {
    let claims: Vec<Value> = (0..30)
        .map(|i| json!({"sessionId": SID, "issue": i, "title": "a claim with some words in it"}))
        .collect();
    let facts = IntegrationFacts {
        stores: Some(StoreContents {
            claims: Some(claims),
            ..StoreContents::default()
        }),
        ..IntegrationFacts::default()
    };
    let body = render(&facts, SID).sections[3].body.clone();
    let (kept, marker) = body.rsplit_once('\n').unwrap();
    assert!(kept.len() <= CLAIMS_BUDGET_BYTES, "{}", kept.len());
    insta::assert_snapshot!(marker);
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
fn the_watch_check_lists_only_recorded_work_that_is_gone() {
    let recorded = vec![
        RecordedJob {
            id: "w1".into(),
            label: Some("ci".into()),
            command: Some("gh run watch 77".into()),
        },
        RecordedJob {
            id: "j1".into(),
            label: None,
            command: Some("cargo build".into()),
        },
    ];
    let live = vec![job("j1", "cargo build")];
    let missing = missing_work(&recorded, Some(&live), SID).unwrap();
    assert_eq!(missing.len(), 1);
    insta::assert_snapshot!(render_watch_check(&missing));
    assert_eq!(
        missing_work(&recorded, None, SID),
        None,
        "no registry: nothing"
    );
    let all = vec![job("j1", "x"), job("w1", "y")];
    assert_eq!(
        missing_work(&recorded, Some(&all), SID),
        None,
        "all live: nothing"
    );
    let done = vec![json!({"id": "j1", "status": "failed"}), job("w1", "y")];
    assert_eq!(
        missing_work(&recorded, Some(&done), SID).unwrap()[0].id,
        "j1",
        "a finished job is no longer live"
    );
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
    // Nothing from either source stays unavailable; an empty directory is an empty inventory.
    assert_eq!(subagent_lookup_ids(None, &[]), None);
    assert_eq!(subagent_lookup_ids(Some(&[]), &[]), Some(vec![]));
}

#[test]
fn a_watch_check_keeps_a_long_command_whole_so_it_can_be_re_armed() {
    let command = format!("gh run watch 77 --exit-status {}", "x".repeat(1_000));
    let missing = [RecordedJob {
        id: "w1".into(),
        label: Some("ci".into()),
        command: Some(command.clone()),
    }];
    let text = render_watch_check(&missing);
    assert!(text.contains(&format!("w1 | ci | {command}")), "{text}");
    assert!(!text.contains("(cut,"));
    // Only a line past WATCH_LINE_MAX_CHARS is cut, naming its length.
    let huge = [RecordedJob {
        id: "w2".into(),
        label: None,
        command: Some("y".repeat(WATCH_LINE_MAX_CHARS + 10)),
    }];
    assert!(render_watch_check(&huge).contains(&format!(
        "(cut, {} chars)",
        WATCH_LINE_MAX_CHARS + 10 + "w2 | - | ".len()
    )));
}
