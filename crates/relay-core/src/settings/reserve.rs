//! Pi's compaction reserve per model (`compaction.reserveTokens` and its model overrides) and the
//! budget arithmetic on it: the reminder threshold capped to the window, the tokens remaining.

use serde_json::Value;

use super::*;
use crate::ConfigIssue;

/// Pi's compaction reserve: `compaction.reserveTokens` and the valid
/// `compaction.modelOverrides["provider/model"].reserveTokens` values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReserveTokens {
    /// `compaction.reserveTokens`, or Pi's default 16,384.
    pub default: u64,
    /// Per-model overrides keyed by Pi's exact `provider/modelId`.
    pub models: std::collections::BTreeMap<String, u64>,
}

impl Default for ReserveTokens {
    fn default() -> Self {
        ReserveTokens {
            default: DEFAULT_RESERVE_TOKENS,
            models: std::collections::BTreeMap::new(),
        }
    }
}

impl ReserveTokens {
    /// The reserve Pi applies to `model` (`provider/modelId`): its override, else the ordinary one.
    pub fn for_model(&self, model: Option<&str>) -> u64 {
        model
            .and_then(|m| self.models.get(m))
            .copied()
            .unwrap_or(self.default)
    }
}

/// Pi's compaction reserve from the merged `compaction` value, read as Pi's `SettingsManager`
/// reads it: `modelOverrides["provider/model"].reserveTokens`, else `reserveTokens`, else 16,384;
/// each a non-negative safe integer. An invalid value is reported with its key path, and the next
/// level applies in its place.
pub(super) fn reserve_tokens(compaction: Option<&Value>) -> (ReserveTokens, Vec<ConfigIssue>) {
    let mut issues = Vec::new();
    let mut reserve = ReserveTokens::default();
    let c = match compaction {
        None | Some(Value::Null) => return (reserve, issues),
        Some(Value::Object(c)) => c,
        Some(other) => {
            issues.push(ConfigIssue {
                path: "compaction".into(),
                message: format!(
                    "expected an object, got {}; using reserveTokens {DEFAULT_RESERVE_TOKENS}",
                    show(other)
                ),
            });
            return (reserve, issues);
        }
    };
    match c.get("reserveTokens") {
        None | Some(Value::Null) => {}
        Some(v) => match reserve_count(v) {
            Some(n) => reserve.default = n,
            None => issues.push(ConfigIssue {
                path: "compaction.reserveTokens".into(),
                message: format!(
                    "expected a non-negative whole number, got {}; using {DEFAULT_RESERVE_TOKENS}",
                    show(v)
                ),
            }),
        },
    }
    let fallback = reserve.default;
    match c.get("modelOverrides") {
        None | Some(Value::Null) => {}
        Some(Value::Object(models)) => {
            for (model, entry) in models {
                let path = format!("compaction.modelOverrides[{}]", quoted(model));
                match entry {
                    Value::Object(o) => match o.get("reserveTokens") {
                        None | Some(Value::Null) => {}
                        Some(v) => match reserve_count(v) {
                            Some(n) => {
                                reserve.models.insert(model.clone(), n);
                            }
                            None => issues.push(ConfigIssue {
                                path: format!("{path}.reserveTokens"),
                                message: format!(
                                    "expected a non-negative whole number, got {}; using compaction.reserveTokens ({fallback}) for {model}",
                                    show(v)
                                ),
                            }),
                        },
                    },
                    other => issues.push(ConfigIssue {
                        path,
                        message: format!(
                            "expected an object, got {}; using compaction.reserveTokens ({fallback}) for {model}",
                            show(other)
                        ),
                    }),
                }
            }
        }
        Some(other) => issues.push(ConfigIssue {
            path: "compaction.modelOverrides".into(),
            message: format!(
                "expected an object keyed by \"provider/model\", got {}; using compaction.reserveTokens ({fallback}) for every model",
                show(other)
            ),
        }),
    }
    (reserve, issues)
}

/// Pi's reading of a compaction token setting: a non-negative safe integer (0 included).
pub(super) fn reserve_count(v: &Value) -> Option<u64> {
    let n = v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= MAX_TOKENS as f64)
            .map(|f| f as u64)
    })?;
    (n <= MAX_TOKENS).then_some(n)
}

/// A key as it appears quoted in a key path (`modelOverrides["a/b"]`).
fn quoted(key: &str) -> String {
    serde_json::to_string(key).unwrap_or_else(|_| format!("\"{key}\""))
}

/// Physical remaining capacity (window − used, in tokens) at or below which the reminder fires:
/// reserve + margin, each capped to the window: the reserve counts at most half of it, the margin
/// at most a quarter (so the reminder never fires before a quarter of the window is used). A window
/// of 0 (unknown) caps nothing.
///
/// Examples (margin 24,576): 200k window, reserve 16,384 → 40,960; 16,384 window, reserve 4,096
/// → 4,096 + 4,096 = 8,192; 16,384 window, reserve 16,384 → 8,192 + 4,096 = 12,288.
pub fn reminder_threshold(context_window: u64, reserve_tokens: u64, margin: u64) -> u64 {
    if context_window == 0 {
        return reserve_tokens.saturating_add(margin);
    }
    reserve_tokens
        .min(context_window / 2)
        .saturating_add(margin.min(context_window / 4))
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
