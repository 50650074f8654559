use super::*;
use crate::render::policy::*;
use serde_json::json;

macro_rules! snap {
    ($e:expr) => {
        insta::with_settings!({snapshot_path => "../snapshots"}, {
            insta::assert_snapshot!($e)
        })
    };
    ($name:expr, $e:expr) => {
        insta::with_settings!({snapshot_path => "../snapshots"}, {
            insta::assert_snapshot!($name, $e)
        })
    };
}

const TH: Thresholds = Thresholds {
    soft: 100_000,
    handoff: 200_000,
    hard: 300_000,
    min_progress: 50_000,
};

fn params() -> PolicyParams {
    PolicyParams {
        thresholds: TH,
        max_handoffs_per_session: 10,
        loop_guard: LoopGuard::default(),
        idle_min_tokens: 150_000,
        idle_ms: 50 * 60_000,
        keep_recent_tokens: 20_000,
        relaunch: false,
    }
}

fn base(tokens: u64) -> PolicyState {
    PolicyState {
        tokens: Some(tokens),
        floor: Some(10_000),
        awaiting_floor: false,
        ..PolicyState::default()
    }
}

fn state_in(phase: Phase) -> PolicyState {
    match phase {
        Phase::Idle => base(20_000),
        Phase::SoftNotified => PolicyState {
            phase,
            soft_latched: true,
            ..base(150_000)
        },
        Phase::HandoffRequired => PolicyState {
            phase,
            soft_latched: true,
            ..base(250_000)
        },
        Phase::HandoffPendingCommit => PolicyState {
            phase,
            soft_latched: true,
            pending: Some(PendingHandoff {
                path: "/r/.ai-work/handoffs/s-1.md".into(),
                kind: CommitKind::Budget,
            }),
            ..base(250_000)
        },
        Phase::Compacting => PolicyState {
            phase,
            soft_latched: true,
            committing: Some(CommitKind::Budget),
            ..base(250_000)
        },
        Phase::FallbackArmed => PolicyState {
            phase,
            soft_latched: true,
            fallback: Some(FallbackReason::Hard),
            ..base(350_000)
        },
    }
}

fn usage(t: u64) -> PolicyInput {
    PolicyInput::Usage {
        tokens: Some(t),
        floor: Floor::Unknown,
    }
}
fn call(id: &str, name: &str) -> PolicyInput {
    PolicyInput::ToolCall {
        id: id.into(),
        name: name.into(),
    }
}
fn finished(id: &str, name: &str, success: bool) -> PolicyInput {
    PolicyInput::ToolFinished {
        id: id.into(),
        name: name.into(),
        success,
    }
}
fn written() -> PolicyInput {
    PolicyInput::HandoffWritten {
        path: "/r/.ai-work/handoffs/s-2.md".into(),
    }
}

/// A compact description of effects for table comparisons.
fn kinds(fx: &[PolicyEffect]) -> Vec<String> {
    fx.iter()
        .map(|e| match e {
            PolicyEffect::Notify { .. } => "notify".to_string(),
            PolicyEffect::Block { .. } => "block".to_string(),
            PolicyEffect::RequestReset { source, .. } => match source {
                PolicyReset::Handoff => "reset:handoff".to_string(),
                PolicyReset::Forced => "reset:forced".to_string(),
                PolicyReset::Idle => "reset:idle".to_string(),
                PolicyReset::IdleInput => "reset:idle-input".to_string(),
            },
            PolicyEffect::Continue { .. } => "continue".to_string(),
            PolicyEffect::Relaunch { reason } => format!("relaunch:{}", reason.as_str()),
            PolicyEffect::Event { .. } => format!("event:{}", e.event_name().unwrap_or_default()),
        })
        .collect()
}

