//! Convolution, pooling, batch norm and 2-D resizing on the GPU: launches of the kernels in
//! `kernels/conv.cu`.

use std::ffi::c_void;

use super::error::CudaResult;
use super::layout::OperandExt;
use super::module::{grid_for, launch, BLOCK};
use super::norm::addr_or_null as addr;
use super::ops::Gpu;
use crate::device::backend::{
    BatchNorm, BatchNormGrads, Conv, Operand, Pool, PoolKind, Upsample, UpsampleMode,
};
use torchlet_alloc::types::DType;

/// Pointers to each argument's value, as cuLaunchKernel wants them.
macro_rules! args {
    ($($v:ident),*) => { [$(&mut $v as *mut _ as *mut c_void),*] };
}

/// The first `N` element strides of a view (zeros for an absent one).
fn strides<const N: usize>(v: Option<&Operand>) -> [i64; N] {
    std::array::from_fn(|d| v.map_or(0, |v| v.layout.strides[d] as i64))
}

/// The kernels' `struct Cnv`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct ConvArgs {
    sizes: [i64; 5],
    input: [i64; 3],
    kernel: [i64; 3],
    output: [i64; 3],
    sx: [i64; 5],
    sw: [i64; 5],
    so: [i64; 5],
    sdx: [i64; 5],
    sdw: [i64; 5],
    stride: [i64; 3],
    pad: [i64; 3],
    dil: [i64; 3],
    sb: i64,
}

impl ConvArgs {
    fn new(c: &Conv, out: &Operand) -> Self {
        let (x, w, o) = (&c.x.layout.shape, &c.w.layout.shape, &out.layout.shape);
        let spatial = |d: &[usize]| [d[2], d[3], d[4]].map(|v| v as i64);
        ConvArgs {
            sizes: [x[0], x[1], w[0], w[1], w[0] / c.groups].map(|d| d as i64),
            input: spatial(x),
            kernel: spatial(w),
            output: spatial(o),
            sx: strides(Some(&c.x)),
            sw: strides(Some(&c.w)),
            so: strides(Some(out)),
            stride: c.stride.map(|v| v as i64),
            pad: c.padding.map(|v| v as i64),
            dil: c.dilation.map(|v| v as i64),
            ..Default::default()
        }
    }
}

/// The kernels' `struct Pl`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct PoolArgs {
    sizes: [i64; 6],
    sx: [i64; 4],
    so: [i64; 4],
    si: [i64; 4],
    sdx: [i64; 4],
    kernel: [i64; 2],
    stride: [i64; 2],
    pad: [i64; 2],
    dil: [i64; 2],
    kind: i32,
    count_include_pad: i32,
    divisor: i64,
}

impl PoolArgs {
    fn new(p: &Pool, out: &Operand, indices: Option<&Operand>) -> Self {
        let (x, o) = (&p.x.layout.shape, &out.layout.shape);
        let (kind, include, divisor) = match p.kind {
            PoolKind::Max => (0, 0, 0),
            PoolKind::Avg {
                count_include_pad,
                divisor,
            } => (1, count_include_pad as i32, divisor.unwrap_or(0)),
            PoolKind::AdaptiveAvg => (2, 0, 0),
        };
        PoolArgs {
            sizes: [x[0], x[1], x[2], x[3], o[2], o[3]].map(|d| d as i64),
            sx: strides(Some(&p.x)),
            so: strides(Some(out)),
            si: strides(indices),
            kernel: p.kernel.map(|v| v as i64),
            stride: p.stride.map(|v| v as i64),
            pad: p.padding.map(|v| v as i64),
            dil: p.dilation.map(|v| v as i64),
            kind,
            count_include_pad: include,
            divisor,
            ..Default::default()
        }
    }
}

/// The kernels' `struct Up`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct UpArgs {
    sizes: [i64; 6],
    sx: [i64; 4],
    so: [i64; 4],
    ratio: [f32; 2],
    mode: i32,
}

