//! Fused attention on the GPU: launches of the kernels in `kernels/attention.cu`.

use std::ffi::c_void;

use super::error::CudaResult;
use super::layout::OperandExt;
use super::module::{grid_for, launch, BLOCK};
use super::ops::Gpu;
use crate::device::backend::{Attention, AttentionGrads, Operand};

/// The kernels' `struct Attn`: sizes, every operand's strides, the mask's kind and the options.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct AttnArgs {
    sizes: [i64; 7],
    sq: [i64; 4],
    sk: [i64; 4],
    sv: [i64; 4],
    so: [i64; 4],
    sm: [i64; 4],
    sg: [i64; 4],
    sdq: [i64; 4],
    sdk: [i64; 4],
    sdv: [i64; 4],
    slse: [i64; 3],
    sdl: [i64; 3],
    mask_kind: i32,
    causal: i32,
    scale: f64,
    dropout_p: f64,
    seed: u64,
}

/// The first `N` element strides of a view.
fn strides<const N: usize>(v: &Operand) -> [i64; N] {
    std::array::from_fn(|d| v.layout.strides[d] as i64)
}

impl AttnArgs {
    fn new(a: &Attention, out: &Operand, lse: Option<&Operand>) -> Self {
        let (q, k, v) = (&a.q.layout.shape, &a.k.layout.shape, &a.v.layout.shape);
        let (mask_kind, sm) = match &a.mask {
            None => (0, [0; 4]),
            Some(m) if m.dtype.is_float() => (2, strides(m)),
            Some(m) => (1, strides(m)),
        };
        let (p, seed) = a.dropout.unwrap_or((0.0, 0));
        AttnArgs {
            sizes: [q[0], q[1], k[1], q[2], k[2], q[3], v[3]].map(|d| d as i64),
            sq: strides(&a.q),
            sk: strides(&a.k),
            sv: strides(&a.v),
            so: strides(out),
            sm,
            slse: lse.map_or([0; 3], strides),
            mask_kind,
            causal: a.causal as i32,
            scale: a.scale,
            dropout_p: p,
            seed,
            ..Default::default()
        }
    }

    fn rows(&self) -> usize {
        (self.sizes[0] * self.sizes[1] * self.sizes[3]) as usize
    }

    fn key_rows(&self) -> usize {
        (self.sizes[0] * self.sizes[2] * self.sizes[4]) as usize
    }
}

/// Pointers to each argument's value, as cuLaunchKernel wants them.
macro_rules! args {
    ($($v:ident),*) => { [$(&mut $v as *mut _ as *mut c_void),*] };
}

impl Gpu<'_> {
    fn attention_launch(
        &self,
        stem: &'static str,
        items: usize,
        params: &mut [*mut c_void],
        a: &Attention,
    ) -> CudaResult<()> {
        if items == 0 {
            return Ok(());
        }
        let name = self.float_kernel(stem, &a.q)?;
        let f = self.kernels.function(self.ctx, name)?;
        launch(
            self.ctx,
            f,
            (grid_for(items, u32::MAX), 1, 1),
            BLOCK,
            params,
        )
    }

    /// `out` and `lse` of a fused attention.
    pub fn attention(&self, a: &Attention, out: &Operand, lse: Option<&Operand>) -> CudaResult<()> {
        let mut args = AttnArgs::new(a, out, lse);
        let rows = args.rows();
        let mut l = lse.map_or(0, |l| l.addr());
        let (mut o, mut q, mut k, mut v) = (out.addr(), a.q.addr(), a.k.addr(), a.v.addr());
        let mut m = a.mask.as_ref().map_or(0, |m| m.addr());
        self.attention_launch("attn_fwd", rows, &mut args!(args, o, l, q, k, v, m), a)
    }

    /// The gradients of a fused attention: `delta`, then dQ, then dK and dV.
    pub fn attention_backward(
        &self,
        a: &Attention,
        out: &Operand,
        lse: &Operand,
        g: &AttentionGrads,
    ) -> CudaResult<()> {
        let mut args = AttnArgs::new(a, out, Some(lse));
        (args.sg, args.sdq, args.sdk, args.sdv) = (
            strides(&g.dout),
            strides(&g.dq),
            strides(&g.dk),
            strides(&g.dv),
        );
        args.sdl = strides(&g.delta);
        let (rows, key_rows) = (args.rows(), args.key_rows());
        let (mut o, mut l, mut q, mut k, mut v) =
            (out.addr(), lse.addr(), a.q.addr(), a.k.addr(), a.v.addr());
        let mut m = a.mask.as_ref().map_or(0, |m| m.addr());
        let (mut go, mut dl, mut dq, mut dk, mut dv) = (
            g.dout.addr(),
            g.delta.addr(),
            g.dq.addr(),
            g.dk.addr(),
            g.dv.addr(),
        );
        self.attention_launch("attn_delta", rows, &mut args!(args, dl, go, o), a)?;
        self.attention_launch(
            "attn_dq",
            rows,
            &mut args!(args, dq, go, l, dl, q, k, v, m),
            a,
        )?;
        self.attention_launch(
            "attn_dkv",
            key_rows,
            &mut args!(args, dk, dv, go, l, dl, q, k, v, m),
            a,
        )
    }
}
