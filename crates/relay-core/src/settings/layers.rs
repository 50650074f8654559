//! Pi's two settings layers (global, and the project's when trusted) merged as Pi's
//! `SettingsManager` merges them, and which file a key path's value came from.

use serde_json::Value;

use super::*;
use crate::ConfigIssue;

/// Pi's settings as two layers, merged the way Pi's `SettingsManager` merges them: the project's
/// value of a key wins over the global one only when the project is trusted, and two objects
/// merge key by key at every depth (arrays and other values are replaced whole).
///
/// The merged `relay` and `compaction` values are what Relay validates; [`SettingsLayers::attribute`]
/// names the file a key path's value came from.
#[derive(Debug, Clone)]
pub struct SettingsLayers {
    relay: Option<Value>,
    compaction: Option<Value>,
    /// The trusted project's settings object (`None` when untrusted or absent).
    project: Option<Value>,
    global_label: String,
    /// Problems with the layers themselves (not objects, unreadable), already labelled.
    issues: Vec<ConfigIssue>,
}

impl SettingsLayers {
    /// Merge Pi's global settings object with the project's (`None`: no project file).
    /// `global_error` says why the global file could not be read (when read directly);
    /// `project_error` says why the project file could not be read; `global_file` names the global
    /// file in warnings.
    pub fn merge(
        global: Option<&Value>,
        global_error: Option<&str>,
        project: Option<&Value>,
        project_trusted: bool,
        project_error: Option<&str>,
        global_file: Option<&str>,
    ) -> Self {
        let global_label = match global_file {
            Some(file) if !file.is_empty() => format!("global settings ({file})"),
            _ => "global settings".to_string(),
        };
        let project_label = project_label();
        let mut issues = Vec::new();
        if let Some(error) = global_error {
            issues.push(ConfigIssue {
                path: global_label.clone(),
                message: format!("cannot be read ({error}); ignored"),
            });
        }
        let global = match global {
            None | Some(Value::Object(_)) => global,
            Some(other) => {
                issues.push(ConfigIssue {
                    path: global_label.clone(),
                    message: format!("expected an object, got {}; ignored", show(other)),
                });
                None
            }
        };
        let project = if project_trusted {
            if let Some(error) = project_error {
                issues.push(ConfigIssue {
                    path: project_label.clone(),
                    message: format!("cannot be read ({error}); ignored"),
                });
            }
            match project {
                None | Some(Value::Object(_)) => project,
                Some(other) => {
                    issues.push(ConfigIssue {
                        path: project_label,
                        message: format!("expected an object, got {}; ignored", show(other)),
                    });
                    None
                }
            }
        } else {
            // An untrusted project's settings do not apply, as in Pi.
            None
        };
        let layer = |key: &str| {
            merge_values(
                global.and_then(|g| g.get(key)),
                project.and_then(|p| p.get(key)),
            )
        };
        SettingsLayers {
            relay: layer(SETTINGS_KEY),
            compaction: layer("compaction"),
            project: project.cloned(),
            global_label,
            issues,
        }
    }

    /// The merged `relay` value, if any layer has one.
    pub fn relay(&self) -> Option<&Value> {
        self.relay.as_ref()
    }

    /// The merged `compaction` value, if any layer has one.
    pub fn compaction(&self) -> Option<&Value> {
        self.compaction.as_ref()
    }

    /// Prefix a settings issue's key path with the file its value came from:
    /// `project settings (.pi/settings.json): relay.budget.mode`. Paths outside `relay` and
    /// `compaction` (a budget file's) are returned unchanged.
    pub fn attribute(&self, issue: ConfigIssue) -> ConfigIssue {
        let in_settings = ["relay", "compaction"].iter().any(|root| {
            issue.path == *root
                || issue
                    .path
                    .strip_prefix(root)
                    .is_some_and(|rest| rest.starts_with(['.', '[']))
        });
        if !in_settings {
            return issue;
        }
        let from_project = self.project.as_ref().is_some_and(|p| holds(p, &issue.path));
        let label = if from_project {
            project_label()
        } else {
            self.global_label.clone()
        };
        ConfigIssue {
            path: format!("{label}: {}", issue.path),
            message: issue.message,
        }
    }

