//! The handoff's integration sections (jobs and watches, subagents, pending questions, issue
//! claims), each within its own allowance with counted omissions, and the new window's
//! `<watch_check>`. Which records are pending, and what the sidecar keeps, is decided in
//! [`crate::integrations`]; these functions take what it selected.

use crate::integrations::{
    JobRecord, RecordedJob, Section, CLAIMS_BUDGET_BYTES, JOBS_BUDGET_BYTES, JOB_LINE_MAX_CHARS,
    QUESTIONS_BUDGET_BYTES, QUESTIONS_MAX_LINES, QUESTION_LINE_MAX_CHARS, SUBAGENTS_BUDGET_BYTES,
    WATCH_CHECK_BUDGET_BYTES, WATCH_LINE_MAX_CHARS,
};
use crate::text::{char_count, ellipsize};

/// One pending record as a section lists it: `id | status | text` (`-` without a text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub id: String,
    pub status: String,
    pub text: Option<String>,
}

impl Row {
    fn line(&self) -> String {
        one_line(&format!(
            "{} | {} | {}",
            self.id,
            self.status,
            self.text.as_deref().unwrap_or("-")
        ))
    }
}

/// The sections as handoff markdown (one `##` heading, one `###` per integration).
pub fn markdown(sections: &[Section]) -> String {
    let mut md = String::from("## Pending work and integrations (recorded by Relay)\n\n");
    md.push_str(
        "Read from the integrations present in this process when the handoff was written; `unavailable` means the integration is not installed or its data could not be read.\n\n",
    );
    for s in sections {
        md.push_str("### ");
        md.push_str(s.title);
        md.push_str("\n\n");
        md.push_str(s.body.trim_end());
        md.push_str("\n\n");
    }
    md.trim_end().to_string()
}

const JOBS_TITLE: &str = "Jobs and watches (pi-jobs)";
const JOBS_HEADER: &str = "id | label | kind | until | intervalSeconds | command | cwd | logPath";

/// The jobs section when there is no pi-jobs registry.
pub fn jobs_unavailable() -> Section {
    Section {
        title: JOBS_TITLE,
        body: "unavailable (no pi-jobs registry in this process)".into(),
    }
}

/// The jobs section: the session's pending jobs and watches, `corrupt` records left out.
pub fn jobs(pending: &[JobRecord], corrupt: u32) -> Section {
    let body = if pending.is_empty() {
        "none".to_string()
    } else {
        let lines: Vec<String> = pending.iter().map(job_line).collect();
        budgeted(Some(JOBS_HEADER), &lines, JOBS_BUDGET_BYTES, "jobs/watches")
    };
    Section {
        title: JOBS_TITLE,
        body: format!("{body}{}", corrupt_note(corrupt, "record(s)")),
    }
}

fn job_line(job: &JobRecord) -> String {
    let d = |o: &Option<String>| o.clone().unwrap_or_else(|| "-".into());
    let line = [
        job.id.clone(),
        d(&job.label),
        d(&job.kind),
        d(&job.until),
        d(&job.interval_seconds),
        d(&job.command),
        d(&job.cwd),
        d(&job.log_path),
    ]
    .map(|s| one_line(&s))
    .join(" | ");
    cut_line(&line, JOB_LINE_MAX_CHARS)
}

fn recorded_job_line(job: &RecordedJob) -> String {
    let d = |o: &Option<String>| one_line(o.as_deref().unwrap_or("-"));
    cut_line(
        &format!(
            "{} | {} | {}",
            one_line(&job.id),
            d(&job.label),
            d(&job.command)
        ),
        WATCH_LINE_MAX_CHARS,
    )
}

const SUBAGENTS_TITLE: &str = "Subagents (pi-subagents)";

/// The subagents section when there is no registry and no task directory.
pub fn subagents_unavailable() -> Section {
    Section {
        title: SUBAGENTS_TITLE,
        body: "unavailable (no pi-subagents registry, or one that cannot list its agents and no subagent id of this session to ask it about)"
            .into(),
    }
}

/// The subagents section: the running or queued ones (`id | status | description`).
pub fn subagents(rows: &[Row], corrupt: u32) -> Section {
    let body = if rows.is_empty() {
        "none".to_string()
    } else {
        let lines: Vec<String> = rows.iter().map(Row::line).collect();
        budgeted(
            Some("id | status | description"),
            &lines,
            SUBAGENTS_BUDGET_BYTES,
            "subagents",
        )
    };
    Section {
        title: SUBAGENTS_TITLE,
        body: format!("{body}{}", corrupt_note(corrupt, "record(s)")),
    }
}

const QUESTIONS_TITLE: &str = "Pending questions (pi-questions)";

/// The questions section when there is no readable question store.
pub fn questions_unavailable() -> Section {
    Section {
        title: QUESTIONS_TITLE,
        body: "unavailable (no readable question store)".into(),
    }
}

