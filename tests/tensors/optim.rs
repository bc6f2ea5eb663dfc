//! Optimizers and parameter initialisation: SGD, Adam, AdamW, RMSprop and Adagrad against PyTorch's update formulas in
//! f64 (foreach and single-tensor paths, on every device), zero_grad, state, `nn::linear_params`,
//! and the errors a script gets, with PyTorch's messages.
use crate::common;
use common::{device_test, opts, outcome};

use torchlet_core::device::Device;
use torchlet_core::optim::{
    AdagradOptions, AdamOptions, Algorithm, Number, Optimizer, OptionValue, RmsPropOptions,
    SgdOptions,
};
use torchlet_core::tensor::{DType, Scalar, Tensor};
use torchlet_session::Session;

/// Deterministic values in [-1, 1), different for each salt.
fn values(n: usize, salt: usize) -> Vec<f64> {
    (0..n)
        .map(|i| ((i * 37 + salt * 101) % 53) as f64 / 26.5 - 1.0)
        .collect()
}

fn tensor(vals: &[f64], device: Device, requires_grad: bool) -> Tensor {
    let v = vals.iter().map(|&x| Scalar::Float(x)).collect();
    let o = opts(DType::F64, device).requires_grad(requires_grad);
    Tensor::from_values(v, vec![vals.len()], &o).unwrap()
}

fn assert_close(actual: &Tensor, expected: &[f64], what: &str) {
    let a = actual.to_vec_f64().unwrap();
    for (i, (x, y)) in a.iter().zip(expected).enumerate() {
        assert!(
            (x - y).abs() <= 1e-12 * y.abs().max(1.0),
            "{what}: element {i} is {x}, expected {y} ({})",
            actual.device()
        );
    }
}

/// One parameter's reference state, in f64.
#[derive(Clone, Default)]
struct Reference {
    p: Vec<f64>,
    buf: Option<Vec<f64>>,
    m: Vec<f64>,
    v: Vec<f64>,
    vmax: Vec<f64>,
    step: f64,
    /// RMSprop's square average and gradient average, Adagrad's sum.
    sq: Vec<f64>,
    gavg: Vec<f64>,
    sum: Vec<f64>,
}

/// `torch.optim.SGD`'s update, as its documentation writes it.
fn sgd_reference(o: &SgdOptions, r: &mut Reference, grad: &[f64]) {
    let (lr, mu, damp, wd) = (
        o.lr.value,
        o.momentum.value,
        o.dampening.value,
        o.weight_decay.value,
    );
    let mut g: Vec<f64> = grad
        .iter()
        .map(|g| if o.maximize { -g } else { *g })
        .collect();
    for (g, p) in g.iter_mut().zip(&r.p) {
        *g += wd * p;
    }
    if mu != 0.0 {
        let buf = match r.buf.take() {
            None => g.clone(),
            Some(b) => b
                .iter()
                .zip(&g)
                .map(|(b, g)| mu * b + (1.0 - damp) * g)
                .collect(),
        };
        g = if o.nesterov {
            g.iter().zip(&buf).map(|(g, b)| g + mu * b).collect()
        } else {
            buf.clone()
        };
        r.buf = Some(buf);
    }
    for (p, g) in r.p.iter_mut().zip(&g) {
        *p -= lr * g;
    }
}

