//! Relay settings and the budget configuration.
//!
//! Input: bytes that parse as JSON give the settings directly (a two-element array is the
//! global and the project `relay` object; any other value is used for both); any other bytes
//! drive a generator that follows the shape of the settings (known keys at each level, with
//! numbers, strings and types on the edges of what is accepted, plus unknown keys and junk).
//!
//! Properties checked:
//! - `resolve_config` and `parse_budget_config` never panic, for any pair of scopes;
//! - every reported issue has a non-empty message and a path inside the checked object
//!   (`relay…` / `budget…`); a configuration marked invalid reports at least one issue;
//! - resolved settings are in range: margin in 1..=MAX_TOKENS, agent name non-empty, at most
//!   64 characters, without control characters; `budget` is absent or an object;
//! - for windows 0, 1, 8192, 200_000, 2_000_000 and u64::MAX and several reserves, in main and
//!   subagent roles, `resolve_thresholds` gives `0 < soft <= handoff <= hard` and
//!   `min_progress > 0`; explicit values are kept (a model override always, a role value when
//!   the model has none); with nothing explicit the result is `derived_thresholds`.

use arbitrary::{Result, Unstructured};
use relay_core::policy::{
    derived_thresholds, parse_budget_config, resolve_thresholds, BudgetConfig, ThresholdOverrides,
};
use relay_core::settings::{
    resolve_config, DEFAULT_RESERVE_TOKENS, MAX_AGENT_NAME_CHARS, MAX_TOKENS,
};
use relay_core::ConfigIssue;
use serde_json::{json, Map, Value};

const WINDOWS: [u64; 6] = [0, 1, 8192, 200_000, 2_000_000, u64::MAX];
const RESERVES: [u64; 4] = [0, DEFAULT_RESERVE_TOKENS, 1 << 40, u64::MAX];
const MODEL_KEYS: [&str; 2] = ["p/m", "other/x"];

/// The target's body: panics when a property does not hold.
pub fn check(data: &[u8]) {
    let (global, project) = match serde_json::from_slice::<Value>(data) {
        Ok(Value::Array(mut pair)) if pair.len() == 2 => {
            let p = pair.pop().expect("two elements");
            (pair.pop().expect("two elements"), p)
        }
        Ok(v) => (v.clone(), v),
        Err(_) => {
            let mut u = Unstructured::new(data);
            match (gen(&mut u, Slot::Relay, 0), gen(&mut u, Slot::Relay, 0)) {
                (Ok(g), Ok(p)) => (g, p),
                _ => return,
            }
        }
    };

    // Each distinct budget value is checked once, and the threshold grid once per distinct
    // parsed configuration: the scopes often resolve to the same budget, and both checks are
    // pure functions of what they are given.
    let mut checked: Vec<Value> = Vec::new();
    let mut grids: Vec<BudgetConfig> = Vec::new();
    let mut check_once = |b: &Value| {
        if !checked.contains(b) {
            check_budget(b, &mut grids);
            checked.push(b.clone());
        }
    };
    for (g, p) in [
        (Some(&global), Some(&project)),
        (Some(&global), None),
        (None, Some(&project)),
    ] {
        let (cfg, issues) = resolve_config(g, p);
        check_issues(&issues, "relay");
        assert!((1..=MAX_TOKENS).contains(&cfg.reminder_margin_tokens));
        assert!(!cfg.agent_name.is_empty());
        assert!(cfg.agent_name.chars().count() <= MAX_AGENT_NAME_CHARS);
        assert!(!cfg.agent_name.chars().any(char::is_control));
        if let Some(b) = &cfg.budget {
            assert!(b.is_object(), "resolved budget is not an object: {b}");
            check_once(b);
        }
    }
    let (cfg, issues) = resolve_config(None, None);
    assert!(
        issues.is_empty() && cfg.budget.is_none(),
        "no settings, no issues"
    );

    // The raw values as budget objects too (not only what `resolve_config` let through).
    check_once(&global);
    if let Some(b) = project.get("budget") {
        check_once(b);
    }
}

