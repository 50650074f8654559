use super::*;
use crate::integrations::tests::{fixture, job, SID};
use crate::integrations::*;
use serde_json::{json, Value};

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

/// The body of section `index` rendered from `stores` alone.
fn store_section(stores: StoreContents, index: usize) -> String {
    let facts = IntegrationFacts {
        stores: Some(stores),
        ..IntegrationFacts::default()
    };
    render(&facts, SID).sections[index].body.clone()
}

#[test]
fn questions_list_at_most_20_lines_of_200_chars() {
    let items: Vec<Value> = (0..25)
        .map(|i| json!({"id": format!("q{i}"), "sessionId": SID, "status": "open", "title": "t".repeat(300)}))
        .collect();
    let body = store_section(
        StoreContents {
            questions: Some(items),
            ..StoreContents::default()
        },
        2,
    );
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
    let body = store_section(
        StoreContents {
            claims: Some(claims),
            ..StoreContents::default()
        },
        3,
    );
    let (kept, marker) = body.rsplit_once('\n').unwrap();
    assert!(kept.len() <= CLAIMS_BUDGET_BYTES, "{}", kept.len());
    insta::assert_snapshot!(marker);
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
