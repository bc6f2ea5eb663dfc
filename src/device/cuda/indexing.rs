//! Launchers of the index and mask kernels (kernels/indexing.cu): where, masked_fill, triu/tril,
//! gather and scatter_add. Operands of another dtype are cast into scratch memory first.

use std::ffi::c_void;

use super::error::{CudaError, CudaResult};
use super::kernel_name::KernelName;
use super::layout::{lay, View};
use super::ops::{args, Gpu};
use crate::types::{contiguous_strides, DType};

fn unsupported(what: &str) -> CudaError {
    CudaError::Unsupported(what.into())
}

impl Gpu<'_> {
    /// `dst = cond ? a : b`; `cond` bool, all broadcast to the contiguous `dst`.
    pub fn where_select(&self, cond: &View, a: &View, b: &View, dst: &View) -> CudaResult<()> {
        let n = dst.numel();
        if n == 0 {
            return Ok(());
        }
        if !dst.is_contiguous() || cond.elem != DType::Bool {
            return Err(unsupported(
                "where(): a contiguous output and a bool condition",
            ));
        }
        let (mut s1, mut s2) = (Vec::new(), Vec::new());
        let a = self.as_elem(a, dst.elem, 0, &mut s1)?;
        let b = self.as_elem(b, dst.elem, 1, &mut s2)?;
        let mut l = lay(dst.shape, &[cond.strides, a.strides, b.strides])?;
        let (mut o, mut c, mut pa, mut pb) = (dst.addr(), cond.addr(), a.addr(), b.addr());
        let mut nn = n as i64;
        let name = KernelName::of("where", dst.elem);
        self.run(name, n, &mut args!(o, c, pa, pb, l, nn))
    }

    /// `dst[i] = value` (`f` for float dtypes, `i` for the others) where `mask[i]`.
    pub fn masked_fill(&self, dst: &View, mask: &View, f: f64, i: i64) -> CudaResult<()> {
        let n = dst.numel();
        if n == 0 {
            return Ok(());
        }
        if mask.elem != DType::Bool {
            return Err(unsupported("masked_fill(): the mask must be bool"));
        }
        let mut l = lay(dst.shape, &[dst.strides, mask.strides])?;
        let (mut o, mut m, mut sd, mut si) = (dst.addr(), mask.addr(), f, i);
        let mut nn = n as i64;
        let name = KernelName::of("masked_fill", dst.elem);
        self.run(name, n, &mut args!(o, m, sd, si, l, nn))
    }

    /// The contiguous `dst` = `src` inside the triangle of the last two dims, 0 outside.
    pub fn triangle(&self, src: &View, diagonal: i64, upper: bool, dst: &View) -> CudaResult<()> {
        let n = dst.numel();
        if n == 0 {
            return Ok(());
        }
        if !dst.is_contiguous() || dst.shape.len() < 2 {
            return Err(unsupported(
                "triu/tril: a contiguous output of at least 2 dims",
            ));
        }
        let mut s1 = Vec::new();
        let src = self.as_elem(src, dst.elem, 0, &mut s1)?;
        let dense = contiguous_strides(dst.shape);
        let mut l = lay(dst.shape, &[&dense, src.strides])?;
        let nd = dst.shape.len();
        let (mut rows, mut cols) = (dst.shape[nd - 2] as i64, dst.shape[nd - 1] as i64);
        let (mut o, mut s, mut diag, mut up) = (dst.addr(), src.addr(), diagonal, upper as i32);
        let mut nn = n as i64;
        let name = KernelName::of("triangle", dst.elem);
        self.run(name, n, &mut args!(o, s, l, rows, cols, diag, up, nn))
    }

    /// `dst[p] = src[p with dim replaced by index[p]]`; `index` shaped like `dst`.
    pub fn gather(&self, src: &View, index: &View, dim: usize, dst: &View) -> CudaResult<()> {
        let n = dst.numel();
        if n == 0 {
            return Ok(());
        }
        let (mut s1, mut s2) = (Vec::new(), Vec::new());
        let src = self.as_elem(src, dst.elem, 0, &mut s1)?;
        let index = self.as_elem(index, DType::I64, 1, &mut s2)?;
        let mut src_st = src.strides.to_vec();
        src_st[dim] = 0;
        let mut l = lay(dst.shape, &[dst.strides, &src_st, index.strides])?;
        let (mut o, mut s, mut ix) = (dst.addr(), src.addr(), index.addr());
        let (mut step, mut nn) = (src.strides[dim] as i64, n as i64);
        let name = KernelName::of("gather", dst.elem);
        self.run(name, n, &mut args!(o, s, ix, l, step, nn))
    }

    /// `dst[p with dim replaced by index[p]] += src[p]`; `index` shaped like `src`.
    pub fn scatter_add(&self, src: &View, index: &View, dim: usize, dst: &View) -> CudaResult<()> {
        let n = src.numel();
        if n == 0 {
            return Ok(());
        }
        let (mut s1, mut s2) = (Vec::new(), Vec::new());
        let src = self.as_elem(src, dst.elem, 0, &mut s1)?;
        let index = self.as_elem(index, DType::I64, 1, &mut s2)?;
        let mut dst_st = dst.strides.to_vec();
        dst_st[dim] = 0;
        let mut l = lay(src.shape, &[&dst_st, src.strides, index.strides])?;
        let (mut o, mut s, mut ix) = (dst.addr(), src.addr(), index.addr());
        let (mut step, mut nn) = (dst.strides[dim] as i64, n as i64);
        let name = KernelName::of("scatter_add", dst.elem);
        self.run(name, n, &mut args!(o, s, ix, l, step, nn))
    }
}
