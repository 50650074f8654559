//! Text measures shared by every module that shows text to the model: Unicode character counts,
//! UTF-16 lengths (what JavaScript's `length` and Pi's estimates count), and byte offsets of
//! character positions.
//!
//! Contract: every function is total and never panics; offsets it returns are always character
//! boundaries of the text it was given, so slicing with them cannot fail.

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
    let rest = big.remainder();
    let tail = rest.len() - rest.len() % LANES;
    total += lanes_sum(&rest[..tail]);
    total
        + rest[tail..]
            .iter()
            .map(|&b| usize::from(weight(b)))
            .sum::<usize>()
}

/// Byte index of the `n`-th character of `s` (or `s.len()` when it has fewer).
pub fn byte_at_char(s: &str, n: usize) -> usize {
    if n >= s.len() {
        return s.len();
    }
    s.char_indices().nth(n).map_or(s.len(), |(b, _)| b)
}
