//! A small path glob matcher for `enforceCwds`: `*` (any run of characters within one path
//! segment), `**` (a whole segment matching zero or more segments), `?` (one character other than
//! `/`), `{a,b}` (alternatives, nestable) and `[...]` classes (`[abc]`, `[a-z]`, negated with `!` or
//! `^`). The whole path must match. Case-sensitive, and, as Node's `path.matchesGlob`, a path
//! segment that starts with a dot is reached only by a pattern segment that starts with a literal
//! dot (`.` and `..` only by themselves): `*`, `?`, classes and `**` never match into it.
//!
//! No recursion and no backtracking search: braces are parsed with an explicit stack and expanded
//! bottom-up into at most [`MAX_ALTERNATIVES`] plain patterns (a pattern that would expand to more
//! is invalid); each plain pattern is matched by two greedy loops (segments, then characters in a
//! segment) that remember only the last `**` / `*`, which is `O(pattern × path)` per plain pattern
//! for any input.

/// The most plain patterns one glob's braces may expand to. `validate` rejects a larger glob and
/// `matches` never matches it.
pub const MAX_ALTERNATIVES: usize = 1024;

/// Whether an `enforceCwds` entry is a glob rather than a plain prefix.
pub fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

/// Check that braces and classes are balanced and that the braces expand to at most
/// [`MAX_ALTERNATIVES`] alternatives.
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
    if expand_braces(pattern).is_none() {
        return Err(format!(
            "glob {pattern:?} has more than {MAX_ALTERNATIVES} brace alternatives"
        ));
    }
    Ok(())
}

/// Whether `path` matches `pattern` as a whole.
pub fn matches(pattern: &str, path: &str) -> bool {
    let Some(patterns) = expand_braces(pattern) else {
        return false;
    };
    let path_segs: Vec<Vec<char>> = path.split('/').map(|s| s.chars().collect()).collect();
    patterns.iter().any(|p| {
        let trimmed = if p.len() > 1 {
            p.trim_end_matches('/')
        } else {
            p
        };
        let pat_segs: Vec<Segment> = trimmed.split('/').map(Segment::compile).collect();
        match_segments(&pat_segs, &path_segs)
    })
}

// ----- braces -----

/// One piece of a brace-parsed pattern: plain text, or a `{...}` group (an index into the groups,
/// which are numbered in the order they close, so inner groups come before outer ones).
enum Piece {
    Text(String),
    Group(usize),
}

/// Expand `{a,b}` alternatives (nested braces included) into plain patterns; `None` when there
/// would be more than [`MAX_ALTERNATIVES`]. Text inside a class (`[` up to the next `]`) is never
/// brace syntax; a `{` or `}` without a partner is an ordinary character.
fn expand_braces(p: &str) -> Option<Vec<String>> {
    let chars: Vec<char> = p.chars().collect();
    let partner = brace_partners(&chars);
    // Parse into pieces with an explicit stack of open groups: (alternatives so far, current one).
    let mut groups: Vec<Vec<Vec<Piece>>> = Vec::new();
    let mut stack: Vec<(Vec<Vec<Piece>>, Vec<Piece>)> = vec![(Vec::new(), Vec::new())];
    let push_char = |stack: &mut Vec<(Vec<Vec<Piece>>, Vec<Piece>)>, c: char| {
        if let Some((_, cur)) = stack.last_mut() {
            match cur.last_mut() {
                Some(Piece::Text(t)) => t.push(c),
                _ => cur.push(Piece::Text(c.to_string())),
            }
        }
    };
    let mut class_end: Option<usize> = None;
    for (i, &c) in chars.iter().enumerate() {
        if class_end.is_some_and(|end| i <= end) {
            push_char(&mut stack, c);
            continue;
        }
        match c {
            '[' => {
                class_end = chars
                    .iter()
                    .skip(i + 1)
                    .position(|&d| d == ']')
                    .map(|k| i + 1 + k);
                // An unclosed '[' leaves the rest of the pattern without brace syntax.
                if class_end.is_none() {
                    class_end = Some(chars.len());
                }
                push_char(&mut stack, c);
            }
            '{' if partner.get(i).copied().flatten().is_some() => {
                stack.push((Vec::new(), Vec::new()));
            }
            ',' if stack.len() > 1 => {
                if let Some((alts, cur)) = stack.last_mut() {
                    alts.push(std::mem::take(cur));
                }
            }
            '}' if partner.get(i).copied().flatten().is_some() && stack.len() > 1 => {
                if let Some((mut alts, cur)) = stack.pop() {
                    alts.push(cur);
                    groups.push(alts);
                    if let Some((_, parent)) = stack.last_mut() {
                        parent.push(Piece::Group(groups.len() - 1));
                    }
                }
            }
            _ => push_char(&mut stack, c),
        }
    }
    let (_, top) = stack.pop()?;
    // Expand bottom-up: every group is used by exactly one parent, so each list is taken once.
    let mut expanded: Vec<Option<Vec<String>>> = Vec::with_capacity(groups.len());
    for alts in &groups {
        let mut list = Vec::new();
        for alt in alts {
            list.extend(product(alt, &mut expanded)?);
            if list.len() > MAX_ALTERNATIVES {
                return None;
            }
        }
        expanded.push(Some(list));
    }
    product(&top, &mut expanded)
}

