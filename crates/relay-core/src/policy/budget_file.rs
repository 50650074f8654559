//! Budget configuration: parsing and validation of the seed-compatible `context-budget.json` object
//! (or the `budget` sub-object of Relay's settings), mode resolution and threshold resolution.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::glob;
use crate::ConfigIssue;

/// How the budget policy acts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Telemetry only: no decisions are made, nothing is blocked or logged as `would_*`.
    Off,
    /// The default. The enforce transition runs on a projected copy and every effect becomes a
    /// `would_*` event; the session is never changed.
    Observe,
    /// The policy acts: blocks, continuations, resets.
    Enforce,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::Observe => "observe",
            Mode::Enforce => "enforce",
        }
    }
}

/// One threshold set as written in the configuration; `None` = not configured here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ThresholdOverrides {
    pub soft: Option<u64>,
    pub handoff: Option<u64>,
    pub hard: Option<u64>,
    pub min_progress: Option<u64>,
}

/// `models["provider/model-id"]`: per-role overrides merged field by field over `main`/`subagent`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ModelOverride {
    pub main: ThresholdOverrides,
    pub subagent: ThresholdOverrides,
}

/// `loop`: fall back instead of committing when the agent keeps handing off without progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LoopGuard {
    pub max_handoffs_without_progress: u32,
    pub within_turns: u32,
}

impl Default for LoopGuard {
    fn default() -> Self {
        LoopGuard {
            max_handoffs_without_progress: 2,
            within_turns: 8,
        }
    }
}

/// The validated budget configuration. Thresholds hold only what the user wrote; the effective
/// values for a model come from [`resolve_thresholds`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BudgetConfig {
    /// The configured mode (before the cwd restriction and before an invalid configuration demotes it).
    pub mode: Mode,
    /// `enforceCwds`: `None` = enforce everywhere; `Some([])` = enforce nowhere.
    pub enforce_cwds: Option<Vec<String>>,
    pub main: ThresholdOverrides,
    pub subagent: ThresholdOverrides,
    pub models: BTreeMap<String, ModelOverride>,
    pub max_handoffs_per_session: u32,
    pub loop_guard: LoopGuard,
    // Accepted and validated for later features; unused by this module.
    pub resume_checks: BTreeMap<String, String>,
    pub overflow_recovery: bool,
    pub idle_minutes: Option<f64>,
    pub idle_min_tokens: Option<u64>,
    pub keep_recent_tokens: Option<u64>,
    /// Set when the configuration had invalid values or could not be read at all. A configuration
    /// with problems never enforces: [`effective_mode`] demotes it to observe and says why.
    pub invalid: Option<String>,
}

impl Default for BudgetConfig {
    fn default() -> Self {
        BudgetConfig {
            mode: Mode::Observe,
            enforce_cwds: None,
            main: ThresholdOverrides::default(),
            subagent: ThresholdOverrides::default(),
            models: BTreeMap::new(),
            max_handoffs_per_session: 10,
            loop_guard: LoopGuard::default(),
            resume_checks: BTreeMap::new(),
            overflow_recovery: true,
            idle_minutes: None,
            idle_min_tokens: None,
            keep_recent_tokens: None,
            invalid: None,
        }
    }
}

/// What a configuration key holds. The parsers' key tables ([`BUDGET_KEYS`],
/// [`crate::settings::RELAY_KEYS`], [`crate::settings::COMPACTION_KEYS`]) are the one list of the keys
/// Relay reads: a key missing from its table is reported as unknown, and the hostile-input tests
/// derive a value of every wrong JSON type for every key from them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// `true` or `false`.
    Bool,
    /// A positive finite number (token counts are rounded up).
    PositiveNumber,
    /// A positive whole number.
    PositiveInteger,
    /// A non-negative whole number (Pi's reserve).
    NonNegativeInteger,
    /// A non-empty string.
    Text,
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// An array of absolute paths or globs.
    PathList,
    /// An array of non-empty names (tool names).
    NameList,
    /// An array of non-empty texts (`relay.pins`).
    TextList,
    /// An object with these keys.
    Object(&'static [(&'static str, KeyKind)]),
    /// An object whose keys are names chosen by the user (models, session names), each holding
    /// this kind.
    Map(&'static KeyKind),
}

/// One threshold set (`main`, `subagent`, `models.<m>.main`, …).
pub const THRESHOLD_KEYS: &[(&str, KeyKind)] = &[
    ("soft", KeyKind::PositiveNumber),
    ("handoff", KeyKind::PositiveNumber),
    ("hard", KeyKind::PositiveNumber),
    ("minProgress", KeyKind::PositiveNumber),
];