/// `torch.optim.Adam`'s (and AdamW's) update, as its documentation writes it.
// PyTorch's per-element loop, written as its reference implementation is: one index over five arrays.
#[allow(clippy::needless_range_loop)]
fn adam_reference(o: &AdamOptions, r: &mut Reference, grad: &[f64]) {
    let (lr, b1, b2, eps, wd) = (
        o.lr.value,
        o.betas.0.value,
        o.betas.1.value,
        o.eps.value,
        o.weight_decay.value,
    );
    let n = r.p.len();
    if r.step == 0.0 {
        (r.m, r.v, r.vmax) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    }
    r.step += 1.0;
    let (bc1, bc2) = (1.0 - b1.powf(r.step), 1.0 - b2.powf(r.step));
    for i in 0..n {
        let mut g = if o.maximize { -grad[i] } else { grad[i] };
        if o.decoupled_weight_decay {
            r.p[i] *= 1.0 - lr * wd;
        } else {
            g += wd * r.p[i];
        }
        r.m[i] = b1 * r.m[i] + (1.0 - b1) * g;
        r.v[i] = b2 * r.v[i] + (1.0 - b2) * g * g;
        r.vmax[i] = r.vmax[i].max(r.v[i]);
        let second = if o.amsgrad { r.vmax[i] } else { r.v[i] };
        let denom = second.sqrt() / bc2.sqrt() + eps;
        r.p[i] -= lr / bc1 * r.m[i] / denom;
    }
}

/// `torch.optim.RMSprop`'s update, as its documentation writes it.
#[allow(clippy::needless_range_loop)]
fn rmsprop_reference(o: &RmsPropOptions, r: &mut Reference, grad: &[f64]) {
    let (lr, alpha, eps, wd, mu) = (
        o.lr.value,
        o.alpha.value,
        o.eps.value,
        o.weight_decay.value,
        o.momentum.value,
    );
    let n = r.p.len();
    if r.step == 0.0 {
        (r.sq, r.gavg, r.buf) = (vec![0.0; n], vec![0.0; n], Some(vec![0.0; n]));
    }
    r.step += 1.0;
    let buf = r.buf.as_mut().expect("made at the first step");
    for i in 0..n {
        let g = if o.maximize { -grad[i] } else { grad[i] } + wd * r.p[i];
        r.sq[i] = alpha * r.sq[i] + (1.0 - alpha) * g * g;
        let mut v = r.sq[i];
        if o.centered {
            r.gavg[i] = alpha * r.gavg[i] + (1.0 - alpha) * g;
            v -= r.gavg[i] * r.gavg[i];
        }
        let step = g / (v.sqrt() + eps);
        if mu > 0.0 {
            buf[i] = mu * buf[i] + step;
            r.p[i] -= lr * buf[i];
        } else {
            r.p[i] -= lr * step;
        }
    }
}

/// `torch.optim.Adagrad`'s update, as its documentation writes it.
#[allow(clippy::needless_range_loop)]
fn adagrad_reference(o: &AdagradOptions, r: &mut Reference, grad: &[f64]) {
    let n = r.p.len();
    if r.step == 0.0 {
        r.sum = vec![o.initial_accumulator_value.value; n];
    }
    r.step += 1.0;
    let clr = o.lr.value / (1.0 + (r.step - 1.0) * o.lr_decay.value);
    for i in 0..n {
        let g = if o.maximize { -grad[i] } else { grad[i] } + o.weight_decay.value * r.p[i];
        r.sum[i] += g * g;
        r.p[i] -= clr * g / (r.sum[i].sqrt() + o.eps.value);
    }
}

