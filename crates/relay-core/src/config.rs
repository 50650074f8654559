//! Relay's settings: one `relay` object in Pi's `settings.json`, global and (when the project is
//! trusted) per project.
//!
//! ```json
//! { "relay": { "enabled": true, "reminderMarginTokens": 24576, "agentName": "pi", "budget": { … } } }
//! ```
//!
//! | key | type | default |
//! | --- | --- | --- |
//! | `enabled` | boolean: window features (boot block, reminder, reset-style windows) | `true` |
//! | `reminderMarginTokens` | whole number ≥ 1: the reminder fires at reserve + margin tokens left | `24576` |
//! | `agentName` | non-empty string, ≤ 64 characters, no control characters | `"pi"` |
//! | `budget` | object, passed through raw and validated by the budget module | absent |
//!
//! **Precedence:** the project value of a key wins over the global one (`budget` objects are
//! deep-merged, project keys winning, as Pi merges settings). **Validation:** every invalid
//! value, in either scope, is reported with its key path; the key then falls back to its
//! default (an invalid project value does *not* fall back to the global one: the user asked for
//! the project to decide). Unknown keys are reported and ignored. Nothing here panics.

use serde_json::{Map, Value};

use crate::ConfigIssue;

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

const KNOWN_KEYS: [&str; 4] = ["enabled", "reminderMarginTokens", "agentName", "budget"];

/// Relay's resolved settings.
#[derive(Debug, Clone, PartialEq)]
pub struct RelayConfig {
    /// Window features on (boot block, reminder, reset-style windows).
    pub enabled: bool,
    /// The reminder fires when physical remaining capacity drops to reserve + this margin.
    pub reminder_margin_tokens: u64,
    /// Agent name shown in the boot block.
    pub agent_name: String,
    /// The raw `budget` sub-object (deep-merged global + project), validated elsewhere.
    pub budget: Option<Value>,
}

impl Default for RelayConfig {
    fn default() -> Self {
        RelayConfig {
            enabled: true,
            reminder_margin_tokens: DEFAULT_REMINDER_MARGIN_TOKENS,
            agent_name: DEFAULT_AGENT_NAME.to_string(),
            budget: None,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    Global,
    Project,
}

impl Scope {
    fn name(self) -> &'static str {
        match self {
            Scope::Global => "global",
            Scope::Project => "project",
        }
    }
}

/// Resolve Relay's settings from the `relay` objects of Pi's global and project settings
/// (`None` when a scope has no `relay` key). Returns the settings and every problem found.
pub fn resolve_config(
    global: Option<&Value>,
    project: Option<&Value>,
) -> (RelayConfig, Vec<ConfigIssue>) {
    let mut issues = Vec::new();
    let g = scope_object(global, Scope::Global, &mut issues);
    let p = scope_object(project, Scope::Project, &mut issues);
    for (obj, scope) in [(g, Scope::Global), (p, Scope::Project)] {
        if let Some(obj) = obj {
            for key in obj.keys().filter(|k| !KNOWN_KEYS.contains(&k.as_str())) {
                issues.push(ConfigIssue {
                    path: format!("{SETTINGS_KEY}.{key}"),
                    message: format!(
                        "unknown key in the {} settings; ignored (known keys: {})",
                        scope.name(),
                        KNOWN_KEYS.join(", ")
                    ),
                });
            }
        }
    }

    let mut cfg = RelayConfig::default();
    if let Some(v) = resolve_key(g, p, "enabled", "true or false", "true", &mut issues, |v| {
        v.as_bool()
    }) {
        cfg.enabled = v;
    }
    if let Some(v) = resolve_key(
        g,
        p,
        "reminderMarginTokens",
        "a whole number of tokens, at least 1",
        &DEFAULT_REMINDER_MARGIN_TOKENS.to_string(),
        &mut issues,
        token_count,
    ) {
        cfg.reminder_margin_tokens = v;
    }
    if let Some(v) = resolve_key(
        g,
        p,
        "agentName",
        "a non-empty name of at most 64 characters without control characters",
        "\"pi\"",
        &mut issues,
        agent_name,
    ) {
        cfg.agent_name = v;
    }
    cfg.budget = resolve_key(
        g,
        p,
        "budget",
        "an object",
        "no budget settings",
        &mut issues,
        |v| v.is_object().then(|| v.clone()),
    );
    // Deep-merge when both scopes hold a valid budget object.
    if let (Some(Value::Object(gb)), Some(Value::Object(_))) =
        (g.and_then(|g| g.get("budget")), cfg.budget.as_ref())
    {
        if p.and_then(|p| p.get("budget")).is_some() {
            let mut merged = Value::Object(gb.clone());
            deep_merge(&mut merged, cfg.budget.as_ref().expect("checked above"));
            cfg.budget = Some(merged);
        }
    }
    (cfg, issues)
}

fn scope_object<'a>(
    v: Option<&'a Value>,
    scope: Scope,
    issues: &mut Vec<ConfigIssue>,
) -> Option<&'a Map<String, Value>> {
    match v? {
        Value::Object(m) => Some(m),
        other => {
            issues.push(ConfigIssue {
                path: SETTINGS_KEY.to_string(),
                message: format!(
                    "must be an object in the {} settings, got {}; those settings are ignored",
                    scope.name(),
                    show(other)
                ),
            });
            None
        }
    }
}

