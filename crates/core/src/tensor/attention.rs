//! `scaled_dot_product_attention`: PyTorch's composite, which picks a backend as PyTorch 2.11 does
//! on a Hopper GPU (cuDNN, flash, memory-efficient, math) and converts a bool mask; the fused
//! backends are in `attention_fused`, the math one in `attention_math`.
//!
//! Note [SDPA backend choice]: PyTorch 2.11's `select_sdp_backend` walks its priority order and
//! takes the first backend that accepts the inputs. On sm90 with the cuDNN the 2.11 wheel bundles
//! (9.19 > 9.15) the first SDPA call reorders it to cuDNN, flash, memory-efficient, math
//! (`cuda/sdp_utils.cpp`, `check_prefer_cudnn_attention`), so float16/bfloat16 attention with
//! head dims up to 128 runs on cuDNN, not flash. Measured on an H100 (sm90, cuDNN 9.19): an
//! unforced bfloat16 call's node is `ScaledDotProductCudnnAttentionBackward0`. The acceptance
//! rules below are each backend's `can_use_*` checks that matter for dense 4-D inputs.

use std::sync::atomic::{AtomicU8, Ordering};

use super::{DType, Result, Scalar, Tensor, TensorError, TensorOptions};

/// The implementations PyTorch chooses among (`torch.nn.attention.SDPBackend`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SdpBackend {
    /// FlashAttention-2: float16/bfloat16, no mask, head dim up to 256.
    Flash,
    /// xFormers' memory-efficient kernel: float32 too, with a mask.
    Efficient,
    /// cuDNN's fused attention: float16/bfloat16, head dims up to 128, masks allowed.
    Cudnn,
    /// The composite of matmul, softmax and matmul.
    Math,
}

impl SdpBackend {
    const ALL: [SdpBackend; 4] = [Self::Flash, Self::Efficient, Self::Cudnn, Self::Math];

    fn bit(self) -> u8 {
        1 << Self::ALL.iter().position(|b| *b == self).unwrap_or(0)
    }

    /// PyTorch's name of the backend.
    pub fn name(self) -> &'static str {
        match self {
            Self::Flash => "FLASH_ATTENTION",
            Self::Efficient => "EFFICIENT_ATTENTION",
            Self::Cudnn => "CUDNN_ATTENTION",
            Self::Math => "MATH",
        }
    }
}

/// Which backends may be chosen (`torch.backends.cuda.enable_flash_sdp` …, `sdpa_kernel`).
static ENABLED: AtomicU8 = AtomicU8::new(0b1111);

/// Allow or forbid `backend` (process-wide, as PyTorch's flags are).
pub fn set_sdp_enabled(backend: SdpBackend, on: bool) {
    if on {
        ENABLED.fetch_or(backend.bit(), Ordering::Relaxed);
    } else {
        ENABLED.fetch_and(!backend.bit(), Ordering::Relaxed);
    }
}

/// Whether `backend` may be chosen.
pub fn sdp_enabled(backend: SdpBackend) -> bool {
    ENABLED.load(Ordering::Relaxed) & backend.bit() != 0
}

/// `F.scaled_dot_product_attention`'s options beside query, key and value.
#[derive(Clone, Debug, Default)]
pub struct SdpaOptions {
    /// Added to the scores (float) or keeping where true (bool), broadcast to [B, H, Tq, Tk].
    pub attn_mask: Option<Tensor>,
    /// Dropout of the attention probabilities (training only, as the caller decides).
    pub dropout_p: f64,
    /// The top-left causal mask.
    pub is_causal: bool,
    /// The scores' factor; `None`: `1 / sqrt(head dim)`.
    pub scale: Option<f64>,
    /// Keys and values with fewer heads than the queries, shared by groups of query heads.
    pub enable_gqa: bool,
}

/// The problem's sizes: query and key heads, the queries' and the values' head dims.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sizes {
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub v_dim: usize,
}

fn shape_err(msg: String) -> TensorError {
    TensorError::runtime(msg)
}

