//! `scaled_dot_product_attention` and the backend switches (`torch.backends.cuda.enable_*_sdp`,
//! `torch.nn.attention.sdpa_kernel`) over core's SDPA.

use torchlet_core::tensor::attention::{sdp_enabled, set_sdp_enabled, SdpBackend, SdpaOptions};
use torchlet_core::tensor::Tensor;

use super::args::Args;
use super::tensor::{wrap, OrRaise};
use super::Native;

/// Every attention function, by the name the `torch` package calls it.
pub(crate) const FUNCTIONS: &[(&str, Native)] = &[
    ("_sdpa", |a| {
        let (q, k, v, options) = sdpa_args(a)?;
        let out = Tensor::scaled_dot_product_attention(&q, &k, &v, &options).or_raise(a.vm)?;
        Ok(wrap(a.vm, out))
    }),
    ("_sdpa_backend", |a| {
        let (q, k, v, options) = sdpa_args(a)?;
        let backend = Tensor::sdpa_backend(&q, &k, &v, &options).or_raise(a.vm)?;
        Ok(a.vm.ctx.new_str(backend.name()).into())
    }),
    ("_sdp_enabled", |a| {
        let backend = backend_named(a, 0)?;
        Ok(a.vm.ctx.new_bool(sdp_enabled(backend)).into())
    }),
    ("_set_sdp_enabled", |a| {
        set_sdp_enabled(backend_named(a, 0)?, a.bool(1)?);
        super::none(a.vm)
    }),
];

/// `(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)`.
fn sdpa_args(a: &Args) -> rustpython_vm::PyResult<(Tensor, Tensor, Tensor, SdpaOptions)> {
    let options = SdpaOptions {
        attn_mask: a.opt_tensor(3)?,
        dropout_p: a.float(4)?,
        is_causal: a.bool(5)?,
        scale: a.opt_float(6)?,
        enable_gqa: a.bool(7)?,
    };
    Ok((a.tensor(0)?, a.tensor(1)?, a.tensor(2)?, options))
}

/// The backend PyTorch's `SDPBackend` names (`FLASH_ATTENTION`, `EFFICIENT_ATTENTION`, …).
fn backend_named(a: &Args, i: usize) -> rustpython_vm::PyResult<SdpBackend> {
    let name = a.str(i)?;
    [
        SdpBackend::Flash,
        SdpBackend::Efficient,
        SdpBackend::Cudnn,
        SdpBackend::Math,
    ]
    .into_iter()
    .find(|b| b.name() == name)
    .ok_or_else(|| a.vm.new_value_error(format!("unknown SDPA backend {name}")))
}