/// `models.<provider/model>`: the threshold sets per role.
pub const MODEL_KEYS: &[(&str, KeyKind)] = &[
    ("main", KeyKind::Object(THRESHOLD_KEYS)),
    ("subagent", KeyKind::Object(THRESHOLD_KEYS)),
];

/// `loop`: the loop guard.
pub const LOOP_KEYS: &[(&str, KeyKind)] = &[
    ("maxHandoffsWithoutProgress", KeyKind::PositiveInteger),
    ("withinTurns", KeyKind::PositiveInteger),
];

/// Every key of the budget configuration (the budget file's root, or `relay.budget`).
pub const BUDGET_KEYS: &[(&str, KeyKind)] = &[
    ("mode", KeyKind::OneOf(&["off", "observe", "enforce"])),
    ("enforceCwds", KeyKind::PathList),
    ("main", KeyKind::Object(THRESHOLD_KEYS)),
    ("subagent", KeyKind::Object(THRESHOLD_KEYS)),
    ("models", KeyKind::Map(&KeyKind::Object(MODEL_KEYS))),
    ("maxHandoffsPerSession", KeyKind::PositiveInteger),
    ("loop", KeyKind::Object(LOOP_KEYS)),
    ("resumeChecks", KeyKind::Map(&KeyKind::Text)),
    ("overflowRecovery", KeyKind::Bool),
    ("idleMinutes", KeyKind::PositiveNumber),
    ("idleMinTokens", KeyKind::PositiveNumber),
    ("keepRecentTokens", KeyKind::PositiveNumber),
];

/// Whether `key` is in `table`.
pub fn known_key(table: &[(&str, KeyKind)], key: &str) -> bool {
    table.iter().any(|(k, _)| *k == key)
}

/// The keys of `table`, comma-separated, for an unknown-key message.
pub fn key_names(table: &[(&str, KeyKind)]) -> String {
    table.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", ")
}

/// The configuration used when the file exists but cannot be used at all (unreadable, not JSON,
/// not an object): every default, and `invalid` set so the effective mode is observe with the
/// problem as its reason. The caller reports `issue` to the user.
pub fn invalid_file_config(issue: ConfigIssue) -> BudgetConfig {
    BudgetConfig {
        invalid: Some(format!("invalid configuration ({issue})")),
        ..BudgetConfig::default()
    }
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

fn issue(issues: &mut Vec<ConfigIssue>, path: String, message: impl Into<String>) {
    issues.push(ConfigIssue {
        path,
        message: message.into(),
    });
}

/// A positive finite number used as a token count (fractions are rounded up).
fn positive_tokens(v: &Value, path: &str, issues: &mut Vec<ConfigIssue>) -> Option<u64> {
    match v.as_f64() {
        Some(f) if f.is_finite() && f > 0.0 => {
            if f > u64::MAX as f64 {
                issue(issues, path.to_string(), "number is too large");
                None
            } else {
                Some(f.ceil() as u64)
            }
        }
        Some(_) => {
            issue(
                issues,
                path.to_string(),
                format!("must be a positive finite number, got {v}"),
            );
            None
        }
        None => {
            issue(
                issues,
                path.to_string(),
                format!("must be a positive number, got {v}"),
            );
            None
        }
    }
}

fn positive_number(v: &Value, path: &str, issues: &mut Vec<ConfigIssue>) -> Option<f64> {
    match v.as_f64() {
        Some(f) if f.is_finite() && f > 0.0 => Some(f),
        _ => {
            issue(
                issues,
                path.to_string(),
                format!("must be a positive finite number, got {v}"),
            );
            None
        }
    }
}

fn positive_count(v: &Value, path: &str, issues: &mut Vec<ConfigIssue>) -> Option<u32> {
    match v.as_u64() {
        Some(n) if n > 0 && n <= u32::MAX as u64 => Some(n as u32),
        _ => {
            // 3.0 is an integer written as a float; accept it.
            if let Some(f) = v.as_f64() {
                if f.is_finite() && f > 0.0 && f.fract() == 0.0 && f <= u32::MAX as f64 {
                    return Some(f as u32);
                }
            }
            issue(
                issues,
                path.to_string(),
                format!("must be a positive integer, got {v}"),
            );
            None
        }
    }
}

fn as_object<'a>(
    v: &'a Value,
    path: &str,
    issues: &mut Vec<ConfigIssue>,
) -> Option<&'a serde_json::Map<String, Value>> {
    match v.as_object() {
        Some(o) => Some(o),
        None => {
            issue(
                issues,
                path.to_string(),
                format!("must be an object, got {v}"),
            );
            None
        }
    }
}

