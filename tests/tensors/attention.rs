//! `scaled_dot_product_attention` on every device: each backend's output and gradients against a
//! reference written out here in f64 (masks, causal, grouped-query), float64 finite differences,
//! PyTorch's choice of backend, and its errors.
use crate::common;
use common::{device_test, exclusive};

use torchlet_core::device::Device;
use torchlet_core::tensor::attention::{set_sdp_enabled, SdpBackend, SdpaOptions};
use torchlet_core::tensor::{DType, Scalar, Tensor, TensorOptions};

const BACKENDS: [SdpBackend; 4] = [
    SdpBackend::Math,
    SdpBackend::Flash,
    SdpBackend::Efficient,
    SdpBackend::Cudnn,
];

/// Deterministic values in [-1, 1) of `shape` (no RNG, so every device gets the same).
fn values(shape: &[usize], seed: usize, dtype: DType, device: Device, grad: bool) -> Tensor {
    let n: usize = shape.iter().product();
    let v = (0..n)
        .map(|i| Scalar::Float(((i * 7919 + seed * 104729) % 2000) as f64 / 1000.0 - 1.0))
        .collect();
    let o = TensorOptions::default()
        .dtype(dtype)
        .device(device)
        .requires_grad(grad);
    Tensor::from_values(v, shape.to_vec(), &o).unwrap()
}

/// Attention in f64 on the host: softmax(q kᵀ · scale + mask) v, with causal and group options.
fn reference(
    q: &[f64],
    k: &[f64],
    v: &[f64],
    [b, h, hk, tq, tk, d]: [usize; 6],
    causal: bool,
    mask: Option<&[f64]>,
) -> Vec<f64> {
    let scale = 1.0 / (d as f64).sqrt();
    let mut out = vec![0.0; b * h * tq * d];
    for bi in 0..b {
        for hi in 0..h {
            let kh = hi / (h / hk);
            for i in 0..tq {
                let qi = &q[((bi * h + hi) * tq + i) * d..][..d];
                let scores: Vec<f64> = (0..tk)
                    .map(|j| {
                        if causal && j > i {
                            return f64::NEG_INFINITY;
                        }
                        let kj = &k[((bi * hk + kh) * tk + j) * d..][..d];
                        let s = qi.iter().zip(kj).map(|(a, b)| a * b).sum::<f64>() * scale;
                        s + mask.map_or(0.0, |m| m[i * tk + j])
                    })
                    .collect();
                let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let sum: f64 = scores.iter().map(|s| (s - max).exp()).sum();
                for (j, s) in scores.iter().enumerate() {
                    let p = (s - max).exp() / sum;
                    let vj = &v[((bi * hk + kh) * tk + j) * d..][..d];
                    for c in 0..d {
                        out[((bi * h + hi) * tq + i) * d + c] += p * vj[c];
                    }
                }
            }
        }
    }
    out
}

fn assert_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}: element {i} is {g}, want {w}"
        );
    }
}

/// Run `f` with only `backend` allowed, then allow every backend again.
fn only<T>(backend: SdpBackend, f: impl FnOnce() -> T) -> T {
    for b in BACKENDS {
        set_sdp_enabled(b, b == backend);
    }
    let r = f();
    for b in BACKENDS {
        set_sdp_enabled(b, true);
    }
    r
}

