//! A block filter over the text arena, so that a rare needle does not have to be scanned for in
//! all of it. The arena is cut into blocks of [`BLOCK`] bytes; each block keeps a bitmap of the
//! hashes of the 3-byte sequences (trigrams) that start in it. A match starting in block `b` has
//! all its trigrams in `b` or `b + 1` (a needle of at most [`MAX_NEEDLE`] bytes), so only the
//! blocks where the union of those two bitmaps holds every trigram of the needle can hold a
//! match: the search scans just those (see `search.rs`). A bit set by another trigram only costs
//! a block scanned in vain, never a match missed.
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

/// The bit of the trigram `v` (its bytes in the low 24 bits, first byte lowest).
#[inline]
fn hash(v: u32) -> usize {
    (v.wrapping_mul(0x9E37_79B1) >> (32 - BITS.trailing_zeros())) as usize
}

impl Blocks {
    /// Hash the trigrams of `arena` that start at `from` or later (and end inside it).
    fn hash_from(&mut self, arena: &[u8], from: usize) {
        let blocks = arena.len().div_ceil(BLOCK);
        if self.bits.len() < blocks * WORDS {
            self.bits.resize(blocks * WORDS, 0);
        }
        let mut p = from;
        // Block by block: the trigrams starting in [p, end) of block `b`, with a rolling value.
        while p + 3 <= arena.len() {
            let b = p / BLOCK;
            let end = ((b + 1) * BLOCK).min(arena.len() - 2);
            let (Some(bitmap), Some(bytes)) = (
                self.bits.get_mut(b * WORDS..(b + 1) * WORDS),
                arena.get(p..end + 2),
            ) else {
                return;
            };
            let mut it = bytes.iter();
            let (Some(&x), Some(&y)) = (it.next(), it.next()) else {
                return;
            };
            let mut v = u32::from(x) | (u32::from(y) << 8);
            for &c in it {
                v |= u32::from(c) << 16;
                let h = hash(v);
                if let Some(w) = bitmap.get_mut(h / 64) {
                    *w |= 1 << (h % 64);
                }
                v >>= 8;
            }
            p = end;
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

    /// The bit masks a needle must find, or `None` when the filter cannot judge it (shorter than
    /// a trigram or longer than [`MAX_NEEDLE`]).
    pub(super) fn needle(needle: &[u8]) -> Option<Vec<(usize, u64)>> {
        if needle.len() < 3 || needle.len() > MAX_NEEDLE {
            return None;
        }
        let mut want: Vec<(usize, u64)> = Vec::new();
        for t in needle.windows(3) {
            let h = bit(t);
            let (w, m) = (h / 64, 1u64 << (h % 64));
            match want.iter_mut().find(|(i, _)| *i == w) {
                Some((_, mask)) => *mask |= m,
                None => want.push((w, m)),
            }
        }
        Some(want)
    }

    /// Whether a match of the needle (`want`, from [`Blocks::needle`]) may start in block `b`.
    #[inline]
    pub(super) fn may_start_in(&self, b: usize, want: &[(usize, u64)]) -> bool {
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