fn check_issues(issues: &[ConfigIssue], root: &str) {
    for i in issues {
        assert!(
            !i.message.is_empty(),
            "issue at {:?} without a message",
            i.path
        );
        assert!(
            i.path == root || i.path.starts_with(&format!("{root}.")),
            "issue path {:?} outside {root:?}",
            i.path
        );
    }
}

fn check_budget(v: &Value, grids: &mut Vec<BudgetConfig>) {
    let (cfg, issues) = parse_budget_config(v, "budget");
    check_issues(&issues, "budget");
    if cfg.invalid.is_some() {
        assert!(!issues.is_empty(), "invalid configuration without an issue");
    }
    let (cfg2, issues2) = parse_budget_config(v, "");
    // The prefix only changes the reported paths (also inside `invalid` for a non-object).
    assert_eq!(
        BudgetConfig {
            invalid: None,
            ..cfg.clone()
        },
        BudgetConfig {
            invalid: None,
            ..cfg2.clone()
        },
        "the path prefix changed the parsed configuration"
    );
    assert_eq!(cfg.invalid.is_some(), cfg2.invalid.is_some());
    assert_eq!(
        issues.len(),
        issues2.len(),
        "the path prefix changed the issue count"
    );
    if !grids.contains(&cfg) {
        check_thresholds(&cfg);
        grids.push(cfg);
    }
}

fn check_thresholds(cfg: &BudgetConfig) {
    for key in MODEL_KEYS {
        for subagent in [false, true] {
            let role = if subagent { cfg.subagent } else { cfg.main };
            let model = cfg
                .models
                .get(key)
                .map(|m| if subagent { m.subagent } else { m.main })
                .unwrap_or_default();
            for window in WINDOWS {
                for reserve in RESERVES {
                    let t = resolve_thresholds(cfg, key, window, reserve, subagent);
                    // Formatted only when an assertion fails (it used to be built for every
                    // one of the 96 combinations of every budget, most of the target's time).
                    let ctx = || {
                        format!(
                            "{key} window {window} reserve {reserve} subagent {subagent}: {t:?}"
                        )
                    };
                    assert!(0 < t.soft, "soft is 0 ({})", ctx());
                    assert!(t.soft <= t.handoff, "soft > handoff ({})", ctx());
                    assert!(t.handoff <= t.hard, "handoff > hard ({})", ctx());
                    assert!(t.min_progress > 0, "min_progress is 0 ({})", ctx());

                    let got = [t.soft, t.handoff, t.hard];
                    let m = levels(&model);
                    let r = levels(&role);
                    for i in 0..3 {
                        if let Some(x) = m[i] {
                            assert_eq!(got[i], x, "model override {i} not kept ({})", ctx());
                        } else if m.iter().all(Option::is_none) {
                            if let Some(x) = r[i] {
                                assert_eq!(got[i], x, "role value {i} not kept ({})", ctx());
                            }
                        }
                    }
                    if let Some(x) = model.min_progress.or(role.min_progress) {
                        assert_eq!(
                            t.min_progress,
                            x,
                            "explicit minProgress not kept ({})",
                            ctx()
                        );
                    }
                    if m.iter().chain(&r).all(Option::is_none) {
                        let d = derived_thresholds(window, reserve, subagent);
                        assert_eq!([d.soft, d.handoff, d.hard], got, "not derived ({})", ctx());
                    }
                }
            }
        }
    }
}

fn levels(t: &ThresholdOverrides) -> [Option<u64>; 3] {
    [t.soft, t.handoff, t.hard]
}

// ---------------------------------------------------------------------------------------------
// Structured generation
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy)]
enum Slot {
    Relay,
    Budget,
    Thresholds,
    Models,
    ModelRoles,
    Loop,
    Cwds,
    ResumeChecks,
    Scalar,
}

