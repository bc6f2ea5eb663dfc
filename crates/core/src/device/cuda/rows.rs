//! How the row kernels (softmax, its backward and layer norm over contiguous rows) spread a row over threads held in registers; rows too long for that are left to the multi-pass kernels.

use super::kernel_name::KernelName;
use torchlet_alloc::types::DType;

/// One launch shape for rows held in registers (`kernels/softmax.cu`'s row layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowPlan {
    /// Threads sharing one row: a power of two; above 32 it is the whole block.
    pub group: u32,
    /// Vectors each thread holds: 1, 2, 4 or 8 (the kernels' instances).
    pub per_thread: u32,
    /// Threads per block.
    pub block: u32,
    /// Elements per vector: 1, or the dtype's 16-byte width.
    pub width: usize,
}

/// Threads per block when a warp or less shares a row (several rows per block).
const SMALL_ROW_BLOCK: u32 = 128;
/// Most threads on one row (the kernels' launch bounds).
const MAX_GROUP: usize = 1024;
/// Fewest threads when a whole block shares a row (below, a warp or less does).
const MIN_BLOCK_GROUP: usize = 64;
/// Most vectors per thread when a block shares a row: launch bounds of 1024 threads leave 64
/// registers a thread, and a backward thread holds two arrays of these.
const MAX_BLOCK_PER_THREAD: usize = 4;

impl RowPlan {
    /// The plan for rows of `len` elements of `elem` whose first rows start at `addrs` (every
    /// operand's row pointer), with at most `warp_cap` vectors a thread (1..=8, a power of two)
    /// when a warp or less shares a row; `None` when a row does not fit in registers.
    pub fn new(len: usize, elem: DType, addrs: &[u64], warp_cap: usize) -> Option<RowPlan> {
        let vw = super::ops::vec_width(elem);
        // Row r starts r * len elements in: every row is aligned when the first is and len is a
        // multiple of the vector.
        let width = if len.is_multiple_of(vw) && addrs.iter().all(|a| a % 16 == 0) {
            vw
        } else {
            1
        };
        let vectors = len / width;
        if vectors == 0 {
            return None;
        }
        let (group, block) = if vectors <= 32 * warp_cap {
            let group = vectors.next_power_of_two().min(32);
            (group, SMALL_ROW_BLOCK as usize)
        } else {
            let group = vectors
                .div_ceil(MAX_BLOCK_PER_THREAD)
                .next_power_of_two()
                .max(MIN_BLOCK_GROUP);
            if group > MAX_GROUP {
                return None;
            }
            (group, group)
        };
        let per_thread = vectors.div_ceil(group).next_power_of_two();
        Some(RowPlan {
            group: group as u32,
            per_thread: per_thread as u32,
            block: block as u32,
            width,
        })
    }

    /// The kernel for this plan in the family `base` (e.g. `softmax_rows4v_f32`).
    pub fn kernel(&self, base: &'static str, elem: DType) -> KernelName {
        KernelName::of(base, elem).rows(self.per_thread, self.width > 1)
    }

    /// Blocks for `rows` rows (the kernels loop over any rows beyond the grid).
    pub fn grid(&self, rows: usize) -> u32 {
        let per_block = (self.block / self.group).max(1) as usize;
        rows.div_ceil(per_block).clamp(1, i32::MAX as usize) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(len: usize, elem: DType, addr: u64) -> Option<RowPlan> {
        RowPlan::new(len, elem, &[addr, 512], 8)
    }

    #[test]
    fn every_plan_covers_its_row_with_an_instantiated_kernel() {
        for elem in [DType::F32, DType::F64, DType::F16, DType::BF16] {
            for len in (1..=5000).chain([8191, 8192, 16384, 32768, 65536]) {
                for addr in [0u64, 4, 2] {
                    for cap in [4, 8] {
                        let Some(p) = RowPlan::new(len, elem, &[addr], cap) else {
                            continue;
                        };
                        let vectors = len / p.width;
                        assert_eq!(vectors * p.width, len, "{elem:?} {len}: whole vectors");
                        assert!([1, 2, 4, 8].contains(&p.per_thread), "{p:?}");
                        assert!(p.group.is_power_of_two() && p.group as usize <= MAX_GROUP);
                        assert!(p.block % p.group == 0 && p.block <= 1024, "{p:?}");
                        assert!(p.group <= 32 || p.block == p.group, "{p:?}");
                        let held = (p.group * p.per_thread) as usize;
                        assert!(held >= vectors, "{elem:?} {len}: {p:?} holds {held}");
                        // No thread is idle for a whole power of two of its vectors.
                        assert!(held < 2 * vectors || p.per_thread == 1, "{len} {p:?}");
                        // The 8-vector instances are bounded to 128-thread launches.
                        assert!(p.per_thread < 8 || p.block == SMALL_ROW_BLOCK, "{p:?}");
                        if p.group <= 32 {
                            assert!(p.per_thread as usize <= cap, "{p:?}");
                        } else {
                            assert!(p.per_thread as usize <= MAX_BLOCK_PER_THREAD, "{p:?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn vectors_only_when_length_and_every_pointer_allow() {
        assert_eq!(plan(4096, DType::F32, 0).unwrap().width, 4);
        assert_eq!(plan(4096, DType::F16, 0).unwrap().width, 8);
        assert_eq!(plan(4096, DType::F64, 0).unwrap().width, 2);
        // A view starting one element in, or a row length off the vector: scalar loads.
        assert_eq!(plan(4096, DType::F32, 4).unwrap().width, 1);
        assert_eq!(plan(4094, DType::F32, 0).unwrap().width, 1);
        assert_eq!(
            RowPlan::new(4096, DType::F32, &[0, 512, 8], 8)
                .unwrap()
                .width,
            1
        );
    }

    #[test]
    fn shapes_for_short_long_and_too_long_rows() {
        let one = plan(1, DType::F32, 0).unwrap();
        assert_eq!(
            (one.group, one.per_thread, one.block, one.width),
            (1, 1, 128, 1)
        );
        assert_eq!(one.grid(1000), 8);
        let attn = plan(128, DType::F32, 0).unwrap();
        assert_eq!((attn.group, attn.per_thread, attn.block), (32, 1, 128));
        let wide = plan(4096, DType::F32, 0).unwrap();
        assert_eq!((wide.group, wide.per_thread, wide.block), (256, 4, 256));
        assert_eq!(wide.grid(4096), 4096);
        assert_eq!(
            wide.kernel("softmax_rows", DType::F32).to_string(),
            "softmax_rows4v_f32"
        );
        let scalar = plan(4096, DType::F32, 4).unwrap();
        assert_eq!(
            (scalar.group, scalar.per_thread, scalar.block),
            (1024, 4, 1024)
        );
        assert_eq!(scalar.grid(3), 3);
        assert_eq!(
            scalar.kernel("layer_norm_rows", DType::F32).to_string(),
            "layer_norm_rows4_f32"
        );
        assert!(plan(4097, DType::F32, 0).is_none());
        assert!(plan(16384, DType::F32, 0).is_some());
        assert!(plan(16388, DType::F32, 0).is_none());
        assert!(plan(4100, DType::F32, 4).is_none());
        assert!(plan(32768, DType::BF16, 0).is_some());
    }
}
