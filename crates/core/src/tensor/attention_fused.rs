//! The fused SDPA backends (cuDNN, flash, memory-efficient): each one's buffers, forward and
//! backward, in PyTorch 2.11's order; the values come from the backend's `attention` kernels.
//!
//! Note [SDPA allocations]: read off PyTorch's `attention.cu`, `attention_backward.cu`,
//! `flash_api.cpp` and `cudnn/MHA.cpp` and measured with the caching allocator's history on sm90
//! (PyTorch 2.11, cuDNN 9.19): `tests/data/record_sdpa.py` records them. In short, forward:
//! cuDNN makes an int64 seed and offset (8 B each), the output in the query's stride order, the
//! float32 log-sum-exp [B, H, Tq, 1] when grad is needed, and a 256-byte workspace it frees;
//! flash makes the output like the query, the log-sum-exp [B, H, Tq], split-KV accumulators when
//! the grid would leave the GPU idle, and its RNG state (16 B) and an unused 8 B; the
//! memory-efficient kernel makes the output [B, Tq, H, Dv] (returned transposed), the
//! log-sum-exp [B, H, Tq rounded up to 32] when grad is needed and a float32 output accumulator
//! for half inputs with head dims over 128. Backward makes dQ, dK, dV and each kernel's scratch:
//! cuDNN one workspace, flash `softmax_d` and `dq_accum` (and expanded dK/dV for grouped-query
//! attention), memory-efficient `delta` and a workspace sized by its CUTLASS tile. Without grad,
//! what the forward returned beyond the output is freed at once.

use crate::autograd::{needs_grad, record_multi, SavedTensor};
use crate::device::backend::{Attention, AttentionGrads};

use super::attention::{SdpBackend, SdpaOptions};
use super::convert::empty_like_dense;
use super::{DType, Layout, Result, Tensor};

/// `x` rounded up to a multiple of `m`.
fn round_up(x: usize, m: usize) -> usize {
    x.div_ceil(m) * m
}

/// A new contiguous [B, T, H, D] tensor handed out as its [B, H, T, D] transpose.
fn empty_bthd(
    like: &Tensor,
    b: usize,
    t: usize,
    h: usize,
    d: usize,
    dtype: DType,
) -> Result<Tensor> {
    like.empty_same(&[b, t, h, d], dtype)?.transpose(1, 2)
}

/// `t` itself when its [B, T, H, D] transpose is contiguous, else such a copy (the kernels'
/// `grad_out.contiguous()` on the transposed view).
fn bthd_contiguous(t: &Tensor) -> Result<Tensor> {
    let tt = t.transpose(1, 2)?;
    if tt.is_contiguous() {
        return Ok(t.clone());
    }
    tt.contiguous_copy()?.transpose(1, 2)
}

/// A float32 buffer of `bytes` (a kernel's raw workspace, which the kernels here also use for
/// their per-row sums).
fn workspace(like: &Tensor, bytes: usize) -> Result<Tensor> {
    like.empty_same(&[bytes.div_ceil(4)], DType::F32)
}

/// The first B·H·Tq floats of `buf` as a [B, H, Tq] view.
fn rows_of(buf: &Tensor, b: usize, h: usize, tq: usize) -> Tensor {
    buf.relayout_result(Layout::contiguous(&[b, h, tq]))
}

/// What a fused forward keeps for backward, fields in the order PyTorch's node releases them.
struct Saved {
    backend: SdpBackend,
    mask: Option<SavedTensor>,
    k: SavedTensor,
    q: SavedTensor,
    v: SavedTensor,
    lse: SavedTensor,
    out: SavedTensor,
    #[allow(dead_code)] // held, never read: PyTorch's node keeps the RNG state as long as the rest
    rng: Vec<SavedTensor>,
    causal: bool,
    scale: f64,
    dropout: Option<(f64, u64)>,
}

/// A forward's results: the output, the log-sum-exp and the small tensors PyTorch returns with them.
struct Forward {
    out: Tensor,
    lse: Option<Tensor>,
    rng: Vec<Tensor>,
}