/// The questions section: this session's open questions (`id | status | title`), at most
/// [`QUESTIONS_MAX_LINES`] lines of [`QUESTION_LINE_MAX_CHARS`] characters.
pub fn questions(open: &[Row]) -> Section {
    if open.is_empty() {
        return Section {
            title: QUESTIONS_TITLE,
            body: "none".into(),
        };
    }
    let over = open.len().saturating_sub(QUESTIONS_MAX_LINES);
    // At most 200 characters, the `…` of a cut included.
    let shown: Vec<String> = open
        .iter()
        .take(QUESTIONS_MAX_LINES)
        .map(|r| ellipsize(&r.line(), QUESTION_LINE_MAX_CHARS - 1))
        .collect();
    let mut body = budgeted(
        Some("id | status | title"),
        &shown,
        QUESTIONS_BUDGET_BYTES,
        "questions",
    );
    if over > 0 {
        body.push_str(&format!(
            "\n… {over} more open questions omitted (at most {QUESTIONS_MAX_LINES} are listed)"
        ));
    }
    Section {
        title: QUESTIONS_TITLE,
        body,
    }
}

const CLAIMS_TITLE: &str = "Issue claims (issue-work registry)";

/// The claims section when there is no readable registry.
pub fn claims_unavailable() -> Section {
    Section {
        title: CLAIMS_TITLE,
        body: "unavailable (no readable issue-work/registry.jsonl)".into(),
    }
}

/// The claims section: the issues this session holds (`repo#issue | status | title`) within
/// [`CLAIMS_BUDGET_BYTES`] plus the omission marker, `corrupt` lines left out.
pub fn claims(held: &[Row], corrupt: u32) -> Section {
    if held.is_empty() {
        return Section {
            title: CLAIMS_TITLE,
            body: format!("none{}", corrupt_note(corrupt, "line(s)")),
        };
    }
    let mut body = String::new();
    let mut shown = 0;
    for row in held {
        let line = row.line();
        if body.len() + line.len() + 1 > CLAIMS_BUDGET_BYTES {
            break;
        }
        body.push_str(&line);
        body.push('\n');
        shown += 1;
    }
    if shown < held.len() {
        body.push_str(&format!(
            "… {} more claims omitted ({CLAIMS_BUDGET_BYTES} byte budget; the JSON sidecar lists them all)",
            held.len() - shown
        ));
    }
    Section {
        title: CLAIMS_TITLE,
        body: format!("{}{}", body.trim_end(), corrupt_note(corrupt, "line(s)")),
    }
}

/// Line breaks and tabs inside a field would break the `a | b` line: they become spaces.
pub(crate) fn one_line(s: &str) -> String {
    if !s.contains(['\n', '\r', '\t']) {
        return s.to_string();
    }
    s.chars()
        .map(|c| {
            if matches!(c, '\n' | '\r' | '\t') {
                ' '
            } else {
                c
            }
        })
        .collect()
}

/// A line over `max` characters keeps its head and ends `…(cut, N chars)`, N the original length;
/// the whole line then has at most `max` characters.
pub fn cut_line(line: &str, max: usize) -> String {
    let n = char_count(line);
    if n <= max {
        return line.to_string();
    }
    let marker = format!("…(cut, {n} chars)");
    let keep = max.saturating_sub(char_count(&marker));
    let head: String = line.chars().take(keep).collect();
    format!("{head}{marker}")
}

/// Lines under a header within `budget` bytes; what does not fit is counted on a last line.
fn budgeted(header: Option<&str>, lines: &[String], budget: usize, noun: &str) -> String {
    let mut out = String::new();
    if let Some(h) = header {
        out.push_str(h);
        out.push('\n');
    }
    let total: usize = out.len() + lines.iter().map(|l| l.len() + 1).sum::<usize>();
    if total <= budget {
        for l in lines {
            out.push_str(l);
            out.push('\n');
        }
        return out.trim_end().to_string();
    }
    // Room for the omission line, whatever the count.
    let reserve = omission(lines.len(), noun).len() + 1;
    let mut kept = 0;
    for l in lines {
        if out.len() + l.len() + 1 + reserve > budget {
            break;
        }
        out.push_str(l);
        out.push('\n');
        kept += 1;
    }
    out.push_str(&omission(lines.len() - kept, noun));
    out
}

fn omission(n: usize, noun: &str) -> String {
    format!(
        "… {n} more {noun} omitted (over this section's budget; the JSON sidecar lists them all)"
    )
}

fn corrupt_note(n: u32, noun: &str) -> String {
    if n == 0 {
        String::new()
    } else {
        format!("\n({n} unreadable {noun} left out)")
    }
}

/// The `Watch check` the new window's requests carry: the recorded work that is gone, so the
/// model can re-arm what is still needed.
pub fn render_watch_check(missing: &[RecordedJob]) -> String {
    let lines: Vec<String> = missing.iter().map(recorded_job_line).collect();
    let table = budgeted(
        Some("id | label | command"),
        &lines,
        WATCH_CHECK_BUDGET_BYTES.saturating_sub(512),
        "jobs/watches",
    );
    format!(
        "<watch_check>\nWatch check: the previous window's handoff recorded these background jobs or watches, and the pi-jobs registry no longer lists them as running. Re-arm the ones the task still needs (the handoff's JSON sidecar keeps their full records); Relay does not restart anything itself.\n\n{table}\n</watch_check>"
    )
}

#[cfg(test)]
#[path = "integrations_tests.rs"]
mod tests;
