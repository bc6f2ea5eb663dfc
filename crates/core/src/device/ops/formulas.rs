//! Host formulas too long for a row of the op table (clamp, erfinv, GELU and the activations' derivatives).

/// `x` limited to `[min, max]`; NaN stays NaN.
pub(super) fn clamp(x: f64, min: Option<f64>, max: Option<f64>) -> f64 {
    if x.is_nan() {
        return x;
    }
    let x = min.map_or(x, |m| x.max(m));
    max.map_or(x, |m| x.min(m))
}

/// The inverse error function: Giles' approximation ("Approximating the erfinv function", GPU
/// Computing Gems, 2011), then two Newton steps on `erf(x) = y` for double precision.
pub(super) fn erfinv(y: f64) -> f64 {
    if y.is_nan() || y.abs() > 1.0 {
        return f64::NAN;
    }
    if y.abs() == 1.0 {
        return y * f64::INFINITY;
    }
    let w = -((1.0 - y) * (1.0 + y)).ln();
    let (coefficients, t): (&[f64], f64) = if w < 5.0 {
        (
            &[
                2.810_226_36e-08,
                3.432_739_39e-07,
                -3.523_387_7e-06,
                -4.391_506_54e-06,
                2.185_808_7e-04,
                -1.253_725_03e-03,
                -4.177_681_64e-03,
                2.466_407_27e-01,
                1.501_409_41,
            ],
            w - 2.5,
        )
    } else {
        (
            &[
                -2.002_142_57e-04,
                1.009_505_58e-04,
                1.349_343_22e-03,
                -3.673_428_44e-03,
                5.739_507_73e-03,
                -7.622_461_3e-03,
                9.438_870_47e-03,
                1.001_674_06,
                2.832_976_82,
            ],
            w.sqrt() - 3.0,
        )
    };
    let mut x = coefficients.iter().fold(0.0, |p, c| p * t + c) * y;
    for _ in 0..2 {
        let slope = std::f64::consts::FRAC_2_SQRT_PI * (-x * x).exp();
        x -= (libm::erf(x) - y) / slope;
    }
    x
}

/// `sqrt(2 / pi)`, the tanh form's scale.
const BETA: f64 = 0.797_884_560_802_865_4;
/// The tanh form's cubic coefficient.
const KAPPA: f64 = 0.044715;

/// GELU: `x * Φ(x)` with the normal CDF through erf, or PyTorch's tanh approximation.
pub fn gelu(x: f64, tanh: bool) -> f64 {
    if tanh {
        0.5 * x * (1.0 + (BETA * (x + KAPPA * x * x * x)).tanh())
    } else {
        0.5 * x * (1.0 + libm::erf(x * std::f64::consts::FRAC_1_SQRT_2))
    }
}

/// d gelu / dx, written as PyTorch's `GeluBackward` kernels write it.
pub fn gelu_backward(x: f64, tanh: bool) -> f64 {
    if tanh {
        let inner = BETA * (x + KAPPA * x * x * x);
        let t = inner.tanh();
        let left = 0.5 * x;
        let right = 1.0 + t;
        0.5 * right + left * (1.0 - t * t) * BETA * (1.0 + 3.0 * KAPPA * x * x)
    } else {
        let cdf = 0.5 * (1.0 + libm::erf(x * std::f64::consts::FRAC_1_SQRT_2));
        let pdf = (-0.5 * x * x).exp()
            * 0.5
            * std::f64::consts::FRAC_2_SQRT_PI
            * std::f64::consts::FRAC_1_SQRT_2;
        cdf + x * pdf
    }
}

/// d mish / dx: `t + x * sigmoid(x) * (1 - t^2)` with `t = tanh(softplus(x))`.
pub fn mish_backward(x: f64) -> f64 {
    let s = 1.0 / (1.0 + (-x).exp());
    let t = x.exp().ln_1p().tanh();
    t + x * s * (1.0 - t * t)
}

/// d silu / dx: `s * (1 + x * (1 - s))` with `s = sigmoid(x)`.
pub fn silu_backward(x: f64) -> f64 {
    let s = 1.0 / (1.0 + (-x).exp());
    s * (1.0 + x * (1.0 - s))
}

/// `a // b` for floats as PyTorch's `div_floor_floating` computes it: the quotient of `a` less
/// its remainder, rounded to the nearer integer, and a signed zero for a zero quotient.
pub(super) fn div_floor(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        return a / b;
    }
    let m = a % b;
    let mut div = (a - m) / b;
    if m != 0.0 && (b < 0.0) != (m < 0.0) {
        div -= 1.0;
    }
    if div == 0.0 {
        return 0.0f64.copysign(a / b);
    }
    let fd = div.floor();
    if div - fd > 0.5 {
        fd + 1.0
    } else {
        fd
    }
}
