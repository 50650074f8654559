//! Relay's settings: one `relay` object in Pi's `settings.json`, global and (when the project is
//! trusted) per project.
//!
//! ```json
//! { "relay": { "enabled": true, "reminderMarginTokens": 24576, "agentName": "pi", "continueAfterReset": true, "budget": { … } } }
//! ```
//!
//! | key | type | default |
//! | --- | --- | --- |
//! | `enabled` | boolean: window features (boot block, reminder, reset-style windows) | `true` |
//! | `reminderMarginTokens` | whole number ≥ 1: the reminder fires at reserve + margin tokens left | `24576` |
//! | `agentName` | non-empty string, ≤ 64 characters, no control characters | `"pi"` |
//! | `continueAfterReset` | boolean: continue once when the first reply after an automatic or forced reset stops early (see `crate::on_task`) | `true` |
//! | `budget` | object, passed through raw and validated by the budget module | absent |
//! | `role` | `"main"` or `"subagent"`: this session's budget role, declared by an SDK host | absent: the hosting rule decides |
//! | `inProgress` | boolean: a reset's boot block carries the closing window's last actions (`<in_progress>`, see `crate::render::in_progress`) | `true` |
//! | `pins` | array of at most 10 texts of at most 500 characters: default pinned instructions every window's boot block repeats before the session's own (see `crate::pins`; a project's only when Pi trusts it) | `[]` |
//! | `clearToolResults` | object: tool-result clearing (see [`ClearToolResults`] and `crate::clearing`) | on, see below |
//!
//! `relay.clearToolResults` keys (each validated on its own, an invalid one falls back to its
//! default): `enabled` (boolean, `true`), `triggerTokens` (whole number ≥ 1; absent: derived from
//! the window, see `crate::clearing::trigger_tokens`), `keep` (whole number ≥ 0, `3`),
//! `clearAtLeast` (whole number ≥ 0, `30000`), `excludeTools` (array of tool names, `[]`; Relay's
//! own `notes_*` and `history_*` results are never cleared whatever it says).
//!
//! **Pi's compaction reserve** ([`ReserveTokens`]): `compaction.modelOverrides["provider/model"].reserveTokens`,
//! else `compaction.reserveTokens`, else 16,384, read exactly as Pi's `SettingsManager` reads it
//! (a non-negative whole number; an invalid value is a warning naming its key path and the next
//! level applies). Relay looks the reserve up for the current model at every use (remaining
//! figure, reminder, derived thresholds, status), so it follows a model switch.
//!
//! **The reminder threshold** ([`reminder_threshold`]): the reminder fires when the physical
//! remaining capacity (window − used) drops to reserve + margin, where, in a small window, the
//! reserve counts at most half the window and the margin at most a quarter of it. The reminder
//! therefore never fires before a quarter of the window is used, whatever the settings say
//! (reserve 4,096 and the default margin in a 16k window: it fires with 8,192 tokens left). From a
//! window of 98,304 tokens with Pi's default reserve and Relay's default margin nothing is capped.
//!
//! **Precedence** ([`SettingsLayers`]): decided here, not in the extension, exactly as Pi's
//! `SettingsManager` merges its settings. The extension hands over Pi's settings object, the
//! project's `.pi/settings.json` as it is on disk and whether the project is trusted. The project's
//! value of a key wins only when the project is trusted; objects (`relay`, `relay.budget`,
//! `relay.budget.models…`, `compaction`) merge key by key at every depth, other values (arrays
//! too) are replaced whole. An untrusted project's settings are ignored, silently, as in Pi.
//!
//! **Validation:** the merged values are validated; every problem is reported at once, naming the
//! file and the key path (`project settings (.pi/settings.json): relay.reminderMarginTokens:
//! expected …`), and that key falls back to its default (an invalid project value does *not* fall
//! back to the global one: the project decided). Unknown keys are reported and ignored. Nothing
//! here panics.

use serde_json::{Map, Value};

use crate::pins::{MAX_PINS, PIN_MAX_CHARS};
use crate::policy::budget_file::{key_names, known_key, KeyKind};
use crate::ConfigIssue;

mod layers;
mod reserve;

use layers::merge_values;
pub use layers::SettingsLayers;
pub use reserve::{remaining_tokens, reminder_threshold, ReserveTokens};
use reserve::{reserve_count, reserve_tokens};

/// The settings key holding Relay's object.
pub const SETTINGS_KEY: &str = "relay";
/// Pi's default `compaction.reserveTokens`.
pub const DEFAULT_RESERVE_TOKENS: u64 = 16_384;
/// Default extra margin above the reserve at which the reminder fires.
pub const DEFAULT_REMINDER_MARGIN_TOKENS: u64 = 24_576;
/// Default agent name shown in the boot block.
pub const DEFAULT_AGENT_NAME: &str = "pi";
/// Longest accepted `agentName`, in Unicode characters.
pub const MAX_AGENT_NAME_CHARS: usize = 64;
/// Largest accepted token count (JavaScript's `Number.MAX_SAFE_INTEGER`).
pub const MAX_TOKENS: u64 = (1 << 53) - 1;
/// How warnings name the project's settings file (relative to the project).
pub const PROJECT_SETTINGS_FILE: &str = ".pi/settings.json";

