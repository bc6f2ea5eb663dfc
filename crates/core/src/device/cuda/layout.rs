//! Strided operands as the kernels see them: the `Lay`/`RLay` structs passed by value, built from
//! shapes and strides with adjacent dimensions merged where every operand allows it.

use super::error::{CudaError, CudaResult};
use crate::device::backend::Operand;

/// Most dimensions a kernel handles after merging (the kernels' MAXD).
pub const MAXD: usize = 8;

/// What the kernels need of an operand beyond its fields.
pub trait OperandExt {
    /// Device address of the first element.
    fn addr(&self) -> u64;
    /// Number of elements.
    fn numel(&self) -> usize;
    /// Dense row-major (size-1 dimensions ignored).
    fn is_contiguous(&self) -> bool;
}

impl OperandExt for Operand<'_> {
    fn addr(&self) -> u64 {
        self.ptr + (self.layout.offset * self.dtype.size()) as u64
    }
    fn numel(&self) -> usize {
        self.layout.numel()
    }
    fn is_contiguous(&self) -> bool {
        self.layout.is_contiguous()
    }
}

/// The kernels' `struct Lay`: shape and up to three operands' strides.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Lay {
    nd: i32,
    fast: i32,
    size: [i64; MAXD],
    st: [[i64; MAXD]; 3],
    magic: [u32; MAXD],
    shift: [u32; MAXD],
}

/// The magic number and shift that divide any `n < 2^31` by `d` as `(umulhi(n, magic) + n) >> shift`
/// (PyTorch's `IntDivider<unsigned int>`).
fn divider(d: u32) -> (u32, u32) {
    let shift: u32 = (0..32).find(|&s| (1u64 << s) >= d as u64).unwrap_or(32);
    let magic = ((1u64 << 32) * ((1u64 << shift) - d as u64)) / d as u64 + 1;
    (magic as u32, shift)
}

/// Builds a `Lay` over `shape` for up to three operands' strides, dropping size-1 dimensions and
/// merging neighbours that are contiguous with each other in every operand.
pub fn lay(shape: &[usize], strides: &[&[usize]]) -> CudaResult<Lay> {
    let mut dims: Vec<(usize, [usize; 3])> = Vec::new();
    for (d, &size) in shape.iter().enumerate() {
        if size == 1 {
            continue;
        }
        let mut st = [0usize; 3];
        for (k, s) in strides.iter().enumerate() {
            st[k] = s[d];
        }
        if let Some(last) = dims.last_mut() {
            if (0..3).all(|k| last.1[k] == st[k] * size) {
                last.0 *= size;
                last.1 = st;
                continue;
            }
        }
        dims.push((size, st));
    }
    if dims.len() > MAXD {
        return Err(CudaError::Unsupported(format!(
            "CUDA kernels handle at most {MAXD} non-mergeable dimensions; this view has {}. \
             Call .contiguous() first.",
            dims.len()
        )));
    }
    let mut l = Lay {
        nd: dims.len() as i32,
        ..Lay::default()
    };
    let n: usize = dims.iter().map(|(size, _)| size).product();
    let largest_offset =
        |k: usize| -> usize { dims.iter().map(|(size, st)| (size - 1) * st[k]).sum() };
    l.fast = (n < 1 << 31 && (0..3).all(|k| largest_offset(k) < 1 << 31)) as i32;
    for (i, (size, st)) in dims.iter().enumerate() {
        l.size[i] = *size as i64;
        for (k, &s) in st.iter().enumerate() {
            l.st[k][i] = s as i64;
        }
        if l.fast != 0 {
            (l.magic[i], l.shift[i]) = divider(*size as u32);
        }
    }
    Ok(l)
}

/// Edge of the tiles the transpose kernel moves through shared memory (its `TILE`).
pub const TILE: usize = 32;

/// A copy `out[b][r][c] = src[b * batch_stride + r + c * col_stride]` into a dense output of
/// `batch × rows × cols`: the source is dense along the output's rows, not along its columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transpose {
    /// Independent matrices (the kernel's `gridDim.z`).
    pub batch: usize,
    /// Output rows: the source's dense dimension.
    pub rows: usize,
    /// Output columns.
    pub cols: usize,
    /// Source elements between one matrix and the next.
    pub batch_stride: usize,
    /// Source elements between one output column and the next.
    pub col_stride: usize,
}

impl Lay {
    /// This copy's layout (operand 0 the output, 1 the source) as a batched transpose, when the
    /// output is dense, the source is dense along the output's second-to-last merged dimension
    /// and every matrix is at least a tile on each side. Anything else (and grids beyond CUDA's
    /// limits) takes the strided copy.
    pub fn as_transpose(&self) -> Option<Transpose> {
        let nd = self.nd as usize;
        if !(2..=3).contains(&nd) {
            return None;
        }
        let (rows, cols) = (self.size[nd - 2] as usize, self.size[nd - 1] as usize);
        let (out, src) = (&self.st[0], &self.st[1]);
        let dense_out = out[nd - 1] == 1
            && out[nd - 2] as usize == cols
            && (nd == 2 || out[0] as usize == rows * cols);
        let batch = if nd == 3 { self.size[0] as usize } else { 1 };
        let tiles = rows.div_ceil(TILE) * cols.div_ceil(TILE);
        let fits = rows >= TILE && cols >= TILE && tiles <= i32::MAX as usize && batch <= 65_535;
        (dense_out && fits && src[nd - 2] == 1 && src[nd - 1] != 1).then(|| Transpose {
            batch,
            rows,
            cols,
            batch_stride: if nd == 3 { src[0] as usize } else { 0 },
            col_stride: src[nd - 1] as usize,
        })
    }
}