/// The fused forward of `backend`, its node when grad is needed, and the output.
pub(crate) fn fused(
    backend: SdpBackend,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mut o: SdpaOptions,
) -> Result<Tensor> {
    let scale = o.scale.unwrap_or(1.0 / (q.dims()[3] as f64).sqrt());
    let dropout = (o.dropout_p > 0.0).then(|| (o.dropout_p, super::random::next_seed(q.device())));
    // A mask the kernel pads replaces the one it was given, which goes at once.
    let mask = o
        .attn_mask
        .take()
        .map(|m| broadcast_mask(backend, &m, q, k))
        .transpose()?;
    let grad = needs_grad(&[q, k, v]) || (mask.as_ref().is_some_and(|m| needs_grad(&[m])));
    let a = Attention {
        q: q.operand(),
        k: k.operand(),
        v: v.operand(),
        mask: mask.as_ref().map(|m| m.operand()),
        causal: o.is_causal,
        scale,
        dropout,
    };
    let f = match backend {
        SdpBackend::Cudnn => cudnn_forward(&a, q, k, v, grad)?,
        SdpBackend::Flash => flash_forward(&a, q, k, v)?,
        _ => efficient_forward(&a, q, k, v, grad)?,
    };
    let Forward { out, lse, rng } = f;
    if !grad {
        // The composite returns only the output; the rest goes, first returned first.
        drop(lse);
        drop(rng);
        return Ok(out);
    }
    let lse = lse.expect("a forward with grad makes the log-sum-exp");
    let saved = Saved {
        backend,
        mask: mask.as_ref().map(SavedTensor::new).transpose()?,
        k: SavedTensor::new(k)?,
        q: SavedTensor::new(q)?,
        v: SavedTensor::new(v)?,
        lse: SavedTensor::new(&lse)?,
        out: SavedTensor::new(&out)?,
        rng: released_in_name_order(backend, &rng)?,
        causal: o.is_causal,
        scale,
        dropout,
    };
    drop((lse, rng));
    let name = match backend {
        SdpBackend::Cudnn => "ScaledDotProductCudnnAttentionBackward0",
        SdpBackend::Flash => "ScaledDotProductFlashAttentionBackward0",
        _ => "ScaledDotProductEfficientAttentionBackward0",
    };
    record_multi(
        std::slice::from_ref(&out),
        name,
        &[q, k, v],
        true,
        Box::new(move |grads, _mask| match &grads[0] {
            Some(g) => saved.backward(g),
            None => Ok(vec![None, None, None]),
        }),
    );
    Ok(out)
}

/// The RNG state as the node keeps it: PyTorch's generated nodes release their saved outputs in
/// the order of their names, so cuDNN's `philox_offset` goes before `philox_seed` (which its
/// forward returned first), and flash's `rng_state` before `unused`.
fn released_in_name_order(backend: SdpBackend, rng: &[Tensor]) -> Result<Vec<SavedTensor>> {
    let mut saved: Vec<SavedTensor> = rng.iter().map(SavedTensor::new).collect::<Result<_>>()?;
    if backend == SdpBackend::Cudnn {
        saved.reverse();
    }
    Ok(saved)
}

/// The mask as the kernels read it, broadcast to [B, H, Tq, Tk]; the memory-efficient kernel
/// first pads a mask whose rows are not 8-aligned (PyTorch's `preprocess_mask`, `pad_bias<8>`).
fn broadcast_mask(backend: SdpBackend, m: &Tensor, q: &Tensor, k: &Tensor) -> Result<Tensor> {
    let shape = [q.dims()[0], q.dims()[1], q.dims()[2], k.dims()[2]];
    let aligned =
        m.stride().iter().rev().skip(1).all(|s| s % 8 == 0) && m.stride().last() == Some(&1);
    if backend != SdpBackend::Efficient || aligned || m.dim() == 0 {
        return m.expand(&shape);
    }
    let s = *m.dims().last().unwrap_or(&1);
    let mut padded_shape = m.dims().to_vec();
    *padded_shape.last_mut().unwrap() = s + (8 - s % 8);
    let padded = m.empty_same(&padded_shape, m.dtype())?;
    let view = padded.narrow(-1, 0, s)?;
    view.backend().copy(m.operand(), view.operand())?;
    view.expand(&shape)
}

