//! The temporary storage CUB's device-wide algorithms ask PyTorch's caching allocator for: radix
//! sort (keys, or keys with values), scan and scan by key, as ATen's `cub.cuh` wrappers allocate it.

// Note [CUB temporary storage]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// ATen calls a CUB algorithm twice: once to ask how many bytes of temporary storage it needs, then
// with that many bytes from the caching allocator (`CUB_WRAPPER`), freed when the call returns.
// CUB carves the storage into several arrays, each 256-byte aligned, and asks for 255 bytes more
// so that the first can be aligned (`AliasTemporaries`). Its onesweep radix sort
// (`DispatchRadixSort::InvokeOnesweep`) needs, for `passes = ceil(bits / 8)` passes:
//   - the alternate keys and values, when more than one pass moves them back and forth;
//   - one 256-digit histogram of 8-byte counts a pass (`bins`);
//   - the decoupled look-back: 256 4-byte counts a tile (`lookback`);
//   - one 4-byte tile counter a pass (`counters`).
// Its scan keeps one (status, value) word a tile plus a warp of padding, and a few bytes more;
// its scan by key a 16-byte (status, key, value) word a tile plus the padding, and each tile's
// last key. The tile sizes are CUB's tuning for sm90, read off PyTorch 2.11's allocations on an
// H100 (`tests/data/scratch_sizes.json`, 123 sorts, topks, cumsums, multinomials and embedding
// backwards; `scratch_sizes_are_pytorchs` checks every case): a tile of 5376 float keys with
// 8-byte values, 5632 half keys, 4608 int64 keys, 5760 int64 keys alone; 1920 floats a scan
// tile (8-byte words), 7680 halves (16-byte words).
// ATen's embedding backward sorts its int64 indices over all 64 bits (its end_bit is commented
// out), so its scratch has 8 passes' bins.

/// CUB's alignment of each array it carves from the temporary storage.
const ALIGN: usize = 256;
/// Digits of one 8-bit radix pass.
const RADIX_DIGITS: usize = 256;
/// Key bits one onesweep pass sorts.
const RADIX_BITS: usize = 8;
/// Tile states CUB keeps before the first tile (one warp: `TILE_STATUS_PADDING`).
const TILE_STATUS_PADDING: usize = 32;
/// Keys of one `UniqueByKey` tile (at least 4096 on sm90: 65536 keys took one tile state's size).
const SELECT_TILE: usize = 4096;
/// Items of one scan-by-key tile (sm90 tuning); PyTorch's scans by key over topk's blocks
/// (a few thousand at most) fit one or a few.
const SCAN_BY_KEY_TILE: usize = 2048;

fn aligned(bytes: usize) -> usize {
    bytes.div_ceil(ALIGN) * ALIGN
}

/// The bytes CUB asks for to hold arrays of `sizes` bytes (`AliasTemporaries`).
fn alias(sizes: &[usize]) -> usize {
    sizes.iter().map(|&s| aligned(s)).sum::<usize>() + ALIGN - 1
}

/// Keys one onesweep tile sorts, for keys of `key` bytes carrying values of `value` bytes (0
/// for keys alone), as CUB's sm90 policy sizes them (Note [CUB temporary storage]; the sizes
/// not measured, 1-byte keys and 4-byte keys alone, take their neighbours').
fn onesweep_tile(key: usize, value: usize) -> usize {
    match (key, value) {
        (8, 0) => 5760,
        (8, _) => 4608,
        (1 | 2, _) => 5632,
        _ => 5376,
    }
}

/// Keys CUB's radix sort takes in one block, when it asks for 1 byte of storage (its
/// single-tile policy: 256 threads of 19 four-byte items, scaled to the larger of key and value;
/// 26 int64 keys with int64 values asked for 1 byte on an H100, 4097 float keys with int64
/// values for a full onesweep's).
fn radix_single_tile(key: usize, value: usize) -> usize {
    let dominant = key.max(value).max(1);
    256 * (19 * 4 / dominant).clamp(1, 38)
}

/// The temporary storage of CUB's radix sort of `n` keys of `key` bytes, with values of
/// `value` bytes (0 for `SortKeys`), over `bits` key bits: what ATen's `radix_sort_pairs` and
/// `radix_sort_keys` allocate for one call.
pub fn radix_sort_bytes(n: usize, key: usize, value: usize, bits: usize) -> usize {
    if n <= radix_single_tile(key, value) {
        return 1;
    }
    let passes = bits.div_ceil(RADIX_BITS).max(1);
    let tiles = n.div_ceil(onesweep_tile(key, value));
    let moves = passes > 1;
    alias(&[
        if moves { n * key } else { 0 },
        if moves { n * value } else { 0 },
        passes * RADIX_DIGITS * 8,
        tiles * RADIX_DIGITS * 4,
        passes * 4,
    ])
}