impl UpArgs {
    fn new(u: &Upsample, out: &Operand) -> Self {
        let (x, o) = (&u.x.layout.shape, &out.layout.shape);
        UpArgs {
            sizes: [x[0], x[1], x[2], x[3], o[2], o[3]].map(|d| d as i64),
            sx: strides(Some(&u.x)),
            so: strides(Some(out)),
            ratio: u.ratio,
            mode: match u.mode {
                UpsampleMode::Nearest => 0,
                UpsampleMode::Bilinear { align_corners } => 1 + align_corners as i32,
            },
        }
    }
}

/// The kernels' `struct Bn`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct BnArgs {
    sizes: [i64; 3],
    sx: [i64; 3],
    sy: [i64; 3],
    sdx: [i64; 3],
    eps: f64,
    momentum: f64,
    training: i32,
    running: i32,
    pf: i32,
}

impl BnArgs {
    fn new(bn: &BatchNorm, y: &Operand, params: DType) -> Self {
        let x = &bn.x.layout.shape;
        BnArgs {
            sizes: [x[0], x[1], x[2]].map(|d| d as i64),
            sx: strides(Some(&bn.x)),
            sy: strides(Some(y)),
            eps: bn.eps,
            training: bn.training as i32,
            pf: (params == DType::F32 && bn.x.dtype != DType::F32) as i32,
            ..Default::default()
        }
    }
}

/// The dtype of batch norm's weight, bias and running statistics (the input's when none).
fn param_dtype(bn: &BatchNorm, stats: Option<&Operand>) -> DType {
    bn.weight
        .or(bn.bias)
        .or(stats.copied())
        .map_or(bn.x.dtype, |p| p.dtype)
}

