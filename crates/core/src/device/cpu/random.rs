//! Host random fills: uniform and standard normal, reproducible from a seed, in parallel chunks.

use rand::{rngs::StdRng, Rng, SeedableRng};
use rand_distr::StandardNormal;

use crate::device::backend::{Distribution, Operand};
use torchlet_alloc::types::element::store_f64;
use torchlet_alloc::types::{DType, Result};

use super::parallel::SendPtr;
use rayon::prelude::*;

/// Elements per independently seeded chunk: the numbers depend only on the seed, not on threads.
const CHUNK: usize = 1 << 16;

/// Fill contiguous `dst` from `dist`, seeded by `seed`.
pub fn random(dst: Operand, dist: Distribution, seed: u64) -> Result<()> {
    let n = dst.layout.numel();
    let d = SendPtr(dst.ptr as usize);
    let base = dst.layout.offset;
    let dtype = dst.dtype;
    let fill = |c: usize| {
        let mut rng = StdRng::seed_from_u64(seed ^ (c as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let start = c * CHUNK;
        for i in start..(start + CHUNK).min(n) {
            let v: f64 = match dist {
                // As many random mantissa bits as the dtype holds, so a value never rounds up to 1.
                Distribution::Uniform => {
                    let bits = match dtype {
                        DType::F16 => 11,
                        DType::BF16 => 8,
                        DType::F32 => 24,
                        _ => 53,
                    };
                    (rng.random::<u64>() >> (64 - bits)) as f64 / (1u64 << bits) as f64
                }
                Distribution::Normal => rng.sample(StandardNormal),
            };
            unsafe { store_f64(d.get(), dtype, base + i, v) };
        }
    };
    let chunks = n.div_ceil(CHUNK);
    if chunks > 1 {
        (0..chunks).into_par_iter().for_each(fill);
    } else if n > 0 {
        fill(0);
    }
    Ok(())
}