/// The temporary storage of CUB's segmented radix sort of `n` keys of `key` bytes with values of
/// `value` bytes (ATen's `segmented_sort_pairs`, as a sort of 128 rows or more runs): the
/// alternate keys and values alone.
pub fn segmented_sort_bytes(n: usize, key: usize, value: usize) -> usize {
    alias(&[n * key, n * value])
}

/// The temporary storage of CUB's inclusive or exclusive sum of `n` elements of `size` bytes
/// (ATen's `inclusive_sum_truncating`, as `cumsum` over every element runs it, and
/// `mask_exclusive_sum`, masked_scatter's int64 prefix sum): one (status, value) word a tile, and
/// a small second array. Measured for 2- and 4-byte floats (half's words are 16 bytes, its tiles
/// 7680 items) and 8-byte sums (896-item tiles: 76031 B for 4194304 mask elements).
pub fn scan_bytes(n: usize, size: usize) -> usize {
    let (tile, word) = match size {
        1 | 2 => (7680, 16),
        4 => (1920, 8),
        _ => (896, 16),
    };
    let tiles = n.div_ceil(tile).max(1);
    alias(&[(tiles + TILE_STATUS_PADDING) * word, 4])
}

/// The temporary storage of CUB's `DeviceSelect::UniqueByKey` over `n` keys (ATen's
/// `unique_by_key`, as embedding backward finds its segments): a tile state a tile. Recorded up
/// to 65536 keys, all in 1279 B.
pub fn select_bytes(n: usize) -> usize {
    let tiles = n.div_ceil(SELECT_TILE).max(1);
    alias(&[(tiles + TILE_STATUS_PADDING) * 16, tiles * 4])
}

/// Items CUB's reduce takes in one tile, below which it runs a single block and asks for 1 byte
/// (sm90: 256 threads of 16 four-byte items).
const REDUCE_SINGLE_TILE: usize = 4096;
/// Blocks of CUB's even-share reduce on an H100 or H200: 132 multiprocessors, 8 blocks each,
/// times CUB's subscription factor of 5. Its scratch is one partial a block, whatever `n`.
const REDUCE_BLOCKS: usize = 132 * 8 * 5;
/// Items of one `DeviceSelect::Flagged` tile on sm90, read off `nonzero`'s scratch for masks of
/// 64 to 50M elements (`tests/data/select_scratch.json`).
const FLAGGED_TILE: usize = 4224;

/// The temporary storage of CUB's `DeviceReduce::Sum` over `n` items into an accumulator of
/// `accum` bytes (ATen's `nonzero` counting a mask's true elements): 21503 B for 16384 bools
/// and 1 B for 64 on an H100, as recorded.
pub fn reduce_bytes(n: usize, accum: usize) -> usize {
    if n <= REDUCE_SINGLE_TILE {
        return 1;
    }
    alias(&[REDUCE_BLOCKS * accum])
}

/// The temporary storage of CUB's `DeviceSelect::Flagged` over `n` items (ATen's `nonzero`
/// writing the coordinates): an 8-byte tile state a tile after the padding, and the selected
/// count.
pub fn flagged_select_bytes(n: usize) -> usize {
    let tiles = n.div_ceil(FLAGGED_TILE).max(1);
    alias(&[(tiles + TILE_STATUS_PADDING) * 8, 1])
}

/// The temporary storage of CUB's inclusive scan by key over `n` (uint32 key, uint32 value)
/// pairs: what each of topk's two `inclusive_sum_by_key` calls allocates.
pub fn scan_by_key_bytes(n: usize) -> usize {
    let tiles = n.div_ceil(SCAN_BY_KEY_TILE).max(1);
    alias(&[(tiles + TILE_STATUS_PADDING) * 16, tiles * 4])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masked_scatters_prefix_sum_scratch_is_the_recorded_one() {
        // x.masked_scatter(mask, src) over 4096 x 1024 (tests/parity/py_fold_scatter.py).
        assert_eq!(scan_bytes(4096 * 1024, 8), 76031);
    }

    #[test]
    fn the_recorded_sizes_of_a_sort_of_logits_and_of_topk() {
        // torch.sort(logits, descending=True) over 4 x 50257 floats (tests/parity/py_sampling.py).
        assert_eq!(radix_sort_bytes(201028, 4, 8, 32), 2460415);
        assert_eq!(radix_sort_bytes(201028, 8, 0, 2), 38399);
        // torch.topk(logits, 50): a scan by key over its 200 blocks.
        assert_eq!(scan_by_key_bytes(200), 1279);
        // A sort of 1000 rows of 5000 halves, CUB's segmented sort.
        assert_eq!(segmented_sort_bytes(5_000_000, 2, 8), 50000383);
        // cumsum of 10^7 floats.
        assert_eq!(scan_bytes(10_000_000, 4), 42495);
        assert_eq!(scan_bytes(10_000_000, 2), 22015);
    }
}
