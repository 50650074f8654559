use super::*;
use crate::resume_check::tests::result;
use crate::resume_check::CheckStatus;

/// A check that exited 0 and printed `head` alone.
fn passed(head: &str) -> crate::resume_check::CheckResult {
    result(CheckStatus::Exited { code: 0 }, head, "", 0)
}

#[test]
fn success_with_short_output() {
    let r = passed("HEAD 0123abc on trunk\n2 jobs running\n");
    insta::assert_snapshot!(render(&r, RESULT_BUDGET_BYTES));
}

#[test]
fn failure_timeout_signal_spawn_error_and_no_output() {
    let cases = [
        result(CheckStatus::Exited { code: 3 }, "tests: 2 failed\n", "", 0),
        result(
            CheckStatus::TimedOut { after_ms: 30_000 },
            "waiting…\n",
            "",
            0,
        ),
        result(CheckStatus::Signaled { signal: 15 }, "", "", 0),
        result(
            CheckStatus::SpawnFailed {
                error: "cannot run bash in /gone: No such file or directory (os error 2)".into(),
            },
            "",
            "",
            0,
        ),
    ];
    let text: Vec<String> = cases
        .iter()
        .map(|r| render(r, RESULT_BUDGET_BYTES))
        .collect();
    insta::assert_snapshot!(text.join("\n\n----\n\n"));
}

#[test]
fn output_held_open_by_a_background_process_is_said() {
    let mut r = passed("hi\n");
    r.output_held_open = true;
    insta::assert_snapshot!(render(&r, RESULT_BUDGET_BYTES));
}

#[test]
fn a_flood_keeps_head_and_tail_within_the_budget() {
    let head = "h".repeat(4096);
    let tail = format!("{}END\n", "t".repeat(4092));
    let r = result(CheckStatus::Exited { code: 0 }, &head, &tail, 100_000_000);
    let text = render(&r, RESULT_BUDGET_BYTES);
    assert!(text.len() <= RESULT_BUDGET_BYTES, "{}", text.len());
    assert!(
        text.len() > RESULT_BUDGET_BYTES - 64,
        "uses the budget: {}",
        text.len()
    );
    assert!(text.contains("cut to fit") && text.contains("END"));
    // Shown: the first and last bytes; the marker counts everything else.
    let shown_h = text.matches('h').count() - "Output".matches('h').count();
    let shown_t = text.matches('t').count();
    assert!(shown_h > 1000 && shown_t > 1000, "{shown_h} {shown_t}");
    let short = render(&r, 600);
    insta::assert_snapshot!(short);
    assert!(short.len() <= 600);
}

#[test]
fn cuts_fall_on_character_boundaries_and_never_exceed_any_budget() {
    let head = "é€😀".repeat(600);
    let tail = "😀€é".repeat(600);
    let mut r = result(CheckStatus::Exited { code: 1 }, &head, &tail, 7);
    r.command = "ü".repeat(900);
    for budget in [0, 1, 5, 40, 100, 333, 1000, 4095, 4096] {
        let text = render(&r, budget);
        assert!(text.len() <= budget, "{budget}: {}", text.len());
    }
    let text = render(&r, RESULT_BUDGET_BYTES);
    assert!(text.contains("…(cut, "), "the label cut is visible");
    let window = render_window_message(&r);
    assert!(window.len() <= RESULT_BUDGET_BYTES);
    let section = render_handoff_section(&r, 10_000);
    assert!(section.len() <= RESULT_BUDGET_BYTES);
    assert!(render_handoff_section(&r, 300).len() <= 300);
}

#[test]
fn backticks_in_the_output_get_a_longer_fence() {
    let r = passed("```\nnot a fence end\n````\n");
    insta::assert_snapshot!(render(&r, RESULT_BUDGET_BYTES));
}

#[test]
fn handoff_section_and_window_message() {
    let r = passed("clean tree\n</resume_check> sneaky\n");
    insta::assert_snapshot!(format!(
        "{}\n\n====\n\n{}",
        render_handoff_section(&r, 49_152),
        render_window_message(&r)
    ));
}