/// Three steps of `algorithm` over two parameters (and one without a gradient), compared with
/// `reference` after each step, on every device and on both paths.
fn check_steps(
    device: Device,
    algorithm: Algorithm,
    reference: fn(&Algorithm, &mut Reference, &[f64]),
) {
    for foreach in [None, Some(true), Some(false)] {
        let algorithm = with_foreach(&algorithm, foreach);
        let what = format!("{algorithm:?} on {device}");
        let sizes = [5, 3];
        let params: Vec<Tensor> = (0..2)
            .map(|k| tensor(&values(sizes[k], k), device, true))
            .collect();
        let idle = tensor(&values(4, 9), device, true);
        let mut all = params.clone();
        all.push(idle.clone());
        let mut opt = Optimizer::new("test", all, algorithm.clone()).unwrap();
        let mut refs: Vec<Reference> = (0..2)
            .map(|k| Reference {
                p: values(sizes[k], k),
                ..Default::default()
            })
            .collect();
        for step in 0..3 {
            for (k, p) in params.iter().enumerate() {
                let g = values(sizes[k], 10 + 3 * step + k);
                p.set_grad(Some(tensor(&g, device, false))).unwrap();
                reference(&algorithm, &mut refs[k], &g);
            }
            opt.step().unwrap();
            for (k, p) in params.iter().enumerate() {
                assert_close(p, &refs[k].p, &format!("{what}: step {step}, param {k}"));
            }
        }
        assert_close(
            &idle,
            &values(4, 9),
            &format!("{what}: a parameter without grad"),
        );
        // Adagrad makes every parameter's state with the optimizer; the others at a first step.
        let idle_state = opt.state(2);
        match &algorithm {
            Algorithm::Adagrad(o) => {
                let sum = idle_state.sum.as_ref().expect("Adagrad's sum");
                assert_close(sum, &[o.initial_accumulator_value.value; 4], &what);
                assert_eq!(idle_state.step, Some(0.0), "{what}");
            }
            _ => assert!(idle_state.tensors().is_empty() && idle_state.step.is_none()),
        }
    }
}

fn with_foreach(algorithm: &Algorithm, foreach: Option<bool>) -> Algorithm {
    let mut algorithm = algorithm.clone();
    assert!(algorithm.set("foreach", OptionValue::Auto(foreach)));
    algorithm
}

fn sgd(algorithm: &Algorithm, r: &mut Reference, g: &[f64]) {
    let Algorithm::Sgd(o) = algorithm else {
        unreachable!()
    };
    sgd_reference(o, r, g)
}

fn adam(algorithm: &Algorithm, r: &mut Reference, g: &[f64]) {
    let Algorithm::Adam(o) = algorithm else {
        unreachable!()
    };
    adam_reference(o, r, g)
}

device_test!(
    fn sgd_with_momentum_dampening_and_weight_decay_follows_the_formula(device: Device) {
        check_steps(
            device,
            Algorithm::Sgd(SgdOptions {
                lr: Number::float(0.1),
                momentum: Number::float(0.9),
                dampening: Number::float(0.25),
                weight_decay: Number::float(0.01),
                ..SgdOptions::default()
            }),
            sgd,
        );
    }
);

device_test!(
    fn sgd_plain_nesterov_and_maximize_follow_the_formula(device: Device) {
        check_steps(device, Algorithm::Sgd(SgdOptions::default()), sgd);
        let nesterov = SgdOptions {
            lr: Number::float(0.05),
            momentum: Number::float(0.8),
            nesterov: true,
            ..SgdOptions::default()
        };
        check_steps(device, Algorithm::Sgd(nesterov.clone()), sgd);
        let maximize = SgdOptions {
            maximize: true,
            weight_decay: Number::float(0.1),
            ..nesterov
        };
        check_steps(device, Algorithm::Sgd(maximize), sgd);
    }
);

device_test!(
    fn adam_and_adamw_follow_the_formula(device: Device) {
        let big_steps = |o: AdamOptions| AdamOptions {
            lr: Number::float(0.1),
            ..o
        };
        check_steps(
            device,
            Algorithm::Adam(big_steps(AdamOptions::adam())),
            adam,
        );
        check_steps(
            device,
            Algorithm::Adam(big_steps(AdamOptions::adamw())),
            adam,
        );
        let l2 = AdamOptions {
            weight_decay: Number::float(0.05),
            amsgrad: true,
            ..big_steps(AdamOptions::adam())
        };
        check_steps(device, Algorithm::Adam(l2.clone()), adam);
        let maximize = AdamOptions {
            maximize: true,
            betas: (Number::float(0.5), Number::float(0.75)),
            ..l2
        };
        check_steps(device, Algorithm::Adam(maximize), adam);
    }
);

fn rmsprop(algorithm: &Algorithm, r: &mut Reference, g: &[f64]) {
    let Algorithm::RmsProp(o) = algorithm else {
        unreachable!()
    };
    rmsprop_reference(o, r, g)
}

