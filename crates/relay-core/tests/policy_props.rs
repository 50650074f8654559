//! Property tests: observe/enforce parity, threshold validation, Jaccard edge cases.

use proptest::prelude::*;
use relay_core::handoff::{jaccard, words};
use relay_core::policy::{
    parse_budget_config, resolve_thresholds, step, step_mode, CommitKind, Floor, LoopGuard, Mode,
    Phase, PolicyEffect, PolicyInput, PolicyParams, PolicyState, Thresholds,
};
use serde_json::json;

fn input_strategy() -> impl Strategy<Value = PolicyInput> {
    prop_oneof![
        Just(PolicyInput::BeforeAgentStart),
        prop::option::of(0u64..400_000).prop_map(|tokens| PolicyInput::Usage {
            tokens,
            floor: Floor::Unknown
        }),
        (0u8..4, prop::bool::ANY).prop_map(|(id, handoff)| PolicyInput::ToolCall {
            id: format!("c{id}"),
            name: if handoff {
                "context_handoff".into()
            } else {
                "bash".into()
            },
        }),
        Just(PolicyInput::HandoffWritten {
            path: "/r/h.md".into()
        }),
        (0u8..4, prop::bool::ANY).prop_map(|(id, success)| PolicyInput::ToolFinished {
            id: format!("c{id}"),
            name: "bash".into(),
            success,
        }),
        Just(PolicyInput::TurnEnd { continues: true }),
        prop::bool::ANY.prop_map(|pending_work| PolicyInput::BeforeSettle {
            pending_work,
            reset_due: false,
            stored_handoff: false,
        }),
        (prop::option::of(0u64..6_000_000), prop::bool::ANY).prop_map(|(idle_ms, stored)| {
            PolicyInput::ExternalInput {
                idle_ms,
                stored_handoff: stored.then(|| "/r/stored.md".to_string()),
            }
        }),
        Just(PolicyInput::ResetApplied),
    ]
}