fn parse_thresholds(v: &Value, path: &str, issues: &mut Vec<ConfigIssue>) -> ThresholdOverrides {
    let mut t = ThresholdOverrides::default();
    let Some(obj) = as_object(v, path, issues) else {
        return t;
    };
    for (key, val) in obj {
        let p = join(path, key);
        let known = known_key(THRESHOLD_KEYS, key);
        match key.as_str() {
            "soft" if known => t.soft = positive_tokens(val, &p, issues),
            "handoff" if known => t.handoff = positive_tokens(val, &p, issues),
            "hard" if known => t.hard = positive_tokens(val, &p, issues),
            "minProgress" if known => t.min_progress = positive_tokens(val, &p, issues),
            _ => issue(
                issues,
                p,
                format!("unknown key (expected {})", key_names(THRESHOLD_KEYS)),
            ),
        }
    }
    let pairs = [
        ("soft", t.soft, "handoff", t.handoff),
        ("handoff", t.handoff, "hard", t.hard),
        ("soft", t.soft, "hard", t.hard),
    ];
    for (a, av, b, bv) in pairs {
        if let (Some(x), Some(y)) = (av, bv) {
            if x > y {
                issue(
                    issues,
                    join(path, a),
                    format!(
                        "{x} must not exceed {} ({y}); the soft/handoff/hard values of {path} are \
                         ignored (the next level applies: the role's values, else those derived \
                         from the window) and enforce runs as observe until this is fixed",
                        join(path, b)
                    ),
                );
                return ThresholdOverrides {
                    min_progress: t.min_progress,
                    ..ThresholdOverrides::default()
                };
            }
        }
    }
    t
}

/// A model key as it appears in a key path: JSON-quoted, so that `models."a/x.1".main.soft` names
/// the key `a/x.1` unambiguously.
pub fn quoted_key(key: &str) -> String {
    serde_json::to_string(key).unwrap_or_else(|_| format!("\"{key}\""))
}

/// Parse and validate a budget configuration object. `path_prefix` is prepended to every reported
/// key path (`"budget"` gives `budget.main.soft`; `""` gives `main.soft`).
///
/// Every invalid value is reported; the offending key keeps its default. A threshold set whose
/// values are out of order (`soft <= handoff <= hard` violated; the object is already the merge of
/// the global and project settings) is dropped as a whole (its `minProgress` is kept), so the next
/// level applies to it in [`resolve_thresholds`], and is reported with the key paths of both values.
/// Model keys are quoted in key paths (`budget.models."p/m".main.soft`). Unknown keys are reported
/// but are not "invalid": only invalid values set [`BudgetConfig::invalid`], which makes the
/// effective mode observe.
pub fn parse_budget_config(v: &Value, path_prefix: &str) -> (BudgetConfig, Vec<ConfigIssue>) {
    let mut cfg = BudgetConfig::default();
    let mut issues = Vec::new();
    let mut invalid_values = 0usize;
    let root_path = if path_prefix.is_empty() {
        "(root)".to_string()
    } else {
        path_prefix.to_string()
    };
    let Some(obj) = v.as_object() else {
        let i = ConfigIssue {
            path: root_path,
            message: format!("must be an object, got {v}"),
        };
        return (invalid_file_config(i.clone()), vec![i]);
    };
    for (key, val) in obj {
        let p = join(path_prefix, key);
        let before = issues.len();
        let mut unknown = false;
        // A key the table does not list is unknown, whatever arm below would read it.
        let key = if known_key(BUDGET_KEYS, key) {
            key.as_str()
        } else {
            ""
        };
        match key {
            "mode" => match val.as_str() {
                Some("off") => cfg.mode = Mode::Off,
                Some("observe") => cfg.mode = Mode::Observe,
                Some("enforce") => cfg.mode = Mode::Enforce,
                _ => issue(
                    &mut issues,
                    p,
                    format!("must be \"off\", \"observe\" or \"enforce\", got {val}"),
                ),
            },
            "enforceCwds" => {
                if let Some(list) = parse_enforce_cwds(val, &p, &mut issues) {
                    cfg.enforce_cwds = Some(list);
                }
            }
            "main" => cfg.main = parse_thresholds(val, &p, &mut issues),
            "subagent" => cfg.subagent = parse_thresholds(val, &p, &mut issues),
            "models" => parse_models(val, &p, &mut cfg.models, &mut issues),
            "maxHandoffsPerSession" => {
                if let Some(n) = positive_count(val, &p, &mut issues) {
                    cfg.max_handoffs_per_session = n;
                }
            }
            "loop" => parse_loop(val, &p, &mut cfg.loop_guard, &mut issues),
            "resumeChecks" => parse_resume_checks(val, &p, &mut cfg.resume_checks, &mut issues),
            "overflowRecovery" => match val.as_bool() {
                Some(b) => cfg.overflow_recovery = b,
                None => issue(&mut issues, p, format!("must be true or false, got {val}")),
            },
            "idleMinutes" => cfg.idle_minutes = positive_number(val, &p, &mut issues),
            "idleMinTokens" => cfg.idle_min_tokens = positive_tokens(val, &p, &mut issues),
            "keepRecentTokens" => cfg.keep_recent_tokens = positive_tokens(val, &p, &mut issues),
            _ => {
                unknown = true;
                issue(&mut issues, p, "unknown key (ignored)");
            }
        }
        if !unknown {
            invalid_values += issues
                .iter()
                .skip(before)
                .filter(|i| !i.message.starts_with("unknown key"))
                .count();
        }
    }
    if invalid_values > 0 {
        cfg.invalid = Some(format!(
            "invalid configuration ({invalid_values} invalid value{})",
            if invalid_values == 1 { "" } else { "s" }
        ));
    }
    (cfg, issues)
}

