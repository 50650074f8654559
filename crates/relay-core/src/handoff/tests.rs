use super::*;
use serde_json::json;

pub(crate) fn meta() -> HandoffMeta {
    HandoffMeta {
        timestamp_ms: 1_700_000_000_000,
        tz_offset_minutes: 60,
        cwd: "/home/ann/work/relay".into(),
        repo_root: Some("/home/ann/work/relay".into()),
        git_branch: Some("main".into()),
        git_head: Some("0123456789abcdef0123456789abcdef01234567".into()),
        git_state: GitState::Repo,
        session_id: "s42".into(),
        sequence: 3,
        window_id: "pcw:s42:0000abcd".into(),
    }
}

pub(crate) fn args(goal: &str, next_step: &str, facts: &str) -> HandoffArgs {
    HandoffArgs::parse(&json!({"goal": goal, "next_step": next_step, "facts": facts})).unwrap()
}

/// A text of exactly `n` bytes made of short words, without trailing whitespace.
pub(crate) fn text_of(n: usize, word: &str) -> String {
    let mut s = String::new();
    while s.len() < n {
        s.push_str(word);
        s.push(' ');
    }
    s.truncate(n);
    if s.ends_with(' ') {
        s.pop();
        s.push('x');
    }
    s
}

#[test]
fn argument_errors_name_the_field() {
    let cases = [
        (
            json!({"next_step": "n", "facts": "f"}),
            r#"argument "goal" is required"#,
        ),
        (
            json!({"goal": null, "next_step": "n", "facts": "f"}),
            r#"argument "goal" is required"#,
        ),
        (
            json!({"goal": "g", "next_step": "  ", "facts": "f"}),
            r#"argument "next_step" must not be empty"#,
        ),
        (
            json!({"goal": "g", "next_step": "n", "facts": 3}),
            r#"argument "facts" must be a string, got 3"#,
        ),
        (
            json!({"goal": "g", "next_step": "n", "facts": "f", "decisions": ["x"]}),
            r#"argument "decisions" must be a string, got ["x"]"#,
        ),
        (
            json!({"goal": "g", "next_step": "n", "facts": "f", "files_to_read": "/a"}),
            r#"argument "files_to_read" must be an array of paths, got "/a""#,
        ),
        (
            json!({"goal": "g", "next_step": "n", "facts": "f", "files_to_read": ["/a", 1]}),
            r#"argument "files_to_read[1]" must be a string path, got 1"#,
        ),
        (
            json!({"goal": "g", "next_step": "n", "facts": "f", "files_to_read": ["/a", " "]}),
            r#"argument "files_to_read[1]" must not be empty"#,
        ),
        (
            json!({"goal": "g", "next_step": "n", "facts": "f", "launch_prompt": "prompt.md"}),
            r#"argument "launch_prompt" must be an absolute path, got "prompt.md""#,
        ),
        (
            json!({"goal": "g", "next_step": "n", "facts": "f", "mood": "tired"}),
            r#"unknown argument "mood" (accepted: goal, next_step, facts, decisions, user_constraints, open_items, hypotheses, files_to_read, launch_prompt)"#,
        ),
        (json!(["g"]), r#"arguments must be an object, got ["g"]"#),
        (json!(null), r#"argument "goal" is required"#),
    ];
    for (input, expected) in cases {
        let err = HandoffArgs::parse(&input).unwrap_err();
        assert!(matches!(err, HandoffError::InvalidArgument(_)));
        assert_eq!(err.to_string(), format!("context_handoff: {expected}"));
        assert_eq!(err.to_tool_output().text, err.to_string());
    }
}

#[test]
fn optional_fields_accept_absent_null_and_empty() {
    let a = HandoffArgs::parse(&json!({
        "goal": "g", "next_step": "n", "facts": "f",
        "decisions": null, "hypotheses": "", "files_to_read": null
    }))
    .unwrap();
    assert_eq!(a.decisions, None);
    assert_eq!(a.hypotheses, None);
    assert!(a.files_to_read.is_empty());
}

#[test]
fn timestamps_format_with_offset() {
    assert_eq!(format_timestamp(0, 0), "1970-01-01T00:00:00+00:00");
    assert_eq!(
        format_timestamp(1_700_000_000_000, -330),
        "2023-11-14T16:43:20-05:30"
    );
    assert_eq!(
        format_timestamp(951_782_400_000, 0),
        "2000-02-29T00:00:00+00:00"
    );
}

fn fp(at_ms: i64, head: Option<&str>, a: &HandoffArgs) -> HandoffFingerprint {
    HandoffFingerprint::new(a, at_ms, head)
}

#[test]
fn duplicate_within_window_same_head_similar_text_is_refused() {
    let a = args(
        "Fix the upload test",
        "Run the tests",
        "It fails on main at 0123",
    );
    let prev = fp(1_000_000, Some("abc"), &a);
    let err = duplicate_check(Some(&prev), 1_000_000 + 60_000, Some("abc"), &a).unwrap_err();
    assert_eq!(err.at_ms, 1_000_000 + DUPLICATE_WINDOW_MS);
    assert!(err.similarity > 0.99);
    let msg = err.message(0);
    assert!(
        msg.contains("Retry after 1970-01-01T00:31:40+00:00"),
        "{msg}"
    );
    // Word order, case and punctuation do not matter.
    let b = args(
        "upload TEST: fix the!",
        "the tests, run",
        "main at 0123 fails on it",
    );
    assert!(duplicate_check(Some(&prev), 1_060_000, Some("abc"), &b).is_err());
}

#[test]
fn duplicate_back_off_lets_changed_or_expired_handoffs_through() {
    let a = args("Fix the upload test", "Run the tests", "It fails on main");
    let prev = fp(1_000_000, Some("abc"), &a);
    // No previous handoff.
    assert!(duplicate_check(None, 1_000_001, Some("abc"), &a).is_ok());
    // Expired.
    assert!(duplicate_check(
        Some(&prev),
        1_000_000 + DUPLICATE_WINDOW_MS,
        Some("abc"),
        &a
    )
    .is_ok());
    assert!(duplicate_check(
        Some(&prev),
        1_000_000 + DUPLICATE_WINDOW_MS - 1,
        Some("abc"),
        &a
    )
    .is_err());
    // HEAD changed.
    assert!(duplicate_check(Some(&prev), 1_000_001, Some("def"), &a).is_ok());
    // Unknown HEAD now or before never establishes "unchanged".
    assert!(duplicate_check(Some(&prev), 1_000_001, None, &a).is_ok());
    let prev_unknown = fp(1_000_000, None, &a);
    assert!(duplicate_check(Some(&prev_unknown), 1_000_001, None, &a).is_ok());
    // Narrative changed enough.
    let b = args(
        "Fix the upload test",
        "Open a pull request",
        "Fixed in 0456, tests pass",
    );
    assert!(duplicate_check(Some(&prev), 1_000_001, Some("abc"), &b).is_ok());
}

#[test]
fn fingerprint_round_trips_through_tool_result_details() {
    let a = args("g", "n", "f");
    for head in [Some("abc"), None] {
        let f = fp(42, head, &a);
        let details = json!({"fingerprint": f.to_value()});
        let text = serde_json::to_string(&details).unwrap();
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            HandoffFingerprint::from_value(&back["fingerprint"]),
            Some(f)
        );
    }
    assert_eq!(HandoffFingerprint::from_value(&json!({"atMs": "x"})), None);
}

/// The back-off refuses only similarity strictly above 0.9: 9 shared words of 10 (exactly 0.9)
/// pass, 10 of 11 (0.909…) are refused; words are compared as a set, case- and order-blind.
#[test]
fn duplicate_similarity_boundary_is_exactly_point_nine() {
    let words = |n: usize| {
        (0..n)
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    // goal + facts + next_step are compared together: put the words in the goal.
    // next_step and facts repeat words of the goal, so the set is the goal's words.
    let prev_args = args(&words(9), "w0", "w1");
    let prev = fp(1_000_000, Some("abc"), &prev_args);
    // Union 10, intersection 9: 0.9 exactly, allowed.
    let at_point_nine = args(&format!("{} extra", words(9)), "w0", "w1");
    assert_eq!(jaccard(&prev.text, &fingerprint_text(&at_point_nine)), 0.9);
    assert!(duplicate_check(Some(&prev), 1_000_001, Some("abc"), &at_point_nine).is_ok());
    // Union 11, intersection 10: above 0.9, refused.
    let prev = fp(1_000_000, Some("abc"), &args(&words(10), "w0", "w1"));
    let above = args(&format!("{} EXTRA", words(10).to_uppercase()), "w1", "w0");
    let sim = jaccard(&prev.text, &fingerprint_text(&above));
    assert!(sim > 0.9 && sim < 0.91, "{sim}");
    let refused = duplicate_check(Some(&prev), 1_000_001, Some("abc"), &above).unwrap_err();
    assert!((refused.similarity - 10.0 / 11.0).abs() < 1e-12);
}