    /// The file a `relay…` or `compaction…` key path's value came from (`project settings
    /// (.pi/settings.json)` or `global settings (<file>)`), or `None` when no layer holds it.
    pub fn source_of(&self, path: &str) -> Option<String> {
        let mut merged = Map::new();
        if let Some(r) = &self.relay {
            merged.insert(SETTINGS_KEY.into(), r.clone());
        }
        if let Some(c) = &self.compaction {
            merged.insert("compaction".into(), c.clone());
        }
        if self.project.as_ref().is_some_and(|p| holds(p, path)) {
            Some(project_label())
        } else if holds(&Value::Object(merged), path) {
            Some(self.global_label.clone())
        } else {
            None
        }
    }

    /// Resolve Relay's settings and Pi's compaction reserve from the merged layers. Every issue
    /// names its file and key path.
    pub fn resolve(&self) -> (ResolvedSettings, Vec<ConfigIssue>) {
        let mut issues = self.issues.clone();
        let (relay, relay_issues) = validate_relay(self.relay.as_ref());
        let (reserve_tokens, reserve_issues) = reserve_tokens(self.compaction.as_ref());
        issues.extend(
            relay_issues
                .into_iter()
                .chain(reserve_issues)
                .map(|i| self.attribute(i)),
        );
        (
            ResolvedSettings {
                relay,
                reserve_tokens,
            },
            issues,
        )
    }
}

fn project_label() -> String {
    format!("project settings ({PROJECT_SETTINGS_FILE})")
}

/// Pi's `deepMergeObjects` for one key: two objects merge key by key, recursively; otherwise the
/// override replaces the base.
pub(super) fn merge_values(base: Option<&Value>, over: Option<&Value>) -> Option<Value> {
    match (base, over) {
        (Some(Value::Object(b)), Some(Value::Object(o))) => {
            let mut merged = b.clone();
            for (k, v) in o {
                let value = merge_values(b.get(k), Some(v)).unwrap_or_else(|| v.clone());
                merged.insert(k.clone(), value);
            }
            Some(Value::Object(merged))
        }
        (_, Some(o)) => Some(o.clone()),
        (Some(b), None) => Some(b.clone()),
        (None, None) => None,
    }
}

/// Whether `settings` holds a value at the key path `path` (`a.b.c`, `a.b[2]`, `a."p/m".c`,
/// `a["p/m"].c`). A quoted key is read as a JSON string; an unquoted key may contain dots, so
/// every key that prefixes the rest of the path is tried. An array index counts as held by the
/// layer holding the array (Pi replaces arrays whole).
fn holds(settings: &Value, path: &str) -> bool {
    let Value::Object(map) = settings else {
        return false;
    };
    let bracketed = path.starts_with("[\"");
    let body = if bracketed {
        path.get(1..).unwrap_or("")
    } else {
        path
    };
    if body.starts_with('"') {
        let mut stream = serde_json::Deserializer::from_str(body).into_iter::<String>();
        let Some(Ok(key)) = stream.next() else {
            return false;
        };
        let mut rest = body.get(stream.byte_offset()..).unwrap_or("");
        if bracketed {
            match rest.strip_prefix(']') {
                Some(r) => rest = r,
                None => return false,
            }
        }
        return map.get(&key).is_some_and(|child| holds_rest(child, rest));
    }
    map.iter().any(|(key, child)| {
        path.strip_prefix(key.as_str())
            .is_some_and(|rest| holds_rest(child, rest))
    })
}

/// The remainder of a key path after one key matched `child`.
fn holds_rest(child: &Value, rest: &str) -> bool {
    if rest.is_empty() {
        true
    } else if rest.starts_with("[\"") {
        holds(child, rest)
    } else if rest.starts_with('[') {
        true
    } else {
        rest.strip_prefix('.').is_some_and(|r| holds(child, r))
    }
}
