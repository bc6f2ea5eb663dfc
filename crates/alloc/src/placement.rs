//! Where the CUDA driver puts each `cuMemAlloc` in the address space, as an H200's driver does:
//! every device's segment addresses, and with them the allocator's choice among equal blocks.

use std::collections::BTreeMap;

use super::raw::DevicePtr;

/// Segments are placed at multiples of the driver's 2 MiB granularity.
pub const GRANULE: usize = 2 << 20;

/// Room in the context's first chunk for the process's first segments: one 2 MiB segment (the
/// small pool's), and 20 MiB for larger ones.
const WINDOWS: [usize; 2] = [GRANULE, 20 << 20];

/// The chunk directly below the first one, filled upward.
const FIRST_CHUNK: usize = 420 << 20;

/// The driver's later chunks: a request that fits no free range gets a chunk of this many
/// bytes (or its own size rounded up to a multiple of it), placed below every chunk so far.
const CHUNK: usize = 32 << 20;

// Note [segment placement]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// The caching allocator breaks ties between equally good free blocks by address (best fit, then
// the lowest address), so the order of its segments' addresses decides which of two equal free
// blocks a request takes, and with it the split statistics (`inactive_split*`) and, over a long
// run, fragmentation. On an H200 (driver 580.159, PyTorch 2.11) the driver's `cuMemAlloc` does
// not hand addresses out upward. Measured (`tests/data/driver_placement.json`, written by
// `tests/data/record_driver_placement.py`; the segment addresses in `tests/data/torch_traces/`
// `{mlp3_adamw,gpt4,gpt_block,mlp_varlen_adam,soak_varlen}.json`):
// - Inside a chunk of address space the driver takes the lowest free range that fits, at 2 MiB
//   granularity; freed ranges are reused the same way (probe `free_twenties/torch`: the two freed
//   20 MiB ranges are taken again, lowest first, before new space).
// - A request that fits nowhere gets a new chunk below the earlier ones (probe `twenties/bare`:
//   each 20 MiB in its own 32 MiB chunk, 32 MiB lower each time; gpt4's 64 MiB segments in backward
//   each 64 MiB below the last).
// - PyTorch's first segments land in the context's first chunk, above everything that comes
//   later: in all five recordings the first 2 MiB segment, and the first larger ones up to
//   20 MiB (20, or 12 but then not 12 + 20; never 32), are the highest addresses of their pool;
//   the first request of each kind that does not fit there goes below, with every later one (the
//   chunk below is about 420 MiB: gpt4's fills 420 MiB upward before its first 20 MiB goes lower
//   still). The first chunk keeps no room for a second 2 MiB segment (gpt_block's third goes
//   below), and transformer_block's statistics need its second and third 2 MiB segments below.
// With this rule the segments of mlp3_adamw, gpt_block, mlp_varlen_adam and soak_varlen come in
// PyTorch's address order within each pool, pair for pair; gpt4 keeps some pairs reversed (the
// chunk below the first holds cuBLAS's own code and PyTorch's lazily loaded kernels, ~74 MiB that
// the driver takes beside the segments and the simulated GPU does not model).
// `cuMemAddressReserve` takes its ranges from a region of its own far below (probe `reserve`), so
// reservations never change where a `cuMemAlloc` goes.

/// The driver's address-space bookkeeping for one device: free ranges by address.
#[derive(Debug)]
pub struct Placement {
    /// The first chunk's room for 2 MiB segments and for larger ones (`WINDOWS`).
    windows: [Window; 2],
    /// Chunks below the first: start → bytes. Free ranges merge only inside one chunk.
    chunks: BTreeMap<DevicePtr, usize>,
    /// Free ranges of those chunks: start → bytes.
    free: BTreeMap<DevicePtr, usize>,
    /// The lowest chunk's start: a new chunk goes below it.
    low: DevicePtr,
    /// The lowest address a chunk may start at.
    floor: DevicePtr,
}

impl Placement {
    /// Address space this many bytes of device memory need: twice the capacity (so that
    /// fragmentation of addresses does not refuse what the capacity allows) and the first chunks.
    pub fn span(capacity: usize) -> usize {
        (2 * capacity).div_ceil(CHUNK) * CHUNK + FIRST_CHUNK + 2 * CHUNK
    }