/// Every concatenation of one choice per piece, in order; `None` past [`MAX_ALTERNATIVES`].
fn product(pieces: &[Piece], expanded: &mut [Option<Vec<String>>]) -> Option<Vec<String>> {
    let mut out = vec![String::new()];
    for piece in pieces {
        match piece {
            Piece::Text(t) => out.iter_mut().for_each(|s| s.push_str(t)),
            Piece::Group(g) => {
                let choices = expanded.get_mut(*g)?.take()?;
                if out.len().saturating_mul(choices.len()) > MAX_ALTERNATIVES {
                    return None;
                }
                out = out
                    .iter()
                    .flat_map(|s| choices.iter().map(move |c| format!("{s}{c}")))
                    .collect();
            }
        }
    }
    Some(out)
}

/// For each `{` and `}` outside classes, the index of its partner (`None`: unpaired, literal).
fn brace_partners(chars: &[char]) -> Vec<Option<usize>> {
    let mut partner = vec![None; chars.len()];
    let mut open: Vec<usize> = Vec::new();
    let mut in_class = false;
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '{' if !in_class => open.push(i),
            '}' if !in_class => {
                if let Some(o) = open.pop() {
                    if let Some(slot) = partner.get_mut(o) {
                        *slot = Some(i);
                    }
                    if let Some(slot) = partner.get_mut(i) {
                        *slot = Some(o);
                    }
                }
            }
            _ => {}
        }
    }
    partner
}

// ----- segments -----

/// One `/`-separated piece of a plain pattern.
enum Segment {
    /// `**`: zero or more whole path segments.
    GlobStar,
    Chars(Vec<Token>),
}

/// One element of a segment pattern. Every token but `Star` matches exactly one character.
enum Token {
    Lit(char),
    /// `?`
    One,
    /// `*` (a run of stars is one)
    Star,
    Class {
        negated: bool,
        /// Inclusive ranges; a single character is `(c, c)`.
        ranges: Vec<(char, char)>,
    },
}

impl Token {
    fn accepts(&self, c: char) -> bool {
        match self {
            Token::Lit(l) => *l == c,
            Token::One => true,
            Token::Star => false,
            Token::Class { negated, ranges } => {
                ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negated
            }
        }
    }
}

impl Segment {
    fn compile(seg: &str) -> Segment {
        if seg == "**" {
            return Segment::GlobStar;
        }
        let chars: Vec<char> = seg.chars().collect();
        let mut tokens = Vec::with_capacity(chars.len());
        let mut i = 0;
        while let Some(&c) = chars.get(i) {
            i += 1;
            match c {
                '*' => {
                    if !matches!(tokens.last(), Some(Token::Star)) {
                        tokens.push(Token::Star);
                    }
                }
                '?' => tokens.push(Token::One),
                '[' => match parse_class(chars.get(i..).unwrap_or_default()) {
                    Some((token, used)) => {
                        tokens.push(token);
                        i += used;
                    }
                    // Unclosed class: '[' is literal.
                    None => tokens.push(Token::Lit('[')),
                },
                lit => tokens.push(Token::Lit(lit)),
            }
        }
        Segment::Chars(tokens)
    }