/// A dense tensor of `shape` whose dims are laid out in `t`'s stride order, dense or not (cuDNN's
/// `alloc_with_matching_layout`: a query packed with k and v gives an output in BSHD order).
fn empty_in_stride_order(t: &Tensor, shape: &[usize], dtype: DType) -> Result<Tensor> {
    let mut order: Vec<usize> = (0..t.dim()).collect();
    order.sort_by_key(|&d| std::cmp::Reverse(t.stride()[d]));
    let permuted: Vec<usize> = order.iter().map(|&d| shape[d]).collect();
    let dense = Layout::contiguous(&permuted);
    let storage = t.empty_same(&permuted, dtype)?;
    let mut strides = vec![0; t.dim()];
    for (i, &d) in order.iter().enumerate() {
        strides[d] = dense.strides[i];
    }
    Ok(storage.relayout_result(Layout {
        shape: shape.to_vec(),
        strides,
        offset: 0,
    }))
}

/// cuDNN's forward (`_cudnn_attention_forward`, `run_cudnn_SDP_fprop`).
fn cudnn_forward(a: &Attention, q: &Tensor, k: &Tensor, v: &Tensor, grad: bool) -> Result<Forward> {
    let (b, h, tq) = (q.dims()[0], q.dims()[1], q.dims()[2]);
    let seed = q.empty_same(&[], DType::I64)?;
    let offset = q.empty_same(&[], DType::I64)?;
    let out = empty_in_stride_order(q, &[b, h, tq, v.dims()[3]], q.dtype())?;
    let lse = match grad {
        true => Some(q.empty_same(&[b, h, tq, 1], DType::F32)?),
        false => None,
    };
    let ws = workspace(q, CUDNN_FORWARD_WORKSPACE)?;
    let rows = lse.as_ref().map(|l| rows_of(l, b, h, tq));
    q.backend()
        .attention(a, out.operand(), rows.as_ref().map(|r| r.operand()))?;
    drop(ws);
    let _ = k;
    Ok(Forward {
        out,
        lse,
        rng: vec![seed, offset],
    })
}

/// cuDNN's forward workspace on sm90 with cuDNN 9.19 (measured for head dim 64).
const CUDNN_FORWARD_WORKSPACE: usize = 256;

/// Flash's split-KV count (`num_splits_heuristic` as `set_params_splitkv` calls it).
fn flash_splits(q: &Tensor, tk: usize, head_dim: usize) -> usize {
    let Some(props) = q.backend().props() else {
        return 1;
    };
    let (b, h, tq) = (q.dims()[0], q.dims()[1], q.dims()[2]);
    let block_n = if head_dim <= 64 {
        256
    } else if head_dim <= 128 {
        128
    } else {
        64
    };
    let n_blocks = tk.div_ceil(block_n);
    let work = b * h * tq.div_ceil(64);
    let sms2 = 2 * props.sm_count;
    if work as f64 >= 0.8 * sms2 as f64 {
        return 1;
    }
    let max_s = 128.min(sms2).min(n_blocks);
    let eligible = |s: usize| s == 1 || n_blocks.div_ceil(s) != n_blocks.div_ceil(s - 1);
    let eff = |s: usize| {
        let waves = (work * s) as f64 / sms2 as f64;
        waves / waves.ceil()
    };
    let effs: Vec<f64> = (1..=max_s)
        .map(|s| if eligible(s) { eff(s) } else { 0.0 })
        .collect();
    let best = effs.iter().cloned().fold(0.0, f64::max);
    (1..=max_s)
        .find(|&s| eligible(s) && effs[s - 1] >= 0.85 * best)
        .unwrap_or(1)
}

/// Flash's head dim rounded as its accumulators are (to 32 up to 128, else to 64).
fn flash_rounded_dim(d: usize) -> usize {
    round_up(d, if d <= 128 { 32 } else { 64 })
}

/// Flash's forward (`mha_fwd`).
fn flash_forward(a: &Attention, q: &Tensor, k: &Tensor, v: &Tensor) -> Result<Forward> {
    let (b, h, tq, d) = (q.dims()[0], q.dims()[1], q.dims()[2], q.dims()[3]);
    let out = empty_like_dense(q, q.dtype())?;
    let lse = q.empty_same(&[b, h, tq], DType::F32)?;
    let splits = if a.dropout.is_none() {
        flash_splits(q, k.dims()[2], d)
    } else {
        1
    };
    let accums = if splits > 1 {
        let lse_accum = q.empty_same(&[splits, b, h, tq], DType::F32)?;
        let out_accum = q.empty_same(&[splits, b, h, tq, flash_rounded_dim(d)], DType::F32)?;
        Some((lse_accum, out_accum))
    } else {
        None
    };
    let mut rng_state = q.empty_same(&[2], DType::I64)?;
    let unused = q.empty_same(&[], DType::I64)?;
    if a.dropout.is_some() {
        rng_state = q.empty_same(&[2], DType::I64)?;
    }
    q.backend()
        .attention(a, out.operand(), Some(lse.operand()))?;
    drop(accums);
    let _ = v;
    Ok(Forward {
        out,
        lse: Some(lse),
        rng: vec![rng_state, unused],
    })
}

