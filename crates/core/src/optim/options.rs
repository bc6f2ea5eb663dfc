//! The optimizers' hyperparameters: PyTorch's defaults, its checks and its error messages.

use crate::tensor::{Result, TensorError};

/// A number as the user wrote it: Python prints `-1` for an int and `-1.0` for a float.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Number {
    /// Its value.
    pub value: f64,
    /// Whether it was written as an int.
    pub int: bool,
}

impl Number {
    /// A float.
    pub const fn float(value: f64) -> Number {
        Number { value, int: false }
    }
    /// An int.
    pub const fn int(value: i64) -> Number {
        Number {
            value: value as f64,
            int: true,
        }
    }
}

impl std::fmt::Display for Number {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.int {
            write!(f, "{}", self.value as i64)
        } else {
            f.write_str(&python_float(self.value))
        }
    }
}

/// Python's `repr` of a float: shortest round trip, `1e-08` below 1e-4, `.0` on whole numbers.
pub fn python_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let sci = format!("{x:e}");
    let (mantissa, exponent) = sci.split_once('e').expect("{:e} has an exponent");
    let exponent: i32 = exponent.parse().expect("an integer exponent");
    if !(-4..16).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exponent.abs());
    }
    let plain = format!("{x}");
    if plain.contains('.') {
        plain
    } else {
        format!("{plain}.0")
    }
}

/// `torch.optim.SGD`'s options.
#[derive(Clone, Debug, PartialEq)]
pub struct SgdOptions {
    /// Learning rate (default 1e-3).
    pub lr: Number,
    /// Momentum factor (default 0).
    pub momentum: Number,
    /// Dampening for momentum (default 0).
    pub dampening: Number,
    /// L2 penalty added to the gradient (default 0).
    pub weight_decay: Number,
    /// Nesterov momentum (default false).
    pub nesterov: bool,
    /// Maximize the objective instead (default false).
    pub maximize: bool,
    /// Multi-tensor path; `None` picks it when every parameter is on a GPU, as PyTorch does.
    pub foreach: Option<bool>,
}

impl Default for SgdOptions {
    fn default() -> Self {
        SgdOptions {
            lr: Number::float(1e-3),
            momentum: Number::int(0),
            dampening: Number::int(0),
            weight_decay: Number::int(0),
            nesterov: false,
            maximize: false,
            foreach: None,
        }
    }
}

impl SgdOptions {
    /// PyTorch's checks in `SGD.__init__`, with its messages.
    pub fn check(&self) -> Result<()> {
        check_lr(self.lr)?;
        if self.momentum.value < 0.0 {
            return Err(invalid(format!(
                "Invalid momentum value: {}",
                self.momentum
            )));
        }
        check_weight_decay(self.weight_decay)?;
        if self.nesterov && (self.momentum.value <= 0.0 || self.dampening.value != 0.0) {
            return Err(invalid(
                "Nesterov momentum requires a momentum and zero dampening",
            ));
        }
        Ok(())
    }
}

/// `torch.optim.Adam`'s and `AdamW`'s options.
#[derive(Clone, Debug, PartialEq)]
pub struct AdamOptions {
    /// Learning rate (default 1e-3).
    pub lr: Number,
    /// Decay rates of the two moment estimates (default (0.9, 0.999)).
    pub betas: (Number, Number),
    /// Added to the denominator (default 1e-8).
    pub eps: Number,
    /// Weight decay (Adam's default 0, AdamW's 1e-2).
    pub weight_decay: Number,
    /// AdamW's decay of the parameters themselves rather than an L2 term in the gradient.
    pub decoupled_weight_decay: bool,
    /// The AMSGrad variant (default false).
    pub amsgrad: bool,
    /// Maximize the objective instead (default false).
    pub maximize: bool,
    /// Multi-tensor path; `None` picks it when every parameter is on a GPU, as PyTorch does.
    pub foreach: Option<bool>,
}

impl AdamOptions {
    /// Adam's defaults.
    pub fn adam() -> AdamOptions {
        AdamOptions {
            lr: Number::float(1e-3),
            betas: (Number::float(0.9), Number::float(0.999)),
            eps: Number::float(1e-8),
            weight_decay: Number::int(0),
            decoupled_weight_decay: false,
            amsgrad: false,
            maximize: false,
            foreach: None,
        }
    }

    /// AdamW's defaults: Adam's with decoupled weight decay 1e-2.
    pub fn adamw() -> AdamOptions {
        AdamOptions {
            weight_decay: Number::float(1e-2),
            decoupled_weight_decay: true,
            ..Self::adam()
        }
    }

    /// PyTorch's checks in `Adam.__init__`, with its messages.
    pub fn check(&self) -> Result<()> {
        check_lr(self.lr)?;
        if self.eps.value < 0.0 {
            return Err(invalid(format!("Invalid epsilon value: {}", self.eps)));
        }
        for (i, beta) in [self.betas.0, self.betas.1].into_iter().enumerate() {
            if !(0.0..1.0).contains(&beta.value) {
                return Err(invalid(format!(
                    "Invalid beta parameter at index {i}: {beta}"
                )));
            }
        }
        check_weight_decay(self.weight_decay)
    }
}

fn invalid(message: impl Into<String>) -> TensorError {
    TensorError::value(message)
}

fn check_lr(lr: Number) -> Result<()> {
    // `not 0.0 <= lr` as PyTorch writes it, so NaN is refused too.
    if lr.value >= 0.0 {
        Ok(())
    } else {
        Err(invalid(format!("Invalid learning rate: {lr}")))
    }
}

fn check_weight_decay(weight_decay: Number) -> Result<()> {
    if weight_decay.value >= 0.0 {
        Ok(())
    } else {
        Err(invalid(format!(
            "Invalid weight_decay value: {weight_decay}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_python_repr_does() {
        assert_eq!(python_float(1e-3), "0.001");
        assert_eq!(python_float(1e-8), "1e-08");
        assert_eq!(python_float(-1.0), "-1.0");
        assert_eq!(python_float(0.999), "0.999");
        assert_eq!(python_float(1.5e16), "1.5e+16");
        assert_eq!(python_float(0.0001), "0.0001");
        assert_eq!(Number::int(-1).to_string(), "-1");
    }

    #[test]
    fn checks_give_pytorch_messages() {
        let sgd = SgdOptions {
            lr: Number::int(-1),
            ..SgdOptions::default()
        };
        assert_eq!(
            sgd.check().unwrap_err().message(),
            "Invalid learning rate: -1"
        );
        let nesterov = SgdOptions {
            nesterov: true,
            ..SgdOptions::default()
        };
        assert!(nesterov.check().unwrap_err().message().contains("Nesterov"));
        let adam = AdamOptions {
            betas: (Number::float(0.9), Number::float(1.0)),
            ..AdamOptions::adam()
        };
        assert_eq!(
            adam.check().unwrap_err().message(),
            "Invalid beta parameter at index 1: 1.0"
        );
        assert!(AdamOptions::adamw().check().is_ok());
    }
}