    fn matches(&self, s: &[char]) -> bool {
        match self {
            Segment::GlobStar => !is_dot_segment(s),
            Segment::Chars(tokens) => {
                if is_dot_segment(s) {
                    // As Node's `path.matchesGlob`: `.` and `..` only match themselves, and any
                    // other segment starting with a dot only a pattern starting with a literal dot.
                    if matches!(s, ['.'] | ['.', '.']) {
                        return tokens.len() == s.len()
                            && tokens
                                .iter()
                                .zip(s)
                                .all(|(t, c)| matches!(t, Token::Lit(l) if l == c));
                    }
                    let literal_dot = match tokens.first() {
                        Some(Token::Lit('.')) => true,
                        Some(Token::Class { negated, ranges }) => {
                            !*negated && ranges.as_slice() == [('.', '.')]
                        }
                        _ => false,
                    };
                    if !literal_dot {
                        return false;
                    }
                }
                match_chars(tokens, s)
            }
        }
    }
}

/// Parse a class body (after '['): the class and the characters consumed including `]`, or `None`
/// when it is not closed. A `]` right after `[` (or `[!`, `[^`) is a member; `a-z` is a range
/// unless the `-` is followed by the closing `]`.
fn parse_class(body: &[char]) -> Option<(Token, usize)> {
    let negated = matches!(body.first(), Some('!') | Some('^'));
    let mut i = usize::from(negated);
    let mut ranges = Vec::new();
    let mut first = true;
    while let Some(&ch) = body.get(i) {
        if ch == ']' && !first {
            return Some((Token::Class { negated, ranges }, i + 1));
        }
        first = false;
        match (body.get(i + 1), body.get(i + 2)) {
            (Some('-'), Some(&hi)) if hi != ']' => {
                ranges.push((ch, hi));
                i += 3;
            }
            _ => {
                ranges.push((ch, ch));
                i += 1;
            }
        }
    }
    None
}

/// Greedy match with one remembered `*`: on a mismatch the last star takes one more character.
/// Correct because every other token takes exactly one character; `O(tokens × chars)`.
fn match_chars(tokens: &[Token], s: &[char]) -> bool {
    let (mut t, mut c) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while let Some(&ch) = s.get(c) {
        match tokens.get(t) {
            Some(Token::Star) => {
                star = Some((t, c));
                t += 1;
                continue;
            }
            Some(token) if token.accepts(ch) => {
                t += 1;
                c += 1;
                continue;
            }
            _ => {}
        }
        match star {
            Some((st, sc)) => {
                star = Some((st, sc + 1));
                t = st + 1;
                c = sc + 1;
            }
            None => return false,
        }
    }
    tokens
        .get(t..)
        .unwrap_or_default()
        .iter()
        .all(|tok| matches!(tok, Token::Star))
}

/// A path segment that starts with a dot (hidden, `.`, `..`): wildcards do not reach into it.
fn is_dot_segment(s: &[char]) -> bool {
    s.first() == Some(&'.')
}

/// The same greedy loop one level up: `**` plays the star, every other segment takes exactly one
/// path segment.
fn match_segments(pat: &[Segment], path: &[Vec<char>]) -> bool {
    let (mut p, mut s) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while let Some(seg) = path.get(s) {
        match pat.get(p) {
            Some(Segment::GlobStar) => {
                star = Some((p, s));
                p += 1;
                continue;
            }
            Some(pseg) if pseg.matches(seg) => {
                p += 1;
                s += 1;
                continue;
            }
            _ => {}
        }
        match star {
            // `**` takes one more segment, never one that starts with a dot (as Node's
            // `path.matchesGlob`); a later star cannot get past it either.
            Some((sp, ss)) if path.get(ss).is_some_and(|seg| !is_dot_segment(seg)) => {
                star = Some((sp, ss + 1));
                p = sp + 1;
                s = ss + 1;
            }
            _ => return false,
        }
    }
    pat.get(p..)
        .unwrap_or_default()
        .iter()
        .all(|seg| matches!(seg, Segment::GlobStar))
}