device_test!(
    fn every_backend_computes_attention_and_its_gradients(device: Device) {
        let _g = exclusive();
        let dims = [2, 4, 2, 8, 8, 8];
        let [b, h, hk, tq, tk, d] = dims;
        for dtype in [DType::F32, DType::BF16] {
            for (causal, gqa) in [(false, false), (true, false), (false, true)] {
                let kh = if gqa { hk } else { h };
                for backend in BACKENDS {
                    let q = values(&[b, h, tq, d], 1, dtype, device, true);
                    let k = values(&[b, kh, tk, d], 2, dtype, device, true);
                    let v = values(&[b, kh, tk, d], 3, dtype, device, true);
                    let o = SdpaOptions {
                        is_causal: causal,
                        enable_gqa: gqa,
                        ..Default::default()
                    };
                    let Ok(out) = only(backend, || {
                        Tensor::scaled_dot_product_attention(&q, &k, &v, &o)
                    }) else {
                        continue; // this backend does not take these inputs
                    };
                    let host = |t: &Tensor| t.to_vec_f64().unwrap();
                    let want = reference(
                        &host(&q),
                        &host(&k),
                        &host(&v),
                        [b, h, kh, tq, tk, d],
                        causal,
                        None,
                    );
                    let tol = if dtype == DType::F32 { 1e-5 } else { 2e-2 };
                    let what =
                        format!("{backend:?} {dtype:?} causal={causal} gqa={gqa} on {device}");
                    assert_close(&host(&out), &want, tol, &what);
                    // d(sum(out))/dv[j] = sum over query rows of their probabilities of key j: with
                    // every row's probabilities summing to 1, the grads of v add up to B·H·Tq·D.
                    out.sum(None, false).unwrap().backward(false).unwrap();
                    let gv: f64 = host(&v.grad().unwrap()).iter().sum();
                    assert!(
                        (gv - (b * h * tq * d) as f64).abs() < tol * gv.abs().max(1.0) * 10.0,
                        "{what}: sum of v's grad {gv}"
                    );
                    assert!(
                        q.grad().is_some() && k.grad().is_some(),
                        "{what}: q and k get gradients"
                    );
                }
            }
        }
    }
);

device_test!(
    fn fused_gradients_equal_the_math_composites(device: Device) {
        let _g = exclusive();
        let shape = [1, 2, 6, 8];
        let mask = values(&[6, 6], 9, DType::F32, device, false);
        let grads = |backend: SdpBackend, with_mask: bool| -> Vec<Vec<f64>> {
            let q = values(&shape, 4, DType::F32, device, true);
            let k = values(&shape, 5, DType::F32, device, true);
            let v = values(&shape, 6, DType::F32, device, true);
            let o = SdpaOptions {
                attn_mask: with_mask.then(|| mask.clone()),
                ..Default::default()
            };
            let out = only(backend, || {
                Tensor::scaled_dot_product_attention(&q, &k, &v, &o)
            })
            .unwrap();
            out.mul(&out)
                .unwrap()
                .sum(None, false)
                .unwrap()
                .backward(false)
                .unwrap();
            [q, k, v]
                .iter()
                .map(|t| t.grad().unwrap().to_vec_f64().unwrap())
                .collect()
        };
        for with_mask in [false, true] {
            let want = grads(SdpBackend::Math, with_mask);
            if device == Device::Cpu {
                continue; // the CPU has the math backend only
            }
            let got = grads(SdpBackend::Efficient, with_mask);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_close(
                    g,
                    w,
                    1e-4,
                    &format!("grad {i} mask={with_mask} on {device}"),
                );
            }
        }
    }
);