/// The memory-efficient forward (`_efficient_attention_forward`): its philox seed and offset are
/// host tensors, so no device memory.
fn efficient_forward(
    a: &Attention,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    grad: bool,
) -> Result<Forward> {
    let (b, h, tq, dv) = (q.dims()[0], q.dims()[1], q.dims()[2], v.dims()[3]);
    let out = empty_bthd(q, b, tq, h, dv, q.dtype())?;
    let lse = match grad {
        true => Some(q.empty_same(&[b, h, round_up(tq, 32)], DType::F32)?),
        false => None,
    };
    let half = q.dtype() != DType::F32;
    let accum = match half && q.dims()[3].max(dv) > 128 {
        true => Some(q.empty_same(&[b, tq, h, dv], DType::F32)?),
        false => None,
    };
    let rows = lse.as_ref().map(|l| l.narrow(2, 0, tq)).transpose()?;
    q.backend()
        .attention(a, out.operand(), rows.as_ref().map(|r| r.operand()))?;
    drop(accum);
    let _ = k;
    Ok(Forward {
        out,
        lse,
        rng: Vec::new(),
    })
}

impl Saved {
    /// dQ, dK, dV from the output's gradient, with each kernel's scratch.
    fn backward(&self, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let (q, k, v) = (self.q.get()?, self.k.get()?, self.v.get()?);
        let (out, lse) = (self.out.get()?, self.lse.get()?);
        let mask = self.mask.as_ref().map(|m| m.get()).transpose()?;
        let a = Attention {
            q: q.operand(),
            k: k.operand(),
            v: v.operand(),
            mask: mask.as_ref().map(|m| m.operand()),
            causal: self.causal,
            scale: self.scale,
            dropout: self.dropout,
        };
        let (b, h, tq) = (q.dims()[0], q.dims()[1], q.dims()[2]);
        // Flash's is [B, H, Tq], the memory-efficient one's rows are padded to 32, cuDNN's [B, H, Tq, 1].
        let lse_rows = match lse.dim() {
            3 => lse.narrow(2, 0, tq)?,
            _ => rows_of(lse, b, h, tq),
        };
        let grads = match self.backend {
            SdpBackend::Cudnn => cudnn_backward(&a, g, q, k, v, out, &lse_rows)?,
            SdpBackend::Flash => flash_backward(&a, g, q, k, v, out, &lse_rows)?,
            _ => efficient_backward(&a, g, q, k, v, out, &lse_rows)?,
        };
        Ok(grads.into_iter().map(Some).collect())
    }
}

/// The three gradients and the kernel call, given where `delta` lives.
#[allow(clippy::too_many_arguments)]
fn run_backward(
    a: &Attention,
    g: &Tensor,
    out: &Tensor,
    lse: &Tensor,
    delta: &Tensor,
    dq: &Tensor,
    dk: &Tensor,
    dv: &Tensor,
) -> Result<()> {
    let grads = AttentionGrads {
        dout: g.operand(),
        delta: delta.operand(),
        dq: dq.operand(),
        dk: dk.operand(),
        dv: dv.operand(),
    };
    g.backend()
        .attention_backward(a, out.operand(), lse.operand(), grads)
}

