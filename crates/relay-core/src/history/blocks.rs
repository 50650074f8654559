//! A block filter over the text arena, so that a rare needle does not have to be scanned for in
//! all of it. The arena is cut into blocks of [`BLOCK`] bytes; each block keeps a bitmap of the
//! hashes of the 3-byte sequences (trigrams) that start at an even position in it. A match at
//! `p` has its trigrams at `p + k` for every `k` up to its length − 3; those at even positions are
//! the needle's trigrams at even `k` when `p` is even, at odd `k` when it is odd, and they all lie
//! in `p`'s block or the next (a needle of at most [`MAX_NEEDLE`] bytes). So only the blocks where
//! the union of those two bitmaps holds every even-`k` trigram, or every odd-`k` one, of the
//! needle can hold a match: the search scans just those (see `search.rs`). A bit set by another
//! trigram only costs a block scanned in vain, never a match missed. Hashing every other position
//! halves the cost of building the filter.
//!
//! Memory: [`BITS`] / 8 bytes per block, 1/16 of the text. Kept in step with the arena: an
//! append hashes only the new trigrams; a truncation drops the blocks past the new end and
//! rehashes the one block it cuts.

/// Bytes per block (small in unit tests, so that their histories span many blocks).
pub(super) const BLOCK: usize = if cfg!(test) { 1 << 8 } else { 1 << 16 };
/// Bits per block bitmap.
const BITS: usize = if cfg!(test) { 1 << 9 } else { 1 << 15 };
const WORDS: usize = BITS / 64;
/// Longer needles are found by the plain scan (their trigrams may span more than two blocks).
pub(crate) const MAX_NEEDLE: usize = BLOCK;

/// A needle's trigram bits ([`Blocks::needle`]): those at even offsets in it, and at odd ones.
#[derive(Debug, Clone)]
pub(super) struct Needle {
    even: Vec<(usize, u64)>,
    odd: Vec<(usize, u64)>,
}

#[derive(Debug, Clone, Default)]
pub(super) struct Blocks {
    /// One bitmap of `WORDS` words per block, block after block.
    bits: Vec<u64>,
}

#[inline]
fn bit(t: &[u8]) -> usize {
    let (a, b, c) = match t {
        [a, b, c, ..] => (*a, *b, *c),
        _ => return 0,
    };
    hash(u32::from(a) | (u32::from(b) << 8) | (u32::from(c) << 16))
}

/// Set the bits of the trigrams of `bytes` that start at an even offset. Three trigrams per 8-byte
/// load (offsets 0, 2 and 4), then 6 bytes on; the fixed-size bitmap lets the compiler drop the
/// bounds checks (a hash is below `BITS`). This is a fifth of the time of the thread that builds
/// the mirror during a load, so it is not written as `windows(3).step_by(2)`: that form spent 1.28×
/// as long (perf samples over three loads of the 256 MiB benchmark session: 1,799 against 1,410).
/// The test below checks the two agree.
#[inline]
fn hash_even(bitmap: &mut [u64; WORDS], bytes: &[u8]) {
    let mut set_bit = |h: usize| {
        // Always `Some` (h < BITS); with the fixed-size bitmap the check compiles away.
        if let Some(w) = bitmap.get_mut(h / 64) {
            *w |= 1 << (h % 64);
        }
    };
    let mut set = |v: u64| set_bit(hash((v & 0xFF_FFFF) as u32));
    let mut p = 0;
    while let Some(chunk) = bytes.get(p..p + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        set(x);
        set(x >> 16);
        set(x >> 32);
        p += 6;
    }
    for t in bytes.get(p..).unwrap_or_default().windows(3).step_by(2) {
        set(u64::from(u32::from_le_bytes([
            t.first().copied().unwrap_or(0),
            t.get(1).copied().unwrap_or(0),
            t.get(2).copied().unwrap_or(0),
            0,
        ])));
    }
}

/// The bit of the trigram `v` (its bytes in the low 24 bits, first byte lowest).
#[inline]
fn hash(v: u32) -> usize {
    (v.wrapping_mul(0x9E37_79B1) >> (32 - BITS.trailing_zeros())) as usize
}

