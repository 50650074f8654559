//! A small path glob matcher for `enforceCwds`: `*` (any run of characters within one path
//! segment), `**` (a whole segment matching zero or more segments), `?` (one character other than
//! `/`), `{a,b}` (alternatives, nestable) and `[...]` classes (`[abc]`, `[a-z]`, negated with `!` or
//! `^`). The whole path must match.

/// Whether an `enforceCwds` entry is a glob rather than a plain prefix.
pub fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

/// Check that braces and classes are balanced.
pub fn validate(pattern: &str) -> Result<(), String> {
    let mut depth = 0i32;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth < 0 {
                    return Err(format!("unbalanced '}}' in glob {pattern:?}"));
                }
            }
            '[' => {
                let mut closed = false;
                let mut first = true;
                for d in chars.by_ref() {
                    if d == ']' && !first {
                        closed = true;
                        break;
                    }
                    first = false;
                }
                if !closed {
                    return Err(format!("unclosed '[' in glob {pattern:?}"));
                }
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(format!("unclosed '{{' in glob {pattern:?}"));
    }
    Ok(())
}

/// Expand `{a,b}` alternatives (nested braces included) into plain patterns.
fn expand_braces(p: &str) -> Vec<String> {
    let bytes: Vec<char> = p.chars().collect();
    // Find the first top-level '{' and its matching '}'.
    let mut start = None;
    let mut depth = 0;
    let mut in_class = false;
    for (i, &c) in bytes.iter().enumerate() {
        match c {
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '{' if !in_class => {
                if depth == 0 {
                    start = Some(i);
                }
                depth += 1;
            }
            '}' if !in_class && depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    let s = start.unwrap_or(0);
                    let inner: String = bytes[s + 1..i].iter().collect();
                    let pre: String = bytes[..s].iter().collect();
                    let post: String = bytes[i + 1..].iter().collect();
                    let mut alts = Vec::new();
                    let mut d = 0;
                    let mut cur = String::new();
                    for ch in inner.chars() {
                        match ch {
                            '{' => {
                                d += 1;
                                cur.push(ch)
                            }
                            '}' => {
                                d -= 1;
                                cur.push(ch)
                            }
                            ',' if d == 0 => alts.push(std::mem::take(&mut cur)),
                            _ => cur.push(ch),
                        }
                    }
                    alts.push(cur);
                    let mut out = Vec::new();
                    for a in alts {
                        out.extend(expand_braces(&format!("{pre}{a}{post}")));
                    }
                    return out;
                }
            }
            _ => {}
        }
    }
    vec![p.to_string()]
}

/// Whether `path` matches `pattern` as a whole.
pub fn matches(pattern: &str, path: &str) -> bool {
    let path_segs: Vec<&str> = path.split('/').collect();
    expand_braces(pattern).iter().any(|p| {
        let trimmed = if p.len() > 1 {
            p.trim_end_matches('/')
        } else {
            p
        };
        let pat_segs: Vec<&str> = trimmed.split('/').collect();
        match_segments(&pat_segs, &path_segs)
    })
}

fn match_segments(pat: &[&str], path: &[&str]) -> bool {
    match pat.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => (0..=path.len()).any(|k| match_segments(rest, &path[k..])),
        Some((seg, rest)) => match path.split_first() {
            Some((p, prest)) => {
                let pc: Vec<char> = seg.chars().collect();
                let sc: Vec<char> = p.chars().collect();
                match_segment(&pc, &sc) && match_segments(rest, prest)
            }
            None => false,
        },
    }
}

fn match_segment(pat: &[char], s: &[char]) -> bool {
    match pat.first() {
        None => s.is_empty(),
        Some('*') => (0..=s.len()).any(|k| match_segment(&pat[1..], &s[k..])),
        Some('?') => !s.is_empty() && match_segment(&pat[1..], &s[1..]),
        Some('[') => {
            let Some(c) = s.first() else { return false };
            match match_class(&pat[1..], *c) {
                Some((ok, used)) => ok && match_segment(&pat[1 + used..], &s[1..]),
                // Unclosed class: treat '[' literally.
                None => *c == '[' && match_segment(&pat[1..], &s[1..]),
            }
        }
        Some(&lit) => s.first() == Some(&lit) && match_segment(&pat[1..], &s[1..]),
    }
}

/// Match one character against a class body (after '['); returns (matched, chars consumed incl. ']').
fn match_class(body: &[char], c: char) -> Option<(bool, usize)> {
    let mut i = 0;
    let negated = matches!(body.first(), Some('!') | Some('^'));
    if negated {
        i += 1;
    }
    let mut found = false;
    let mut first = true;
    while i < body.len() {
        let ch = body[i];
        if ch == ']' && !first {
            return Some((found != negated, i + 1));
        }
        first = false;
        if i + 2 < body.len() && body[i + 1] == '-' && body[i + 2] != ']' {
            if body[i] <= c && c <= body[i + 2] {
                found = true;
            }
            i += 3;
        } else {
            if ch == c {
                found = true;
            }
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_stays_in_one_segment() {
        assert!(matches("/home/*/work", "/home/ann/work"));
        assert!(!matches("/home/*/work", "/home/ann/x/work"));
        assert!(matches("/home/a*", "/home/ann"));
    }

    #[test]
    fn globstar_spans_zero_or_more_segments() {
        assert!(matches("/srv/**", "/srv"));
        assert!(matches("/srv/**", "/srv/a/b/c"));
        assert!(matches("/srv/**/repo", "/srv/repo"));
        assert!(matches("/srv/**/repo", "/srv/x/y/repo"));
        assert!(!matches("/srv/**/repo", "/srv/x/y/repo2"));
        assert!(!matches("/srv/**", "/srvx"));
    }

    #[test]
    fn question_braces_and_classes() {
        assert!(matches("/p/v?", "/p/v1"));
        assert!(!matches("/p/v?", "/p/v12"));
        assert!(matches("/p/{a,b}/x", "/p/b/x"));
        assert!(!matches("/p/{a,b}/x", "/p/c/x"));
        assert!(matches("/p/{a,b{1,2}}", "/p/b2"));
        assert!(matches("/p/[a-c]x", "/p/bx"));
        assert!(!matches("/p/[!a-c]x", "/p/bx"));
        assert!(matches("/p/[^a-c]x", "/p/dx"));
    }

    #[test]
    fn validation_reports_unbalanced_patterns() {
        assert!(validate("/a/{b,c").is_err());
        assert!(validate("/a/[bc").is_err());
        assert!(validate("/a/b}").is_err());
        assert!(validate("/a/{b,c}/[xy]").is_ok());
    }
}
