//! Other names for the same parameter (models trained on Codex's tools), the did-you-mean hints
//! for unknown ones, and [`prepare`], which renames and refuses before Pi's schema check.

use super::*;

/// Names Codex's own tools (`read_file {file_path, offset, limit}`, `list_dir {dir_path}`,
/// `grep_files {pattern, path}`) use for what a Relay parameter means: `(tool, alias, parameter)`.
/// An alias is accepted as its parameter; the schemas do not list aliases.
pub const ALIASES: &[(&str, &str, &str)] = &[
    (NOTES_READ_FILE, "file_path", "path"),
    (NOTES_READ_FILE, "offset", "start_line"),
    (NOTES_WRITE_FILE, "file_path", "path"),
    (NOTES_APPEND_TO_FILE, "file_path", "path"),
    (NOTES_LIST_FILES_BY_PREFIX, "path", "prefix"),
    (NOTES_LIST_FILES_BY_PREFIX, "dir_path", "prefix"),
    (NOTES_LIST_FILES_BY_PREFIX, "path_prefix", "prefix"),
    (NOTES_SEARCH_CONTENTS, "pattern", "query"),
    (NOTES_SEARCH_CONTENTS, "path", "path_prefix"),
    (NOTES_SEARCH_CONTENTS, "prefix", "path_prefix"),
    (HISTORY_SEARCH_CONTENTS, "pattern", "query"),
    (HISTORY_READ_ITEM, "offset", "offset_chars"),
    (HISTORY_READ_ITEM, "limit", "limit_chars"),
    (HISTORY_LIST_ITEMS, "max_chars", "max_chars_per_item"),
];

/// Names that are close to a parameter without meaning the same thing: `(tool, name, parameter,
/// how it differs)`. They are errors that name the parameter to use.
pub const HINTS: &[(&str, &str, &str, &str)] = &[(
    NOTES_READ_FILE,
    "limit",
    "end_line",
    "the last line to read, inclusive: start_line + limit - 1",
)];

/// Levenshtein distance of two short names, in characters.
pub(super) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = i;
        let mut left = i + 1;
        let mut next = Vec::with_capacity(row.len());
        next.push(left);
        for (j, cb) in b.iter().enumerate() {
            let up = row.get(j + 1).copied().unwrap_or(usize::MAX - 1);
            let cost = usize::from(ca != *cb);
            let value = (diagonal + cost).min(up + 1).min(left + 1);
            next.push(value);
            diagonal = up;
            left = value;
        }
        row = next;
    }
    row.last().copied().unwrap_or(0)
}

/// The parameter an unknown argument most likely meant: a hint, else the accepted name nearest in
/// spelling (at most a third of its length apart, rounded up), else one containing it or contained in it.
pub(super) fn suggestion(tool: &str, names: &Names, unknown: &str) -> Option<String> {
    if let Some((_, _, parameter, how)) = HINTS
        .iter()
        .find(|(t, name, _, _)| *t == tool && *name == unknown)
    {
        return Some(format!("did you mean \"{parameter}\" ({how})?"));
    }
    // No parameter is this long: spare the edit distance over a huge name.
    if unknown.chars().count() > MAX_NAME_CHARS {
        return None;
    }
    let lower = unknown.to_lowercase();
    // Every name the tool understands (its parameters and their aliases), with the parameter.
    let known: Vec<(&str, &str)> = names
        .accepted
        .iter()
        .map(|n| (n.as_str(), n.as_str()))
        .chain(
            ALIASES
                .iter()
                .filter(|(t, _, _)| *t == tool)
                .map(|(_, a, p)| (*a, *p)),
        )
        .collect();
    let near = known
        .iter()
        .map(|(n, p)| (edit_distance(&lower, n), *n, *p))
        .filter(|(d, n, _)| *d <= n.chars().count().div_ceil(3).max(1))
        .min_by_key(|(d, _, _)| *d)
        .map(|(_, _, p)| p)
        .or_else(|| {
            known
                .iter()
                .find(|(n, _)| {
                    lower.len() >= 3 && (n.contains(lower.as_str()) || lower.contains(n))
                })
                .map(|(_, p)| *p)
        });
    near.map(|n| format!("did you mean \"{n}\"?"))
}

/// The longest argument name an error repeats whole, in characters (no parameter is longer).
pub(super) const MAX_NAME_CHARS: usize = 64;

/// An argument name as an error quotes it: a JSON string (quotes, backslashes and control
/// characters escaped, so the name cannot break out of its quotes), cut after
/// [`MAX_NAME_CHARS`] characters.
pub fn quote_name(name: &str) -> String {
    Value::from(crate::text::ellipsize(name, MAX_NAME_CHARS)).to_string()
}

/// The arguments with every alias renamed to its parameter; an unknown argument is an error that
/// names the parameter it most likely meant, and so is an alias given next to its parameter with
/// another value.
pub(super) fn normalize(
    tool: &str,
    names: &Names,
    map: &Map<String, Value>,
) -> Result<Map<String, Value>, ToolOutput> {
    let mut out = Map::new();
    for (k, v) in map {
        if names.accepted.contains(k) {
            if !out.contains_key(k) {
                out.insert(k.clone(), v.clone());
            }
            continue;
        }
        if let Some((_, _, parameter)) = ALIASES.iter().find(|(t, a, _)| *t == tool && a == k) {
            let parameter = (*parameter).to_string();
            match map.get(&parameter) {
                Some(given) if !given.is_null() && !v.is_null() && given != v => {
                    return Err(ToolOutput::error(format!(
                        "{tool}: arguments \"{k}\" and \"{parameter}\" are the same parameter with different values; give only \"{parameter}\""
                    )));
                }
                Some(given) if !given.is_null() => {}
                _ => {
                    // Two aliases of one parameter: with different values, neither is dropped
                    // silently.
                    if let Some(prev) = out.get(&parameter).filter(|p| !p.is_null()) {
                        if !v.is_null() && prev != v {
                            let other = ALIASES
                                .iter()
                                .find(|(t, a, p)| {
                                    *t == tool
                                        && *p == parameter
                                        && a != k
                                        && map.get(*a) == Some(prev)
                                })
                                .map_or(parameter.as_str(), |(_, a, _)| *a);
                            return Err(ToolOutput::error(format!(
                                "{tool}: arguments \"{other}\" and \"{k}\" are the same parameter with different values; give only \"{parameter}\""
                            )));
                        }
                        continue;
                    }
                    out.insert(parameter, v.clone());
                }
            }
            continue;
        }
        let accepted = if names.accepted.is_empty() {
            "this tool takes no arguments".to_string()
        } else {
            format!("accepted: {}", names.accepted.join(", "))
        };
        let hint = match suggestion(tool, names, k) {
            Some(h) => format!(": {h}"),
            None => String::new(),
        };
        return Err(ToolOutput::error(format!(
            "{tool}: unknown argument {}{hint} ({accepted})",
            quote_name(k)
        )));
    }
    Ok(out)
}

/// The model's arguments as Pi should validate them: aliases renamed to their parameters, unknown
/// arguments refused with the one error format (the extension's `prepareArguments`, which runs
/// before Pi checks the arguments against the schema). Arguments that are not an object, and
/// tools this crate does not know, pass unchanged.
pub fn prepare(tool: &str, args: &Value) -> Result<Value, ToolOutput> {
    let (Value::Object(map), Some(names)) = (args, names_of(tool)) else {
        return Ok(args.clone());
    };
    normalize(tool, names, map).map(Value::Object)
}
