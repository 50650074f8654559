//! Budget configuration: parsing and validation of the seed-compatible `context-budget.json` object
//! (or the `budget` sub-object of Relay's settings), mode resolution and threshold resolution.

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::glob;
use crate::ConfigIssue;

/// How the budget policy acts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
        match key.as_str() {
            "soft" => t.soft = positive_tokens(val, &p, issues),
            "handoff" => t.handoff = positive_tokens(val, &p, issues),
            "hard" => t.hard = positive_tokens(val, &p, issues),
            "minProgress" => t.min_progress = positive_tokens(val, &p, issues),
            _ => issue(
                issues,
                p,
                "unknown key (expected soft, handoff, hard, minProgress)",
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
                    path.to_string(),
                    format!(
                        "{a} ({x}) must not exceed {b} ({y}); this threshold set falls back to the defaults"
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

/// Parse and validate a budget configuration object. `path_prefix` is prepended to every reported
/// key path (`"budget"` gives `budget.main.soft`; `""` gives `main.soft`).
///
/// Every invalid value is reported; the offending key keeps its default. A threshold set whose
/// values are out of order (`soft <= handoff <= hard` violated) falls back to the defaults as a
/// whole (its `minProgress` is kept). Unknown keys are reported but are not "invalid": only invalid
/// values set [`BudgetConfig::invalid`], which makes the effective mode observe.
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
        match key.as_str() {
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
            "enforceCwds" => match val.as_array() {
                Some(items) => {
                    let mut list = Vec::new();
                    for (i, item) in items.iter().enumerate() {
                        let ip = format!("{p}[{i}]");
                        match item.as_str() {
                            Some(s) if s.starts_with('/') => match glob::validate(s) {
                                Ok(()) => list.push(s.to_string()),
                                Err(e) => issue(&mut issues, ip, e),
                            },
                            Some(s) => issue(
                                &mut issues,
                                ip,
                                format!("must be an absolute path or glob starting with '/', got {s:?} (no tilde expansion)"),
                            ),
                            None => issue(&mut issues, ip, format!("must be a string, got {item}")),
                        }
                    }
                    cfg.enforce_cwds = Some(list);
                }
                None => issue(
                    &mut issues,
                    p,
                    format!("must be an array of absolute paths or globs, got {val}"),
                ),
            },
            "main" => cfg.main = parse_thresholds(val, &p, &mut issues),
            "subagent" => cfg.subagent = parse_thresholds(val, &p, &mut issues),
            "models" => {
                if let Some(models) = as_object(val, &p, &mut issues) {
                    for (model, mv) in models {
                        let mp = join(&p, model);
                        let mut mo = ModelOverride::default();
                        if let Some(mobj) = as_object(mv, &mp, &mut issues) {
                            for (role, rv) in mobj {
                                let rp = join(&mp, role);
                                match role.as_str() {
                                    "main" => mo.main = parse_thresholds(rv, &rp, &mut issues),
                                    "subagent" => {
                                        mo.subagent = parse_thresholds(rv, &rp, &mut issues)
                                    }
                                    _ => issue(
                                        &mut issues,
                                        rp,
                                        "unknown key (expected main, subagent)",
                                    ),
                                }
                            }
                        }
                        cfg.models.insert(model.clone(), mo);
                    }
                }
            }
            "maxHandoffsPerSession" => {
                if let Some(n) = positive_count(val, &p, &mut issues) {
                    cfg.max_handoffs_per_session = n;
                }
            }
            "loop" => {
                if let Some(lobj) = as_object(val, &p, &mut issues) {
                    for (lk, lv) in lobj {
                        let lp = join(&p, lk);
                        match lk.as_str() {
                            "maxHandoffsWithoutProgress" => {
                                if let Some(n) = positive_count(lv, &lp, &mut issues) {
                                    cfg.loop_guard.max_handoffs_without_progress = n;
                                }
                            }
                            "withinTurns" => {
                                if let Some(n) = positive_count(lv, &lp, &mut issues) {
                                    cfg.loop_guard.within_turns = n;
                                }
                            }
                            _ => issue(
                                &mut issues,
                                lp,
                                "unknown key (expected maxHandoffsWithoutProgress, withinTurns)",
                            ),
                        }
                    }
                }
            }
            "resumeChecks" => {
                if let Some(robj) = as_object(val, &p, &mut issues) {
                    for (name, cmd) in robj {
                        match cmd.as_str() {
                            Some(c) if !c.trim().is_empty() => {
                                cfg.resume_checks.insert(name.clone(), c.to_string());
                            }
                            _ => issue(
                                &mut issues,
                                join(&p, name),
                                format!("must be a non-empty command string, got {cmd}"),
                            ),
                        }
                    }
                }
            }
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

/// Configured vs effective mode, with the reason when they differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EffectiveMode {
    pub configured: Mode,
    pub effective: Mode,
    pub reason: Option<String>,
}

/// The mode that actually applies in `cwd`.
///
/// - a configuration with invalid values (or an unusable file) never enforces: enforce becomes
///   observe, with the problem as the reason;
/// - configured enforce with `enforceCwds` that does not match `cwd` becomes observe with the reason
///   `"cwd restriction"`. Prefixes match at directory boundaries (`/a/b` matches `/a/b` and `/a/b/c`,
///   not `/a/bc`); entries containing `*`, `?`, `[` or `{` are globs matched against the whole cwd.
pub fn effective_mode(cfg: &BudgetConfig, cwd: &str) -> EffectiveMode {
    let configured = cfg.mode;
    if configured != Mode::Enforce {
        return EffectiveMode {
            configured,
            effective: configured,
            reason: None,
        };
    }
    if let Some(why) = &cfg.invalid {
        return EffectiveMode {
            configured,
            effective: Mode::Observe,
            reason: Some(why.clone()),
        };
    }
    if let Some(list) = &cfg.enforce_cwds {
        if !list.iter().any(|p| cwd_matches(p, cwd)) {
            return EffectiveMode {
                configured,
                effective: Mode::Observe,
                reason: Some("cwd restriction".into()),
            };
        }
    }
    EffectiveMode {
        configured,
        effective: Mode::Enforce,
        reason: None,
    }
}

/// Whether one `enforceCwds` entry covers `cwd` (see [`effective_mode`]).
pub fn cwd_matches(entry: &str, cwd: &str) -> bool {
    let cwd = trim_slashes(cwd);
    if glob::is_glob(entry) {
        return glob::matches(entry, cwd);
    }
    let prefix = trim_slashes(entry);
    if prefix == "/" {
        return cwd.starts_with('/');
    }
    cwd == prefix
        || (cwd.len() > prefix.len()
            && cwd.starts_with(prefix)
            && cwd.as_bytes().get(prefix.len()) == Some(&b'/'))
}

fn trim_slashes(p: &str) -> &str {
    let t = p.trim_end_matches('/');
    if t.is_empty() && p.starts_with('/') {
        "/"
    } else {
        t
    }
}

/// Effective thresholds for one model and role. Invariant: `0 < soft <= handoff <= hard` and
/// `min_progress > 0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Thresholds {
    pub soft: u64,
    pub handoff: u64,
    pub hard: u64,
    pub min_progress: u64,
}

/// The seed's fixed defaults for large windows (main sessions).
pub const SEED_MAIN: Thresholds = Thresholds {
    soft: 300_000,
    handoff: 400_000,
    hard: 600_000,
    min_progress: 50_000,
};
/// The seed's fixed defaults for large windows (subagent sessions).
pub const SEED_SUBAGENT: Thresholds = Thresholds {
    soft: 150_000,
    handoff: 200_000,
    hard: 300_000,
    min_progress: 25_000,
};

/// Thresholds derived from the model's window when nothing is configured.
///
/// - `usable = max(window - reserve, window / 2)`: Pi starts its own compaction at
///   `window - reserveTokens`; a reserve larger than half the window (tiny models) is ignored
///   beyond half so that something remains;
/// - `hard = 90%` of `usable` (the 10% margin leaves room to write a handoff at hard);
/// - `handoff = 75%` of `hard`, `soft = 60%` of `hard`, `minProgress = hard / 12`;
/// - each value is then capped by the seed's fixed default for the role (main 300k/400k/600k/50k,
///   subagent 150k/200k/300k/25k): a seed value applies exactly when the derived value is at least
///   as large, i.e. when the window is large enough to hold it (main: hard reaches 600k from a
///   window of about 683k with Pi's default 16k reserve);
/// - every value is at least 1 (a window of 0 is treated as unknown and yields the seed defaults).
///
/// Examples (reserve 16,384): 8k window → 3686/2764/2211, 200k → 165254/123940/99152,
/// 1M → the seed defaults.
pub fn derived_thresholds(context_window: u64, reserve_tokens: u64, subagent: bool) -> Thresholds {
    let seed = if subagent { SEED_SUBAGENT } else { SEED_MAIN };
    if context_window == 0 {
        return seed;
    }
    let w = context_window as u128;
    let usable = (w.saturating_sub(reserve_tokens as u128)).max(w / 2);
    let hard = (usable * 9 / 10).max(1);
    let handoff = (hard * 3 / 4).max(1);
    let soft = (hard * 3 / 5).max(1);
    let min_progress = (hard / 12).max(1);
    let cap = |v: u128, s: u64| -> u64 { (v.min(s as u128)) as u64 };
    Thresholds {
        soft: cap(soft, seed.soft),
        handoff: cap(handoff, seed.handoff),
        hard: cap(hard, seed.hard),
        min_progress: cap(min_progress, seed.min_progress),
    }
}

/// Resolve the thresholds for `model_key` (`"provider/model-id"`) in a main or subagent session.
///
/// Precedence per field: `models[model_key].<role>.<field>` > `<role>.<field>` > derived from the
/// window ([`derived_thresholds`]). When values from different levels disagree in order, the more
/// specific level wins and the less specific values are clamped into the range it leaves: e.g. a
/// model override `handoff: 100000` with a role-level `soft: 300000` gives `soft = 100000`; a lone
/// explicit `hard: 50000` on a 1M window pulls the derived soft/handoff below 50000. Explicit
/// values are never changed by the window.
pub fn resolve_thresholds(
    cfg: &BudgetConfig,
    model_key: &str,
    context_window: u64,
    reserve_tokens: u64,
    subagent: bool,
) -> Thresholds {
    let derived = derived_thresholds(context_window, reserve_tokens, subagent);
    let role = if subagent { &cfg.subagent } else { &cfg.main };
    let model = cfg
        .models
        .get(model_key)
        .map(|m| if subagent { m.subagent } else { m.main })
        .unwrap_or_default();
    let levels: [[Option<u64>; 3]; 3] = [
        [model.soft, model.handoff, model.hard],
        [role.soft, role.handoff, role.hard],
        [
            Some(derived.soft),
            Some(derived.handoff),
            Some(derived.hard),
        ],
    ];
    let mut fixed: [Option<u64>; 3] = [None; 3];
    for level in levels {
        // Values of one level are mutually ordered (validated or derived); clamp each into the
        // interval the already fixed (more specific) values leave.
        let snapshot = fixed;
        for (i, (slot, value)) in fixed.iter_mut().zip(level).enumerate() {
            // `slot` still holds its snapshot value: only this iteration writes it.
            if slot.is_some() {
                continue;
            }
            if let Some(v) = value {
                let lo = snapshot
                    .iter()
                    .take(i)
                    .flatten()
                    .copied()
                    .max()
                    .unwrap_or(1);
                let hi = snapshot
                    .iter()
                    .skip(i + 1)
                    .flatten()
                    .copied()
                    .min()
                    .unwrap_or(u64::MAX);
                *slot = Some(v.clamp(lo.min(hi), hi));
            }
        }
    }
    let min_progress = model
        .min_progress
        .or(role.min_progress)
        .unwrap_or(derived.min_progress)
        .max(1);
    Thresholds {
        soft: fixed[0].unwrap_or(derived.soft).max(1),
        handoff: fixed[1].unwrap_or(derived.handoff).max(1),
        hard: fixed[2].unwrap_or(derived.hard).max(1),
        min_progress,
    }
}

/// The policy's parameters for one session: resolved thresholds and the commit guards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PolicyParams {
    pub thresholds: Thresholds,
    pub max_handoffs_per_session: u32,
    pub loop_guard: LoopGuard,
}

impl PolicyParams {
    pub fn resolve(
        cfg: &BudgetConfig,
        model_key: &str,
        context_window: u64,
        reserve_tokens: u64,
        subagent: bool,
    ) -> Self {
        PolicyParams {
            thresholds: resolve_thresholds(
                cfg,
                model_key,
                context_window,
                reserve_tokens,
                subagent,
            ),
            max_handoffs_per_session: cfg.max_handoffs_per_session,
            loop_guard: cfg.loop_guard,
        }
    }
}