/// Expected phase and effect kinds after one input.
type Expected = (Phase, Vec<&'static str>);

#[test]
fn transition_matrix() {
    use Phase::*;
    let inputs: Vec<(&str, PolicyInput)> = vec![
        ("before_agent_start", PolicyInput::BeforeAgentStart),
        ("usage<soft", usage(50_000)),
        ("usage>=soft", usage(150_000)),
        ("usage>=handoff", usage(250_000)),
        ("usage>=hard", usage(350_000)),
        (
            "usage=none",
            PolicyInput::Usage {
                tokens: None,
                floor: Floor::Unknown,
            },
        ),
        ("tool_call bash", call("c1", "bash")),
        ("tool_call handoff", call("c2", HANDOFF_TOOL)),
        ("handoff_written", written()),
        ("tool_finished bash", finished("c0", "bash", true)),
        ("turn_end", PolicyInput::TurnEnd { continues: true }),
        (
            "turn_end stopping",
            PolicyInput::TurnEnd { continues: false },
        ),
        (
            "before_settle",
            PolicyInput::BeforeSettle {
                pending_work: false,
                reset_due: false,
                stored_handoff: false,
            },
        ),
        ("reset_applied", PolicyInput::ResetApplied),
        (
            "before_settle pending",
            PolicyInput::BeforeSettle {
                pending_work: true,
                reset_due: false,
                stored_handoff: false,
            },
        ),
    ];
    const TC: &str = "event:threshold_crossed";
    const FA: &str = "event:fallback_armed";
    const HW: &str = "event:handoff_written";
    const TB: &str = "event:tool_blocked";
    const RA: &str = "event:reset_applied";
    const HC: &str = "event:handoff_committed";
    const IR: &str = "event:idle_handoff_requested";
    #[rustfmt::skip]
    let table: Vec<(Phase, Vec<Expected>)> = vec![
        (Idle, vec![
            (Idle, vec![]), (Idle, vec![]), (SoftNotified, vec![TC, "notify"]), (HandoffRequired, vec![TC]),
            (FallbackArmed, vec![TC, FA]), (Idle, vec![]), (Idle, vec![]), (Idle, vec![]),
            (HandoffPendingCommit, vec![HW]), (Idle, vec![]), (Idle, vec![]), (Idle, vec![]), (Idle, vec![]),
            (Idle, vec![RA]), (Idle, vec![]),
        ]),
        (SoftNotified, vec![
            (SoftNotified, vec![]), (Idle, vec![]), (SoftNotified, vec![]), (HandoffRequired, vec![TC]),
            (FallbackArmed, vec![TC, FA]), (SoftNotified, vec![]), (SoftNotified, vec![]), (SoftNotified, vec![]),
            (HandoffPendingCommit, vec![HW]), (SoftNotified, vec![]), (SoftNotified, vec![]), (SoftNotified, vec![]),
            (SoftNotified, vec![]), (Idle, vec![RA]), (SoftNotified, vec![IR, "continue"]),
        ]),
        (HandoffRequired, vec![
            (HandoffRequired, vec![]), (Idle, vec![]), (SoftNotified, vec![]), (HandoffRequired, vec![]),
            (FallbackArmed, vec![TC, FA]), (HandoffRequired, vec![]), (HandoffRequired, vec![TB, "block"]),
            (HandoffRequired, vec![]), (HandoffPendingCommit, vec![HW]), (HandoffRequired, vec![]),
            (HandoffRequired, vec![]), (HandoffRequired, vec![]),
            (HandoffRequired, vec!["event:settle_continuation", "continue"]), (Idle, vec![RA]),
            (HandoffRequired, vec!["event:settle_continuation", "continue"]),
        ]),
        (HandoffPendingCommit, vec![
            (HandoffPendingCommit, vec![]), (HandoffPendingCommit, vec![]), (HandoffPendingCommit, vec![]),
            (HandoffPendingCommit, vec![]), (HandoffPendingCommit, vec![]), (HandoffPendingCommit, vec![]),
            (HandoffPendingCommit, vec![TB, "block"]), (HandoffPendingCommit, vec![]),
            (HandoffPendingCommit, vec![HW]), (HandoffRequired, vec!["event:handoff_invalidated"]),
            (Compacting, vec![HC, "reset:handoff"]), (Compacting, vec![HC, "reset:handoff"]),
            (Compacting, vec![HC, "reset:handoff"]), (Idle, vec![RA]),
            (Compacting, vec![HC, "reset:handoff"]),
        ]),
        (Compacting, vec![
            (Compacting, vec![]), (Compacting, vec![]), (Compacting, vec![]), (Compacting, vec![]),
            (Compacting, vec![]), (Compacting, vec![]), (Compacting, vec![TB, "block"]), (Compacting, vec![]),
            (Compacting, vec!["event:handoff_ignored"]), (Compacting, vec![]), (Compacting, vec![]),
            (Compacting, vec![]), (Compacting, vec![]), (Idle, vec![RA]), (Compacting, vec![]),
        ]),
        (FallbackArmed, vec![
            (FallbackArmed, vec![]), (FallbackArmed, vec![]), (FallbackArmed, vec![]), (FallbackArmed, vec![]),
            (FallbackArmed, vec![]), (FallbackArmed, vec![]), (FallbackArmed, vec![TB, "block"]),
            (FallbackArmed, vec![]), (HandoffPendingCommit, vec![HW]), (FallbackArmed, vec![]),
            (FallbackArmed, vec![]), (FallbackArmed, vec![]),
            (FallbackArmed, vec!["event:settle_continuation", "continue"]), (Idle, vec![RA]),
            (FallbackArmed, vec!["event:settle_continuation", "continue"]),
        ]),
    ];
    let mut rows = 0;
    for (phase, expected) in &table {
        assert_eq!(expected.len(), inputs.len(), "row count for {phase:?}");
        let start = state_in(*phase);
        assert_eq!(start.phase, *phase);
        for ((label, input), (want_phase, want_fx)) in inputs.iter().zip(expected) {
            let (next, fx) = step(&start, &params(), input);
            assert_eq!(
                (next.phase, kinds(&fx)),
                (
                    *want_phase,
                    want_fx.iter().map(|s| s.to_string()).collect::<Vec<_>>()
                ),
                "{phase:?} × {label}"
            );
            // The input state is never mutated (pure transition).
            assert_eq!(start, state_in(*phase));
            rows += 1;
        }
    }
    assert_eq!(rows, 6 * 15);
}

#[test]
fn soft_advisory_once_per_crossing_rearmed_below() {
    let p = params();
    let mut s = base(20_000);
    let mut notes = 0;
    for t in [120_000, 130_000, 140_000, 50_000, 150_000, 160_000] {
        let (n, fx) = step(&s, &p, &usage(t));
        notes += fx
            .iter()
            .filter(|e| matches!(e, PolicyEffect::Notify { .. }))
            .count();
        s = n;
    }
    assert_eq!(notes, 2);
}

#[test]
fn floor_is_first_usage_after_reset_and_unknown_floor_never_blocks() {
    let p = params();
    // Fresh session: floor unknown.
    let s = PolicyState::default();
    let (s, fx) = step(
        &s,
        &p,
        &PolicyInput::Usage {
            tokens: None,
            floor: Floor::Unknown,
        },
    );
    assert_eq!((s.floor, s.phase), (None, Phase::Idle));
    assert!(fx.is_empty());
    // First known usage is huge: it becomes the floor, no progress, so no blocking.
    let (s, _) = step(&s, &p, &usage(260_000));
    assert_eq!(s.floor, Some(260_000));
    assert_eq!(s.phase, Phase::SoftNotified);
    let (_, fx) = step(&s, &p, &call("a", "bash"));
    assert!(fx.is_empty());
    // Growth below minProgress still does not block; reaching it does.
    let (s, _) = step(&s, &p, &usage(300_000 - 1));
    assert_eq!(s.phase, Phase::SoftNotified);
    let (s, _) = step(&s, &p, &usage(310_000));
    assert_eq!(s.phase, Phase::FallbackArmed);
    // A reset makes the floor unknown again.
    let (s, _) = step(&s, &p, &PolicyInput::ResetApplied);
    assert_eq!((s.floor, s.awaiting_floor, s.tokens), (None, true, None));
}

#[test]
fn sibling_that_finished_after_the_handoff_invalidates_it_a_blocked_one_does_not() {
    let p = params();
    let s = state_in(Phase::HandoffRequired);
    let (s, _) = step(&s, &p, &written());
    // A sibling call after the handoff is blocked; its (error) result does not invalidate.
    let (s, fx) = step(&s, &p, &call("b1", "bash"));
    assert_eq!(kinds(&fx), ["event:tool_blocked", "block"]);
    let (s, fx) = step(&s, &p, &finished("b1", "bash", false));
    assert!(fx.is_empty());
    assert_eq!(s.phase, Phase::HandoffPendingCommit);
    // A sibling that was already running and finishes now invalidates it.
    let (s, fx) = step(&s, &p, &finished("r1", "read", true));
    assert_eq!(kinds(&fx), ["event:handoff_invalidated"]);
    assert_eq!(s.phase, Phase::HandoffRequired);
    // So the turn end commits nothing.
    let (s, fx) = step(&s, &p, &PolicyInput::TurnEnd { continues: true });
    assert!(fx.is_empty());
    assert_eq!(s.phase, Phase::HandoffRequired);
}

#[test]
fn settle_continuation_once_per_external_run() {
    let p = params();
    let s = state_in(Phase::HandoffRequired);
    let (s, fx) = step(
        &s,
        &p,
        &PolicyInput::BeforeSettle {
            pending_work: false,
            reset_due: false,
            stored_handoff: false,
        },
    );
    assert!(kinds(&fx).contains(&"continue".to_string()));
    // Internal agent_start does not reach the policy; a second settle in the same run is quiet.
    let (s, fx) = step(
        &s,
        &p,
        &PolicyInput::BeforeSettle {
            pending_work: false,
            reset_due: false,
            stored_handoff: false,
        },
    );
    assert!(fx.is_empty());
    let (s, _) = step(&s, &p, &PolicyInput::BeforeAgentStart);
    let (_, fx) = step(
        &s,
        &p,
        &PolicyInput::BeforeSettle {
            pending_work: false,
            reset_due: false,
            stored_handoff: false,
        },
    );
    assert!(kinds(&fx).contains(&"continue".to_string()));
}

/// Drive one budget handoff cycle: cross handoff, write, commit, apply. Returns the new state.
fn budget_cycle(s: PolicyState, p: &PolicyParams, progress: bool) -> (PolicyState, Vec<String>) {
    let mut all = Vec::new();
    let mut s = s;
    let mut inputs = vec![usage(10_000)];
    if progress {
        inputs.push(call("p", "bash"));
        inputs.push(finished("p", "bash", true));
    }
    inputs.extend([
        usage(250_000),
        written(),
        PolicyInput::TurnEnd { continues: true },
        PolicyInput::ResetApplied,
    ]);
    for i in inputs {
        let (n, fx) = step(&s, p, &i);
        all.extend(kinds(&fx));
        s = n;
    }
    (s, all)
}

#[test]
fn budget_commits_count_and_the_cap_falls_back_before_another() {
    let p = PolicyParams {
        max_handoffs_per_session: 2,
        loop_guard: LoopGuard {
            max_handoffs_without_progress: 100,
            within_turns: 8,
        },
        ..params()
    };
    let mut s = PolicyState::default();
    for n in 1..=2 {
        let (next, fx) = budget_cycle(s, &p, false);
        assert!(fx.contains(&"reset:handoff".to_string()));
        assert_eq!(next.handoffs_committed, n);
        s = next;
    }
    let (s, _) = step(&s, &p, &usage(10_000));
    let (s, fx) = step(&s, &p, &usage(250_000));
    assert_eq!(s.phase, Phase::FallbackArmed);
    assert_eq!(s.fallback, Some(FallbackReason::Cap));
    assert!(kinds(&fx).contains(&"event:fallback_armed".to_string()));
    // A handoff cannot bypass the cap.
    let (s, fx) = step(&s, &p, &written());
    assert_eq!(kinds(&fx), ["event:handoff_ignored"]);
    let (s, fx) = step(
        &s,
        &p,
        &PolicyInput::BeforeSettle {
            pending_work: false,
            reset_due: false,
            stored_handoff: false,
        },
    );
    let reset = fx
        .iter()
        .find(|e| matches!(e, PolicyEffect::RequestReset { .. }))
        .unwrap();
    let PolicyEffect::RequestReset {
        source,
        continue_run,
        note,
        ..
    } = reset
    else {
        unreachable!()
    };
    assert_eq!(*source, PolicyReset::Forced);
    assert!(!continue_run, "after the cap the user decides");
    assert!(note
        .as_deref()
        .unwrap()
        .contains("limit of 2 automatic handoffs"));
    // The forced guard reset does not count as a commit.
    let (s, _) = step(&s, &p, &PolicyInput::ResetApplied);
    assert_eq!(s.handoffs_committed, 2);
}

#[test]
fn loop_guard_trips_without_progress_and_not_with_it() {
    let p = params(); // 2 commits within 8 turns
    let mut s = PolicyState::default();
    for _ in 0..2 {
        s = budget_cycle(s, &p, false).0;
    }
    let (_, fx) = budget_cycle(s.clone(), &p, false);
    assert!(fx.contains(&"event:fallback_armed".to_string()));
    assert!(!fx.contains(&"reset:handoff".to_string()));
    // With a successful non-handoff tool in between, the third cycle commits.
    let mut s = PolicyState::default();
    for _ in 0..2 {
        s = budget_cycle(s, &p, true).0;
    }
    let (_, fx) = budget_cycle(s.clone(), &p, true);
    assert!(fx.contains(&"reset:handoff".to_string()), "{fx:?}");
    // Commits older than withinTurns no longer count.
    let mut s = PolicyState::default();
    for _ in 0..2 {
        s = budget_cycle(s, &p, false).0;
    }
    for _ in 0..8 {
        s = step(&s, &p, &PolicyInput::TurnEnd { continues: true }).0;
    }
    let (_, fx) = budget_cycle(s, &p, false);
    assert!(fx.contains(&"reset:handoff".to_string()), "{fx:?}");
}

#[test]
fn hard_fallback_forces_a_reset_after_one_more_turn_and_counts() {
    let p = params();
    let (s, _) = step(&base(20_000), &p, &usage(350_000));
    assert_eq!(s.fallback, Some(FallbackReason::Hard));
    let (s, fx) = step(&s, &p, &PolicyInput::TurnEnd { continues: true });
    assert!(fx.is_empty(), "the crossing turn ends without reset");
    let (s, fx) = step(&s, &p, &PolicyInput::TurnEnd { continues: true });
    assert_eq!(kinds(&fx), ["event:forced_reset", "reset:forced"]);
    let Some(PolicyEffect::RequestReset { continue_run, .. }) = fx.last() else {
        unreachable!()
    };
    assert!(continue_run);
    let (s, _) = step(&s, &p, &PolicyInput::ResetApplied);
    assert_eq!(s.handoffs_committed, 1);
    // A valid handoff at hard commits as a hard commit.
    let (s, _) = step(&base(20_000), &p, &usage(350_000));
    let (s, _) = step(&s, &p, &written());
    assert!(handoff_is_forced(&s));
    let (s, fx) = step(&s, &p, &PolicyInput::TurnEnd { continues: true });
    assert!(matches!(
        fx.last(),
        Some(PolicyEffect::RequestReset {
            kind: CommitKind::Hard,
            ..
        })
    ));
    let (s, _) = step(&s, &p, &PolicyInput::ResetApplied);
    assert_eq!(s.handoffs_committed, 1);
}

#[test]
fn voluntary_handoffs_commit_but_do_not_count() {
    let p = params();
    let s = base(20_000);
    assert!(!handoff_is_forced(&s));
    let (s, _) = step(&s, &p, &written());
    let (s, fx) = step(&s, &p, &PolicyInput::TurnEnd { continues: true });
    assert!(kinds(&fx).contains(&"reset:handoff".to_string()));
    let (s, _) = step(&s, &p, &PolicyInput::ResetApplied);
    assert_eq!(s.handoffs_committed, 0);
}

#[test]
fn observe_converts_every_effect_and_changes_nothing_real() {
    let p = params();
    let s = state_in(Phase::HandoffRequired);
    let (o, fx) = step_mode(Mode::Observe, &s, &p, &call("x", "bash"));
    assert!(o.projected);
    assert_eq!(
        kinds(&fx),
        ["event:would_tool_blocked", "event:would_block"]
    );
    // A would-be reset is applied to the projection.
    let (o, _) = step_mode(Mode::Observe, &o, &p, &written());
    let (o, fx) = step_mode(
        Mode::Observe,
        &o,
        &p,
        &PolicyInput::TurnEnd { continues: true },
    );
    assert_eq!(
        kinds(&fx),
        [
            "event:would_handoff_committed",
            "event:would_reset",
            "event:would_reset_applied"
        ]
    );
    assert_eq!(o.phase, Phase::Idle);
    // Enforcement discards the projection but keeps measurements and actual counters.
    let (e, fx) = step_mode(Mode::Enforce, &o, &p, &PolicyInput::BeforeAgentStart);
    assert!(fx.is_empty());
    assert!(!e.projected);
    assert_eq!(
        e.handoffs_committed, 0,
        "preview-only commits are discarded"
    );
    assert_eq!(e.turn, o.turn);
}

#[test]
fn off_mode_only_measures() {
    let p = params();
    let s = state_in(Phase::HandoffRequired);
    for input in [
        call("x", "bash"),
        PolicyInput::BeforeSettle {
            pending_work: false,
            reset_due: false,
            stored_handoff: false,
        },
        usage(400_000),
    ] {
        let (n, fx) = step_mode(Mode::Off, &s, &p, &input);
        assert!(fx.is_empty());
        assert_eq!(n.phase, s.phase);
    }
    let (n, _) = step_mode(Mode::Off, &s, &p, &usage(400_000));
    assert_eq!(n.tokens, Some(400_000));
}

#[test]
fn config_reports_every_invalid_value_with_its_path() {
    let v = json!({
        "mode": "loud",
        "main": {"soft": -1, "handoff": "x", "hard": 500000, "minProgress": 0},
        "subagent": {"soft": 300, "handoff": 200, "hard": 400},
        "models": {"anthropic/claude": {"main": {"soft": 5}, "child": {}}},
        "maxHandoffsPerSession": 2.5,
        "loop": {"maxHandoffsWithoutProgress": 0, "withinTurns": 4},
        "enforceCwds": ["relative/dir", "/ok/**", "/bad/{x"],
        "idleMinutes": "soon",
        "frobnicate": true
    });
    let (cfg, issues) = parse_budget_config(&v, "budget");
    let paths: Vec<&str> = issues.iter().map(|i| i.path.as_str()).collect();
    for expected in [
        "budget.mode",
        "budget.main.soft",
        "budget.main.handoff",
        "budget.main.minProgress",
        "budget.subagent.soft",
        "budget.models.\"anthropic/claude\".child",
        "budget.maxHandoffsPerSession",
        "budget.loop.maxHandoffsWithoutProgress",
        "budget.enforceCwds[0]",
        "budget.enforceCwds[2]",
        "budget.idleMinutes",
        "budget.frobnicate",
    ] {
        assert!(paths.contains(&expected), "missing {expected} in {paths:?}");
    }
    assert_eq!(cfg.mode, Mode::Observe);
    assert_eq!(
        cfg.subagent,
        ThresholdOverrides::default(),
        "out-of-order set falls back"
    );
    assert_eq!(cfg.main.hard, Some(500_000));
    assert_eq!(cfg.models["anthropic/claude"].main.soft, Some(5));
    assert_eq!(cfg.max_handoffs_per_session, 10);
    assert_eq!(cfg.loop_guard.within_turns, 4);
    assert_eq!(cfg.enforce_cwds, Some(vec!["/ok/**".to_string()]));
    assert!(cfg.invalid.is_some());
}

#[test]
fn valid_seed_config_parses_cleanly() {
    let v = json!({
        "mode": "enforce",
        "resumeChecks": {},
        "overflowRecovery": true,
        "main": { "soft": 300000, "handoff": 400000, "hard": 600000, "minProgress": 50000 },
        "subagent": { "soft": 150000, "handoff": 200000, "hard": 300000, "minProgress": 25000 },
        "models": { "provider/model-id": { "main": { "soft": 80000, "handoff": 100000, "hard": 150000, "minProgress": 15000 } } },
        "idleMinutes": 50, "idleMinTokens": 300000, "keepRecentTokens": 20000,
        "maxHandoffsPerSession": 10,
        "loop": { "maxHandoffsWithoutProgress": 2, "withinTurns": 8 }
    });
    let (cfg, issues) = parse_budget_config(&v, "");
    assert!(issues.is_empty(), "{issues:?}");
    assert_eq!(cfg.invalid, None);
    assert_eq!(effective_mode(&cfg, "/anywhere").effective, Mode::Enforce);
    let th = resolve_thresholds(&cfg, "provider/model-id", 1_000_000, 16_384, false);
    assert_eq!(
        th,
        Thresholds {
            soft: 80_000,
            handoff: 100_000,
            hard: 150_000,
            min_progress: 15_000
        }
    );
    // The model override only covers main: subagent keeps the role values.
    let th = resolve_thresholds(&cfg, "provider/model-id", 1_000_000, 16_384, true);
    assert_eq!(th, SEED_SUBAGENT);
}

#[test]
fn invalid_configuration_never_enforces() {
    let (cfg, _) = parse_budget_config(&json!({"mode": "enforce", "main": {"soft": 0}}), "");
    let m = effective_mode(&cfg, "/x");
    assert_eq!((m.configured, m.effective), (Mode::Enforce, Mode::Observe));
    assert!(m.reason.unwrap().contains("invalid configuration"));
    let cfg = invalid_file_config(crate::ConfigIssue {
        path: "/agent/context-budget.json".into(),
        message: "not JSON: expected value at line 1".into(),
    });
    assert_eq!(cfg.mode, Mode::Observe);
    assert!(cfg.invalid.unwrap().contains("not JSON"));
    let (cfg, issues) = parse_budget_config(&json!([1]), "budget");
    assert_eq!(issues[0].path, "budget");
    assert!(cfg.invalid.is_some());
}

#[test]
fn enforce_cwds_prefixes_match_at_directory_boundaries_and_globs() {
    let (cfg, issues) = parse_budget_config(
        &json!({"mode": "enforce", "enforceCwds": ["/work/repo/", "/srv/*/app", "/home/{ann,bob}/**"]}),
        "",
    );
    assert!(issues.is_empty());
    for (cwd, enforced) in [
        ("/work/repo", true),
        ("/work/repo/sub/dir", true),
        ("/work/repo2", false),
        ("/work", false),
        ("/srv/x/app", true),
        ("/srv/x/y/app", false),
        ("/home/bob/code", true),
        ("/home/carl/code", false),
    ] {
        let m = effective_mode(&cfg, cwd);
        assert_eq!(m.effective == Mode::Enforce, enforced, "{cwd}");
        if !enforced {
            assert_eq!(m.reason.as_deref(), Some("cwd restriction"));
        }
    }
    let (cfg, _) = parse_budget_config(&json!({"mode": "enforce", "enforceCwds": []}), "");
    assert_eq!(
        effective_mode(&cfg, "/work").effective,
        Mode::Observe,
        "empty list enforces nowhere"
    );
}

#[test]
fn derived_thresholds_are_sane_for_any_window() {
    // Small windows get fractions of the usable window.
    assert_eq!(
        derived_thresholds(8_192, 16_384, false),
        Thresholds {
            soft: 2_211,
            handoff: 2_764,
            hard: 3_686,
            min_progress: 307
        }
    );
    assert_eq!(
        derived_thresholds(200_000, 16_384, false),
        Thresholds {
            soft: 99_152,
            handoff: 123_940,
            hard: 165_254,
            min_progress: 13_771
        }
    );
    // Large windows hold the seed's fixed defaults.
    assert_eq!(derived_thresholds(1_000_000, 16_384, false), SEED_MAIN);
    assert_eq!(derived_thresholds(2_000_000, 16_384, true), SEED_SUBAGENT);
    // In between, each field is capped by the seed value.
    let t = derived_thresholds(620_000, 16_384, false);
    assert_eq!(t.handoff, SEED_MAIN.handoff);
    assert!(t.hard < SEED_MAIN.hard);
    // Degenerate windows still give positive ordered values.
    for w in [1, 2, 3, 100] {
        let t = derived_thresholds(w, 16_384, false);
        assert!(
            0 < t.soft && t.soft <= t.handoff && t.handoff <= t.hard && t.min_progress > 0,
            "{w}: {t:?}"
        );
    }
    assert_eq!(derived_thresholds(0, 0, false), SEED_MAIN, "unknown window");
}

#[test]
fn footer_shows_configured_and_effective_mode() {
    let m = EffectiveMode {
        configured: Mode::Enforce,
        effective: Mode::Observe,
        reason: Some("cwd restriction".into()),
    };
    snap!(render_mode_footer(&m).unwrap());
    let same = EffectiveMode {
        configured: Mode::Observe,
        effective: Mode::Observe,
        reason: None,
    };
    assert_eq!(render_mode_footer(&same), None);
}

#[test]
fn status_fields_report_projection_and_modes() {
    let p = params();
    let (o, _) = step_mode(
        Mode::Observe,
        &state_in(Phase::HandoffRequired),
        &p,
        &PolicyInput::TurnEnd { continues: true },
    );
    let m = EffectiveMode {
        configured: Mode::Observe,
        effective: Mode::Observe,
        reason: None,
    };
    let v = serde_json::to_value(status_fields(&o, &p, &m)).unwrap();
    assert_eq!(v["phase"], json!("handoff-required"));
    assert_eq!(v["projected"], json!(true));
    assert_eq!(v["thresholds"]["minProgress"], json!(50_000));
    assert_eq!(v["effectiveMode"], json!("observe"));
}

#[test]
fn rendered_texts() {
    snap!("soft_advisory", render_soft_advisory(150_000, &TH));
    snap!("block_handoff", render_block_handoff(Some(250_000), &TH));
    snap!("block_pending", render_block_pending());
    snap!(
        "block_fallback_hard",
        render_block_fallback(FallbackReason::Hard, Some(350_000), &params())
    );
    snap!(
        "block_fallback_cap",
        render_block_fallback(FallbackReason::Cap, Some(250_000), &params())
    );
    snap!(
        "block_fallback_loop",
        render_block_fallback(FallbackReason::Loop, Some(250_000), &params())
    );
    snap!(
        "settle_continuation",
        render_settle_continuation(Some(250_000), &TH)
    );
    snap!(
        "hard_settle_continuation",
        render_hard_settle_continuation(Some(350_000), &TH)
    );
    snap!("block_resetting", render_block_resetting());
    snap!(
        "forced_note_hard",
        render_forced_reset_note(FallbackReason::Hard, &params())
    );
    snap!(
        "forced_note_cap",
        render_forced_reset_note(FallbackReason::Cap, &params())
    );
    snap!(
        "forced_note_loop",
        render_forced_reset_note(FallbackReason::Loop, &params())
    );
    snap!(
        "block_fallback_compaction_failure",
        render_block_fallback(FallbackReason::CompactionFailure, Some(80_000), &params())
    );
    snap!(
        "forced_note_compaction_failure",
        render_forced_reset_note(FallbackReason::CompactionFailure, &params())
    );
}

/// Relay's reset failed for the third time while the policy waited for it (`Compacting`): the
/// fallback arms with "compaction failure", blocks tools and ends the run, a handoff cannot
/// bypass it, the settle point resets mechanically without a continuation (uncounted), and the
/// applied reset disarms it.
#[test]
fn compaction_failure_arms_the_fallback_until_a_reset_applies() {
    let p = params();
    let (s, _) = step(&PolicyState::default(), &p, &usage(10_000));
    let (s, _) = step(&s, &p, &usage(250_000));
    assert_eq!(s.phase, Phase::HandoffRequired);
    let (s, _) = step(&s, &p, &written());
    let (s, _) = step(&s, &p, &PolicyInput::TurnEnd { continues: false });
    assert_eq!(s.phase, Phase::Compacting);
    let (s, fx) = step(&s, &p, &PolicyInput::CompactionFailed);
    assert_eq!(s.phase, Phase::FallbackArmed);
    assert_eq!(s.fallback, Some(FallbackReason::CompactionFailure));
    assert_eq!((s.committing, s.pending.is_none()), (None, true));
    assert_eq!(kinds(&fx), ["event:fallback_armed"]);
    let (s, fx) = step(
        &s,
        &p,
        &PolicyInput::ToolCall {
            id: "c1".into(),
            name: "bash".into(),
        },
    );
    let block = fx.iter().find_map(|f| match f {
        PolicyEffect::Block { reason, terminate } => Some((reason.clone(), *terminate)),
        _ => None,
    });
    let (reason, terminate) = block.unwrap();
    assert!(reason.contains("its reset failed three times"), "{reason}");
    assert!(terminate, "the user decides after a compaction failure");
    let (s, fx) = step(&s, &p, &written());
    assert_eq!(kinds(&fx), ["event:handoff_ignored"]);
    let (s, fx) = step(&s, &p, &settle(false));
    let reset = fx.iter().find_map(|f| match f {
        PolicyEffect::RequestReset {
            kind,
            continue_run,
            note,
            ..
        } => Some((*kind, *continue_run, note.clone())),
        _ => None,
    });
    let (kind, continue_run, note) = reset.unwrap();
    assert_eq!((kind, continue_run), (CommitKind::ForcedGuard, false));
    assert!(note.unwrap().contains("(compaction failure)"));
    let (s, _) = step(&s, &p, &PolicyInput::ResetApplied);
    assert_eq!((s.phase, s.fallback), (Phase::Idle, None));
    assert_eq!(
        s.handoffs_committed, 0,
        "a compaction-failure reset never counts"
    );
}

fn settle(pending_work: bool) -> PolicyInput {
    PolicyInput::BeforeSettle {
        pending_work,
        reset_due: false,
        stored_handoff: false,
    }
}

fn names(fx: &[PolicyEffect]) -> Vec<String> {
    kinds(fx)
}

#[test]
fn idle_request_at_the_settle_point_needs_pending_work_and_a_large_context() {
    let p = params();
    // Below idleMinTokens, or nothing pending: the run simply stops.
    let (_, fx) = step(&base(149_999), &p, &settle(true));
    assert!(fx.is_empty());
    let (_, fx) = step(&base(400_000), &p, &settle(false));
    assert!(fx.is_empty());
    // Unknown tokens (fresh after a reset) never ask.
    let fresh = PolicyState {
        tokens: None,
        ..base(0)
    };
    assert!(step(&fresh, &p, &settle(true)).1.is_empty());
    // At idleMinTokens with work pending: one continuation asking for a handoff.
    let (s, fx) = step(&base(150_000), &p, &settle(true));
    assert_eq!(names(&fx), ["event:idle_handoff_requested", "continue"]);
    assert!(s.idle_requested);
    assert_eq!(s.phase, Phase::Idle);
    let PolicyEffect::Event { event, .. } = &fx[0] else {
        panic!("{fx:?}")
    };
    assert_eq!(
        serde_json::to_value(event).unwrap(),
        json!({"event": "idle_handoff_requested", "tokens": 150_000, "idleMinTokens": 150_000, "requiresHandoff": true})
    );
    // No second request while it is open, also across internal continuations (no
    // BeforeAgentStart between them) and turn ends.
    let (s, _) = step(&s, &p, &PolicyInput::TurnEnd { continues: false });
    let (s, fx) = step(&s, &p, &settle(true));
    assert!(fx.is_empty());
    // The run's one handoff request is spent: a handoff threshold crossed later in it gets no
    // settle continuation of its own.
    let required = PolicyState {
        phase: Phase::HandoffRequired,
        ..s.clone()
    };
    assert!(step(&required, &p, &settle(false)).1.is_empty());
    // A genuinely new external run ends the request: its settle point may ask again.
    let (s, _) = step(&s, &p, &PolicyInput::BeforeAgentStart);
    assert!(!s.idle_requested);
    let (_, fx) = step(&s, &p, &settle(true));
    assert_eq!(names(&fx), ["event:idle_handoff_requested", "continue"]);
}

#[test]
fn idle_handoff_blocks_other_tools_and_commits_an_uncounted_idle_reset_at_turn_end() {
    let p = params();
    let (s, _) = step(&base(200_000), &p, &settle(true));
    // The model writes the handoff in the continuation: an idle commit, not forced (the
    // duplicate back-off applies).
    let (s, fx) = step(&s, &p, &written());
    assert_eq!(names(&fx), ["event:handoff_written"]);
    assert_eq!(s.phase, Phase::HandoffPendingCommit);
    assert_eq!(s.pending.as_ref().map(|h| h.kind), Some(CommitKind::Idle));
    assert!(!handoff_is_forced(&s));
    // Every other tool is blocked until the turn ends; the handoff tool is not.
    let (s, fx) = step(&s, &p, &call("b", "bash"));
    assert_eq!(names(&fx), ["event:tool_blocked", "block"]);
    let (s, fx) = step(&s, &p, &call("h", HANDOFF_TOOL));
    assert!(fx.is_empty());
    // The blocked call's result does not invalidate the handoff.
    let (s, fx) = step(&s, &p, &finished("b", "bash", false));
    assert!(fx.is_empty());
    // The same turn end commits it as an idle reset that continues the run.
    let (s, fx) = step(&s, &p, &PolicyInput::TurnEnd { continues: true });
    assert_eq!(names(&fx), ["event:handoff_committed", "reset:idle"]);
    let PolicyEffect::Event { event, .. } = &fx[0] else {
        panic!("{fx:?}")
    };
    assert_eq!(serde_json::to_value(event).unwrap()["source"], "idle");
    assert_eq!(
        fx[1],
        PolicyEffect::RequestReset {
            source: PolicyReset::Idle,
            kind: CommitKind::Idle,
            handoff_path: Some("/r/.ai-work/handoffs/s-2.md".into()),
            continue_run: true,
            at_turn_end: true,
            note: None,
        }
    );
    assert_eq!(s.committing, Some(CommitKind::Idle));
    // Applied: nothing counted toward the cap or the loop guard; the request is over.
    let (s, _) = step(&s, &p, &PolicyInput::ResetApplied);
    assert_eq!((s.handoffs_committed, s.unproductive_commits.len()), (0, 0));
    assert!(!s.idle_requested);
    assert_eq!(s.phase, Phase::Idle);
}

#[test]
fn idle_handoff_is_invalidated_by_real_tool_activity_and_not_asked_again() {
    let p = params();
    let (s, _) = step(&base(200_000), &p, &settle(true));
    let (s, _) = step(&s, &p, &written());
    // A tool that was already running and finishes after the handoff makes it stale.
    let (s, fx) = step(&s, &p, &finished("r", "read", true));
    assert_eq!(names(&fx), ["event:handoff_invalidated"]);
    assert_eq!((s.phase, s.pending.clone()), (Phase::Idle, None));
    // The turn end commits nothing and the same run's settle point does not ask again.
    let (s, fx) = step(&s, &p, &PolicyInput::TurnEnd { continues: false });
    assert!(fx.is_empty());
    assert!(step(&s, &p, &settle(true)).1.is_empty());
}

#[test]
fn idle_commit_at_the_cap_still_commits_and_counts_nothing() {
    let p = PolicyParams {
        max_handoffs_per_session: 1,
        ..params()
    };
    let s = PolicyState {
        handoffs_committed: 1,
        ..base(200_000)
    };
    let (s, _) = step(&s, &p, &settle(true));
    let (s, _) = step(&s, &p, &written());
    let (s, fx) = step(&s, &p, &settle(true));
    assert_eq!(names(&fx), ["event:handoff_committed", "reset:idle"]);
    let (s, _) = step(&s, &p, &PolicyInput::ResetApplied);
    assert_eq!(s.handoffs_committed, 1);
}

#[test]
fn idle_request_in_observe_is_would_events_with_requires_handoff() {
    let p = params();
    let (s, fx) = step_mode(Mode::Observe, &base(200_000), &p, &settle(true));
    assert_eq!(fx.len(), 2);
    let PolicyEffect::Event { event, .. } = &fx[0] else {
        panic!("{fx:?}")
    };
    assert_eq!(
        fx[0].event_name().as_deref(),
        Some("would_idle_handoff_requested")
    );
    assert_eq!(
        serde_json::to_value(event).unwrap()["requiresHandoff"],
        true
    );
    assert_eq!(fx[1].event_name().as_deref(), Some("would_continue"));
    // The same latch as enforcement: no second preview in this run.
    assert!(s.projected && s.idle_requested);
    assert!(step_mode(Mode::Observe, &s, &p, &settle(true)).1.is_empty());
}

#[test]
fn idle_continuation_text() {
    snap!(render_idle_continuation(Some(320_000), 300_000));
}

/// A mode change (enforce to observe or off) disarms a compaction-failure fallback; a cap
/// fallback stays armed across the same change.
#[test]
fn a_mode_change_disarms_the_compaction_failure_fallback() {
    let p = params();
    let (armed, _) = step(&PolicyState::default(), &p, &PolicyInput::CompactionFailed);
    assert_eq!(armed.fallback, Some(FallbackReason::CompactionFailure));
    let tool = PolicyInput::ToolCall {
        id: "c1".into(),
        name: "bash".into(),
    };
    let (s, fx) = step_mode(Mode::Observe, &armed, &p, &tool);
    assert_eq!((s.phase, s.fallback), (Phase::Idle, None));
    assert!(fx.is_empty(), "{fx:?}");
    let (s, _) = step_mode(Mode::Off, &armed, &p, &tool);
    assert_eq!((s.phase, s.fallback), (Phase::Idle, None));
    let (s, fx) = step_mode(Mode::Enforce, &s, &p, &tool);
    assert!(fx.is_empty(), "back in enforce nothing is blocked: {fx:?}");
    assert_eq!(s.phase, Phase::Idle);
    let cap = PolicyState {
        phase: Phase::FallbackArmed,
        fallback: Some(FallbackReason::Cap),
        ..PolicyState::default()
    };
    let (s, _) = step_mode(Mode::Off, &cap, &p, &tool);
    assert_eq!(s.fallback, Some(FallbackReason::Cap));
}

fn external_input(idle_ms: Option<u64>, stored: bool) -> PolicyInput {
    PolicyInput::ExternalInput {
        idle_ms,
        stored_handoff: stored.then(|| "/r/.ai-work/handoffs/s-3.md".to_string()),
    }
}

/// Idle-input recovery, one row per condition: new input after `idleMinutes` (50 min here) with
/// a stored handoff and more than `keepRecentTokens` (20000) in the window resets with that
/// handoff as an uncounted idle commit; anything missing leaves the input alone.
#[test]
fn idle_input_reset_table() {
    use Phase::*;
    const IDLE: u64 = 50 * 60_000;
    const II: &str = "event:idle_input_reset";
    const R: &str = "reset:idle-input";
    let small = || base(20_000);
    let large = || base(21_000);
    let armed = |reason| PolicyState {
        fallback: Some(reason),
        ..state_in(FallbackArmed)
    };
    #[rustfmt::skip]
    let rows: Vec<(&str, PolicyState, PolicyInput, Phase, Vec<&str>)> = vec![
        ("idle long enough, stored handoff, large window", large(), external_input(Some(IDLE), true), Compacting, vec![II, R]),
        ("idle a minute short", large(), external_input(Some(IDLE - 60_000), true), Idle, vec![]),
        ("idleness unknown (no activity seen)", large(), external_input(None, true), Idle, vec![]),
        ("no stored handoff", large(), external_input(Some(IDLE * 3), false), Idle, vec![]),
        ("window at keepRecentTokens: nothing to drop", small(), external_input(Some(IDLE), true), Idle, vec![]),
        ("window size unknown", PolicyState { tokens: None, ..large() }, external_input(Some(IDLE), true), Idle, vec![]),
        ("soft notified", state_in(SoftNotified), external_input(Some(IDLE), true), Compacting, vec![II, R]),
        ("handoff required", state_in(HandoffRequired), external_input(Some(IDLE), true), Compacting, vec![II, R]),
        ("hard fallback: a valid handoff still commits", state_in(FallbackArmed), external_input(Some(IDLE), true), Compacting, vec![II, R]),
        ("cap fallback: a handoff cannot bypass it", armed(FallbackReason::Cap), external_input(Some(IDLE), true), FallbackArmed, vec![]),
        ("loop fallback", armed(FallbackReason::Loop), external_input(Some(IDLE), true), FallbackArmed, vec![]),
        ("compaction-failure fallback", armed(FallbackReason::CompactionFailure), external_input(Some(IDLE), true), FallbackArmed, vec![]),
        ("a commit pending", state_in(HandoffPendingCommit), external_input(Some(IDLE), true), HandoffPendingCommit, vec![]),
        ("a reset already under way", state_in(Compacting), external_input(Some(IDLE), true), Compacting, vec![]),
    ];
    let p = params();
    for (rule, s, input, phase, want) in rows {
        let (n, fx) = step(&s, &p, &input);
        assert_eq!(
            (n.phase, kinds(&fx)),
            (phase, want.iter().map(|k| k.to_string()).collect()),
            "{rule}"
        );
        if phase == Compacting && s.phase != Compacting {
            assert_eq!(
                n.committing,
                Some(CommitKind::Idle),
                "{rule}: an idle commit"
            );
            let reset = fx.iter().find_map(|e| match e {
                PolicyEffect::RequestReset {
                    continue_run,
                    at_turn_end,
                    handoff_path,
                    ..
                } => Some((*continue_run, *at_turn_end, handoff_path.clone())),
                _ => None,
            });
            assert_eq!(
                reset,
                Some((
                    false,
                    false,
                    Some("/r/.ai-work/handoffs/s-3.md".to_string())
                )),
                "{rule}: the input continues, not Relay"
            );
        }
    }
}

/// The idle-input reset never counts toward the cap or the loop guard, and a dropped one (Pi had
/// nothing to compact) returns to where it came from.
#[test]
fn idle_input_reset_counts_nothing_and_a_dropped_one_returns() {
    let p = PolicyParams {
        max_handoffs_per_session: 1,
        ..params()
    };
    let s = PolicyState {
        handoffs_committed: 0,
        ..base(25_000)
    };
    let (s, _) = step(&s, &p, &external_input(Some(p.idle_ms), true));
    let (applied, _) = step(&s, &p, &PolicyInput::ResetApplied);
    assert_eq!(
        (
            applied.phase,
            applied.handoffs_committed,
            applied.unproductive_commits.len()
        ),
        (Phase::Idle, 0, 0)
    );
    let (dropped, fx) = step(&s, &p, &PolicyInput::ResetDropped);
    assert_eq!(dropped.phase, Phase::Idle);
    assert_eq!(names(&fx), vec!["event:reset_dropped"]);
    // Observe: the same decision as would_* events only.
    let (o, ofx) = step_mode(
        Mode::Observe,
        &base(25_000),
        &p,
        &external_input(Some(p.idle_ms), true),
    );
    assert_eq!(
        names(&ofx),
        vec![
            "event:would_idle_input_reset",
            "event:would_reset",
            "event:would_reset_applied"
        ]
    );
    assert!(o.projected);
    // Off: nothing.
    let (_, off) = step_mode(
        Mode::Off,
        &base(25_000),
        &p,
        &external_input(Some(p.idle_ms), true),
    );
    assert!(off.is_empty());
}

/// `idleMinutes` and `keepRecentTokens`: the seed's defaults (50 minutes, 20000 tokens), or the
/// configured values.
#[test]
fn idle_input_parameters_default_to_the_seed_config_table() {
    let p = PolicyParams::resolve(&BudgetConfig::default(), "", 1_000_000, 16_384, false);
    assert_eq!((p.idle_ms, p.keep_recent_tokens), (50 * 60_000, 20_000));
    let (cfg, issues) = parse_budget_config(
        &serde_json::json!({"idleMinutes": 0.5, "keepRecentTokens": 7}),
        "relay.budget",
    );
    assert!(issues.is_empty(), "{issues:?}");
    let p = PolicyParams::resolve(&cfg, "", 1_000_000, 16_384, false);
    assert_eq!((p.idle_ms, p.keep_recent_tokens), (30_000, 7));
}

/// Pi's real failure texts and how each is treated (see `classify_compact_failure`).
#[test]
fn compact_failures_are_classified_from_pis_texts() {
    use FailureKind::*;
    #[rustfmt::skip]
    let rows: Vec<(bool, Option<&str>, FailureKind)> = vec![
        (true, None, Benign),
        (true, Some("Compaction failed: 429 rate limit"), Benign),
        (false, Some("Compaction failed: Nothing to compact (session too small)"), Benign),
        (false, Some("Compaction failed: Already compacted"), Benign),
        (false, Some("Compaction cancelled"), Benign),
        (false, Some("Auto-compaction failed: 429 Too Many Requests"), Transient),
        (false, Some("Auto-compaction failed: Rate limit reached for requests"), Transient),
        (false, Some("Compaction failed: 529 {\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}"), Transient),
        (false, Some("Compaction failed: 503 Service Unavailable"), Transient),
        (false, Some("Compaction failed: fetch failed"), Transient),
        (false, Some("Compaction failed: read ECONNRESET"), Transient),
        (false, Some("Compaction failed: Request timed out."), Transient),
        (false, Some("Compaction failed: ThrottlingException: Too many tokens, please wait before trying again."), Transient),
        (false, Some("Compaction failed: summarizer returned an unexpected shape"), Transient),
        (false, Some("Compaction failed: the request id 4013 looked odd"), Transient),
        (false, None, Transient),
        (false, Some("Compaction failed: 401 {\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}"), Persistent),
        (false, Some("Compaction failed: Authentication failed for \"anthropic\". Credentials may have expired or network is unavailable. Run '/login anthropic' to re-authenticate."), Persistent),
        (false, Some("Compaction failed: No API key found for openai."), Persistent),
        (false, Some("Compaction failed: No model selected."), Persistent),
        (false, Some("Compaction failed: 403 Forbidden"), Persistent),
        (false, Some("Compaction failed: 400 {\"type\":\"invalid_request_error\",\"message\":\"messages: field required\"}"), Persistent),
        (false, Some("Compaction failed: 429 You exceeded your current quota (insufficient_quota)"), Persistent),
        (false, Some("Context overflow recovery failed: prompt is too long: 250000 tokens > 200000 maximum"), Persistent),
        (false, Some("Compaction failed: This model's maximum context length is 128000 tokens"), Persistent),
    ];
    for (aborted, message, want) in rows {
        assert_eq!(
            classify_compact_failure(aborted, message),
            want,
            "{message:?}"
        );
    }
}

/// With an owned wrapper (`relaunch`), an armed fallback never resets mechanically: the turn
/// ends keep blocking, the settle point relaunches; a valid handoff at hard still commits
/// in-process; observe only previews it.
#[test]
fn fallback_with_a_wrapper_relaunches_at_the_settle_point() {
    let p = PolicyParams {
        relaunch: true,
        ..params()
    };
    // Hard: two continuing turns without a reset, the tool still blocked (terminating after
    // the second), one continuation at the settle point, then the relaunch.
    let (s, _) = step(&base(20_000), &p, &usage(350_000));
    let (s, fx) = step(&s, &p, &PolicyInput::TurnEnd { continues: true });
    assert!(fx.is_empty());
    let (s, fx) = step(&s, &p, &call("t1", "bash"));
    assert!(matches!(
        fx.last(),
        Some(PolicyEffect::Block {
            terminate: false,
            ..
        })
    ));
    let (s, fx) = step(&s, &p, &PolicyInput::TurnEnd { continues: true });
    assert!(fx.is_empty(), "no mechanical reset with a wrapper: {fx:?}");
    let (s, fx) = step(&s, &p, &call("t2", "bash"));
    assert!(matches!(
        fx.last(),
        Some(PolicyEffect::Block {
            terminate: true,
            ..
        })
    ));
    let (s, fx) = step(
        &s,
        &p,
        &PolicyInput::BeforeSettle {
            pending_work: false,
            reset_due: false,
            stored_handoff: false,
        },
    );
    assert_eq!(kinds(&fx), ["event:settle_continuation", "continue"]);
    let (s, fx) = step(
        &s,
        &p,
        &PolicyInput::BeforeSettle {
            pending_work: false,
            reset_due: false,
            stored_handoff: false,
        },
    );
    assert_eq!(kinds(&fx), ["event:fallback_relaunch", "relaunch:hard"]);
    assert_eq!(s.phase, Phase::FallbackArmed);

    // A valid handoff at hard still commits in-process.
    let (s, _) = step(&base(20_000), &p, &usage(350_000));
    let (s, _) = step(&s, &p, &written());
    let (_, fx) = step(&s, &p, &PolicyInput::TurnEnd { continues: true });
    assert!(kinds(&fx).contains(&"reset:handoff".to_string()), "{fx:?}");

    // Cap: the settle point relaunches at once.
    for reason in [
        FallbackReason::Cap,
        FallbackReason::Loop,
        FallbackReason::CompactionFailure,
    ] {
        let s = PolicyState {
            fallback: Some(reason),
            ..state_in(Phase::FallbackArmed)
        };
        let (s, fx) = step(&s, &p, &PolicyInput::TurnEnd { continues: true });
        let (s, _) = step(&s, &p, &PolicyInput::TurnEnd { continues: true });
        assert!(fx.is_empty());
        let (_, fx) = step(
            &s,
            &p,
            &PolicyInput::BeforeSettle {
                pending_work: false,
                reset_due: false,
                stored_handoff: false,
            },
        );
        assert_eq!(
            kinds(&fx),
            [
                "event:fallback_relaunch".to_string(),
                format!("relaunch:{}", reason.as_str())
            ]
        );
    }

    // Observe previews it.
    let s = PolicyState {
        fallback: Some(FallbackReason::Cap),
        ..state_in(Phase::FallbackArmed)
    };
    let (_, fx) = step_mode(
        Mode::Observe,
        &s,
        &p,
        &PolicyInput::BeforeSettle {
            pending_work: false,
            reset_due: false,
            stored_handoff: false,
        },
    );
    assert_eq!(
        kinds(&fx),
        ["event:would_fallback_relaunch", "event:would_relaunch"]
    );

    // Without a wrapper the same settle point resets mechanically.
    let (_, fx) = step(
        &s,
        &params(),
        &PolicyInput::BeforeSettle {
            pending_work: false,
            reset_due: false,
            stored_handoff: false,
        },
    );
    assert_eq!(kinds(&fx), ["event:forced_reset", "reset:forced"]);
}

#[test]
fn fallback_texts_with_a_wrapper() {
    let p = PolicyParams {
        relaunch: true,
        ..params()
    };
    for reason in [
        FallbackReason::Hard,
        FallbackReason::Cap,
        FallbackReason::Loop,
        FallbackReason::CompactionFailure,
    ] {
        snap!(
            format!("block_fallback_relaunch_{}", reason.as_str()),
            render_block_fallback_relaunch(reason, Some(350_000), &p)
        );
    }
    snap!(
        "hard_settle_continuation_relaunch",
        render_hard_settle_continuation_relaunch(Some(350_000), &TH)
    );
}

fn settle_with(reset_due: bool, stored_handoff: bool) -> PolicyInput {
    PolicyInput::BeforeSettle {
        pending_work: true,
        reset_due,
        stored_handoff,
    }
}

#[test]
fn a_reset_due_at_the_settle_point_is_the_one_answer() {
    let p = params();
    // Past the handoff threshold: without a due reset the settle point asks for the handoff.
    let (s, _) = step(&PolicyState::default(), &p, &usage(100_000));
    let (s, _) = step(&s, &p, &usage(250_000));
    assert_eq!(s.phase, Phase::HandoffRequired);
    let (_, fx) = step(&s, &p, &settle(false));
    assert!(kinds(&fx).iter().any(|k| k == "continue"));
    // With a reset due it asks nothing and logs why; the next settle point may still ask.
    let (s2, fx) = step(&s, &p, &settle_with(true, false));
    assert_eq!(kinds(&fx), ["event:settle_reset_due"]);
    assert!(!s2.settle_continued);
    // An armed hard fallback neither asks nor resets on its own while a reset is due.
    let (h, _) = step(&PolicyState::default(), &p, &usage(100_000));
    let (h, _) = step(&h, &p, &usage(350_000));
    assert_eq!(h.phase, Phase::FallbackArmed);
    let (_, fx) = step(&h, &p, &settle_with(true, false));
    assert_eq!(kinds(&fx), ["event:settle_reset_due"]);
    // A written handoff still commits with the due reset.
    let (w, _) = step(&s, &p, &written());
    let (_, fx) = step(&w, &p, &settle_with(true, false));
    assert!(fx
        .iter()
        .any(|f| matches!(f, PolicyEffect::RequestReset { .. })));
}

#[test]
fn no_idle_request_while_a_reset_is_due_or_a_stored_handoff_is_valid() {
    let p = params();
    let (s, _) = step(&PolicyState::default(), &p, &usage(100_000));
    let (s, _) = step(&s, &p, &usage(160_000));
    assert!(matches!(s.phase, Phase::Idle | Phase::SoftNotified));
    let (_, fx) = step(&s, &p, &settle_with(false, false));
    assert!(kinds(&fx)
        .iter()
        .any(|k| k == "event:idle_handoff_requested"));
    for (due, stored) in [(true, false), (false, true)] {
        let (s2, fx) = step(&s, &p, &settle_with(due, stored));
        assert!(fx.is_empty(), "{due} {stored}: {:?}", kinds(&fx));
        assert!(!s2.idle_requested);
    }
}