/// Every key of the `relay` settings object (a key missing here is reported as unknown).
pub const RELAY_KEYS: &[(&str, KeyKind)] = &[
    ("enabled", KeyKind::Bool),
    ("reminderMarginTokens", KeyKind::PositiveInteger),
    ("agentName", KeyKind::Text),
    ("continueAfterReset", KeyKind::Bool),
    (
        "budget",
        KeyKind::Object(crate::policy::budget_file::BUDGET_KEYS),
    ),
    ("role", KeyKind::OneOf(&["main", "subagent"])),
    ("clearToolResults", KeyKind::Object(CLEAR_KEYS)),
    ("memoryTool", KeyKind::Bool),
    ("inProgress", KeyKind::Bool),
    ("pins", KeyKind::TextList),
];

/// The keys of `relay.clearToolResults`.
pub const CLEAR_KEYS: &[(&str, KeyKind)] = &[
    ("enabled", KeyKind::Bool),
    ("triggerTokens", KeyKind::PositiveInteger),
    ("keep", KeyKind::NonNegativeInteger),
    ("clearAtLeast", KeyKind::NonNegativeInteger),
    ("excludeTools", KeyKind::NameList),
];

/// Default `relay.clearToolResults.keep`: the newest tool results a clearing never touches.
pub const DEFAULT_CLEAR_KEEP: u64 = 3;
/// Default `relay.clearToolResults.clearAtLeast`: a clearing that frees fewer tokens does not
/// happen (it would break the prompt cache for too little).
pub const DEFAULT_CLEAR_AT_LEAST: u64 = 30_000;

/// `relay.clearToolResults`: old tool results give way to a one-line stub (see `crate::clearing`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClearToolResults {
    pub enabled: bool,
    /// Context size (tokens) from which a clearing is considered; `None`: derived from the window.
    pub trigger_tokens: Option<u64>,
    /// The newest tool results of the window that are never cleared.
    pub keep: u64,
    /// The least a clearing must free (tokens), else none happens.
    pub clear_at_least: u64,
    /// Tools whose results are never cleared (besides Relay's notes and history tools).
    pub exclude_tools: Vec<String>,
}

impl Default for ClearToolResults {
    fn default() -> Self {
        ClearToolResults {
            enabled: true,
            trigger_tokens: None,
            keep: DEFAULT_CLEAR_KEEP,
            clear_at_least: DEFAULT_CLEAR_AT_LEAST,
            exclude_tools: Vec::new(),
        }
    }
}

/// The keys of Pi's `compaction` settings Relay reads (Pi owns the others: they are not
/// reported). `null` is an absent value there, as in Pi.
pub const COMPACTION_KEYS: &[(&str, KeyKind)] = &[
    ("reserveTokens", KeyKind::NonNegativeInteger),
    (
        "modelOverrides",
        KeyKind::Map(&KeyKind::Object(&[(
            "reserveTokens",
            KeyKind::NonNegativeInteger,
        )])),
    ),
];

/// The budget role an SDK host declares for a session (`relay.role`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Main,
    Subagent,
}

/// Relay's resolved settings.
#[derive(Debug, Clone, PartialEq)]
pub struct RelayConfig {
    /// Window features on (boot block, reminder, reset-style windows).
    pub enabled: bool,
    /// The reminder fires when physical remaining capacity drops to reserve + this margin.
    pub reminder_margin_tokens: u64,
    /// Agent name shown in the boot block.
    pub agent_name: String,
    /// `relay.continueAfterReset`: the first run of a window an automatic or forced reset opened
    /// that stops early (a question, an empty or meta reply) is continued once.
    pub continue_after_reset: bool,
    /// The raw `budget` sub-object (merged global + project), validated by the budget module.
    pub budget: Option<Value>,
    /// `relay.role`: the declared budget role; `None` = the process-wide hosting rule decides.
    pub role: Option<Role>,
    /// `relay.clearToolResults`.
    pub clear_tool_results: ClearToolResults,
    /// `relay.memoryTool`: the `memory` tool is declared to the model (`false` withholds it).
    pub memory_tool: bool,
    /// `relay.inProgress`: a reset's boot block carries the closing window's last actions
    /// (`<in_progress>`, see `render::in_progress`).
    pub in_progress: bool,
    /// `relay.pins`: default pinned instructions, before the session's own (`crate::pins`).
    pub pins: Vec<String>,
}

impl Default for RelayConfig {
    fn default() -> Self {
        RelayConfig {
            enabled: true,
            reminder_margin_tokens: DEFAULT_REMINDER_MARGIN_TOKENS,
            agent_name: DEFAULT_AGENT_NAME.to_string(),
            continue_after_reset: true,
            budget: None,
            role: None,
            clear_tool_results: ClearToolResults::default(),
            memory_tool: true,
            in_progress: true,
            pins: Vec::new(),
        }
    }
}

/// What Relay takes from Pi's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedSettings {
    pub relay: RelayConfig,
    /// Pi's compaction reserve, per model.
    pub reserve_tokens: ReserveTokens,
}

/// Resolve Relay's settings from the `relay` objects of two settings layers (`None` when a layer
/// has no `relay` key), the second winning per key, merged the way Pi merges settings. Returns the
/// settings and every problem found, with key paths (`relay.…`) but no file names.
pub fn resolve_config(
    global: Option<&Value>,
    project: Option<&Value>,
) -> (RelayConfig, Vec<ConfigIssue>) {
    validate_relay(merge_values(global, project).as_ref())
}