/// The keys known at a position and the slot of each key's value.
fn keys(slot: Slot) -> &'static [(&'static str, Slot)] {
    use Slot::*;
    match slot {
        Relay => &[
            ("enabled", Scalar),
            ("reminderMarginTokens", Scalar),
            ("agentName", Scalar),
            ("budget", Budget),
        ],
        Budget => &[
            ("mode", Scalar),
            ("enforceCwds", Cwds),
            ("main", Thresholds),
            ("subagent", Thresholds),
            ("models", Models),
            ("maxHandoffsPerSession", Scalar),
            ("loop", Loop),
            ("resumeChecks", ResumeChecks),
            ("overflowRecovery", Scalar),
            ("idleMinutes", Scalar),
            ("idleMinTokens", Scalar),
            ("keepRecentTokens", Scalar),
        ],
        Thresholds => &[
            ("soft", Scalar),
            ("handoff", Scalar),
            ("hard", Scalar),
            ("minProgress", Scalar),
        ],
        Models => &[("p/m", ModelRoles), ("other/x", ModelRoles)],
        ModelRoles => &[("main", Thresholds), ("subagent", Thresholds)],
        Loop => &[
            ("maxHandoffsWithoutProgress", Scalar),
            ("withinTurns", Scalar),
        ],
        ResumeChecks => &[("tests", Scalar), ("lint", Scalar)],
        Cwds | Scalar => &[],
    }
}

fn gen(u: &mut Unstructured<'_>, slot: Slot, depth: u32) -> Result<Value> {
    if depth > 6 || u.ratio(1, 12)? {
        return scalar(u);
    }
    match slot {
        Slot::Scalar => scalar(u),
        Slot::Cwds => {
            let n = u.int_in_range(0..=3)?;
            let mut items = Vec::new();
            for _ in 0..n {
                items.push(match u.int_in_range(0..=5u8)? {
                    0 => json!("/"),
                    1 => json!("/work/*"),
                    2 => json!("~/code"),
                    3 => json!("relative/dir"),
                    4 => json!("/a/**/b"),
                    _ => scalar(u)?,
                });
            }
            Ok(Value::Array(items))
        }
        _ => {
            let known = keys(slot);
            let n = u.int_in_range(0..=known.len().min(6))?;
            let mut obj = Map::new();
            for _ in 0..n {
                if u.ratio(1, 10)? {
                    obj.insert(text(u, 8)?, scalar(u)?);
                } else {
                    let (k, s) = *u.choose(known)?;
                    obj.insert(k.to_string(), gen(u, s, depth + 1)?);
                }
            }
            Ok(Value::Object(obj))
        }
    }
}

fn text(u: &mut Unstructured<'_>, max: usize) -> Result<String> {
    let n = u.int_in_range(0..=max)?;
    Ok(String::from_utf8_lossy(u.bytes(n.min(u.len()))?).into_owned())
}

fn scalar(u: &mut Unstructured<'_>) -> Result<Value> {
    const NUMBERS: [f64; 14] = [
        0.0,
        1.0,
        -1.0,
        0.5,
        1.5,
        8192.0,
        200_000.0,
        9_007_199_254_740_991.0,
        9_007_199_254_740_992.0,
        4_294_967_295.0,
        4_294_967_296.0,
        18_446_744_073_709_551_615.0,
        1e300,
        -1e300,
    ];
    Ok(match u.int_in_range(0..=11u8)? {
        0 => Value::Null,
        1 => json!(u.arbitrary::<bool>()?),
        2 | 3 => json!(u.int_in_range(1..=1_000_000u64)?),
        4 => json!(u.arbitrary::<u64>()?),
        5 => json!(u.arbitrary::<i64>()?),
        6 => json!(*u.choose(&NUMBERS)?),
        7 => json!(u.arbitrary::<f64>()?), // NaN and infinities become null
        8 => json!(*u.choose(&["off", "observe", "enforce", "pi", "", " ", "\u{7}", "npm test"])?),
        9 => json!(text(u, 80)?),
        10 => json!([]),
        _ => json!({}),
    })
}