#[cfg(test)]
mod tests {
    // The old recursive matcher is kept here as the oracle of the proptest; it indexes freely.
    #![allow(clippy::indexing_slicing)]
    use super::*;

    /// The answers of Node's `path.matchesGlob` (Node 22, Linux) for dot segments and case.
    #[test]
    fn dot_segments_and_case_as_node_matches_glob() {
        let cases = [
            ("/home/*/proj", "/home/.x/proj", false),
            ("/a/**/b", "/a/.git/b", false),
            ("/a/**", "/a/.git", false),
            ("/a/*", "/a/.git", false),
            ("/a/.*", "/a/.git", true),
            ("/a/.*", "/a/.", false),
            ("/a/.*", "/a/..", false),
            ("/a/?", "/a/.", false),
            ("/a/?b", "/a/.b", false),
            ("/a/*b", "/a/.b", false),
            ("/a/[.]b", "/a/.b", true),
            ("/a/[.a]b", "/a/.b", false),
            ("/a/[!x]b", "/a/.b", false),
            ("/a/{.b,x}/c", "/a/.b/c", true),
            ("/a/.b/**", "/a/.b/c", true),
            ("/a/.b/*", "/a/.b/c", true),
            ("/a/..", "/a/..", true),
            ("/a/[.].", "/a/..", false),
            ("/a/**/d", "/a/b/.c/d", false),
            ("/a/*.b", "/a/x.b", true),
            ("/a/*", "/A/b", false),
            ("/a/[B]", "/a/b", false),
            ("/A/B", "/a/b", false),
        ];
        for (pattern, path, want) in cases {
            assert_eq!(matches(pattern, path), want, "{pattern} vs {path}");
        }
    }

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

    #[test]
    fn braces_inside_alternatives_and_classes_and_trailing_slashes() {
        assert!(matches("/srv/{**,x}/repo", "/srv/a/b/repo"));
        assert!(matches("/srv/{**,x}/repo", "/srv/x/repo"));
        assert!(matches("/a/{b/c,d}", "/a/b/c"));
        assert!(!matches("/a/{b/c,d}", "/a/b"));
        assert!(
            matches("/a/[{]x}", "/a/{x}"),
            "a brace in a class is literal"
        );
        assert!(matches("/a/b/", "/a/b"), "a trailing slash is ignored");
        assert!(matches("/a/{b,}", "/a"), "an empty alternative");
        assert!(matches("/a/{,b}c", "/a/c"));
        assert!(
            matches("/a/[]x]", "/a/]"),
            "']' first in a class is a member"
        );
        assert!(matches("/a/[a-]", "/a/-"));
        assert!(
            matches("/a/b**c", "/a/bxyc"),
            "'**' inside a segment is '*'"
        );
        assert!(!matches("/a/b**c", "/a/bx/yc"));
    }

    /// Exponential for a backtracking matcher; linear here. The assertions are on the results:
    /// the test finishing at all is the point.
    #[test]
    fn pathological_patterns_against_a_4_kib_path_return_at_once() {
        let one_segment = format!("/{}", "a".repeat(4095));
        assert_eq!(one_segment.len(), 4096);
        assert!(!matches("/*a*a*a*a*a*a*a*a*a*a*b", &one_segment));
        assert!(matches("/*a*a*a*a*a*a*a*a*a*a*a", &one_segment));
        assert!(!matches(&format!("/{}b", "*a".repeat(200)), &one_segment));

        let many_segments = "/a".repeat(2048);
        assert_eq!(many_segments.len(), 4096);
        let globstars = format!("{}/b", "/**/a".repeat(100));
        assert!(!matches(&globstars, &many_segments));
        let globstars_ok = format!("{}/a", "/**/a".repeat(100));
        assert!(matches(&globstars_ok, &many_segments));
        assert!(!matches(
            &format!("{}/b", "/**".repeat(300)),
            &many_segments
        ));
        assert!(matches(
            &format!("{}/**", "/*a*".repeat(50)),
            &many_segments
        ));
    }