device_test!(
    fn float64_gradients_match_finite_differences(device: Device) {
        let _g = exclusive();
        let shape = [1, 1, 4, 3];
        let loss = |q: &Tensor, k: &Tensor, v: &Tensor| -> f64 {
            let o = SdpaOptions {
                is_causal: true,
                ..Default::default()
            };
            let out = Tensor::scaled_dot_product_attention(q, k, v, &o).unwrap();
            out.mul(&out)
                .unwrap()
                .sum(None, false)
                .unwrap()
                .to_vec_f64()
                .unwrap()[0]
        };
        let q = values(&shape, 7, DType::F64, device, true);
        let k = values(&shape, 8, DType::F64, device, true);
        let v = values(&shape, 9, DType::F64, device, true);
        let o = SdpaOptions {
            is_causal: true,
            ..Default::default()
        };
        let out = Tensor::scaled_dot_product_attention(&q, &k, &v, &o).unwrap();
        out.mul(&out)
            .unwrap()
            .sum(None, false)
            .unwrap()
            .backward(false)
            .unwrap();
        let analytic = q.grad().unwrap().to_vec_f64().unwrap();
        let base = q.to_vec_f64().unwrap();
        let eps = 1e-6;
        for i in 0..base.len() {
            let nudged = |delta: f64| {
                let mut vals = base.clone();
                vals[i] += delta;
                let o = TensorOptions::default().dtype(DType::F64).device(device);
                let t = Tensor::from_values(
                    vals.into_iter().map(Scalar::Float).collect(),
                    shape.to_vec(),
                    &o,
                )
                .unwrap();
                loss(&t, &k, &v)
            };
            let numeric = (nudged(eps) - nudged(-eps)) / (2.0 * eps);
            assert!(
                (numeric - analytic[i]).abs() < 1e-6,
                "dq[{i}]: {numeric} vs {} on {device}",
                analytic[i]
            );
        }
    }
);

device_test!(
    fn the_choice_is_pytorchs_on_a_hopper_gpu(device: Device) {
        let _g = exclusive();
        let t = |dtype, d| values(&[1, 2, 4, d], 1, dtype, device, false);
        let choice = |q: &Tensor, o: &SdpaOptions| Tensor::sdpa_backend(q, q, q, o).unwrap();
        let plain = SdpaOptions::default();
        let gpu = device != Device::Cpu;
        let pick = |b| if gpu { b } else { SdpBackend::Math };
        assert_eq!(choice(&t(DType::BF16, 64), &plain), pick(SdpBackend::Cudnn));
        assert_eq!(choice(&t(DType::F16, 256), &plain), pick(SdpBackend::Cudnn));
        // cuDNN takes no single key; flash does.
        let one_key = values(&[1, 2, 1, 64], 1, DType::F16, device, false);
        let q = t(DType::F16, 64);
        assert_eq!(
            Tensor::sdpa_backend(&q, &one_key, &one_key, &plain).unwrap(),
            pick(SdpBackend::Flash)
        );
        assert_eq!(
            choice(&t(DType::F32, 64), &plain),
            pick(SdpBackend::Efficient)
        );
        assert_eq!(choice(&t(DType::F64, 64), &plain), SdpBackend::Math);
        let masked = SdpaOptions {
            attn_mask: Some(values(&[4, 4], 2, DType::F16, device, false)),
            ..Default::default()
        };
        assert_eq!(
            choice(&t(DType::F16, 160), &masked),
            pick(SdpBackend::Cudnn)
        );
        // Beyond cuDNN's 256 and with a mask, which flash never takes: the memory-efficient kernel.
        assert_eq!(
            choice(&t(DType::F16, 264), &masked),
            pick(SdpBackend::Efficient)
        );
    }
);

#[test]
fn bad_inputs_are_pytorchs_errors() {
    let _g = exclusive();
    let q = values(&[1, 2, 4, 8], 1, DType::F32, Device::Cpu, false);
    let k = values(&[1, 2, 4, 8], 1, DType::F16, Device::Cpu, false);
    let e = Tensor::scaled_dot_product_attention(&q, &k, &k, &SdpaOptions::default()).unwrap_err();
    assert!(
        e.message()
            .starts_with("Expected query, key, and value to have the same dtype"),
        "{}",
        e.message()
    );
    let k4 = values(&[1, 4, 4, 8], 1, DType::F32, Device::Cpu, false);
    let e = Tensor::scaled_dot_product_attention(&k4, &q, &q, &SdpaOptions::default()).unwrap_err();
    assert!(e.message().contains("enable_gqa=True"), "{}", e.message());
    let mask = values(&[4, 4], 1, DType::F32, Device::Cpu, false);
    let o = SdpaOptions {
        attn_mask: Some(mask),
        is_causal: true,
        ..Default::default()
    };
    let e = Tensor::scaled_dot_product_attention(&q, &q, &q, &o).unwrap_err();
    assert!(
        e.message()
            .contains("attn_mask should not be set when is_causal=True"),
        "{}",
        e.message()
    );
}