/// cuDNN's backward (`_cudnn_attention_backward`): the gradients in their inputs' order, then one
/// workspace (measured on sm90 with cuDNN 9.19: B·H·Tq·D·4 + B·H·Tq·4 + 256 bytes, and with
/// grouped key/value heads 2·B·Hk·Tk·D·4 more).
fn cudnn_backward(
    a: &Attention,
    g: &Tensor,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    out: &Tensor,
    lse: &Tensor,
) -> Result<Vec<Tensor>> {
    let (b, h, tq, d) = (q.dims()[0], q.dims()[1], q.dims()[2], q.dims()[3]);
    // In each input's stride order even when packed (measured: a q split from one projection
    // gets a BSHD gradient, which the split's backward then concatenates without a copy).
    let dq = empty_in_stride_order(q, q.dims(), q.dtype())?;
    let dk = empty_in_stride_order(k, k.dims(), k.dtype())?;
    let dv = empty_in_stride_order(v, v.dims(), v.dtype())?;
    let dense_g;
    let g = if *g.stride().last().unwrap_or(&1) != 1 {
        dense_g = empty_like_dense(out, g.dtype())?;
        dense_g.backend().copy(g.operand(), dense_g.operand())?;
        &dense_g
    } else {
        g
    };
    let (hk, tk) = (k.dims()[1], k.dims()[2]);
    // With fewer key/value heads than query heads (enable_gqa), the workspace also holds float32
    // dK and dV at the key/value heads' size, as the heads sharing them add into them: measured
    // on sm90 with cuDNN 9.19 for B2, H4, Hk2, T64, D32 (tests/parity/py_zoo_llama_lora.py).
    let gqa = if hk < h { 2 * b * hk * tk * d * 4 } else { 0 };
    let ws = workspace(q, b * h * tq * d * 4 + b * h * tq * 4 + 256 + gqa)?;
    run_backward(a, g, out, lse, &rows_of(&ws, b, h, tq), &dq, &dk, &dv)?;
    drop(ws);
    Ok(vec![dq, dk, dv])
}

/// Flash's backward (`_flash_attention_backward`, `mha_bwd`).
fn flash_backward(
    a: &Attention,
    g: &Tensor,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    out: &Tensor,
    lse: &Tensor,
) -> Result<Vec<Tensor>> {
    let (b, h, tq, d) = (q.dims()[0], q.dims()[1], q.dims()[2], q.dims()[3]);
    let g = bthd_contiguous(g)?;
    let out = bthd_contiguous(out)?;
    let dq = empty_like_dense(q, q.dtype())?;
    let dk = empty_like_dense(k, k.dtype())?;
    let dv = empty_like_dense(v, v.dtype())?;
    let softmax_d = q.empty_same(&[b, h, round_up(tq, 128)], DType::F32)?;
    let dq_accum = q.empty_same(&[b, round_up(tq, 128), h, flash_rounded_dim(d)], DType::F32)?;
    let expanded = if k.dims()[1] != h {
        let tk = k.dims()[2];
        Some((
            q.empty_same(&[b, tk, h, d], k.dtype())?,
            q.empty_same(&[b, tk, h, d], v.dtype())?,
        ))
    } else {
        None
    };
    let delta = softmax_d.narrow(2, 0, tq)?;
    run_backward(a, &g, &out, lse, &delta, &dq, &dk, &dv)?;
    if let Some((dk_expanded, dv_expanded)) = expanded {
        drop(dv_expanded);
        drop(dk_expanded);
    }
    drop(dq_accum);
    drop((delta, softmax_d));
    drop(out);
    drop(g);
    Ok(vec![dq, dk, dv])
}

/// The memory-efficient backward (`_efficient_attention_backward`).
fn efficient_backward(
    a: &Attention,
    g: &Tensor,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    out: &Tensor,
    lse: &Tensor,
) -> Result<Vec<Tensor>> {
    let (b, h, tq, d) = (q.dims()[0], q.dims()[1], q.dims()[2], q.dims()[3]);
    let (tk, dv_dim) = (k.dims()[2], v.dims()[3]);
    let g = bthd_contiguous(g)?;
    let dq = empty_bthd(q, b, tq, h, d, q.dtype())?;
    let dk = empty_bthd(q, b, tk, h, d, k.dtype())?;
    let dv = empty_bthd(q, b, tk, h, dv_dim, v.dtype())?;
    let delta = if q.dtype() == DType::F32 {
        // `(grad_out.float() * out.float()).sum(-1).transpose(-2, -1).contiguous()`.
        let _off = crate::autograd::no_grad();
        let prod = g.transpose(1, 2)?.mul(&out.transpose(1, 2)?)?;
        let sum = prod.sum(Some(3), false)?;
        let delta = sum.transpose(1, 2)?.contiguous()?;
        drop(sum);
        drop(prod);
        delta
    } else {
        q.empty_same(&[b, h, tq], DType::F32)?
    };
    let ws = workspace(
        q,
        efficient_workspace(q.dtype(), [b, h, tq, tk, d, dv_dim], a.dropout.is_some()),
    )?;
    run_backward(a, &g, out, lse, &delta, &dq, &dk, &dv)?;
    drop(delta);
    drop(ws);
    drop(g);
    Ok(vec![dq, dk, dv])
}