/// Validate the merged `relay` value. Every invalid value is reported with its key path and falls
/// back to its default; unknown keys are reported and ignored.
fn validate_relay(relay: Option<&Value>) -> (RelayConfig, Vec<ConfigIssue>) {
    let mut issues = Vec::new();
    let mut cfg = RelayConfig::default();
    let obj = match relay {
        None => return (cfg, issues),
        Some(Value::Object(m)) => m,
        Some(other) => {
            issues.push(ConfigIssue {
                path: SETTINGS_KEY.to_string(),
                message: format!(
                    "expected an object, got {}; using the defaults",
                    show(other)
                ),
            });
            return (cfg, issues);
        }
    };
    for key in obj.keys().filter(|k| !known_key(RELAY_KEYS, k)) {
        issues.push(ConfigIssue {
            path: format!("{SETTINGS_KEY}.{key}"),
            message: format!(
                "unknown key; ignored (known keys: {})",
                key_names(RELAY_KEYS)
            ),
        });
    }
    // The switches, all on by default.
    let switches: [(&str, Switch); 4] = [
        ("enabled", |c| &mut c.enabled),
        ("continueAfterReset", |c| &mut c.continue_after_reset),
        ("memoryTool", |c| &mut c.memory_tool),
        ("inProgress", |c| &mut c.in_progress),
    ];
    for (key, field) in switches {
        if let Some(v) = check_key(
            obj,
            key,
            "true or false",
            "true",
            &mut issues,
            Value::as_bool,
        ) {
            *field(&mut cfg) = v;
        }
    }
    if let Some(v) = check_key(
        obj,
        "reminderMarginTokens",
        "a whole number of tokens, at least 1",
        &DEFAULT_REMINDER_MARGIN_TOKENS.to_string(),
        &mut issues,
        token_count,
    ) {
        cfg.reminder_margin_tokens = v;
    }
    if let Some(v) = check_key(
        obj,
        "agentName",
        "a non-empty name of at most 64 characters without control characters",
        "\"pi\"",
        &mut issues,
        agent_name,
    ) {
        cfg.agent_name = v;
    }
    if let Some(v) = check_key(
        obj,
        "pins",
        &format!(
            "an array of at most {MAX_PINS} non-empty texts of at most {PIN_MAX_CHARS} characters each"
        ),
        "[]",
        &mut issues,
        pin_list,
    ) {
        cfg.pins = v;
    }
    cfg.role = check_key(
        obj,
        "role",
        "\"main\" or \"subagent\"",
        "the hosting rule decides",
        &mut issues,
        |v| match v.as_str() {
            Some("main") => Some(Role::Main),
            Some("subagent") => Some(Role::Subagent),
            _ => None,
        },
    );
    if let Some(v) = check_key(
        obj,
        "clearToolResults",
        "an object",
        "on, with the defaults",
        &mut issues,
        |v| v.as_object().cloned(),
    ) {
        cfg.clear_tool_results = validate_clear(&v, &mut issues);
    }
    cfg.budget = check_key(
        obj,
        "budget",
        "an object",
        "no budget settings",
        &mut issues,
        |v| v.is_object().then(|| v.clone()),
    );
    (cfg, issues)
}

/// `relay.clearToolResults`: every key on its own (an invalid one is reported and keeps its
/// default), unknown keys reported and ignored.
fn validate_clear(obj: &Map<String, Value>, issues: &mut Vec<ConfigIssue>) -> ClearToolResults {
    const AT: &str = "clearToolResults";
    let mut c = ClearToolResults::default();
    for key in obj.keys().filter(|k| !known_key(CLEAR_KEYS, k)) {
        issues.push(ConfigIssue {
            path: format!("{SETTINGS_KEY}.{AT}.{key}"),
            message: format!(
                "unknown key; ignored (known keys: {})",
                key_names(CLEAR_KEYS)
            ),
        });
    }
    if let Some(v) = check_key_at(
        AT,
        obj,
        "enabled",
        "true or false",
        "true",
        issues,
        Value::as_bool,
    ) {
        c.enabled = v;
    }
    c.trigger_tokens = check_key_at(
        AT,
        obj,
        "triggerTokens",
        "a whole number of tokens, at least 1",
        "derived from the window",
        issues,
        token_count,
    );
    if let Some(v) = check_key_at(
        AT,
        obj,
        "keep",
        "a whole number of tool results, 0 or more",
        &DEFAULT_CLEAR_KEEP.to_string(),
        issues,
        reserve_count,
    ) {
        c.keep = v;
    }
    if let Some(v) = check_key_at(
        AT,
        obj,
        "clearAtLeast",
        "a whole number of tokens, 0 or more",
        &DEFAULT_CLEAR_AT_LEAST.to_string(),
        issues,
        reserve_count,
    ) {
        c.clear_at_least = v;
    }
    if let Some(v) = check_key_at(
        AT,
        obj,
        "excludeTools",
        "an array of tool names (non-empty strings)",
        "[]",
        issues,
        |v| {
            v.as_array()?
                .iter()
                .map(|n| {
                    n.as_str()
                        .map(str::trim)
                        .filter(|n| !n.is_empty())
                        .map(str::to_string)
                })
                .collect::<Option<Vec<_>>>()
        },
    ) {
        c.exclude_tools = v;
    }
    c
}

/// The value of `key` when it is present and valid; an invalid value is reported and gives `None`
/// (the default).
fn check_key<T>(
    obj: &Map<String, Value>,
    key: &str,
    expected: &str,
    default: &str,
    issues: &mut Vec<ConfigIssue>,
    parse: impl Fn(&Value) -> Option<T>,
) -> Option<T> {
    check_key_at("", obj, key, expected, default, issues, parse)
}