/// PyTorch's `validate_sdpa_input` and the head counts: at least 4-D for the fused kernels here.
fn validate(q: &Tensor, k: &Tensor, v: &Tensor, o: &SdpaOptions) -> Result<Sizes> {
    if q.dtype() != k.dtype() || q.dtype() != v.dtype() {
        return Err(shape_err(format!(
            "Expected query, key, and value to have the same dtype, but got query.dtype: {} key.dtype: {} and value.dtype: {} instead.",
            q.dtype().scalar_type_name(), k.dtype().scalar_type_name(), v.dtype().scalar_type_name()
        )));
    }
    if q.device() != k.device() || q.device() != v.device() {
        return Err(super::math::device_mismatch(q.device(), k.device()));
    }
    if q.dim() < 2 || k.dim() < 2 || v.dim() < 2 {
        return Err(shape_err(format!(
            "Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: {} key.dim: {} and value.dim: {} instead.",
            q.dim(), k.dim(), v.dim()
        )));
    }
    if !q.dtype().is_float() {
        return Err(shape_err(format!(
            "Expected query, key, and value to be floating point, but got {}",
            q.dtype().scalar_type_name()
        )));
    }
    if let Some(m) = &o.attn_mask {
        if m.dtype() != DType::Bool && m.dtype() != q.dtype() {
            return Err(shape_err(format!(
                "Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: {} and  query.dtype: {} instead.",
                m.dtype().scalar_type_name(), q.dtype().scalar_type_name()
            )));
        }
        if o.is_causal {
            return Err(shape_err(
                "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True".into(),
            ));
        }
    }
    let (qd, kd, vd) = (q.dims(), k.dims(), v.dims());
    let heads = if q.dim() >= 3 { qd[q.dim() - 3] } else { 1 };
    let kv_heads = if k.dim() >= 3 { kd[k.dim() - 3] } else { 1 };
    if qd[qd.len() - 1] != kd[kd.len() - 1] || kd[kd.len() - 2] != vd[vd.len() - 2] {
        return Err(shape_err(format!(
            "Expected query's and key's last dims to match and key's and value's sequence lengths to match, but got query {:?}, key {:?}, value {:?}",
            qd, kd, vd
        )));
    }
    if heads != kv_heads && !(o.enable_gqa && kv_heads > 0 && heads % kv_heads == 0) {
        return Err(shape_err(format!(
            "The size of tensor a ({heads}) must match the size of tensor b ({kv_heads}) at non-singleton dimension 1; pass enable_gqa=True for grouped-query attention"
        )));
    }
    Ok(Sizes {
        heads,
        kv_heads,
        head_dim: qd[qd.len() - 1],
        v_dim: vd[vd.len() - 1],
    })
}

/// Whether a [B, H, T, D] view is laid out as cuDNN takes it (PyTorch's `check_cudnn_layout`):
/// BHSD-contiguous, or BSHD (`x.view(B, T, H, D).transpose(1, 2)`) whose rows may be packed
/// with other heads' (q, k and v split from one `[B, T, 3·H·D]` projection).
fn cudnn_layout(t: &Tensor) -> bool {
    let (d, s) = (t.dims(), t.stride());
    let same = |want: [usize; 4]| (0..4).all(|i| d[i] == 1 || s[i] == want[i]);
    let bhsd = [d[1] * d[2] * d[3], d[2] * d[3], d[3], 1];
    let row = s[2].max(d[1] * d[3]);
    let packed_bshd = row % (d[1] * d[3]) == 0 && same([d[2] * row, d[3], row, 1]);
    same(bhsd) || packed_bshd
}

/// PyTorch's `select_sdp_backend` on a Hopper GPU (Note [SDPA backend choice]).
fn choose(q: &Tensor, k: &Tensor, v: &Tensor, o: &SdpaOptions, s: Sizes) -> SdpBackend {
    let fused = q.is_cuda() && q.dim() == 4 && k.dim() == 4 && v.dim() == 4;
    if !fused
        || [q, k, v]
            .iter()
            .any(|t| *t.stride().last().unwrap_or(&1) != 1 && t.dims()[3] > 1)
    {
        return SdpBackend::Math;
    }
    let low_precision = matches!(q.dtype(), DType::F16 | DType::BF16);
    let (tq, tk) = (q.dims()[2], k.dims()[2]);
    // Measured on sm90 with cuDNN 9.19 (tests/data/torch_sdpa.json): head dims up to 256 and any
    // dropout probability are taken; no dropout for a single query.
    let dropout_ok = o.dropout_p == 0.0 || tq != 1;
    let cudnn = low_precision
        && s.head_dim <= 256
        && s.v_dim <= 256
        && s.head_dim % 8 == 0
        && s.v_dim % 8 == 0
        && tk != 1
        && dropout_ok
        && [q, k, v].iter().all(|t| cudnn_layout(t))
        && sdp_enabled(SdpBackend::Cudnn);
    if cudnn {
        return SdpBackend::Cudnn;
    }
    let flash = low_precision
        && o.attn_mask.is_none()
        && s.head_dim == s.v_dim
        && s.head_dim <= 256
        && !(o.is_causal && tq != tk)
        && sdp_enabled(SdpBackend::Flash);
    if flash {
        return SdpBackend::Flash;
    }
    let align = if q.dtype() == DType::F32 { 4 } else { 8 };
    let efficient = matches!(q.dtype(), DType::F16 | DType::BF16 | DType::F32)
        && s.heads == s.kv_heads
        && s.head_dim % align == 0
        && s.v_dim % align == 0
        && sdp_enabled(SdpBackend::Efficient);
    if efficient {
        return SdpBackend::Efficient;
    }
    SdpBackend::Math
}

