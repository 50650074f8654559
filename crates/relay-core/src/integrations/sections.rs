//! The integration sections of a handoff: what [`super`] selects of each integration's facts,
//! written with the texts of [`crate::render::integrations`] (which read only the facts' types),
//! and what the sidecar keeps of them.

use serde_json::{json, Value};

use super::*;
use crate::render::integrations::{self as texts, Row};

/// The integration sections of a handoff, what the sidecar keeps, and the jobs the next window's
/// watch check compares with the registry (`None`: the registry was absent).
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub sections: Vec<Section>,
    pub sidecar: Value,
    pub recorded_jobs: Option<Vec<RecordedJob>>,
}

impl Rendered {
    /// The sections as handoff markdown ([`texts::markdown`]).
    pub fn markdown(&self) -> String {
        texts::markdown(&self.sections)
    }
}

/// Render every integration section for this session.
pub fn render(facts: &IntegrationFacts, session_id: &str) -> Rendered {
    let mut sidecar = serde_json::Map::new();
    let (jobs, recorded) = jobs_section(facts.jobs.as_deref(), session_id, &mut sidecar);
    let subagents = subagents_section(facts.subagents.as_deref(), &mut sidecar);
    let stores = facts.stores.as_ref();
    let questions = questions_section(stores, session_id, &mut sidecar);
    let claims = claims_section(stores, session_id, &mut sidecar);
    Rendered {
        sections: vec![jobs, subagents, questions, claims],
        sidecar: Value::Object(sidecar),
        recorded_jobs: recorded,
    }
}

fn jobs_section(
    jobs: Option<&[Value]>,
    session_id: &str,
    sidecar: &mut serde_json::Map<String, Value>,
) -> (Section, Option<Vec<RecordedJob>>) {
    let Some(list) = jobs else {
        sidecar.insert("jobs".into(), json!({ "available": false }));
        return (texts::jobs_unavailable(), None);
    };
    let mut corrupt = 0u32;
    let mut pending = Vec::new();
    let mut full = Vec::new();
    for v in list {
        match JobRecord::parse(v) {
            Some(job) if job.pending_for(session_id) => {
                full.push(v.clone());
                pending.push(job);
            }
            Some(_) => {}
            None => corrupt += 1,
        }
    }
    sidecar.insert(
        "jobs".into(),
        json!({ "available": true, "records": full, "corrupt": corrupt }),
    );
    let recorded = pending
        .iter()
        .take(RECORDED_JOBS_MAX)
        .map(|j| RecordedJob {
            id: j.id.clone(),
            label: j.label.clone(),
            command: j.command.clone(),
        })
        .collect();
    (texts::jobs(&pending, corrupt), Some(recorded))
}

fn subagents_section(
    records: Option<&[Value]>,
    sidecar: &mut serde_json::Map<String, Value>,
) -> Section {
    let Some(list) = records else {
        sidecar.insert("subagents".into(), json!({ "available": false }));
        return texts::subagents_unavailable();
    };
    let mut corrupt = 0u32;
    let mut rows = Vec::new();
    let mut kept = Vec::new();
    for v in list {
        let (Some(id), status) = (field(v, &["id"]), field(v, &["status"])) else {
            corrupt += 1;
            continue;
        };
        if !status_in(status.as_deref(), SUBAGENT_PENDING) {
            continue;
        }
        rows.push(Row {
            id,
            status: status.unwrap_or_default(),
            text: field(v, &["description"]),
        });
        kept.push(v.clone());
    }
    sidecar.insert(
        "subagents".into(),
        json!({ "available": true, "records": kept, "corrupt": corrupt }),
    );
    texts::subagents(&rows, corrupt)
}

fn questions_section(
    stores: Option<&StoreContents>,
    session_id: &str,
    sidecar: &mut serde_json::Map<String, Value>,
) -> Section {
    let Some(items) = stores.and_then(|s| s.questions.as_ref()) else {
        sidecar.insert("questions".into(), json!({ "available": false }));
        return texts::questions_unavailable();
    };
    let mut open = Vec::new();
    let mut kept = Vec::new();
    for v in items {
        // Corrupt items were left out by the reader; an item without an id is one too.
        let Some(id) = field(v, &["id"]) else {
            continue;
        };
        if field(v, &["sessionId"]).as_deref() != Some(session_id) {
            continue;
        }
        let status = field(v, &["status"]).unwrap_or_else(|| "open".into());
        if status_in(Some(&status), QUESTION_CLOSED) {
            continue;
        }
        open.push(Row {
            id,
            status,
            text: field(v, &["title", "question"]),
        });
        kept.push(v.clone());
    }
    sidecar.insert(
        "questions".into(),
        json!({ "available": true, "open": kept }),
    );
    texts::questions(&open)
}

fn claims_section(
    stores: Option<&StoreContents>,
    session_id: &str,
    sidecar: &mut serde_json::Map<String, Value>,
) -> Section {
    let Some(lines) = stores.and_then(|s| s.claims.as_ref()) else {
        sidecar.insert("claims".into(), json!({ "available": false }));
        return texts::claims_unavailable();
    };
    let corrupt = stores.map_or(0, |s| s.claims_corrupt);
    // The registry is append-only: a later line about the same claim replaces an earlier one.
    let mut held: Vec<(String, Value)> = Vec::new();
    for v in lines {
        if field(v, &["sessionId"]).as_deref() != Some(session_id) {
            continue;
        }
        let Some(issue) = field(v, &["issue", "id", "key"]) else {
            continue;
        };
        let key = match field(v, &["repo"]) {
            Some(repo) => format!("{repo}#{issue}"),
            None => issue,
        };
        held.retain(|(k, _)| *k != key);
        if !status_in(field(v, &["status"]).as_deref(), CLAIM_RELEASED) {
            held.push((key, v.clone()));
        }
    }
    sidecar.insert(
        "claims".into(),
        json!({ "available": true, "held": held.iter().map(|(_, v)| v.clone()).collect::<Vec<_>>() }),
    );
    let rows: Vec<Row> = held
        .into_iter()
        .map(|(key, v)| Row {
            id: key,
            status: field(&v, &["status"]).unwrap_or_else(|| "claimed".into()),
            text: field(&v, &["title"]),
        })
        .collect();
    texts::claims(&rows, corrupt)
}