/// The kernels' `struct RLay`: kept dims (output index → input offset) and reduced dims.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct RLay {
    nd_out: i32,
    out_size: [i64; MAXD],
    out_st: [i64; MAXD],
    nd_red: i32,
    red_size: [i64; MAXD],
    red_st: [i64; MAXD],
}

impl RLay {
    /// Splits `src`'s dims into kept and reduced (`reduced[d]`); returns the layout, the number
    /// of outputs and the number of elements reduced into each.
    pub fn new(
        shape: &[usize],
        strides: &[usize],
        reduced: &[bool],
    ) -> CudaResult<(RLay, usize, usize)> {
        let mut l = RLay::default();
        let (mut m, mut r) = (1usize, 1usize);
        for d in 0..shape.len() {
            let (size, st) = (shape[d], strides[d]);
            if reduced[d] {
                r *= size;
            } else {
                m *= size;
            }
            if size == 1 {
                continue;
            }
            let (n, sizes, sts) = if reduced[d] {
                (&mut l.nd_red, &mut l.red_size, &mut l.red_st)
            } else {
                (&mut l.nd_out, &mut l.out_size, &mut l.out_st)
            };
            let i = *n as usize;
            if i > 0 && sts[i - 1] == (st * size) as i64 {
                sizes[i - 1] *= size as i64;
                sts[i - 1] = st as i64;
                continue;
            }
            if i == MAXD {
                return Err(CudaError::Unsupported(format!(
                    "CUDA reductions handle at most {MAXD} dimensions; call .contiguous() first"
                )));
            }
            sizes[i] = size as i64;
            sts[i] = st as i64;
            *n += 1;
        }
        Ok((l, m, r))
    }

    /// Whether each output reduces one contiguous run of the input (the kernels' 16-byte path).
    pub fn reduces_one_run(&self) -> bool {
        self.nd_red == 1 && self.red_st[0] == 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's quotient: `(umulhi(n, magic) + n) >> shift`, in 32-bit unsigned arithmetic.
    fn kernel_div(n: u32, (magic, shift): (u32, u32)) -> u32 {
        let hi = ((n as u64 * magic as u64) >> 32) as u32;
        hi.wrapping_add(n) >> shift
    }

    #[test]
    fn the_magic_divider_divides_every_index_below_2_pow_31_exactly() {
        let mut divisors: Vec<u32> = (1..=4099).collect();
        for k in 12..31 {
            divisors.extend([(1 << k) - 1, 1 << k, (1 << k) + 1, 3 << (k - 1)]);
        }
        divisors.extend([1_000_003, 65_537, 0x7fff_fffe, 0x7fff_ffff]);
        let mut numerators: Vec<u32> = (0..5000).collect();
        numerators.extend((1..31).flat_map(|k| [(1u32 << k) - 1, 1 << k, (1 << k) + 1]));
        numerators.extend([0x7fff_fffe, 0x7fff_ffff, 123_456_789, 2_000_000_000]);
        for &d in &divisors {
            let div = divider(d);
            for &n in numerators.iter().filter(|&&n| n < 1 << 31) {
                assert_eq!(kernel_div(n, div), n / d, "{n} / {d} with {div:?}");
            }
        }
    }

    #[test]
    fn transposed_views_copy_as_tiles_and_other_views_do_not() {
        let t = |shape: &[usize], src: &[usize]| {
            let dense: Vec<usize> = (0..shape.len())
                .map(|d| shape[d + 1..].iter().product())
                .collect();
            lay(shape, &[&dense, src]).unwrap().as_transpose()
        };
        // x.t() of a 100x300 matrix, and a batch of them through permute(0, 2, 1).
        let plain = Transpose {
            batch: 1,
            rows: 300,
            cols: 100,
            batch_stride: 0,
            col_stride: 300,
        };
        assert_eq!(t(&[300, 100], &[1, 300]), Some(plain));
        let batched = Transpose {
            batch: 5,
            batch_stride: 30_000,
            ..plain
        };
        assert_eq!(t(&[5, 300, 100], &[30_000, 1, 300]), Some(batched));
        // A column slice of a wider matrix keeps its row pitch as the column stride.
        assert_eq!(t(&[64, 40], &[1, 512]).map(|p| p.col_stride), Some(512));
        // Dense along the last dimension, or narrower than a tile: strided.
        assert_eq!(t(&[300, 100], &[100, 1]), None);
        assert_eq!(t(&[300, 16], &[1, 300]), None);
        // Broadcast along the columns still reads dense rows (tiled); along the rows it does not.
        assert_eq!(
            t(&[300, 100], &[1, 0]),
            Some(Transpose {
                col_stride: 0,
                ..plain
            })
        );
        assert_eq!(t(&[300, 100], &[0, 300]), None);
        // Four dimensions that do not merge: strided.
        assert_eq!(t(&[2, 3, 300, 100], &[1 << 20, 1 << 16, 1, 300]), None);
    }

    #[test]
    fn only_layouts_of_fewer_than_2_pow_31_elements_take_the_32_bit_path() {
        let small = lay(&[4096, 4096], &[&[4096, 1], &[1, 4096]]).unwrap();
        assert_eq!(small.fast, 1);
        assert_eq!((small.magic[1], small.shift[1]), divider(4096));
        let big = lay(&[1 << 16, 1 << 15], &[&[1 << 15, 1], &[1, 1 << 16]]).unwrap();
        assert_eq!(big.fast, 0, "2^31 elements need 64-bit indices");
    }
}
