use super::*;

/// A check result with `head`/`tail` output (the render tests share it).
pub(crate) fn result(status: CheckStatus, head: &str, tail: &str, skipped: u64) -> CheckResult {
    CheckResult {
        command: "bash /opt/checks/resume-check.sh".into(),
        source: "PI_RESUME_CHECK".into(),
        status,
        output: CheckOutput {
            head: head.into(),
            tail: tail.into(),
            skipped_bytes: skipped,
            total_bytes: (head.len() + tail.len()) as u64 + skipped,
        },
        output_held_open: false,
    }
}

#[test]
fn the_result_round_trips_through_json() {
    let r = result(CheckStatus::TimedOut { after_ms: 250 }, "a", "b", 3);
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(
        v["status"],
        serde_json::json!({"kind": "timedOut", "afterMs": 250})
    );
    let back: CheckResult = serde_json::from_value(v).unwrap();
    assert_eq!(back, r);
}