/// `enforceCwds`: absolute paths or globs; `None` (and an issue) when it is not an array, else
/// the valid entries (each invalid one reported).
fn parse_enforce_cwds(v: &Value, p: &str, issues: &mut Vec<ConfigIssue>) -> Option<Vec<String>> {
    let Some(items) = v.as_array() else {
        issue(
            issues,
            p.to_string(),
            format!("must be an array of absolute paths or globs, got {v}"),
        );
        return None;
    };
    let mut list = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let ip = format!("{p}[{i}]");
        match item.as_str() {
            Some(s) if s.starts_with('/') => match glob::validate(s) {
                Ok(()) => list.push(s.to_string()),
                Err(e) => issue(issues, ip, e),
            },
            Some(s) => issue(
                issues,
                ip,
                format!("must be an absolute path or glob starting with '/', got {s:?} (no tilde expansion)"),
            ),
            None => issue(issues, ip, format!("must be a string, got {item}")),
        }
    }
    Some(list)
}

/// `models`: per model, the `main` and `subagent` threshold overrides.
fn parse_models(
    v: &Value,
    p: &str,
    models: &mut BTreeMap<String, ModelOverride>,
    issues: &mut Vec<ConfigIssue>,
) {
    let Some(entries) = as_object(v, p, issues) else {
        return;
    };
    for (model, mv) in entries {
        let mp = join(p, &quoted_key(model));
        let mut mo = ModelOverride::default();
        // A model entry that is not an object overrides nothing (as if absent).
        let Some(mobj) = as_object(mv, &mp, issues) else {
            continue;
        };
        for (role, rv) in mobj {
            let rp = join(&mp, role);
            let known = known_key(MODEL_KEYS, role);
            match role.as_str() {
                "main" if known => mo.main = parse_thresholds(rv, &rp, issues),
                "subagent" if known => mo.subagent = parse_thresholds(rv, &rp, issues),
                _ => issue(
                    issues,
                    rp,
                    format!("unknown key (expected {})", key_names(MODEL_KEYS)),
                ),
            }
        }
        models.insert(model.clone(), mo);
    }
}

/// `loop`: the loop guard's two counts.
fn parse_loop(v: &Value, p: &str, guard: &mut LoopGuard, issues: &mut Vec<ConfigIssue>) {
    let Some(lobj) = as_object(v, p, issues) else {
        return;
    };
    for (lk, lv) in lobj {
        let lp = join(p, lk);
        let lk = if known_key(LOOP_KEYS, lk) {
            lk.as_str()
        } else {
            ""
        };
        match lk {
            "maxHandoffsWithoutProgress" => {
                if let Some(n) = positive_count(lv, &lp, issues) {
                    guard.max_handoffs_without_progress = n;
                }
            }
            "withinTurns" => {
                if let Some(n) = positive_count(lv, &lp, issues) {
                    guard.within_turns = n;
                }
            }
            _ => issue(
                issues,
                lp,
                format!("unknown key (expected {})", key_names(LOOP_KEYS)),
            ),
        }
    }
}