impl Blocks {
    /// Hash the trigrams of `arena` that start at an even position from `from` on (and end
    /// inside it).
    fn hash_from(&mut self, arena: &[u8], from: usize) {
        let blocks = arena.len().div_ceil(BLOCK);
        if self.bits.len() < blocks * WORDS {
            self.bits.resize(blocks * WORDS, 0);
        }
        let mut p = from + (from & 1);
        // Block by block (BLOCK is even, so every block starts at an even position).
        while p + 3 <= arena.len() {
            let b = p / BLOCK;
            let end = ((b + 1) * BLOCK).min(arena.len() - 2);
            let (Some(bitmap), Some(bytes)) = (
                self.bits
                    .get_mut(b * WORDS..(b + 1) * WORDS)
                    .and_then(|w| <&mut [u64; WORDS]>::try_from(w).ok()),
                arena.get(p..end + 2),
            ) else {
                return;
            };
            hash_even(bitmap, bytes);
            p = (b + 1) * BLOCK;
        }
    }

    /// The arena grew from `old_len` bytes to `arena.len()`.
    pub(super) fn appended(&mut self, arena: &[u8], old_len: usize) {
        // The trigrams that start up to two bytes before the old end are complete only now.
        self.hash_from(arena, old_len.saturating_sub(2));
    }

    /// The arena was cut to `arena.len()` bytes.
    pub(super) fn truncated(&mut self, arena: &[u8]) {
        // The block holding the last trigram start that may have lost bytes is rebuilt.
        let cut = arena.len().saturating_sub(2);
        let first = cut / BLOCK;
        self.bits.truncate(first * WORDS);
        self.hash_from(arena, first * BLOCK);
    }

    pub(super) fn shrink_to_fit(&mut self) {
        self.bits.shrink_to_fit();
    }

    pub(super) fn heap_bytes(&self) -> usize {
        self.bits.capacity() * 8
    }

    /// The bits a needle must find, or `None` when the filter cannot judge it (shorter than
    /// 4 bytes or longer than [`MAX_NEEDLE`]).
    pub(super) fn needle(needle: &[u8]) -> Option<Needle> {
        if needle.len() < 4 || needle.len() > MAX_NEEDLE {
            return None;
        }
        let mut sets: [Vec<(usize, u64)>; 2] = [Vec::new(), Vec::new()];
        for (k, t) in needle.windows(3).enumerate() {
            let h = bit(t);
            let (w, m) = (h / 64, 1u64 << (h % 64));
            let Some(set) = sets.get_mut(k % 2) else {
                continue;
            };
            match set.iter_mut().find(|(i, _)| *i == w) {
                Some((_, mask)) => *mask |= m,
                None => set.push((w, m)),
            }
        }
        let [even, odd] = sets;
        Some(Needle { even, odd })
    }

    /// Whether a match of the needle may start in block `b`.
    #[inline]
    pub(super) fn may_start_in(&self, b: usize, needle: &Needle) -> bool {
        self.holds(b, &needle.even) || self.holds(b, &needle.odd)
    }

    /// Whether blocks `b` and `b + 1` together have every bit of `want`.
    #[inline]
    fn holds(&self, b: usize, want: &[(usize, u64)]) -> bool {
        let here = self
            .bits
            .get(b * WORDS..(b + 1) * WORDS)
            .unwrap_or_default();
        let next = self
            .bits
            .get((b + 1) * WORDS..(b + 2) * WORDS)
            .unwrap_or_default();
        want.iter().all(|&(w, m)| {
            let have = here.get(w).copied().unwrap_or(0) | next.get(w).copied().unwrap_or(0);
            have & m == m
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing)]
    use super::*;
    use proptest::prelude::*;

    /// The bits of the definition: every trigram that starts at an even position from `from` on.
    fn reference(arena: &[u8], from: usize) -> Vec<u64> {
        let mut bits = vec![0u64; arena.len().div_ceil(BLOCK) * WORDS];
        let mut p = from + (from & 1);
        while p + 3 <= arena.len() {
            let h = bit(&arena[p..p + 3]);
            bits[(p / BLOCK) * WORDS + h / 64] |= 1 << (h % 64);
            p += 2;
        }
        bits
    }

    proptest! {
        #[test]
        fn the_filter_holds_the_bits_of_every_even_trigram(
            arena in proptest::collection::vec(any::<u8>(), 0..3 * BLOCK + 17),
            from in 0usize..(3 * BLOCK + 17),
        ) {
            let from = from.min(arena.len());
            let mut blocks = Blocks::default();
            blocks.hash_from(&arena, from);
            let mut want = reference(&arena, from);
            want.resize(blocks.bits.len().max(want.len()), 0);
            let mut got = blocks.bits.clone();
            got.resize(want.len(), 0);
            prop_assert_eq!(got, want);
        }
    }
}