    #[test]
    fn braces_are_bounded_and_never_recurse() {
        // 2^20 alternatives: invalid, never matches, and answers at once.
        let wide = format!("/{}", "{a,b}".repeat(20));
        assert!(validate(&wide).is_err());
        assert!(!matches(&wide, &format!("/{}", "a".repeat(20))));
        // 2^10 = MAX_ALTERNATIVES is still fine.
        let ten = format!("/{}", "{a,b}".repeat(10));
        assert!(validate(&ten).is_ok());
        assert!(matches(&ten, "/abababbbba"));
        // Deep nesting is parsed with a heap stack, not the call stack.
        let deep = format!("/{}x{}", "{".repeat(20_000), "}".repeat(20_000));
        assert!(validate(&deep).is_ok());
        assert!(matches(&deep, "/x"));
        assert!(!matches(&deep, "/y"));
    }

    /// The recursive matcher this module replaced, as the reference for the property below.
    mod reference {
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

        fn expand_braces(p: &str) -> Vec<String> {
            let bytes: Vec<char> = p.chars().collect();
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

        fn match_segments(pat: &[&str], path: &[&str]) -> bool {
            match pat.split_first() {
                None => path.is_empty(),
                Some((&"**", rest)) => (0..=path.len())
                    .take_while(|&k| k == 0 || !path[k - 1].starts_with('.'))
                    .any(|k| match_segments(rest, &path[k..])),
                Some((seg, rest)) => match path.split_first() {
                    Some((p, prest)) => {
                        let pc: Vec<char> = seg.chars().collect();
                        let sc: Vec<char> = p.chars().collect();
                        let dot_ok = if *p == "." || *p == ".." {
                            seg == p
                        } else if p.starts_with('.') {
                            seg.starts_with('.') || seg.starts_with("[.]")
                        } else {
                            true
                        };
                        dot_ok && match_segment(&pc, &sc) && match_segments(rest, prest)
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
                        None => *c == '[' && match_segment(&pat[1..], &s[1..]),
                    }
                }
                Some(&lit) => s.first() == Some(&lit) && match_segment(&pat[1..], &s[1..]),
            }
        }

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
    }

    mod parity {
        use super::reference;
        use proptest::prelude::*;

        /// Small valid globs over a tiny alphabet, so that matches are frequent.
        fn pattern() -> impl Strategy<Value = String> {
            let atom = prop_oneof![
                Just("a".to_string()),
                Just("b".to_string()),
                Just("*".to_string()),
                Just("?".to_string()),
                Just("/".to_string()),
                Just("/**/".to_string()),
                Just("[ab]".to_string()),
                Just("[!a]".to_string()),
                Just("[a-b]".to_string()),
                Just(".".to_string()),
                Just("[.]".to_string()),
            ];
            let leaf = prop::collection::vec(atom, 0..5).prop_map(|v| v.concat());
            leaf.prop_recursive(3, 24, 3, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 1..4).prop_map(|v| v.concat()),
                    prop::collection::vec(inner, 1..4).prop_map(|v| format!("{{{}}}", v.join(","))),
                ]
            })
            .prop_map(|p| format!("/{p}"))
        }

        fn path() -> impl Strategy<Value = String> {
            prop::collection::vec(
                prop_oneof![Just('a'), Just('b'), Just('c'), Just('/'), Just('.')],
                0..10,
            )
            .prop_map(|v| format!("/{}", v.into_iter().collect::<String>()))
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]
            #[test]
            fn same_answers_as_the_recursive_matcher(p in pattern(), s in path()) {
                prop_assume!(super::super::validate(&p).is_ok());
                prop_assert_eq!(super::super::matches(&p, &s), reference::matches(&p, &s), "{} vs {}", p, s);
            }
        }
    }
}