fn adagrad(algorithm: &Algorithm, r: &mut Reference, g: &[f64]) {
    let Algorithm::Adagrad(o) = algorithm else {
        unreachable!()
    };
    adagrad_reference(o, r, g)
}

device_test!(
    fn rmsprop_plain_centered_momentum_and_maximize_follow_the_formula(device: Device) {
        check_steps(
            device,
            Algorithm::RmsProp(RmsPropOptions::default()),
            rmsprop,
        );
        let centered = RmsPropOptions {
            centered: true,
            momentum: Number::float(0.9),
            weight_decay: Number::float(0.05),
            ..RmsPropOptions::default()
        };
        check_steps(device, Algorithm::RmsProp(centered.clone()), rmsprop);
        let maximize = RmsPropOptions {
            maximize: true,
            alpha: Number::float(0.5),
            ..centered
        };
        check_steps(device, Algorithm::RmsProp(maximize), rmsprop);
    }
);

device_test!(
    fn adagrad_plain_decayed_and_maximize_follow_the_formula(device: Device) {
        check_steps(
            device,
            Algorithm::Adagrad(AdagradOptions::default()),
            adagrad,
        );
        let decayed = AdagradOptions {
            lr: Number::float(0.1),
            lr_decay: Number::float(0.5),
            weight_decay: Number::float(0.05),
            initial_accumulator_value: Number::float(0.25),
            ..AdagradOptions::default()
        };
        check_steps(device, Algorithm::Adagrad(decayed.clone()), adagrad);
        let maximize = AdagradOptions {
            maximize: true,
            ..decayed
        };
        check_steps(device, Algorithm::Adagrad(maximize), adagrad);
    }
);

fn session() -> Session {
    common::uses_gpu();
    Session::captured("<optim>").0
}