/// [`check_key`] for a key of the sub-object `relay.<at>` (`at` empty: of `relay` itself).
fn check_key_at<T>(
    at: &str,
    obj: &Map<String, Value>,
    key: &str,
    expected: &str,
    default: &str,
    issues: &mut Vec<ConfigIssue>,
    parse: impl Fn(&Value) -> Option<T>,
) -> Option<T> {
    let v = obj.get(key)?;
    let parsed = parse(v);
    if parsed.is_none() {
        let key = if at.is_empty() {
            key.to_string()
        } else {
            format!("{at}.{key}")
        };
        issues.push(ConfigIssue {
            path: format!("{SETTINGS_KEY}.{key}"),
            message: format!(
                "expected {expected}, got {}; using the default ({default})",
                show(v)
            ),
        });
    }
    parsed
}

fn token_count(v: &Value) -> Option<u64> {
    let n = v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 1.0 && *f <= MAX_TOKENS as f64)
            .map(|f| f as u64)
    })?;
    (1..=MAX_TOKENS).contains(&n).then_some(n)
}

/// Where a boolean setting lands in [`RelayConfig`].
type Switch = fn(&mut RelayConfig) -> &mut bool;

/// `relay.pins`: each text trimmed, a repeated one once; a list past the limits is refused whole
/// (the user sees the warning and edits the file; nothing is cut silently).
fn pin_list(v: &Value) -> Option<Vec<String>> {
    let mut pins: Vec<String> = Vec::new();
    for p in v.as_array()? {
        let p = p.as_str()?.trim();
        if p.is_empty() || crate::text::char_count(p) > PIN_MAX_CHARS {
            return None;
        }
        if !pins.iter().any(|q| q == p) {
            pins.push(p.to_string());
        }
    }
    (pins.len() <= MAX_PINS).then_some(pins)
}

fn agent_name(v: &Value) -> Option<String> {
    let s = v.as_str()?.trim();
    let ok = !s.is_empty()
        && s.chars().count() <= MAX_AGENT_NAME_CHARS
        && !s.chars().any(char::is_control);
    ok.then(|| s.to_string())
}