fn params() -> PolicyParams {
    PolicyParams {
        thresholds: Thresholds {
            soft: 100_000,
            handoff: 200_000,
            hard: 300_000,
            min_progress: 30_000,
        },
        max_handoffs_per_session: 3,
        loop_guard: LoopGuard {
            max_handoffs_without_progress: 2,
            within_turns: 6,
        },
        idle_min_tokens: 150_000,
        idle_ms: 50 * 60_000,
        keep_recent_tokens: 20_000,
        relaunch: false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Observe runs the enforce transition: for the same inputs, observe's events are exactly the
    /// enforce effects renamed `would_*`. (Under enforce, the adapter answers each RequestReset with
    /// ResetApplied; observe applies that to its projection itself.)
    #[test]
    fn observe_events_are_enforce_effects_renamed(inputs in prop::collection::vec(input_strategy(), 0..60)) {
        let p = params();
        let mut enforce = PolicyState::default();
        let mut observe = PolicyState::default();
        for input in &inputs {
            let (e, mut fx) = step(&enforce, &p, input);
            enforce = e;
            if fx.iter().any(|x| matches!(x, PolicyEffect::RequestReset { .. })) {
                let (e2, fx2) = step(&enforce, &p, &PolicyInput::ResetApplied);
                enforce = e2;
                fx.extend(fx2);
            }
            let (o, ofx) = step_mode(Mode::Observe, &observe, &p, input);
            observe = o;
            let expected: Vec<PolicyEffect> = fx.iter().map(PolicyEffect::to_would).collect();
            prop_assert_eq!(&ofx, &expected);
            for e in &ofx {
                match e {
                    PolicyEffect::Event { would, .. } => prop_assert!(*would && e.event_name().is_some_and(|n| n.starts_with("would_"))),
                    other => prop_assert!(false, "observe produced a real effect: {:?}", other),
                }
            }
            prop_assert_eq!(observe.phase, enforce.phase);
        }
    }

    /// Idle handoffs: one request per external run or window, and an idle commit never counts
    /// toward the cap or the loop guard (reference: the counters before and after its reset).
    #[test]
    fn idle_requests_are_single_and_never_counted(inputs in prop::collection::vec(input_strategy(), 0..80)) {
        let p = params();
        let mut s = PolicyState::default();
        // Reference model: whether an idle request is open (sent, and no new run or reset since).
        let mut open = false;
        for input in &inputs {
            let (mut n, fx) = step(&s, &p, input);
            let requested = fx.iter().any(|e| e.event_name().as_deref() == Some("idle_handoff_requested"));
            if requested {
                prop_assert!(!open, "a second idle request while one is open");
                prop_assert!(!s.settle_continued, "a second handoff request in one run");
                let quiet = matches!(s.phase, Phase::Idle | Phase::SoftNotified);
                prop_assert!(quiet, "asked in {:?}", s.phase);
                prop_assert!(s.tokens.is_some_and(|t| t >= p.idle_min_tokens));
                let asked = matches!(input, PolicyInput::BeforeSettle { pending_work: true , reset_due: false, stored_handoff: false });
                prop_assert!(asked, "asked at {:?}", input);
                open = true;
            }
            if matches!(input, PolicyInput::BeforeAgentStart | PolicyInput::ResetApplied) {
                open = false;
            }
            if fx.iter().any(|e| matches!(e, PolicyEffect::RequestReset { .. })) {
                let idle = n.committing == Some(CommitKind::Idle);
                let before = (n.handoffs_committed, n.unproductive_commits.clone());
                n = step(&n, &p, &PolicyInput::ResetApplied).0;
                open = false;
                if idle {
                    prop_assert_eq!((n.handoffs_committed, n.unproductive_commits.clone()), before);
                }
            }
            prop_assert_eq!(n.idle_requested, open);
            s = n;
        }
    }

    /// Idle-input recovery (reference: the conditions restated): new input resets exactly when a
    /// stored handoff exists, the idleness is known and at least `idleMinutes`, the window is
    /// larger than `keepRecentTokens` and no reset, commit or guard fallback stands in the way;
    /// the reset continues nothing and never counts.
    #[test]
    fn idle_input_resets_exactly_when_its_conditions_hold(inputs in prop::collection::vec(input_strategy(), 0..80)) {
        let p = params();
        let mut s = PolicyState::default();
        for input in &inputs {
            let (mut n, fx) = step(&s, &p, input);
            let reset = fx.iter().any(|e| matches!(e, PolicyEffect::RequestReset { .. }));
            if let PolicyInput::ExternalInput { idle_ms, stored_handoff } = input {
                let phase_ok = match s.phase {
                    Phase::Idle | Phase::SoftNotified | Phase::HandoffRequired => true,
                    Phase::FallbackArmed => s.fallback == Some(relay_core::policy::FallbackReason::Hard),
                    _ => false,
                };
                let expected = phase_ok
                    && stored_handoff.is_some()
                    && idle_ms.is_some_and(|i| i >= p.idle_ms)
                    && s.tokens.is_some_and(|t| t > p.keep_recent_tokens);
                prop_assert_eq!(reset, expected, "{:?} in {:?}", input, s.phase);
                for e in &fx {
                    if let PolicyEffect::RequestReset { continue_run, kind, .. } = e {
                        prop_assert!(!continue_run);
                        prop_assert_eq!(*kind, CommitKind::Idle);
                    }
                }
            }
            if reset {
                let before = (n.handoffs_committed, n.unproductive_commits.clone());
                n = step(&n, &p, &PolicyInput::ResetApplied).0;
                if matches!(input, PolicyInput::ExternalInput { .. }) {
                    prop_assert_eq!((n.handoffs_committed, n.unproductive_commits.clone()), before);
                }
            }
            s = n;
        }
    }

    /// Off mode never produces effects, whatever happens.
    #[test]
    fn off_mode_is_silent(inputs in prop::collection::vec(input_strategy(), 0..40)) {
        let p = params();
        let mut s = PolicyState::default();
        for input in &inputs {
            let (n, fx) = step_mode(Mode::Off, &s, &p, input);
            prop_assert!(fx.is_empty());
            s = n;
        }
    }

    /// context_handoff is never blocked, in any reachable state.
    #[test]
    fn handoff_tool_is_never_blocked(inputs in prop::collection::vec(input_strategy(), 0..60)) {
        let p = params();
        let mut s = PolicyState::default();
        for input in &inputs {
            let (_, fx) = step(&s, &p, &PolicyInput::ToolCall { id: "h".into(), name: "context_handoff".into() });
            prop_assert!(fx.is_empty());
            s = step(&s, &p, input).0;
        }
    }

    /// Whatever the configuration and window, resolved thresholds are positive and ordered.
    #[test]
    fn resolved_thresholds_are_positive_and_ordered(
        main in prop::collection::vec(prop::option::of(prop_oneof![Just(-5.0f64), Just(0.0), 1.0f64..3_000_000.0]), 4),
        model in prop::collection::vec(prop::option::of(1u64..3_000_000), 4),
        window in prop_oneof![Just(0u64), 1u64..10_000, 10_000u64..5_000_000],
        reserve in 0u64..500_000,
        subagent in prop::bool::ANY,
    ) {
        let keys = ["soft", "handoff", "hard", "minProgress"];
        let mut m = serde_json::Map::new();
        for (k, v) in keys.iter().zip(&main) {
            if let Some(v) = v { m.insert(k.to_string(), json!(v)); }
        }
        let mut o = serde_json::Map::new();
        for (k, v) in keys.iter().zip(&model) {
            if let Some(v) = v { o.insert(k.to_string(), json!(v)); }
        }
        let role = if subagent { "subagent" } else { "main" };
        let cfg_json = json!({ role: m, "models": {"p/m": { role: o }} });
        let (cfg, issues) = parse_budget_config(&cfg_json, "budget");
        // Every rejected value is reported with a path under its role.
        for i in &issues { prop_assert!(i.path.starts_with("budget.")); }
        for key in ["p/m", "p/other"] {
            let t = resolve_thresholds(&cfg, key, window, reserve, subagent);
            prop_assert!(t.soft > 0 && t.min_progress > 0, "{:?}", t);
            prop_assert!(t.soft <= t.handoff && t.handoff <= t.hard, "{:?} from {}", t, cfg_json);
        }
    }
}

#[test]
fn jaccard_of_empty_and_punctuation_only_texts_is_zero() {
    assert_eq!(jaccard("", ""), 0.0);
    assert_eq!(jaccard("...!!", "—?—"), 0.0);
    assert_eq!(jaccard("", "word"), 0.0);
    assert!(words("  ,;: ").is_empty());
}

#[test]
fn jaccard_ignores_order_case_and_punctuation() {
    assert_eq!(jaccard("Fix the Bug!", "bug: the fix"), 1.0);
    assert_eq!(jaccard("a b", "b c"), 1.0 / 3.0);
}

#[test]
fn jaccard_folds_case_in_non_latin_scripts() {
    // Cyrillic and Greek case folding, Latin accents kept as letters.
    assert_eq!(jaccard("Привет МИР", "привет мир"), 1.0);
    assert_eq!(jaccard("ΣΟΦΙΑ", "σοφια"), 1.0);
    assert_eq!(jaccard("Café Über", "café über"), 1.0);
    assert!(jaccard("café", "cafe") < 1.0, "accents are significant");
    assert_eq!(
        words("naïve-résumé"),
        ["naïve", "résumé"].map(String::from).into()
    );
}

#[test]
fn jaccard_splits_cjk_ideographs_into_words() {
    // Han text has no spaces: each ideograph is a word, so partial overlap is measured.
    let w = words("修复上传测试");
    assert_eq!(w.len(), 6);
    let j = jaccard("修复上传测试", "修复下载测试");
    assert!(j > 0.3 && j < 1.0, "{j}");
    // Mixed scripts: Latin runs stay words.
    assert!(words("テスト run 测试").contains("run"));
    assert!(words("テスト run 测试").contains("テスト"));
}

proptest! {
    #[test]
    fn jaccard_is_a_symmetric_similarity(a in "\\PC{0,40}", b in "\\PC{0,40}") {
        let x = jaccard(&a, &b);
        prop_assert!((0.0..=1.0).contains(&x));
        prop_assert_eq!(x, jaccard(&b, &a));
        if !words(&a).is_empty() {
            prop_assert_eq!(jaccard(&a, &a), 1.0);
        }
    }
}
