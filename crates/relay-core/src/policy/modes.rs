//! The budget policy's mode in a working directory: the configured mode, the effective one and
//! why they differ (an invalid configuration, the `enforceCwds` restriction).

use serde::Serialize;

use super::glob;
use super::{BudgetConfig, Mode};

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