/// One CUTLASS backward kernel of the memory-efficient attention: its query and key tiles, the
/// largest head dim it takes and whether it needs sequence lengths that are whole tiles.
struct Tile {
    bi: usize,
    bj: usize,
    max_k: usize,
    seq_aligned: bool,
}

const fn tile(bi: usize, bj: usize, max_k: usize, seq_aligned: bool) -> Tile {
    Tile {
        bi,
        bj,
        max_k,
        seq_aligned,
    }
}

/// PyTorch's `dispatch_cutlassB_*_sm80` lists, first match wins (sm80 kernels serve sm90).
const HALF_TILES: &[Tile] = &[
    tile(64, 64, 32, true),
    tile(64, 64, 32, false),
    tile(64, 64, 64, true),
    tile(64, 64, 64, false),
    tile(128, 128, 128, true),
    tile(128, 128, 128, false),
    tile(64, 64, 128, true),
    tile(64, 64, 128, false),
    tile(128, 64, 65536, false),
    tile(64, 64, 65536, false),
];
const HALF_DROPOUT_TILES: &[Tile] = &[
    tile(64, 64, 32, false),
    tile(64, 64, 64, false),
    tile(128, 128, 128, false),
    tile(64, 64, 128, false),
    tile(128, 64, 65536, false),
    tile(64, 64, 65536, false),
];
const F32_TILES: &[Tile] = &[
    tile(64, 64, 32, false),
    tile(64, 64, 64, false),
    tile(128, 64, 128, false),
    tile(64, 64, 128, false),
    tile(128, 64, 65536, false),
    tile(64, 64, 65536, false),
];

/// The memory-efficient backward's workspace in bytes (`Params::workspace_size` of the kernel
/// PyTorch dispatches to): dQ's partial sums always, dK/dV's per key split when the tile cannot
/// keep them in registers (half inputs with a head dim beyond the tile).
fn efficient_workspace(dtype: DType, [b, h, tq, tk, d, dv]: [usize; 6], dropout: bool) -> usize {
    let half = dtype != DType::F32;
    let tiles = match (half, dropout) {
        (true, false) => HALF_TILES,
        (true, true) => HALF_DROPOUT_TILES,
        _ => F32_TILES,
    };
    let width = d.max(dv);
    let t = tiles
        .iter()
        .find(|t| t.max_k >= width && (!t.seq_aligned || (tq % t.bi == 0 && tk % t.bj == 0)))
        .unwrap_or(&tiles[tiles.len() - 1]);
    let in_registers = half && t.max_k <= t.bi;
    let accum_kv = !in_registers && half;
    let mut splits = tk.div_ceil(t.bj);
    if b * h >= 256 && tk <= 2 * t.bj {
        splits = 1;
    }
    if accum_kv {
        splits = splits.min(200 / (b * h).max(1)).max(1);
    }
    let gq = tq.div_ceil(t.bi) * d.div_ceil(t.bj) * (4 + t.bi * t.bj);
    let (gk, gv) = match accum_kv {
        true => (
            splits * t.bj * round_up(d, t.bi),
            splits * t.bj * round_up(dv, t.bi),
        ),
        false => (0, 0),
    };
    b * h * round_up(gk + gv + gq, 4) * 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn efficient_workspace_matches_pytorch_on_sm90() {
        // Measured with PyTorch 2.11 on sm90: B2 H8 T1000.
        assert_eq!(
            efficient_workspace(DType::BF16, [2, 8, 1000, 1000, 64, 64], false),
            4198400
        );
        assert_eq!(
            efficient_workspace(DType::F32, [2, 8, 1000, 1000, 64, 64], false),
            4198400
        );
        assert_eq!(
            efficient_workspace(DType::BF16, [2, 8, 1000, 1000, 160, 160], false),
            37754880
        );
    }
}
