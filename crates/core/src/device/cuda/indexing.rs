//! Launchers of the index and mask kernels (kernels/indexing.cu): where, masked_fill, triu/tril,
//! gather and scatter_add. Operands of another dtype are cast into scratch memory first.

use std::ffi::c_void;

use super::error::{CudaError, CudaResult};
use super::kernel_name::KernelName;
use super::layout::{lay, OperandExt};
use super::ops::{args, Gpu};
use crate::device::backend::Operand;
use torchlet_alloc::types::{contiguous_strides, DType, Layout};

fn unsupported(what: &str) -> CudaError {
    CudaError::Unsupported(what.into())
}

impl Gpu<'_> {
    /// `dst = cond ? a : b`; `cond` bool, all broadcast to the contiguous `dst`.
    pub fn where_select(
        &self,
        cond: &Operand,
        a: &Operand,
        b: &Operand,
        dst: &Operand,
    ) -> CudaResult<()> {
        let n = dst.numel();
        if n == 0 {
            return Ok(());
        }
        if !dst.is_contiguous() || cond.dtype != DType::Bool {
            return Err(unsupported(
                "where(): a contiguous output and a bool condition",
            ));
        }
        let (mut s1, mut s2) = (Layout::default(), Layout::default());
        let a = self.as_elem(a, dst.dtype, 0, &mut s1)?;
        let b = self.as_elem(b, dst.dtype, 1, &mut s2)?;
        let mut l = lay(
            &dst.layout.shape,
            &[&cond.layout.strides, &a.layout.strides, &b.layout.strides],
        )?;
        let (mut o, mut c, mut pa, mut pb) = (dst.addr(), cond.addr(), a.addr(), b.addr());
        let mut nn = n as i64;
        let name = KernelName::of("where", dst.dtype);
        self.run(name, n, &mut args!(o, c, pa, pb, l, nn))
    }

    /// `dst[i] = value` (`f` for float dtypes, `i` for the others) where `mask[i]`.
    pub fn masked_fill(&self, dst: &Operand, mask: &Operand, f: f64, i: i64) -> CudaResult<()> {
        let n = dst.numel();
        if n == 0 {
            return Ok(());
        }
        if mask.dtype != DType::Bool {
            return Err(unsupported("masked_fill(): the mask must be bool"));
        }
        let mut l = lay(
            &dst.layout.shape,
            &[&dst.layout.strides, &mask.layout.strides],
        )?;
        let (mut o, mut m, mut sd, mut si) = (dst.addr(), mask.addr(), f, i);
        let mut nn = n as i64;
        let name = KernelName::of("masked_fill", dst.dtype);
        self.run(name, n, &mut args!(o, m, sd, si, l, nn))
    }

    /// The contiguous `dst` = `src` inside the triangle of the last two dims, 0 outside.
    pub fn triangle(
        &self,
        src: &Operand,
        diagonal: i64,
        upper: bool,
        dst: &Operand,
    ) -> CudaResult<()> {
        let n = dst.numel();
        if n == 0 {
            return Ok(());
        }
        if !dst.is_contiguous() || dst.layout.shape.len() < 2 {
            return Err(unsupported(
                "triu/tril: a contiguous output of at least 2 dims",
            ));
        }
        let mut s1 = Layout::default();
        let src = self.as_elem(src, dst.dtype, 0, &mut s1)?;
        let dense = contiguous_strides(&dst.layout.shape);
        let mut l = lay(&dst.layout.shape, &[&dense, &src.layout.strides])?;
        let nd = dst.layout.shape.len();
        let (mut rows, mut cols) = (
            dst.layout.shape[nd - 2] as i64,
            dst.layout.shape[nd - 1] as i64,
        );
        let (mut o, mut s, mut diag, mut up) = (dst.addr(), src.addr(), diagonal, upper as i32);
        let mut nn = n as i64;
        let name = KernelName::of("triangle", dst.dtype);
        self.run(name, n, &mut args!(o, s, l, rows, cols, diag, up, nn))
    }

    /// `dst[p] = src[p with dim replaced by index[p]]`; `index` shaped like `dst`.
    pub fn gather(
        &self,
        src: &Operand,
        index: &Operand,
        dim: usize,
        dst: &Operand,
    ) -> CudaResult<()> {
        let n = dst.numel();
        if n == 0 {
            return Ok(());
        }
        let (mut s1, mut s2) = (Layout::default(), Layout::default());
        let src = self.as_elem(src, dst.dtype, 0, &mut s1)?;
        let index = self.as_elem(index, DType::I64, 1, &mut s2)?;
        let mut src_st = src.layout.strides.to_vec();
        src_st[dim] = 0;
        let mut l = lay(
            &dst.layout.shape,
            &[&dst.layout.strides, &src_st, &index.layout.strides],
        )?;
        let (mut o, mut s, mut ix) = (dst.addr(), src.addr(), index.addr());
        let (mut step, mut nn) = (src.layout.strides[dim] as i64, n as i64);
        let name = KernelName::of("gather", dst.dtype);
        self.run(name, n, &mut args!(o, s, ix, l, step, nn))
    }

    /// `dst[p with dim replaced by index[p]] += src[p]`; `index` shaped like `src`.
    pub fn scatter_add(
        &self,
        src: &Operand,
        index: &Operand,
        dim: usize,
        dst: &Operand,
    ) -> CudaResult<()> {
        let n = src.numel();
        if n == 0 {
            return Ok(());
        }
        let (mut s1, mut s2) = (Layout::default(), Layout::default());
        let src = self.as_elem(src, dst.dtype, 0, &mut s1)?;
        let index = self.as_elem(index, DType::I64, 1, &mut s2)?;
        let mut dst_st = dst.layout.strides.to_vec();
        dst_st[dim] = 0;
        let mut l = lay(
            &src.layout.shape,
            &[&dst_st, &src.layout.strides, &index.layout.strides],
        )?;
        let (mut o, mut s, mut ix) = (dst.addr(), src.addr(), index.addr());
        let (mut step, mut nn) = (dst.layout.strides[dim] as i64, n as i64);
        let name = KernelName::of("scatter_add", dst.dtype);
        self.run(name, n, &mut args!(o, s, ix, l, step, nn))
    }
}