/// Pick the effective value of `key`: the project value if present, else the global one.
/// An invalid effective value falls back to the default (`None`); every invalid value is reported.
fn resolve_key<T>(
    g: Option<&Map<String, Value>>,
    p: Option<&Map<String, Value>>,
    key: &str,
    expected: &str,
    default: &str,
    issues: &mut Vec<ConfigIssue>,
    parse: impl Fn(&Value) -> Option<T>,
) -> Option<T> {
    let gv = g.and_then(|m| m.get(key));
    let pv = p.and_then(|m| m.get(key));
    let path = format!("{SETTINGS_KEY}.{key}");
    let mut result = None;
    if let Some(v) = gv {
        match parse(v) {
            Some(t) if pv.is_none() => result = Some(t),
            Some(_) => {}
            None => issues.push(ConfigIssue {
                path: path.clone(),
                message: format!(
                    "expected {expected}, got {} in the global settings; {}",
                    show(v),
                    if pv.is_some() {
                        "ignored because the project settings set this key".to_string()
                    } else {
                        format!("using the default ({default})")
                    }
                ),
            }),
        }
    }
    if let Some(v) = pv {
        match parse(v) {
            Some(t) => result = Some(t),
            None => issues.push(ConfigIssue {
                path,
                message: format!(
                    "expected {expected}, got {} in the project settings; using the default ({default})",
                    show(v)
                ),
            }),
        }
    }
    result
}

fn token_count(v: &Value) -> Option<u64> {
    let n = v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 1.0 && *f <= MAX_TOKENS as f64)
            .map(|f| f as u64)
    })?;
    (1..=MAX_TOKENS).contains(&n).then_some(n)
}

fn agent_name(v: &Value) -> Option<String> {
    let s = v.as_str()?.trim();
    let ok = !s.is_empty()
        && s.chars().count() <= MAX_AGENT_NAME_CHARS
        && !s.chars().any(char::is_control);
    ok.then(|| s.to_string())
}

fn deep_merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(k) {
                    Some(slot) => deep_merge(slot, v),
                    None => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (slot, v) => *slot = v.clone(),
    }
}

/// A short rendering of a JSON value for messages.
fn show(v: &Value) -> String {
    let s = serde_json::to_string(v).unwrap_or_default();
    match s.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

/// Physical remaining capacity (tokens) at or below which the reminder fires: reserve + margin.
pub fn reminder_threshold(reserve_tokens: u64, margin: u64) -> u64 {
    reserve_tokens.saturating_add(margin)
}

/// Tokens available before Pi's compaction reserve: max(0, window − used − reserve), or `None`
/// when Pi cannot estimate usage (e.g. right after a reset).
pub fn remaining_tokens(
    context_window: u64,
    used_tokens: Option<u64>,
    reserve_tokens: u64,
) -> Option<u64> {
    used_tokens.map(|used| {
        context_window
            .saturating_sub(used)
            .saturating_sub(reserve_tokens)
    })
}