impl Gpu<'_> {
    fn conv_launch(
        &self,
        stem: &'static str,
        items: usize,
        like: &Operand,
        params: &mut [*mut c_void],
    ) -> CudaResult<()> {
        if items == 0 {
            return Ok(());
        }
        let name = self.float_kernel(stem, like)?;
        let f = self.kernels.function(self.ctx, name)?;
        launch(
            self.ctx,
            f,
            (grid_for(items, u32::MAX), 1, 1),
            BLOCK,
            params,
        )
    }

    /// A convolution's output, with its bias.
    pub fn conv(&self, c: &Conv, bias: Option<&Operand>, out: &Operand) -> CudaResult<()> {
        let mut a = ConvArgs::new(c, out);
        a.sb = bias.map_or(0, |b| b.layout.strides[0] as i64);
        let (mut o, mut x, mut w, mut b) = (out.addr(), c.x.addr(), c.w.addr(), addr(bias));
        self.conv_launch("conv_fwd", out.numel(), &c.x, &mut args!(a, o, x, w, b))
    }

    /// A convolution's input and weight gradients, each when given.
    pub fn conv_backward(
        &self,
        c: &Conv,
        dout: &Operand,
        dx: Option<&Operand>,
        dw: Option<&Operand>,
    ) -> CudaResult<()> {
        let mut a = ConvArgs::new(c, dout);
        (a.sdx, a.sdw) = (strides(dx), strides(dw));
        let (mut g, mut x, mut w) = (dout.addr(), c.x.addr(), c.w.addr());
        if let Some(dx) = dx {
            let mut d = dx.addr();
            self.conv_launch("conv_dx", dx.numel(), &c.x, &mut args!(a, d, g, w))?;
        }
        if let Some(dw) = dw {
            let mut d = dw.addr();
            self.conv_launch("conv_dw", dw.numel(), &c.x, &mut args!(a, d, g, x))?;
        }
        Ok(())
    }

    /// A pooling's output and (max pooling) indices.
    pub fn pool2d(&self, p: &Pool, out: &Operand, indices: Option<&Operand>) -> CudaResult<()> {
        let mut a = PoolArgs::new(p, out, indices);
        let (mut o, mut i, mut x) = (out.addr(), addr(indices), p.x.addr());
        self.conv_launch("pool_fwd", out.numel(), &p.x, &mut args!(a, o, i, x))
    }

    /// A pooling's input gradient.
    pub fn pool2d_backward(
        &self,
        p: &Pool,
        dout: &Operand,
        indices: Option<&Operand>,
        dx: &Operand,
    ) -> CudaResult<()> {
        let mut a = PoolArgs::new(p, dout, indices);
        a.sdx = strides(Some(dx));
        let planes = p.x.layout.shape[0] * p.x.layout.shape[1];
        let (mut d, mut g, mut i) = (dx.addr(), dout.addr(), addr(indices));
        self.conv_launch("pool_bwd", planes, &p.x, &mut args!(a, d, g, i))
    }

    /// A 2-D resize of `u.x` into `out`.
    pub fn upsample2d(&self, u: &Upsample, out: &Operand) -> CudaResult<()> {
        let mut a = UpArgs::new(u, out);
        let (mut o, mut x) = (out.addr(), u.x.addr());
        self.conv_launch("upsample_fwd", out.numel(), &u.x, &mut args!(a, o, x))
    }

    /// A resize's input gradient, gathered per input element (`u.x` is `dx`'s view).
    pub fn upsample2d_backward(
        &self,
        u: &Upsample,
        dout: &Operand,
        dx: &Operand,
    ) -> CudaResult<()> {
        let mut a = UpArgs::new(u, dout);
        let (mut d, mut g) = (dx.addr(), dout.addr());
        self.conv_launch("upsample_bwd", dx.numel(), &u.x, &mut args!(a, d, g))
    }

    /// Batch norm's output; in training its saved statistics and the running ones' update.
    pub fn batch_norm(
        &self,
        bn: &BatchNorm,
        running: Option<(&Operand, &Operand, f64)>,
        mean: &Operand,
        invstd: &Operand,
        y: &Operand,
    ) -> CudaResult<()> {
        let stats = if bn.training {
            running.map(|r| r.0)
        } else {
            Some(mean)
        };
        let mut a = BnArgs::new(bn, y, param_dtype(bn, stats));
        let (mut rm, mut rv) = match (bn.training, running) {
            (true, Some((m, v, momentum))) => {
                (a.running, a.momentum) = (1, momentum);
                (m.addr(), v.addr())
            }
            (true, None) => (0, 0),
            (false, _) => (mean.addr(), invstd.addr()),
        };
        let (mut m, mut s) = if bn.training {
            (mean.addr(), invstd.addr())
        } else {
            (0, 0)
        };
        let (mut yy, mut x) = (y.addr(), bn.x.addr());
        let (mut w, mut b) = (addr(bn.weight.as_ref()), addr(bn.bias.as_ref()));
        let channels = bn.x.layout.shape[1];
        self.conv_launch(
            "bn_fwd",
            channels,
            &bn.x,
            &mut args!(a, yy, m, s, rm, rv, x, w, b),
        )
    }

    /// Batch norm's gradients, each when asked for.
    pub fn batch_norm_backward(
        &self,
        bn: &BatchNorm,
        mean: &Operand,
        invstd: &Operand,
        g: &BatchNormGrads,
    ) -> CudaResult<()> {
        let mut a = BnArgs::new(bn, &g.dy, param_dtype(bn, Some(mean)));
        a.sdx = strides(g.dx.as_ref());
        let (mut m, mut s, mut rm, mut rv) = if bn.training {
            (mean.addr(), invstd.addr(), 0, 0)
        } else {
            (0, 0, mean.addr(), invstd.addr())
        };
        let (mut dx, mut dw, mut db) = (
            addr(g.dx.as_ref()),
            addr(g.dweight.as_ref()),
            addr(g.dbias.as_ref()),
        );
        let (mut x, mut w, mut dy) = (bn.x.addr(), addr(bn.weight.as_ref()), g.dy.addr());
        let channels = bn.x.layout.shape[1];
        self.conv_launch(
            "bn_bwd",
            channels,
            &bn.x,
            &mut args!(a, dx, dw, db, m, s, rm, rv, x, w, dy),
        )
    }
}