/// The backend PyTorch's node names: the fused ones by name, the math composite by its last op
/// (a float32 product's view, or the cast back of half inputs), padded flash by its slice.
fn backend_of_node(grad_fn: &str) -> Option<SdpBackend> {
    Some(match grad_fn {
        "ScaledDotProductCudnnAttentionBackward0" => SdpBackend::Cudnn,
        "ScaledDotProductFlashAttentionBackward0" | "SliceBackward0" => SdpBackend::Flash,
        "ScaledDotProductEfficientAttentionBackward0" => SdpBackend::Efficient,
        "UnsafeViewBackward0" | "ToCopyBackward0" => SdpBackend::Math,
        _ => return None,
    })
}

/// The inputs of one recorded case, on cuda:0, in its layout, with its mask.
fn recorded_inputs(c: &serde_json::Value) -> (Tensor, Tensor, Tensor, SdpaOptions) {
    let n = |k: &str| c[k].as_u64().map(|v| v as usize);
    let dtype = DType::parse(c["dtype"].as_str().unwrap()).unwrap();
    let (b, h, tq, d) = (
        n("B").unwrap(),
        n("H").unwrap(),
        n("Tq").unwrap(),
        n("D").unwrap(),
    );
    let (hk, tk, dv) = (
        n("Hk").unwrap_or(h),
        n("Tk").unwrap_or(tq),
        n("Dv").unwrap_or(d),
    );
    let bthd = c["layout"] == "bthd";
    let make = |heads: usize, t: usize, dim: usize, seed: usize| {
        if bthd {
            values(&[b, t, heads, dim], seed, dtype, Device::Cuda(0), false)
                .transpose(1, 2)
                .unwrap()
        } else {
            values(&[b, heads, t, dim], seed, dtype, Device::Cuda(0), false)
        }
    };
    let mask = match c["mask"].as_str() {
        Some("bool") => Some(values(&[tq, tk], 1, DType::Bool, Device::Cuda(0), false)),
        Some("bool_b1tt") => Some(values(
            &[b, 1, tq, tk],
            1,
            DType::Bool,
            Device::Cuda(0),
            false,
        )),
        Some("float") => Some(values(&[b, 1, tq, tk], 1, dtype, Device::Cuda(0), false)),
        _ => None,
    };
    let o = SdpaOptions {
        attn_mask: mask,
        dropout_p: c["dropout"].as_f64().unwrap_or(0.0),
        is_causal: c["causal"].as_bool().unwrap_or(false),
        scale: None,
        enable_gqa: n("Hk").is_some(),
    };
    (
        make(h, tq, d, 1),
        make(hk, tk, d, 2),
        make(hk, tk, dv, 3),
        o,
    )
}

/// Every case of `tests/data/torch_sdpa.json` that left the choice to PyTorch (on sm90, PyTorch
/// 2.11, cuDNN 9.19) takes the same backend here.
#[test]
fn the_choice_is_pytorchs_in_every_recorded_case() {
    let _g = exclusive();
    let path = common::repo().join("tests/data/torch_sdpa.json");
    let recorded: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut checked = 0;
    for r in recorded["records"].as_array().unwrap() {
        let c = &r["case"];
        let Some(want) = r["grad_fn"].as_str().and_then(backend_of_node) else {
            continue;
        };
        if !c["backend"].is_null() {
            continue;
        }
        let (q, k, v, o) = recorded_inputs(c);
        let got = Tensor::sdpa_backend(&q, &k, &v, &o).unwrap();
        assert_eq!(got, want, "case {c}");
        checked += 1;
    }
    assert!(checked >= 100, "only {checked} recorded cases were checked");
}