/// A short rendering of a JSON value for messages.
fn show(v: &Value) -> String {
    let s = serde_json::to_string(v).unwrap_or_default();
    match s.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", s.get(..i).unwrap_or_default()),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resolve(g: Option<Value>, p: Option<Value>) -> (RelayConfig, Vec<ConfigIssue>) {
        resolve_config(g.as_ref(), p.as_ref())
    }

    #[test]
    fn absent_settings_give_defaults_without_issues() {
        for (g, p) in [
            (None, None),
            (Some(json!({})), None),
            (None, Some(json!({}))),
        ] {
            let (cfg, issues) = resolve(g, p);
            assert_eq!(cfg, RelayConfig::default());
            assert!(issues.is_empty());
        }
        let d = RelayConfig::default();
        assert!(d.enabled);
        assert_eq!(d.reminder_margin_tokens, 24_576);
        assert_eq!(d.agent_name, "pi");
        assert_eq!(d.budget, None);
    }

    #[test]
    fn every_key_accepts_valid_values() {
        let (cfg, issues) = resolve(
            Some(
                json!({"enabled":false,"reminderMarginTokens":1000,"agentName":"  codex  ","continueAfterReset":false,"memoryTool":false,"inProgress":false,"pins":[" Never push to main. ","Never push to main."],"budget":{"mode":"observe"},"role":"subagent",
                    "clearToolResults":{"enabled":true,"triggerTokens":90000,"keep":0,"clearAtLeast":0,"excludeTools":[" fetch_page "]}}),
            ),
            None,
        );
        assert!(issues.is_empty(), "{issues:?}");
        assert_eq!(
            cfg,
            RelayConfig {
                enabled: false,
                reminder_margin_tokens: 1000,
                agent_name: "codex".into(),
                continue_after_reset: false,
                budget: Some(json!({"mode":"observe"})),
                role: Some(Role::Subagent),
                clear_tool_results: ClearToolResults {
                    enabled: true,
                    trigger_tokens: Some(90_000),
                    keep: 0,
                    clear_at_least: 0,
                    exclude_tools: vec!["fetch_page".into()],
                },
                memory_tool: false,
                in_progress: false,
                pins: vec!["Never push to main.".into()],
            }
        );
        // A bad key of the clearing names its whole path; the others still apply.
        let (cfg, issues) = resolve(
            Some(
                json!({"clearToolResults":{"keep":-1,"clearAtLeast":5,"excludeTools":["a",""],"trigger":1}}),
            ),
            None,
        );
        let shown: Vec<String> = issues.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "relay.clearToolResults.trigger: unknown key; ignored (known keys: enabled, triggerTokens, keep, clearAtLeast, excludeTools)",
                "relay.clearToolResults.keep: expected a whole number of tool results, 0 or more, got -1; using the default (3)",
                "relay.clearToolResults.excludeTools: expected an array of tool names (non-empty strings), got [\"a\",\"\"]; using the default ([])",
            ]
        );
        assert_eq!(cfg.clear_tool_results.clear_at_least, 5);
        assert_eq!(cfg.clear_tool_results.keep, DEFAULT_CLEAR_KEEP);
        let (cfg, issues) = resolve(Some(json!({"reminderMarginTokens":32768.0})), None);
        assert!(issues.is_empty());
        assert_eq!(cfg.reminder_margin_tokens, 32_768);
        let (cfg, _) = resolve(Some(json!({"reminderMarginTokens":MAX_TOKENS})), None);
        assert_eq!(cfg.reminder_margin_tokens, MAX_TOKENS);
        let (cfg, _) = resolve(Some(json!({"agentName":"é".repeat(64)})), None);
        assert_eq!(cfg.agent_name.chars().count(), 64);
    }

    #[test]
    fn every_invalid_value_is_reported_and_falls_back_per_key() {
        let cases: Vec<(&str, Value)> = vec![
            ("enabled", json!("yes")),
            ("enabled", json!(1)),
            ("enabled", json!(null)),
            ("reminderMarginTokens", json!(0)),
            ("reminderMarginTokens", json!(-5)),
            ("reminderMarginTokens", json!(1.5)),
            ("reminderMarginTokens", json!("24576")),
            ("reminderMarginTokens", json!(MAX_TOKENS + 1)),
            ("reminderMarginTokens", json!(1e300)),
            ("agentName", json!("")),
            ("agentName", json!("   ")),
            ("agentName", json!("a\nb")),
            ("agentName", json!("x".repeat(65))),
            ("agentName", json!(7)),
            ("continueAfterReset", json!("no")),
            ("continueAfterReset", json!(0)),
            ("continueAfterReset", json!(null)),
            ("budget", json!("enforce")),
            ("budget", json!([1])),
            ("pins", json!("Never push.")),
            ("pins", json!(["ok", ""])),
            ("pins", json!(["ok", 7])),
            ("pins", json!(["x".repeat(PIN_MAX_CHARS + 1)])),
            (
                "pins",
                json!((0..=MAX_PINS)
                    .map(|i| format!("rule {i}"))
                    .collect::<Vec<_>>()),
            ),
        ];
        for (key, bad) in cases {
            // The bad key sits next to a valid other key, which must survive.
            let other = if key == "enabled" {
                json!({"agentName":"zed"})
            } else {
                json!({"enabled":false})
            };
            let mut obj = other.clone();
            obj[key] = bad.clone();
            let (cfg, issues) = resolve(Some(obj), None);
            assert_eq!(issues.len(), 1, "{key}={bad}: {issues:?}");
            assert_eq!(issues[0].path, format!("relay.{key}"));
            assert!(
                issues[0].message.contains("expected"),
                "{}",
                issues[0].message
            );
            assert!(
                issues[0].message.contains("using the default"),
                "{}",
                issues[0].message
            );
            let d = RelayConfig::default();
            match key {
                "enabled" => {
                    assert_eq!(cfg.enabled, d.enabled);
                    assert_eq!(cfg.agent_name, "zed");
                }
                _ => {
                    assert!(!cfg.enabled);
                    assert_eq!(cfg.reminder_margin_tokens, d.reminder_margin_tokens);
                    assert_eq!(cfg.agent_name, d.agent_name);
                    assert_eq!(cfg.continue_after_reset, d.continue_after_reset);
                    assert_eq!(cfg.budget, d.budget);
                    assert_eq!(cfg.pins, d.pins);
                }
            }
        }
        // The whole message, and the default in force.
        type Kept = fn(&RelayConfig) -> bool;
        let worded: [(Value, &str, &str, Kept); 5] = [
            (
                json!({"pins":["ok", ""]}),
                "relay.pins",
                "expected an array of at most 10 non-empty texts of at most 500 characters each, got [\"ok\",\"\"]; using the default ([])",
                |c| c.pins.is_empty(),
            ),
            (
                json!({"inProgress":1}),
                "relay.inProgress",
                "expected true or false, got 1; using the default (true)",
                |c| c.in_progress,
            ),
            (
                json!({"reminderMarginTokens":0}),
                "relay.reminderMarginTokens",
                "expected a whole number of tokens, at least 1, got 0; using the default (24576)",
                |c| c.reminder_margin_tokens == DEFAULT_REMINDER_MARGIN_TOKENS,
            ),
            (
                json!({"memoryTool":"no"}),
                "relay.memoryTool",
                "expected true or false, got \"no\"; using the default (true)",
                |c| c.memory_tool,
            ),
            (
                json!({"continueAfterReset":"off"}),
                "relay.continueAfterReset",
                "expected true or false, got \"off\"; using the default (true)",
                |c| c.continue_after_reset,
            ),
        ];
        for (settings, path, message, kept) in worded {
            let (cfg, issues) = resolve(Some(settings.clone()), None);
            assert_eq!(issues[0].path, path, "{settings}");
            assert_eq!(issues[0].message, message, "{settings}");
            assert!(kept(&cfg), "{settings}: the default is in force");
        }
    }

    #[test]
    fn all_problems_are_reported_at_once() {
        let (cfg, issues) = resolve(
            Some(
                json!({"enabled":"no","reminderMarginTokens":-1,"agentName":"","budget":3,"colour":"red"}),
            ),
            Some(json!({"margin":5})),
        );
        assert_eq!(cfg, RelayConfig::default());
        let paths: Vec<&str> = issues.iter().map(|i| i.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "relay.colour",
                "relay.margin",
                "relay.enabled",
                "relay.reminderMarginTokens",
                "relay.agentName",
                "relay.budget"
            ]
        );
        assert!(issues[0].message.starts_with("unknown key; ignored"));
    }

    #[test]
    fn the_second_layer_wins_per_key_and_an_invalid_value_falls_back_to_the_default() {
        let (cfg, issues) = resolve(
            Some(json!({"enabled":false,"reminderMarginTokens":1000,"agentName":"global"})),
            Some(json!({"reminderMarginTokens":2000})),
        );
        assert!(issues.is_empty());
        assert!(!cfg.enabled);
        assert_eq!(cfg.reminder_margin_tokens, 2000);
        assert_eq!(cfg.agent_name, "global");

        // An invalid project value falls back to the default, not to the global value.
        let (cfg, issues) = resolve(
            Some(json!({"reminderMarginTokens":1000})),
            Some(json!({"reminderMarginTokens":"lots"})),
        );
        assert_eq!(cfg.reminder_margin_tokens, DEFAULT_REMINDER_MARGIN_TOKENS);
        assert_eq!(issues.len(), 1);
        assert!(issues[0].message.contains("using the default (24576)"));

        // A shadowed global value is not in effect (as in Pi): nothing to report.
        let (cfg, issues) = resolve(
            Some(json!({"enabled":"off"})),
            Some(json!({"enabled":false})),
        );
        assert!(!cfg.enabled);
        assert!(issues.is_empty(), "{issues:?}");
    }

    #[test]
    fn a_non_object_relay_value_replaces_and_is_one_issue() {
        for bad in [
            json!(true),
            json!("on"),
            json!([1, 2]),
            json!(null),
            json!(5),
        ] {
            // An object over a non-object replaces it, as Pi merges.
            let (cfg, issues) = resolve(Some(bad.clone()), Some(json!({"agentName":"proj"})));
            assert!(issues.is_empty(), "{bad}: {issues:?}");
            assert_eq!(cfg.agent_name, "proj");
            let (cfg, issues) = resolve(Some(json!({"agentName":"glob"})), Some(bad.clone()));
            assert_eq!(issues.len(), 1, "{bad}");
            assert_eq!(issues[0].path, "relay");
            assert!(issues[0].message.starts_with("expected an object"));
            assert_eq!(cfg, RelayConfig::default());
        }
    }

    /// Pi's settings objects as the extension hands them over; the project applies only when
    /// trusted; every warning names its file and key path.
    #[test]
    fn settings_layers_merge_like_pi_and_name_the_file_of_every_warning() {
        const GLOBAL: &str = "global settings (/home/u/.pi/agent/settings.json)";
        const PROJECT: &str = "project settings (.pi/settings.json)";
        struct Case {
            name: &'static str,
            global: Option<Value>,
            project: Option<Value>,
            trusted: bool,
            project_error: Option<&'static str>,
            agent_name: &'static str,
            margin: u64,
            reserve: u64,
            budget: Option<Value>,
            warnings: &'static [&'static str],
        }
        let cases = [
            Case {
                name: "nothing set",
                global: Some(json!({})),
                project: None,
                trusted: true,
                project_error: None,
                agent_name: "pi",
                margin: DEFAULT_REMINDER_MARGIN_TOKENS,
                reserve: DEFAULT_RESERVE_TOKENS,
                budget: None,
                warnings: &[],
            },
            Case {
                name: "trusted project wins per key, objects merged at every depth",
                global: Some(json!({
                    "relay": {"agentName": "g", "reminderMarginTokens": 1000,
                              "budget": {"mode": "observe", "models": {"a/x.1": {"main": {"soft": 5, "hard": 9}}}}},
                    "compaction": {"enabled": true, "reserveTokens": 8000},
                })),
                project: Some(json!({
                    "relay": {"agentName": "p",
                              "budget": {"models": {"a/x.1": {"main": {"soft": 6}}}, "enforceCwds": ["/w"]}},
                    "compaction": {"keepRecentTokens": 1},
                })),
                trusted: true,
                project_error: None,
                agent_name: "p",
                margin: 1000,
                reserve: 8000,
                budget: Some(json!({"mode": "observe", "enforceCwds": ["/w"],
                                    "models": {"a/x.1": {"main": {"soft": 6, "hard": 9}}}})),
                warnings: &[],
            },
            Case {
                name: "untrusted project is ignored, also its invalid values",
                global: Some(json!({"relay": {"agentName": "g"}})),
                project: Some(json!({"relay": {"agentName": "p", "enabled": "x"},
                                     "compaction": {"reserveTokens": 1}})),
                trusted: false,
                project_error: Some("bad JSON"),
                agent_name: "g",
                margin: DEFAULT_REMINDER_MARGIN_TOKENS,
                reserve: DEFAULT_RESERVE_TOKENS,
                budget: None,
                warnings: &[],
            },
            Case {
                name: "warnings name the file the value came from",
                global: Some(json!({"relay": {"reminderMarginTokens": -5, "colour": 1,
                                              "budget": {"mode": "observe", "main": {"soft": 0}}},
                                    "compaction": {"reserveTokens": "lots"}})),
                project: Some(json!({"relay": {"agentName": "", "budget": {"mode": "x"}}})),
                trusted: true,
                project_error: None,
                agent_name: "pi",
                margin: DEFAULT_REMINDER_MARGIN_TOKENS,
                reserve: DEFAULT_RESERVE_TOKENS,
                budget: Some(json!({"mode": "x", "main": {"soft": 0}})),
                warnings: &[
                    "global settings (/home/u/.pi/agent/settings.json): relay.colour: unknown key; ignored (known keys: enabled, reminderMarginTokens, agentName, continueAfterReset, budget, role, clearToolResults, memoryTool, inProgress, pins)",
                    "global settings (/home/u/.pi/agent/settings.json): relay.reminderMarginTokens: expected a whole number of tokens, at least 1, got -5; using the default (24576)",
                    "project settings (.pi/settings.json): relay.agentName: expected a non-empty name of at most 64 characters without control characters, got \"\"; using the default (\"pi\")",
                    "global settings (/home/u/.pi/agent/settings.json): compaction.reserveTokens: expected a non-negative whole number, got \"lots\"; using 16384",
                ],
            },
            Case {
                name: "a trusted project file that cannot be read, a global value that is no object",
                global: Some(json!({"relay": true})),
                project: None,
                trusted: true,
                project_error: Some("Unexpected token } in JSON at position 3"),
                agent_name: "pi",
                margin: DEFAULT_REMINDER_MARGIN_TOKENS,
                reserve: DEFAULT_RESERVE_TOKENS,
                budget: None,
                warnings: &[
                    "project settings (.pi/settings.json): cannot be read (Unexpected token } in JSON at position 3); ignored",
                    "global settings (/home/u/.pi/agent/settings.json): relay: expected an object, got true; using the defaults",
                ],
            },
            Case {
                name: "a project value replaces a global non-object and vice versa",
                global: Some(json!({"relay": {"budget": {"mode": "enforce"}}})),
                project: Some(json!({"relay": {"budget": "off"}})),
                trusted: true,
                project_error: None,
                agent_name: "pi",
                margin: DEFAULT_REMINDER_MARGIN_TOKENS,
                reserve: DEFAULT_RESERVE_TOKENS,
                budget: None,
                warnings: &[
                    "project settings (.pi/settings.json): relay.budget: expected an object, got \"off\"; using the default (no budget settings)",
                ],
            },
            Case {
                name: "settings objects that are no objects",
                global: Some(json!([1])),
                project: Some(json!("x")),
                trusted: true,
                project_error: None,
                agent_name: "pi",
                margin: DEFAULT_REMINDER_MARGIN_TOKENS,
                reserve: DEFAULT_RESERVE_TOKENS,
                budget: None,
                warnings: &[
                    "global settings (/home/u/.pi/agent/settings.json): expected an object, got [1]; ignored",
                    "project settings (.pi/settings.json): expected an object, got \"x\"; ignored",
                ],
            },
        ];
        for case in cases {
            let layers = SettingsLayers::merge(
                case.global.as_ref(),
                None,
                case.project.as_ref(),
                case.trusted,
                case.project_error,
                Some("/home/u/.pi/agent/settings.json"),
            );
            let (resolved, issues) = layers.resolve();
            let name = case.name;
            assert_eq!(resolved.relay.agent_name, case.agent_name, "{name}");
            assert_eq!(resolved.relay.reminder_margin_tokens, case.margin, "{name}");
            assert_eq!(resolved.reserve_tokens.default, case.reserve, "{name}");
            assert_eq!(resolved.relay.budget, case.budget, "{name}");
            let shown: Vec<String> = issues.iter().map(ToString::to_string).collect();
            assert_eq!(shown, case.warnings, "{name}");
            for issue in &issues {
                assert!(
                    issue.path.starts_with(GLOBAL) || issue.path.starts_with(PROJECT),
                    "{name}: {issue}"
                );
            }
        }
    }

    #[test]
    fn budget_issues_are_attributed_through_dotted_model_keys_and_array_elements() {
        let layers = SettingsLayers::merge(
            Some(&json!({"relay": {"budget": {"models": {"a/x.1": {"main": {"hard": 1}}}}}})),
            None,
            Some(
                &json!({"relay": {"budget": {"models": {"a/x.1": {"main": {"soft": "s"}}},
                                              "enforceCwds": ["/a", 3]}}}),
            ),
            true,
            None,
            None,
        );
        let attributed = |path: &str| {
            layers
                .attribute(ConfigIssue {
                    path: path.into(),
                    message: "m".into(),
                })
                .path
        };
        const PROJECT: &str = "project settings (.pi/settings.json): ";
        const GLOBAL: &str = "global settings: ";
        for (path, file) in [
            ("relay.budget.models.a/x.1.main.soft", PROJECT),
            ("relay.budget.models.a/x.1.main.hard", GLOBAL),
            ("relay.budget.enforceCwds[1]", PROJECT),
            // A budget file's issue keeps its path.
            ("/agent/context-budget.json", ""),
            ("relayx.y", ""),
            // Quoted model keys (as the budget module and the reserve lookup write them).
            ("relay.budget.models.\"a/x.1\".main.soft", PROJECT),
            ("relay.budget.models.\"a/x.1\".main.hard", GLOBAL),
            // A key the project does not hold is the global file's.
            ("relay.budget.models.\"a/x.2\".main.hard", GLOBAL),
        ] {
            assert_eq!(attributed(path), format!("{file}{path}"));
        }
    }

    #[test]
    fn the_reserve_follows_pi_model_overrides_and_reports_invalid_ones_by_key_path() {
        let layers = SettingsLayers::merge(
            Some(
                &json!({"compaction": {"reserveTokens": 10000, "modelOverrides": {
                    "a/one": {"reserveTokens": 30000, "keepRecentTokens": 5},
                    "a/zero": {"reserveTokens": 0},
                    "a/bad": {"reserveTokens": -1},
                    "a/frac": {"reserveTokens": 1.5},
                    "a/keep-only": {"keepRecentTokens": 5},
                    "a/odd": 7,
                }}}),
            ),
            None,
            Some(&json!({"compaction": {"modelOverrides": {"b/proj": {"reserveTokens": "x"}}}})),
            true,
            None,
            Some("/g/settings.json"),
        );
        let (resolved, issues) = layers.resolve();
        let r = &resolved.reserve_tokens;
        assert_eq!(r.default, 10_000);
        for (model, want) in [
            (Some("a/one"), 30_000),
            (Some("a/zero"), 0),
            (Some("a/bad"), 10_000),
            (Some("a/frac"), 10_000),
            (Some("a/keep-only"), 10_000),
            (Some("a/odd"), 10_000),
            (Some("b/proj"), 10_000),
            (Some("a/unknown"), 10_000),
            (None, 10_000),
        ] {
            assert_eq!(r.for_model(model), want, "{model:?}");
        }
        let shown: Vec<String> = issues.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "global settings (/g/settings.json): compaction.modelOverrides[\"a/bad\"].reserveTokens: expected a non-negative whole number, got -1; using compaction.reserveTokens (10000) for a/bad",
                "global settings (/g/settings.json): compaction.modelOverrides[\"a/frac\"].reserveTokens: expected a non-negative whole number, got 1.5; using compaction.reserveTokens (10000) for a/frac",
                "global settings (/g/settings.json): compaction.modelOverrides[\"a/odd\"]: expected an object, got 7; using compaction.reserveTokens (10000) for a/odd",
                "project settings (.pi/settings.json): compaction.modelOverrides[\"b/proj\"].reserveTokens: expected a non-negative whole number, got \"x\"; using compaction.reserveTokens (10000) for b/proj",
            ]
        );
        let (resolved, issues) = SettingsLayers::merge(
            Some(&json!({"compaction": {"modelOverrides": [1]}})),
            None,
            None,
            false,
            None,
            None,
        )
        .resolve();
        assert_eq!(resolved.reserve_tokens, ReserveTokens::default());
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].path, "global settings: compaction.modelOverrides");
    }

    #[test]
    fn the_role_setting_is_validated() {
        for (v, want, warnings) in [
            (json!("main"), Some(Role::Main), &[][..]),
            (json!("subagent"), Some(Role::Subagent), &[]),
            (
                json!("child"),
                None,
                &["relay.role: expected \"main\" or \"subagent\", got \"child\"; using the default (the hosting rule decides)"],
            ),
        ] {
            let (cfg, issues) = resolve(Some(json!({ "role": v })), None);
            let shown: Vec<String> = issues.iter().map(ToString::to_string).collect();
            assert_eq!(shown, warnings, "{v}");
            assert_eq!(cfg.role, want, "{v}");
        }
    }

    /// The reminder threshold scales to small windows: the reserve counts at most half the
    /// window, the margin at most a quarter, so the first request of a small window gets no
    /// reminder.
    #[test]
    fn the_reminder_threshold_scales_to_small_windows() {
        for (window, reserve, margin, want) in [
            // Large windows: reserve + margin, as configured.
            (200_000, 16_384, 24_576, 40_960),
            (98_304, 16_384, 24_576, 40_960),
            (1_000_000, 100_000, 24_576, 124_576),
            // The margin is capped at a quarter of the window.
            (98_303, 16_384, 24_576, 16_384 + 24_575),
            (16_384, 4_096, 24_576, 8_192),
            (32_768, 16_384, 24_576, 16_384 + 8_192),
            // The reserve is capped at half of the window.
            (16_384, 16_384, 24_576, 8_192 + 4_096),
            (8_192, 100_000, 1_000, 4_096 + 1_000),
            (4, 1, 1, 2),
            (1, 5, 5, 0),
            // Unknown window: nothing to cap.
            (0, 16_384, 24_576, 40_960),
        ] {
            let t = reminder_threshold(window, reserve, margin);
            assert_eq!(t, want, "{window} {reserve} {margin}");
            if window > 0 {
                assert!(
                    t <= window * 3 / 4,
                    "a quarter of the window is used first: {window}"
                );
            }
        }
    }

    #[test]
    fn budget_objects_deep_merge_with_project_winning() {
        let (cfg, issues) = resolve(
            Some(json!({"budget":{"mode":"observe","models":{"a/x":{"soft":0.5,"hard":0.9}}}})),
            Some(json!({"budget":{"mode":"enforce","models":{"a/x":{"soft":0.6}}}})),
        );
        assert!(issues.is_empty());
        assert_eq!(
            cfg.budget,
            Some(json!({"mode":"enforce","models":{"a/x":{"soft":0.6,"hard":0.9}}}))
        );
        let (cfg, _) = resolve(None, Some(json!({"budget":{"mode":"off"}})));
        assert_eq!(cfg.budget, Some(json!({"mode":"off"})));
        let (cfg, issues) = resolve(
            Some(json!({"budget":{"mode":"off"}})),
            Some(json!({"budget":false})),
        );
        assert_eq!(cfg.budget, None);
        assert_eq!(issues.len(), 1);
    }

    #[test]
    fn thresholds_and_remaining() {
        assert_eq!(
            reminder_threshold(
                200_000,
                DEFAULT_RESERVE_TOKENS,
                DEFAULT_REMINDER_MARGIN_TOKENS
            ),
            40_960
        );
        assert_eq!(reminder_threshold(0, u64::MAX, 5), u64::MAX);
        for (window, used, reserve, want) in [
            (200_000, Some(100_000), 16_384, Some(83_616)),
            (200_000, Some(183_616), 16_384, Some(0)),
            (200_000, Some(190_000), 16_384, Some(0)),
            (200_000, Some(250_000), 16_384, Some(0)),
            (200_000, Some(0), 0, Some(200_000)),
            (200_000, None, 16_384, None),
        ] {
            assert_eq!(
                remaining_tokens(window, used, reserve),
                want,
                "{window} {used:?} {reserve}"
            );
        }
    }

    #[test]
    fn issues_render_with_path() {
        let (_, issues) = resolve(Some(json!({"enabled":"x".repeat(100)})), None);
        let shown = issues[0].to_string();
        assert!(shown.starts_with("relay.enabled: expected true or false, got \""));
        assert!(shown.contains("…"), "long values are shortened: {shown}");
    }
}
