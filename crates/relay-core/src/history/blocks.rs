//! A block filter over the history's text, so that a rare needle does not have to be scanned for
//! in all of it. The text (every item's, one after another: positions as `History` numbers them,
//! whether the text is held in memory or read back from the session file) is cut into blocks of
//! `block` bytes ([`Blocks::DEFAULT_BLOCK`]); each block keeps a bitmap of the hashes of the
//! 3-byte sequences (trigrams) of an item that start at an even position in the block. A match
//! at `p` lies inside one item and has its trigrams at `p + k` for every `k` up to its length − 3;
//! those at even positions are the needle's trigrams at even `k` when `p` is even, at odd `k` when
//! it is odd, and they all lie in `p`'s block or the next (a needle of at most one block's bytes).
//! So only the blocks where the union of those two bitmaps holds every even-`k` trigram, or every
//! odd-`k` one, of the needle can hold a match: the search reads and scans just those (see
//! `search.rs`). A bit set by another trigram only costs a block scanned in vain, never a match
//! missed. Hashing every other position halves the cost of building the filter.
//!
//! Memory: [`BITS`] / 8 bytes per block, 1/16 of the text with the default block. Kept in step
//! with the items: an item's trigrams are hashed when it is added (it needs only its own text,
//! so the text need not be kept); a truncation drops the blocks past the new end and leaves the
//! bits of the block it cuts (they can only make that block a candidate in vain).

/// Bits per block bitmap.
const BITS: usize = 1 << 15;
const WORDS: usize = BITS / 64;

/// A needle's trigram bits ([`Blocks::needle`]): those at even offsets in it, and at odd ones.
#[derive(Debug, Clone)]
pub(super) struct Needle {
    even: Vec<(usize, u64)>,
    odd: Vec<(usize, u64)>,
}

#[derive(Debug, Clone)]
pub(super) struct Blocks {
    /// One bitmap of `WORDS` words per block, block after block.
    bits: Vec<u64>,
    /// Bytes per block: [`Blocks::DEFAULT_BLOCK`] (the unit tests use smaller blocks so that
    /// their histories span many).
    block: usize,
}

impl Default for Blocks {
    fn default() -> Self {
        Blocks::with_block(Blocks::DEFAULT_BLOCK)
    }
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
    /// Bytes per block unless told otherwise: 64 KiB.
    pub(super) const DEFAULT_BLOCK: usize = 1 << 16;

    /// An empty filter with blocks of `block` bytes (even, at least 4).
    pub(super) fn with_block(block: usize) -> Self {
        Blocks {
            bits: Vec::new(),
            block: block.max(4) & !1,
        }
    }

    /// Bytes per block.
    pub(super) fn block(&self) -> usize {
        self.block
    }

    /// The longest needle the filter can judge (longer ones are found by the plain scan: their
    /// trigrams may span more than two blocks).
    pub(super) fn max_needle(&self) -> usize {
        self.block
    }

    /// Hash the trigrams of an item whose text `text` starts at position `at`: those that start
    /// at an even position and end inside it.
    pub(super) fn add(&mut self, at: usize, text: &[u8]) {
        let end = at + text.len();
        let blocks = end.div_ceil(self.block);
        if self.bits.len() < blocks * WORDS {
            self.bits.resize(blocks * WORDS, 0);
        }
        let mut p = at + (at & 1);
        // Block by block (a block is even, so every block starts at an even position).
        while p + 3 <= end {
            let b = p / self.block;
            let stop = ((b + 1) * self.block).min(end - 2);
            let (Some(bitmap), Some(bytes)) = (
                self.bits
                    .get_mut(b * WORDS..(b + 1) * WORDS)
                    .and_then(|w| <&mut [u64; WORDS]>::try_from(w).ok()),
                text.get(p - at..stop + 2 - at),
            ) else {
                return;
            };
            hash_even(bitmap, bytes);
            p = (b + 1) * self.block;
        }
    }

    /// The text was cut to `len` bytes: the blocks wholly past it go.
    pub(super) fn truncated(&mut self, len: usize) {
        self.bits.truncate(len.div_ceil(self.block) * WORDS);
    }

    pub(super) fn shrink_to_fit(&mut self) {
        self.bits.shrink_to_fit();
    }

    pub(super) fn heap_bytes(&self) -> usize {
        self.bits.capacity() * 8
    }

    /// The bits a needle must find, or `None` when the filter cannot judge it (shorter than
    /// 4 bytes or longer than [`Blocks::max_needle`]).
    pub(super) fn needle(&self, needle: &[u8]) -> Option<Needle> {
        if needle.len() < 4 || needle.len() > self.max_needle() {
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

    const SMALL: usize = 256;

    /// The bits of the definition: every trigram of an item that starts at an even position.
    fn reference(items: &[Vec<u8>]) -> Vec<u64> {
        let total: usize = items.iter().map(Vec::len).sum();
        let mut bits = vec![0u64; total.div_ceil(SMALL) * WORDS];
        let mut at = 0;
        for item in items {
            for k in 0..item.len().saturating_sub(2) {
                let p = at + k;
                if p % 2 == 0 {
                    let h = bit(&item[k..k + 3]);
                    bits[(p / SMALL) * WORDS + h / 64] |= 1 << (h % 64);
                }
            }
            at += item.len();
        }
        bits
    }

    proptest! {
        #[test]
        fn the_filter_holds_the_bits_of_every_even_trigram_of_each_item(
            items in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..3 * SMALL + 17), 0..6),
        ) {
            let mut blocks = Blocks::with_block(SMALL);
            let mut at = 0;
            for item in &items {
                blocks.add(at, item);
                at += item.len();
            }
            let mut want = reference(&items);
            want.resize(blocks.bits.len().max(want.len()), 0);
            let mut got = blocks.bits.clone();
            got.resize(want.len(), 0);
            prop_assert_eq!(got, want);
        }
    }
}
