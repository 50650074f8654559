//! Text measures and cuts shared by every module that shows text to the model: Unicode character
//! counts, UTF-16 lengths (what JavaScript's `length` and Pi's estimates count), line counts, byte
//! offsets of character positions, and the cuts built on them (an ellipsis cut, a head…tail
//! preview, a cut at a byte budget).
//!
//! Contract: "character" always means a Unicode scalar value (a combining mark or each half of an
//! emoji ZWJ sequence counts as one). Every function is total and never panics; every offset it
//! returns is a character boundary of the text it was given, so slicing with it cannot fail, and
//! no cut ever splits a character.

/// Number of Unicode scalar values in `s` (counts non-continuation bytes; vectorizes well).
pub fn char_count(s: &str) -> usize {
    // Every byte that is not a UTF-8 continuation byte (0b10xx_xxxx) starts a character.
    count_bytes(s.as_bytes(), |b| u8::from((b as i8) >= -0x40))
}

/// The length of `s` in UTF-16 code units (what JavaScript's `length` gives), without encoding
/// it: one unit per character, two for characters outside the Basic Multilingual Plane (whose
/// UTF-8 form starts with a byte 0xF0 or above).
pub fn utf16_len(s: &str) -> usize {
    count_bytes(s.as_bytes(), |b| {
        u8::from((b as i8) >= -0x40) + u8::from(b >= 0xF0)
    })
}

/// Sum of `weight(b)` (at most 2) over `bytes`, with per-lane byte counters the compiler turns
/// into vector adds.
fn count_bytes(bytes: &[u8], weight: impl Fn(u8) -> u8) -> usize {
    const LANES: usize = 32;
    const ROUNDS: usize = 127; // 127 rounds of weight <= 2 fit in a u8 lane
    let mut total = 0usize;
    let mut big = bytes.chunks_exact(LANES * ROUNDS);
    let lanes_sum = |chunk: &[u8]| {
        let mut acc = [0u8; LANES];
        for block in chunk.chunks_exact(LANES) {
            for (a, &b) in acc.iter_mut().zip(block) {
                *a += weight(b);
            }
        }
        acc.iter().map(|&a| usize::from(a)).sum::<usize>()
    };
    // Every ASCII byte weighs the same (one character, one UTF-16 unit): an all-ASCII text or
    // chunk, the usual case, is checked with word-wide operations instead of being summed byte
    // by byte.
    let ascii_weight = usize::from(weight(b'a'));
    if bytes.is_ascii() {
        return bytes.len() * ascii_weight;
    }
    for chunk in big.by_ref() {
        total += if chunk.is_ascii() {
            chunk.len() * ascii_weight
        } else {
            lanes_sum(chunk)
        };
    }
    // The rest: its whole lanes summed as above, then the last few bytes one by one.
    let rest = big.remainder();
    total += lanes_sum(rest);
    total
        + rest
            .chunks_exact(LANES)
            .remainder()
            .iter()
            .map(|&b| usize::from(weight(b)))
            .sum::<usize>()
}

/// Byte index of the `n`-th character of `s` (or `s.len()` when it has fewer): the end of its
/// first `n` characters.
pub fn byte_at_char(s: &str, n: usize) -> usize {
    if n >= s.len() {
        return s.len();
    }
    s.char_indices().nth(n).map_or(s.len(), |(b, _)| b)
}

/// Byte index where the last `n` characters of `s` start (`s.len()` for `n == 0`, 0 when `s` has
/// at most `n` characters).
pub fn byte_before_chars(s: &str, n: usize) -> usize {
    s.char_indices()
        .rev()
        .take(n)
        .last()
        .map_or(s.len(), |(b, _)| b)
}

/// The largest character boundary of `s` at or before byte `i` (`s.len()` when `i` is past it).
pub fn floor_char_boundary(s: &str, i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    // A character is at most 4 bytes, so a boundary is at most 3 bytes back; 0 always is one.
    (i.saturating_sub(3)..=i)
        .rev()
        .find(|&b| s.is_char_boundary(b))
        .unwrap_or(0)
}

/// Number of lines in `text`, where only `\n` separates lines: `""` → 0, `"a\n"` → 1,
/// `"a\nb"` → 2.
pub fn count_lines(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    let newlines = memchr::memchr_iter(b'\n', text.as_bytes()).count();
    newlines + usize::from(!text.ends_with('\n'))
}