impl Tensor {
    /// `F.scaled_dot_product_attention(query, key, value, …)` as PyTorch computes and allocates it.
    pub fn scaled_dot_product_attention(
        query: &Tensor,
        key: &Tensor,
        value: &Tensor,
        options: &SdpaOptions,
    ) -> Result<Tensor> {
        super::check_interrupt()?;
        let mut inputs = vec![query, key, value];
        inputs.extend(options.attn_mask.as_ref());
        if let Some((cast, _off)) =
            super::autocast::cast_inputs("scaled_dot_product_attention", &inputs)?
        {
            let mut o = options.clone();
            o.attn_mask = (cast.len() > 3).then(|| cast[3].clone());
            return Tensor::scaled_dot_product_attention(&cast[0], &cast[1], &cast[2], &o);
        }
        let sizes = validate(query, key, value, options)?;
        let backend = choose(query, key, value, options, sizes);
        if backend == SdpBackend::Math && !sdp_enabled(SdpBackend::Math) {
            return Err(TensorError::runtime(
                "No available kernel. Aborting execution.",
            ));
        }
        if backend == SdpBackend::Flash && sizes.head_dim % 8 != 0 {
            // PyTorch pads the head dim to a multiple of 8 and slices the output; not reproduced.
            return Err(TensorError::runtime(format!(
                "torchlet: scaled_dot_product_attention with head dim {} (not a multiple of 8) takes PyTorch's padded flash path, which torchlet does not reproduce yet; pad the head dim to a multiple of 8",
                sizes.head_dim
            )));
        }
        let mut o = options.clone();
        o.attn_mask = o
            .attn_mask
            .as_ref()
            .map(|m| bool_mask_to_float(m, query.dtype()))
            .transpose()?;
        match backend {
            SdpBackend::Math => super::attention_math::sdpa_math(query, key, value, &o, sizes),
            backend => super::attention_fused::fused(backend, query, key, value, o),
        }
    }

    /// The backend `scaled_dot_product_attention` would take for these inputs.
    pub fn sdpa_backend(
        query: &Tensor,
        key: &Tensor,
        value: &Tensor,
        options: &SdpaOptions,
    ) -> Result<SdpBackend> {
        let sizes = validate(query, key, value, options)?;
        Ok(choose(query, key, value, options, sizes))
    }
}

/// A 0-dim tensor holding `value` on `like`'s device (`at::scalar_tensor`, one 512-byte block).
pub(crate) fn scalar_on(like: &Tensor, value: f64, dtype: DType) -> Result<Tensor> {
    let opts = TensorOptions {
        dtype,
        device: like.device(),
        requires_grad: false,
    };
    Tensor::full(&[], Scalar::Float(value), &opts)
}

/// PyTorch's `convert_boolean_attn_mask`: a bool mask becomes `where(mask, 0.0, -inf)` in `dtype`
/// (the `-inf` scalar, then the wrapped `0.0`, then the result; the scalars go, newest first); a
/// float mask passes through.
pub(crate) fn bool_mask_to_float(mask: &Tensor, dtype: DType) -> Result<Tensor> {
    if mask.dtype() != DType::Bool {
        return Ok(mask.clone());
    }
    let neg_inf = scalar_on(mask, f64::NEG_INFINITY, dtype)?;
    let zero = scalar_on(mask, 0.0, dtype)?;
    let _off = crate::autograd::no_grad();
    let out = Tensor::where_(mask, &zero, &neg_inf)?;
    drop(zero);
    drop(neg_inf);
    Ok(out)
}
