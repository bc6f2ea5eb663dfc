//! Layer, RMS and group norm and dropout on the GPU: launches of the kernels in `kernels/norm.cu`.

use std::ffi::c_void;

use super::error::{CudaError, CudaResult};
use super::kernel_name::KernelName;
use super::layout::OperandExt;
use super::module::{launch, BLOCK};
use super::ops::Gpu;
use super::rows::RowPlan;
use crate::device::backend::{GroupNorm, GroupNormGrads, LayerNormGrads, Operand};
use torchlet_alloc::types::Layout;

/// Pointers to each argument's value, as cuLaunchKernel wants them.
macro_rules! args {
    ($($v:ident),*) => { [$(&mut $v as *mut _ as *mut c_void),*] };
}

/// A device address, or null for an absent optional operand.
pub(super) fn addr_or_null(v: Option<&Operand>) -> u64 {
    v.map_or(0, |v| v.addr())
}

impl Gpu<'_> {
    pub(super) fn float_kernel(&self, what: &'static str, v: &Operand) -> CudaResult<KernelName> {
        if !v.dtype.is_float() {
            return Err(CudaError::Unsupported(format!(
                "\"{what}\" not implemented for '{}'",
                v.dtype.scalar_type_name()
            )));
        }
        Ok(KernelName::of(what, v.dtype))
    }

    /// Layer norm of the rows of the contiguous `x` into `y`, with per-row `mean` and `rstd`.
    #[allow(clippy::too_many_arguments)]
    pub fn layer_norm(
        &self,
        x: &Operand,
        w: Option<&Operand>,
        b: Option<&Operand>,
        eps: f64,
        y: &Operand,
        mean: Option<&Operand>,
        rstd: &Operand,
    ) -> CudaResult<()> {
        let name = self.float_kernel("layer_norm", x)?;
        let rows = rstd.numel();
        let n = x.numel().checked_div(rows).unwrap_or(0);
        if rows == 0 || n == 0 {
            return Ok(());
        }
        let (mut yp, mut mp, mut rp, mut xp) =
            (y.addr(), addr_or_null(mean), rstd.addr(), x.addr());
        let (mut wp, mut bp, mut rr, mut nn, mut e) =
            (addr_or_null(w), addr_or_null(b), rows as i64, n as i64, eps);
        let addrs: Vec<u64> = [Some(xp), Some(yp), w.map(|v| v.addr()), b.map(|v| v.addr())]
            .into_iter()
            .flatten()
            .collect();
        if let Some(plan) = RowPlan::new(n, x.dtype, &addrs, 8) {
            let f = self
                .kernels
                .function(self.ctx, plan.kernel("layer_norm_rows", x.dtype))?;
            let mut group = plan.group as i32;
            let params = &mut args!(yp, mp, rp, xp, wp, bp, rr, nn, e, group);
            return launch(self.ctx, f, (plan.grid(rows), 1, 1), plan.block, params);
        }
        let f = self.kernels.function(self.ctx, name)?;
        let params = &mut args!(yp, mp, rp, xp, wp, bp, rr, nn, e);
        launch(self.ctx, f, (rows.min(65535) as u32, 1, 1), BLOCK, params)
    }

    /// Layer norm's backward: the input's gradient per row, then the weight's and bias's sums.
    pub fn layer_norm_backward(
        &self,
        dy: &Operand,
        x: &Operand,
        mean: Option<&Operand>,
        rstd: &Operand,
        w: Option<&Operand>,
        grads: &LayerNormGrads,
    ) -> CudaResult<()> {
        let rows = rstd.numel();
        let n = x.numel().checked_div(rows).unwrap_or(0);
        if rows == 0 || n == 0 {
            return Ok(());
        }
        let (mut gp, mut xp, mut mp, mut rp) =
            (dy.addr(), x.addr(), addr_or_null(mean), rstd.addr());
        let (mut rr, mut nn) = (rows as i64, n as i64);
        if let Some(dx) = &grads.dx {
            let f = self
                .kernels
                .function(self.ctx, self.float_kernel("layer_norm_dx", x)?)?;
            let (mut dxp, mut wp) = (dx.addr(), addr_or_null(w));
            let params = &mut args!(dxp, gp, xp, mp, rp, wp, rr, nn);
            launch(self.ctx, f, (rows.min(65535) as u32, 1, 1), BLOCK, params)?;
        }
        if grads.dweight.is_none() && grads.dbias.is_none() {
            return Ok(());
        }
        let parts = grads.parts.max(1);
        let f = self
            .kernels
            .function(self.ctx, self.float_kernel("layer_norm_dwb", x)?)?;
        let (mut dwp, mut dbp) = (
            addr_or_null(grads.dweight.as_ref()),
            addr_or_null(grads.dbias.as_ref()),
        );
        let (mut pp, mut per) = (parts as i64, rows.div_ceil(parts) as i64);
        let params = &mut args!(dwp, dbp, gp, xp, mp, rp, rr, nn, pp, per);
        launch(self.ctx, f, (self.grid(parts * n), 1, 1), BLOCK, params)
    }

    /// Group norm of the contiguous [N, C, L] input: one block per (sample, group).
    pub fn group_norm(
        &self,
        gn: &GroupNorm,
        y: &Operand,
        mean: &Operand,
        rstd: &Operand,
    ) -> CudaResult<()> {
        let (n, c, l) = group_sizes(gn);
        if n * c * l == 0 {
            return Ok(());
        }
        let f = self
            .kernels
            .function(self.ctx, self.float_kernel("group_norm", &gn.x)?)?;
        let (mut yp, mut mp, mut rp, mut xp) = (y.addr(), mean.addr(), rstd.addr(), gn.x.addr());
        let (mut wp, mut bp) = (
            addr_or_null(gn.weight.as_ref()),
            addr_or_null(gn.bias.as_ref()),
        );
        let rows = n * gn.groups;
        let (mut rr, mut g, mut d, mut ll, mut e) = (
            rows as i64,
            gn.groups as i64,
            (c / gn.groups) as i64,
            l as i64,
            gn.eps,
        );
        let params = &mut args!(yp, mp, rp, xp, wp, bp, rr, g, d, ll, e);
        launch(self.ctx, f, (rows.min(65535) as u32, 1, 1), BLOCK, params)
    }

    /// Group norm's backward: the input's gradient per (sample, group), then per channel the
    /// weight's and bias's.
    pub fn group_norm_backward(
        &self,
        gn: &GroupNorm,
        mean: &Operand,
        rstd: &Operand,
        grads: &GroupNormGrads,
    ) -> CudaResult<()> {
        let (n, c, l) = group_sizes(gn);
        if n * c * l == 0 {
            return Ok(());
        }
        let (mut gp, mut xp, mut mp, mut rp) =
            (grads.dy.addr(), gn.x.addr(), mean.addr(), rstd.addr());
        let (mut g, mut ll) = (gn.groups as i64, l as i64);
        if let Some(dx) = &grads.dx {
            let f = self
                .kernels
                .function(self.ctx, self.float_kernel("group_norm_dx", &gn.x)?)?;
            let rows = n * gn.groups;
            let (mut dxp, mut wp) = (dx.addr(), addr_or_null(gn.weight.as_ref()));
            let (mut rr, mut d) = (rows as i64, (c / gn.groups) as i64);
            let params = &mut args!(dxp, gp, xp, mp, rp, wp, rr, g, d, ll);
            launch(self.ctx, f, (rows.min(65535) as u32, 1, 1), BLOCK, params)?;
        }
        if grads.dweight.is_none() && grads.dbias.is_none() {
            return Ok(());
        }
        let f = self
            .kernels
            .function(self.ctx, self.float_kernel("group_norm_dwb", &gn.x)?)?;
        let (mut dwp, mut dbp) = (
            addr_or_null(grads.dweight.as_ref()),
            addr_or_null(grads.dbias.as_ref()),
        );
        let (mut nn, mut cc) = (n as i64, c as i64);
        let params = &mut args!(dwp, dbp, gp, xp, mp, rp, nn, cc, g, ll);
        launch(self.ctx, f, (self.grid(c), 1, 1), BLOCK, params)
    }

    /// Dropout of `src` into the contiguous `out` and bool `mask`.
    pub fn dropout(
        &self,
        src: &Operand,
        p: f64,
        seed: u64,
        mask: &Operand,
        out: &Operand,
    ) -> CudaResult<()> {
        let n = out.numel();
        if n == 0 {
            return Ok(());
        }
        let name = self.float_kernel("dropout", out)?;
        let mut st = Layout::default();
        let src = if src.is_contiguous() {
            *src
        } else {
            self.dense_copy(src, 0, &mut st)?
        };
        let (mut o, mut m, mut x, mut pp, mut s, mut nn) =
            (out.addr(), mask.addr(), src.addr(), p, seed, n as i64);
        let f = self.kernels.function(self.ctx, name)?;
        let params = &mut args!(o, m, x, pp, s, nn);
        launch(self.ctx, f, (self.grid(n), 1, 1), BLOCK, params)
    }

    /// `out = grad * mask * scale` into the contiguous `out`.
    pub fn dropout_backward(
        &self,
        grad: &Operand,
        mask: &Operand,
        scale: f64,
        out: &Operand,
    ) -> CudaResult<()> {
        let n = out.numel();
        if n == 0 {
            return Ok(());
        }
        let name = self.float_kernel("dropout_bw", out)?;
        let (mut sg, mut sm) = (Layout::default(), Layout::default());
        let grad = if grad.is_contiguous() {
            *grad
        } else {
            self.dense_copy(grad, 0, &mut sg)?
        };
        let mask = if mask.is_contiguous() {
            *mask
        } else {
            self.dense_copy(mask, 1, &mut sm)?
        };
        let (mut o, mut g, mut m, mut sc, mut nn) =
            (out.addr(), grad.addr(), mask.addr(), scale, n as i64);
        let f = self.kernels.function(self.ctx, name)?;
        let params = &mut args!(o, g, m, sc, nn);
        launch(self.ctx, f, (self.grid(n), 1, 1), BLOCK, params)
    }
}

/// (N, C, L) of a group norm's input.
fn group_sizes(gn: &GroupNorm) -> (usize, usize, usize) {
    let s = &gn.x.layout.shape;
    (s[0], s[1], s[2])
}