/// `resumeChecks`: a non-empty command per session name.
fn parse_resume_checks(
    v: &Value,
    p: &str,
    checks: &mut BTreeMap<String, String>,
    issues: &mut Vec<ConfigIssue>,
) {
    let Some(robj) = as_object(v, p, issues) else {
        return;
    };
    for (name, cmd) in robj {
        match cmd.as_str() {
            Some(c) if !c.trim().is_empty() => {
                checks.insert(name.clone(), c.to_string());
            }
            _ => issue(
                issues,
                join(p, name),
                format!("must be a non-empty command string, got {cmd}"),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::*;
    use serde_json::json;

    const W: u64 = 1_000_000;
    const R: u64 = 16_384;

    fn bands(cfg: &Value, model: &str, subagent: bool) -> (u64, u64, u64, u64) {
        let (cfg, issues) = parse_budget_config(cfg, "");
        assert!(issues.is_empty(), "{issues:?}");
        let t = resolve_thresholds(&cfg, model, W, R, subagent);
        (t.soft, t.handoff, t.hard, t.min_progress)
    }

    /// Partial overrides keep three bands: the missing ones come from the given ones by the default
    /// ratios (soft 60 %, handoff 75 % of hard), never clamped onto them.
    #[test]
    fn partial_overrides_derive_the_missing_bands_by_the_default_ratios() {
        let readme = json!({
            "mode": "enforce",
            "main": { "soft": 300000, "handoff": 400000, "hard": 600000, "minProgress": 50000 },
            "subagent": { "soft": 150000, "handoff": 200000, "hard": 300000, "minProgress": 25000 },
            "models": { "provider/model-id": { "main": { "hard": 150000 } } },
            "maxHandoffsPerSession": 10,
            "loop": { "maxHandoffsWithoutProgress": 2, "withinTurns": 8 }
        });
        type Case = (
            &'static str,
            Value,
            &'static str,
            bool,
            (u64, u64, u64, u64),
        );
        let cases: &[Case] = &[
            (
                "docs/settings.md's example alone",
                json!({"models": {"provider/model-id": {"main": {"hard": 150000}}}}),
                "provider/model-id",
                false,
                (90_000, 112_500, 150_000, 12_500),
            ),
            (
                "docs/settings.md's whole example: the role's bands above the model's hard do not apply to it",
                readme.clone(),
                "provider/model-id",
                false,
                (90_000, 112_500, 150_000, 50_000),
            ),
            (
                "docs/settings.md's example, another model: the role's values",
                readme.clone(),
                "provider/other",
                false,
                (300_000, 400_000, 600_000, 50_000),
            ),
            (
                "docs/settings.md's example, subagent: the model override covers main only",
                readme,
                "provider/model-id",
                true,
                (150_000, 200_000, 300_000, 25_000),
            ),
            (
                "role hard only, on a large window: not pulled from the window",
                json!({"main": {"hard": 50000}}),
                "p/m",
                false,
                (30_000, 37_500, 50_000, 4_166),
            ),
            (
                "only handoff: hard = handoff / 0.75",
                json!({"main": {"handoff": 90000}}),
                "p/m",
                false,
                (72_000, 90_000, 120_000, 10_000),
            ),
            (
                "only soft, not a multiple of 3: handoff = 1.25 × soft exactly",
                json!({"main": {"soft": 80000}}),
                "p/m",
                false,
                (80_000, 100_000, 133_333, 11_111),
            ),
            (
                "only soft: hard = soft / 0.6",
                json!({"models": {"p/m": {"main": {"soft": 60000}}}}),
                "p/m",
                false,
                (60_000, 75_000, 100_000, 8_333),
            ),
            (
                "soft and hard: handoff at 75 %",
                json!({"main": {"soft": 10000, "hard": 100000}}),
                "p/m",
                false,
                (10_000, 75_000, 100_000, 8_333),
            ),
            (
                "soft above 75 % of hard: handoff midway between them",
                json!({"main": {"soft": 80000, "hard": 100000}}),
                "p/m",
                false,
                (80_000, 90_000, 100_000, 8_333),
            ),
            (
                "handoff below 60 % of hard: soft at 80 % of handoff",
                json!({"main": {"handoff": 50000, "hard": 100000}}),
                "p/m",
                false,
                (40_000, 50_000, 100_000, 8_333),
            ),
            (
                "handoff and hard, soft at 60 %",
                json!({"main": {"handoff": 90000, "hard": 100000}}),
                "p/m",
                false,
                (60_000, 90_000, 100_000, 8_333),
            ),
            (
                "role values that keep the order with the model's join them",
                json!({"main": {"soft": 100000}, "models": {"p/m": {"main": {"hard": 150000}}}}),
                "p/m",
                false,
                (100_000, 112_500, 150_000, 12_500),
            ),
            (
                "a role value crossing a model value does not apply to that model",
                json!({"main": {"soft": 300000}, "models": {"p/m": {"main": {"handoff": 100000}}}}),
                "p/m",
                false,
                (80_000, 100_000, 133_333, 11_111),
            ),
            (
                "... but applies to other models",
                json!({"main": {"soft": 300000}, "models": {"p/m": {"main": {"handoff": 100000}}}}),
                "p/other",
                false,
                (300_000, 375_000, 500_000, 41_666),
            ),
            (
                "a model soft above the role's handoff: the role's hard stays, handoff in between",
                json!({"main": {"soft": 300000, "handoff": 400000, "hard": 600000},
                       "models": {"p/m": {"main": {"soft": 500000}}}}),
                "p/m",
                false,
                (500_000, 550_000, 600_000, 50_000),
            ),
            (
                "explicit minProgress wins",
                json!({"main": {"minProgress": 7}, "models": {"p/m": {"main": {"hard": 150000}}}}),
                "p/m",
                false,
                (90_000, 112_500, 150_000, 7),
            ),
            (
                "only minProgress: the bands come from the window",
                json!({"main": {"minProgress": 7}}),
                "p/m",
                false,
                (300_000, 400_000, 600_000, 7),
            ),
            (
                "tiny values stay positive and ordered",
                json!({"main": {"hard": 1}}),
                "p/m",
                false,
                (1, 1, 1, 1),
            ),
        ];
        for (name, cfg, model, subagent, want) in cases {
            assert_eq!(bands(cfg, model, *subagent), *want, "{name}");
        }
    }

    /// An out-of-order set within one level (after the settings layers merged) is a warning naming
    /// both keys by their full path; the set is dropped (the next level applies) and the
    /// configuration counts as invalid, so enforce runs as observe.
    #[test]
    fn an_out_of_order_set_is_a_warning_naming_both_keys() {
        let cfg = json!({
            "mode": "enforce",
            "main": {"soft": 100000, "handoff": 200000, "hard": 300000},
            "models": {"p/m.1": {"main": {"soft": 50000, "handoff": 40000}}}
        });
        let (parsed, issues) = parse_budget_config(&cfg, "relay.budget");
        let shown: Vec<String> = issues.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "relay.budget.models.\"p/m.1\".main.soft: 50000 must not exceed \
              relay.budget.models.\"p/m.1\".main.handoff (40000); the soft/handoff/hard values of \
              relay.budget.models.\"p/m.1\".main are ignored (the next level applies: the role's \
              values, else those derived from the window) and enforce runs as observe until this \
              is fixed"
            ]
        );
        assert!(parsed.invalid.is_some());
        assert_eq!(effective_mode(&parsed, "/w").effective, Mode::Observe);
        let t = resolve_thresholds(&parsed, "p/m.1", W, R, false);
        assert_eq!(
            (t.soft, t.handoff, t.hard),
            (100_000, 200_000, 300_000),
            "the role's values apply"
        );
        let (_, issues) = parse_budget_config(&json!({"subagent": {"handoff": 9, "hard": 8}}), "");
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].path, "subagent.handoff");
        assert!(issues[0]
            .message
            .starts_with("9 must not exceed subagent.hard (8);"));
    }

    #[test]
    fn a_tilde_in_enforce_cwds_is_reported_with_its_index_and_never_matches() {
        let (cfg, issues) = parse_budget_config(
            &json!({"mode": "enforce", "enforceCwds": ["/ok", "~/work", "~"]}),
            "b",
        );
        let paths: Vec<&str> = issues.iter().map(|i| i.path.as_str()).collect();
        assert_eq!(paths, ["b.enforceCwds[1]", "b.enforceCwds[2]"]);
        assert!(
            issues[0].message.contains("no tilde expansion"),
            "{}",
            issues[0]
        );
        assert_eq!(cfg.enforce_cwds, Some(vec!["/ok".to_string()]));
        assert!(!cwd_matches("~/work", "/home/u/work"));
        assert!(!cwd_matches("~", "/home/u"));
        assert_eq!(
            effective_mode(&cfg, "/home/u/work").effective,
            Mode::Observe
        );
    }
}