    /// Placement inside `[floor, top)`; both are multiples of [`GRANULE`].
    pub fn new(floor: DevicePtr, top: DevicePtr) -> Placement {
        let window_start = top - CHUNK as u64;
        let first = window_start - FIRST_CHUNK as u64;
        let window = |start: DevicePtr, len: usize| Window {
            range: (start, start + len as u64),
            free: BTreeMap::from([(start, len)]),
            open: true,
        };
        let large = window_start + WINDOWS[0] as u64;
        Placement {
            windows: [window(window_start, WINDOWS[0]), window(large, WINDOWS[1])],
            chunks: BTreeMap::from([(first, FIRST_CHUNK)]),
            free: BTreeMap::from([(first, FIRST_CHUNK)]),
            low: first,
            floor,
        }
    }

    /// The address of a new segment of `bytes`, or `None` when the address space is used up.
    pub fn place(&mut self, bytes: usize) -> Option<DevicePtr> {
        let need = bytes.div_ceil(GRANULE) * GRANULE;
        let window = &mut self.windows[usize::from(need > GRANULE)];
        if window.open {
            if let Some(p) = take_lowest(&mut window.free, need) {
                return Some(p);
            }
            window.open = false;
        }
        if let Some(p) = take_lowest(&mut self.free, need) {
            return Some(p);
        }
        let size = need.div_ceil(CHUNK).max(1) * CHUNK;
        let start = self.low.checked_sub(size as u64)?;
        if start < self.floor {
            return None;
        }
        self.low = start;
        self.chunks.insert(start, size);
        self.free.insert(start, size);
        take_lowest(&mut self.free, need)
    }

    /// Give back the range of a segment of `bytes` at `ptr`, merged with its free neighbours.
    pub fn release(&mut self, ptr: DevicePtr, bytes: usize) {
        let len = bytes.div_ceil(GRANULE) * GRANULE;
        if let Some(w) = self
            .windows
            .iter_mut()
            .find(|w| (w.range.0..w.range.1).contains(&ptr))
        {
            give_back(&mut w.free, w.range, ptr, len);
        } else {
            let chunk = self
                .chunks
                .range(..=ptr)
                .next_back()
                .map(|(&s, &l)| (s, s + l as u64))
                .unwrap_or((ptr, ptr + len as u64));
            give_back(&mut self.free, chunk, ptr, len);
        }
    }
}

/// Room for the first segments in the context's first chunk.
#[derive(Debug)]
struct Window {
    /// `[start, end)` of the room.
    range: (DevicePtr, DevicePtr),
    /// Its free ranges: start → bytes.
    free: BTreeMap<DevicePtr, usize>,
    /// Whether requests still try it (until the first one that does not fit).
    open: bool,
}

/// Take `need` bytes from the lowest free range that has them.
fn take_lowest(free: &mut BTreeMap<DevicePtr, usize>, need: usize) -> Option<DevicePtr> {
    let (&start, &len) = free.iter().find(|(_, &len)| len >= need)?;
    free.remove(&start);
    if len > need {
        free.insert(start + need as u64, len - need);
    }
    Some(start)
}