/// `s` cut to its first `max_chars` characters, ending with `…` when anything was cut.
pub fn ellipsize(s: &str, max_chars: usize) -> String {
    let end = byte_at_char(s, max_chars);
    match s.get(..end) {
        Some(head) if end < s.len() => format!("{head}…"),
        _ => s.to_string(),
    }
}

/// `s` whole when it has at most `whole_max` characters, else its first `head` and last `tail`
/// characters joined by `…`. Callers keep `head + tail <= whole_max` so the ends never overlap.
pub fn head_tail_preview(s: &str, whole_max: usize, head: usize, tail: usize) -> String {
    if char_count(s) <= whole_max {
        return s.to_string();
    }
    let head_end = byte_at_char(s, head);
    let tail_start = byte_before_chars(s, tail).max(head_end);
    let (Some(first), Some(last)) = (s.get(..head_end), s.get(tail_start..)) else {
        return s.to_string();
    };
    let mut out = String::with_capacity(first.len() + '…'.len_utf8() + last.len());
    out.push_str(first);
    out.push('…');
    out.push_str(last);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn counts_and_offsets() {
        let s = "a😀é漢";
        assert_eq!(char_count(s), 4);
        assert_eq!(utf16_len(s), 5);
        assert_eq!(byte_at_char(s, 0), 0);
        assert_eq!(byte_at_char(s, 2), 5);
        assert_eq!(byte_at_char(s, 4), s.len());
        assert_eq!(byte_at_char(s, 99), s.len());
        assert_eq!(byte_before_chars(s, 0), s.len());
        assert_eq!(byte_before_chars(s, 1), 7);
        assert_eq!(byte_before_chars(s, 3), 1);
        assert_eq!(byte_before_chars(s, 4), 0);
        assert_eq!(byte_before_chars(s, 99), 0);
        assert_eq!(byte_before_chars("", 3), 0);
        for (i, want) in [
            (0, 0),
            (1, 1),
            (2, 1),
            (4, 1),
            (5, 5),
            (6, 5),
            (7, 7),
            (9, 7),
            (10, 10),
            (99, 10),
        ] {
            assert_eq!(floor_char_boundary(s, i), want, "{i}");
        }
    }

    #[test]
    fn cuts() {
        assert_eq!(ellipsize("abc", 3), "abc");
        assert_eq!(ellipsize("abcd", 3), "abc…");
        assert_eq!(ellipsize("😀😀😀", 2), "😀😀…");
        assert_eq!(ellipsize("", 0), "");
        assert_eq!(ellipsize("a", 0), "…");
        assert_eq!(head_tail_preview("abcdef", 6, 2, 2), "abcdef");
        assert_eq!(head_tail_preview("abcdefg", 6, 2, 2), "ab…fg");
        assert_eq!(head_tail_preview("漢字かなカナ!", 6, 3, 1), "漢字か…!");
        // Overlapping ends (a caller's mistake) still never repeat or split text.
        assert_eq!(head_tail_preview("abcdefg", 2, 5, 5), "abcde…fg");
    }

    proptest! {
        /// Offsets are character boundaries; the cuts keep what they promise.
        #[test]
        fn cuts_never_split_characters(s in "(\\PC|😀|é|\n){0,40}", n in 0usize..50, i in 0usize..200) {
            let chars: Vec<char> = s.chars().collect();
            let at = byte_at_char(&s, n);
            prop_assert!(s.is_char_boundary(at));
            prop_assert_eq!(&s[..at], chars.iter().take(n).collect::<String>());
            let back = byte_before_chars(&s, n);
            prop_assert!(s.is_char_boundary(back));
            prop_assert_eq!(char_count(&s[back..]), n.min(chars.len()));
            let f = floor_char_boundary(&s, i);
            prop_assert!(s.is_char_boundary(f) && f <= i.max(s.len()).min(s.len()));
            prop_assert!(f == s.len() || !(f + 1..=i).any(|b| s.is_char_boundary(b)));
            let want = if chars.len() > n {
                format!("{}…", chars[..n].iter().collect::<String>())
            } else {
                s.clone()
            };
            prop_assert_eq!(ellipsize(&s, n), want);
            prop_assert_eq!(count_lines(&s), s.lines().count());
        }
    }
}
