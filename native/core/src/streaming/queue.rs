//! Held packets kept as the chunks they came in: the first ones are taken without moving
//! the rest (appending each chunk to one buffer, and moving what was left down after each
//! take, were a tenth of the matching thread's time).

use super::held::Held;
use std::collections::VecDeque;
use std::ops::Range;

#[derive(Default)]
pub(crate) struct Queue {
    chunks: VecDeque<Held>,
    /// Packets of the first chunk already taken.
    start: usize,
    len: usize,
}

impl Queue {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds a chunk's packets after these.
    pub(crate) fn push(&mut self, chunk: Held) {
        if !chunk.is_empty() {
            self.len += chunk.len();
            self.chunks.push_back(chunk);
        }
    }

    /// Each chunk's packets still held: the chunk and their range in it.
    fn parts(&self) -> impl Iterator<Item = (&Held, Range<usize>)> + '_ {
        let start = self.start;
        self.chunks
            .iter()
            .enumerate()
            .map(move |(c, h)| (h, if c == 0 { start } else { 0 }..h.len()))
    }

    /// The held packets in order: each one's chunk and its place there.
    pub(crate) fn packets(&self) -> impl Iterator<Item = (&Held, usize)> + '_ {
        self.parts().flat_map(|(h, r)| r.map(move |i| (h, i)))
    }

    /// The least matcher row held (None: nothing held).
    pub(crate) fn least_row(&self) -> Option<u64> {
        self.parts()
            .filter_map(|(h, r)| h.row[r].iter().min().copied())
            .min()
    }

    /// Takes the first `k` packets, handed to `take` a chunk's range at a time.
    pub(crate) fn take_front(&mut self, k: usize, mut take: impl FnMut(&Held, Range<usize>)) {
        assert!(k <= self.len, "taking more packets than are held");
        self.len -= k;
        let mut left = k;
        while left > 0 {
            let h = &self.chunks[0];
            let n = left.min(h.len() - self.start);
            take(h, self.start..self.start + n);
            left -= n;
            self.start += n;
            if self.start == h.len() {
                self.chunks.pop_front();
                self.start = 0;
            }
        }
    }

    /// Sorts into the packet table's order (see `Held::sort_by_time`), as one chunk.
    pub(crate) fn sort_by_time(&mut self) {
        if self.chunks.len() > 1 || self.start > 0 {
            let streams = self.chunks.iter().any(|h| !h.stream.is_empty());
            let mut all = Held::with_capacity(self.len, streams);
            self.take_front(self.len, |h, r| all.extend_range(h, r));
            self.push(all);
        }
        if let Some(h) = self.chunks.front_mut() {
            h.sort_by_time();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(rows: Range<u64>) -> Held {
        let mut h = Held::default();
        for r in rows {
            h.row.push(r);
            h.hash.push(r * 10);
            h.cols.t_ns.push(r as i64);
        }
        h
    }

    #[test]
    fn packets_are_taken_from_the_front_across_chunks() {
        let mut q = Queue::default();
        q.push(chunk(0..3));
        q.push(Held::default());
        q.push(chunk(3..5));
        assert_eq!(q.len(), 5);
        let mut taken = Vec::new();
        q.take_front(4, |h, r| taken.extend_from_slice(&h.row[r]));
        assert_eq!(taken, [0, 1, 2, 3]);
        assert_eq!((q.len(), q.least_row()), (1, Some(4)));
        let left: Vec<u64> = q.packets().map(|(h, i)| h.hash[i]).collect();
        assert_eq!(left, [40]);
        q.take_front(1, |_, _| {});
        assert!(q.is_empty() && q.least_row().is_none());
    }
}