device_test!(
    fn zero_grad_frees_by_default_and_zeroes_when_asked(device: &str) {
        let mut s = session();
        let setup = format!(
            "let w = randn(3, 4, #{{device: \"{device}\", requires_grad: true}});
             let opt = optim::SGD([w], #{{lr: 0.1}});
             (w * 2).sum().backward();"
        );
        outcome(&mut s, &setup).unwrap();
        outcome(&mut s, "opt.zero_grad(#{set_to_none: false});").unwrap();
        assert_eq!(
            outcome(&mut s, "w.grad.abs().sum().item() == 0.0").unwrap(),
            "true"
        );
        assert_eq!(outcome(&mut s, "w.grad.requires_grad").unwrap(), "false");
        // The next backward adds into the zeros.
        outcome(&mut s, "(w * 3).sum().backward();").unwrap();
        assert_eq!(
            outcome(&mut s, "w.grad.sum().item() == 36.0").unwrap(),
            "true"
        );
        outcome(&mut s, "opt.zero_grad();").unwrap();
        assert_eq!(outcome(&mut s, "w.grad == ()").unwrap(), "true");
        let (kind, message) = outcome(&mut s, "opt.zero_grad(#{set_to_nothing: 1});").unwrap_err();
        assert_eq!(kind, "TypeError");
        assert!(message.contains("set_to_none"), "{message}");
    }
);

device_test!(
    fn state_appears_at_the_first_step_under_pytorch_names(device: &str) {
        let mut s = session();
        let setup = format!(
            "let w = randn(3, 4, #{{device: \"{device}\", requires_grad: true}});
             let opt = optim::AdamW([w]);"
        );
        outcome(&mut s, &setup).unwrap();
        assert_eq!(outcome(&mut s, "opt.state[w].len()").unwrap(), "0");
        outcome(&mut s, "(w * w).sum().backward(); opt.step(); opt.step();").unwrap();
        let checks = [
            r#"opt.state[w].keys() == ["exp_avg", "exp_avg_sq", "step"]"#,
            "opt.state[w].step.item() == 2.0 && opt.state[w].step.device == \"cpu\"",
            "opt.state[w].exp_avg.shape == [3, 4]",
            "opt.state[w].exp_avg_sq.device == w.device",
            r#"opt.to_string().contains("AdamW (\nParameter Group 0\n    amsgrad: False\n    betas: (0.9, 0.999)\n")"#,
            r#"opt.to_string().contains("    weight_decay: 0.01\n)")"#,
        ];
        for check in checks {
            assert_eq!(
                outcome(&mut s, check).unwrap(),
                "true",
                "{check} on {device}"
            );
        }
    }
);

device_test!(
    fn linear_params_are_initialised_as_nn_linear(device: &str) {
        let mut s = session();
        outcome(
            &mut s,
            &format!("let l = nn::linear_params(400, 30, #{{device: \"{device}\"}});"),
        )
        .unwrap();
        assert_eq!(outcome(&mut s, "l.weight.shape").unwrap(), "[30, 400]");
        assert_eq!(outcome(&mut s, "l.bias.shape").unwrap(), "[30]");
        assert_eq!(
            outcome(&mut s, "l.weight.requires_grad && l.bias.is_leaf").unwrap(),
            "true"
        );
        // Uniform on ±1/sqrt(400) = ±0.05: inside the bound, and spread over it.
        let max = outcome(&mut s, "l.weight.abs().max().item()").unwrap();
        let max: f64 = max.parse().unwrap();
        assert!(max <= 0.05 && max > 0.045, "{max}");
        let mean: f64 = outcome(&mut s, "l.weight.mean().item()")
            .unwrap()
            .parse()
            .unwrap();
        assert!(mean.abs() < 0.005, "{mean}");
        let bmax: f64 = outcome(&mut s, "l.bias.abs().max().item()")
            .unwrap()
            .parse()
            .unwrap();
        assert!(bmax <= 0.05 && bmax > 0.02, "{bmax}");
        outcome(
            &mut s,
            "let nb = nn::linear_params(4, 2, #{bias: false, dtype: \"float64\"});",
        )
        .unwrap();
        assert_eq!(
            outcome(&mut s, "nb.bias == () && nb.weight.dtype == \"float64\"").unwrap(),
            "true"
        );
        // nn::parameters: arrays in order, a map's weight before its bias.
        outcome(&mut s, "let ps = nn::parameters([l, nb]);").unwrap();
        assert_eq!(outcome(&mut s, "ps.len()").unwrap(), "3");
        assert_eq!(
            outcome(
                &mut s,
                "ps[0].shape == [30, 400] && ps[1].shape == [30] && ps[2].shape == [2, 4]"
            )
            .unwrap(),
            "true"
        );
        outcome(&mut s, "let opt = optim::SGD(ps, #{lr: 0.5});").unwrap();
    }
);

/// (code, kind, message) for each mistake; each runs in a session that then still works.
const MISTAKES: &[(&str, &str, &str)] = &[
    ("optim::SGD([])", "ValueError", "optimizer got an empty parameter list"),
    ("optim::SGD([w, 3])", "TypeError", "optimizer can only optimize Tensors, but one of the params is int"),
    ("optim::SGD([w * 2])", "ValueError", "can't optimize a non-leaf Tensor"),
    ("optim::SGD([w], #{lr: -1})", "ValueError", "Invalid learning rate: -1"),
    ("optim::Adam([w], #{lr: -0.5})", "ValueError", "Invalid learning rate: -0.5"),
    ("optim::SGD([w], #{momentum: -0.1})", "ValueError", "Invalid momentum value: -0.1"),
    ("optim::SGD([w], #{nesterov: true})", "ValueError", "Nesterov momentum requires a momentum and zero dampening"),
    ("optim::AdamW([w], #{betas: [0.9, 1.0]})", "ValueError", "Invalid beta parameter at index 1: 1.0"),
    ("optim::Adam([w], #{eps: -1e-8})", "ValueError", "Invalid epsilon value: -1e-08"),
    ("optim::AdamW([w], #{weight_decay: -1})", "ValueError", "Invalid weight_decay value: -1"),
    ("optim::SGD([w], #{learning_rate: 0.1})", "TypeError", "SGD.__init__() got an unexpected keyword argument 'learning_rate'; valid options: lr, momentum, dampening, weight_decay, nesterov, maximize, foreach, differentiable, fused"),
    ("optim::Adam([w], #{lr: \"fast\"})", "TypeError", "lr must be a number, not str"),
    ("optim::SGD(w)", "TypeError", "params argument given to the optimizer should be an array of Tensors, but got torch.FloatTensor"),
    ("optim::AdamW([w], #{fused: true})", "ValueError", "fused=True is not supported by torchlet"),
    ("optim::AdamW([w], #{decoupled_weight_decay: false})", "TypeError", "AdamW.__init__() got an unexpected keyword argument 'decoupled_weight_decay'; valid options: lr, betas, eps, weight_decay, amsgrad, maximize, foreach, capturable, differentiable, fused"),
    ("optim::Adam([w], #{betas: 0.9})", "TypeError", "betas must be an array of two numbers like [0.9, 0.999], not float"),
    ("optim::RMSprop([w], #{alpha: -0.5})", "ValueError", "Invalid alpha value: -0.5"),
    // RMSprop checks eps before momentum; Adagrad checks eps last.
    ("optim::RMSprop([w], #{momentum: -1, eps: -1})", "ValueError", "Invalid epsilon value: -1"),
    ("optim::Adagrad([w], #{eps: -1, initial_accumulator_value: -1})", "ValueError", "Invalid initial_accumulator_value value: -1"),
    ("optim::Adagrad([w], #{lr_decay: -0.1})", "ValueError", "Invalid lr_decay value: -0.1"),
    ("optim::Adagrad([w], #{betas: [0.9, 0.99]})", "TypeError", "Adagrad.__init__() got an unexpected keyword argument 'betas'"),
    ("optim::RMSprop([w], #{capturable: true})", "ValueError", "capturable=True is not supported by torchlet"),
];

#[test]
fn mistakes_give_pytorch_messages_and_the_session_goes_on() {
    let mut s = session();
    outcome(&mut s, "let w = randn(3, #{requires_grad: true});").unwrap();
    for (code, kind, message) in MISTAKES {
        let (k, m) = outcome(&mut s, &format!("let bad = {code};")).unwrap_err();
        assert_eq!(&k, kind, "{code}: {m}");
        assert!(m.starts_with(message), "{code}: {m}");
        assert_eq!(outcome(&mut s, "w.shape").unwrap(), "[3]", "{code}");
    }
    // PyTorch takes a tensor that does not require grad: it never gets a gradient, so it stays.
    outcome(&mut s, "let c = ones(2); let opt = optim::SGD([w, c], #{lr: 1.0}); w.sum().backward(); opt.step();").unwrap();
    assert_eq!(outcome(&mut s, "c.tolist()").unwrap(), "[1.0, 1.0]");
    let (k, m) = outcome(&mut s, "opt.state[randn(2)]").unwrap_err();
    assert_eq!(
        (k.as_str(), m.as_str()),
        (
            "KeyError",
            "this tensor is not one of the optimizer's parameters"
        )
    );
}

#[test]
fn memory_holders_name_the_optimizer_state() {
    let _gpu = common::exclusive();
    let mut s = session();
    let setup = "let w = randn(256, 1024, #{device: \"cuda\", requires_grad: true});
                 let opt = optim::Adam([w]); w.sum().backward(); opt.step();";
    outcome(&mut s, setup).unwrap();
    for name in [
        "w",
        "w.grad",
        // Optimizer state is named by its parameter, as PyTorch keys `opt.state[w]`.
        "opt.state[w].exp_avg",
        "opt.state[w].exp_avg_sq",
    ] {
        let count = format!("memory_holders().filter(|b| b.holders.contains(\"{name}\")).len()");
        assert_eq!(outcome(&mut s, &count).unwrap(), "1", "{name}");
    }
}