/// Return `[ptr, ptr+len)` to `free`, merged with neighbours inside `bounds`.
fn give_back(
    free: &mut BTreeMap<DevicePtr, usize>,
    bounds: (DevicePtr, DevicePtr),
    ptr: DevicePtr,
    len: usize,
) {
    let (mut start, mut len) = (ptr, len);
    if let Some((&prev, &prev_len)) = free.range(bounds.0..ptr).next_back() {
        if prev + prev_len as u64 == ptr {
            free.remove(&prev);
            start = prev;
            len += prev_len;
        }
    }
    let end = start + len as u64;
    if end < bounds.1 {
        if let Some(next_len) = free.remove(&end) {
            len += next_len;
        }
    }
    free.insert(start, len);
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    fn fresh() -> Placement {
        Placement::new(0, Placement::span(16 << 30) as u64)
    }

    /// Rank of each address among `addrs` (0 = lowest).
    fn ranks(addrs: &[DevicePtr]) -> Vec<usize> {
        addrs
            .iter()
            .map(|a| addrs.iter().filter(|b| *b < a).count())
            .collect()
    }

    #[test]
    fn mlp3_adamws_segments_come_in_the_h200s_address_order() {
        // Segment sizes in allocation order, and their address ranks in PyTorch's recording.
        let sizes = [2, 20, 32, 2, 2, 32, 2, 20];
        let torch = [
            0x7f3563e00000u64,
            0x7f3568a00000,
            0x7f354e000000,
            0x7f3549c00000,
            0x7f3549e00000,
            0x7f3554a00000,
            0x7f3556a00000,
            0x7f3556e00000,
        ];
        let mut p = fresh();
        let ours: Vec<DevicePtr> = sizes.iter().map(|s| p.place(s * MIB).unwrap()).collect();
        for pool_is_small in [true, false] {
            let pick = |v: &[DevicePtr]| -> Vec<DevicePtr> {
                v.iter()
                    .zip(sizes)
                    .filter(|(_, s)| (*s == 2) == pool_is_small)
                    .map(|(a, _)| *a)
                    .collect()
            };
            assert_eq!(ranks(&pick(&ours)), ranks(&pick(&torch)));
        }
    }

    #[test]
    fn only_the_first_2_mib_segment_goes_above() {
        let mut p = fresh();
        let a = p.place(2 * MIB).unwrap();
        let b = p.place(2 * MIB).unwrap();
        let c = p.place(2 * MIB).unwrap();
        let d = p.place(20 * MIB).unwrap();
        assert!(b < c && c < a && a < d, "{a:#x} {b:#x} {c:#x} {d:#x}");
    }

    #[test]
    fn the_first_request_that_misses_the_first_chunk_closes_it() {
        let mut p = fresh();
        let a = p.place(2 * MIB).unwrap();
        let b = p.place(32 * MIB).unwrap();
        let c = p.place(2 * MIB).unwrap();
        assert!(b < a && c < a, "later segments go below the first chunk");
        assert!(b < c, "and upward from there");
    }

    #[test]
    fn freed_ranges_are_taken_again_lowest_first() {
        let mut p = fresh();
        p.place(32 * MIB).unwrap();
        let segs: Vec<DevicePtr> = (0..6).map(|_| p.place(20 * MIB).unwrap()).collect();
        p.release(segs[4], 20 * MIB);
        p.release(segs[1], 20 * MIB);
        assert_eq!(p.place(20 * MIB), Some(segs[1]));
        assert_eq!(p.place(20 * MIB), Some(segs[4]));
    }

    #[test]
    fn a_request_that_fits_nowhere_gets_a_chunk_below_the_others() {
        let mut p = fresh();
        p.place(32 * MIB).unwrap();
        let first = p.place(388 * MIB).unwrap();
        let big = p.place(64 * MIB).unwrap();
        let next = p.place(64 * MIB).unwrap();
        assert!(big < first && next < big);
        assert_eq!(big - next, 64 * MIB as u64);
    }

    #[test]
    fn free_ranges_do_not_merge_across_chunks() {
        let mut p = fresh();
        let first = p.place(32 * MIB).unwrap();
        p.place(388 * MIB).unwrap();
        let below = p.place(20 * MIB).unwrap();
        assert_eq!(below, first - 32 * MIB as u64, "a 32 MiB chunk right below");
        p.release(first, 32 * MIB);
        p.release(below, 20 * MIB);
        // 32 MiB free on each side of the chunks' boundary make no 40 MiB range.
        let forty = p.place(40 * MIB).unwrap();
        assert!(forty < below);
    }

    #[test]
    fn address_space_running_out_is_none() {
        let mut p = Placement::new(0, Placement::span(64 * MIB) as u64);
        let mut placed = 0;
        while p.place(20 * MIB).is_some() {
            placed += 1;
            assert!(placed < 100, "placement never runs out");
        }
        assert!(placed >= 6, "twice the capacity is placeable: {placed}");
    }
}
