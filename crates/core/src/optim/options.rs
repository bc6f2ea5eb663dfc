//! The optimizers' options, one row each: PyTorch's defaults per optimizer, the value's type,
//! PyTorch's check with its message, and a line of help. The structs the algorithms read,
//! keyword parsing, `repr(optimizer)` and help all come from these rows.

pub use super::number::{python_float, Number};
use super::option_table::optimizer_options;
pub use super::option_table::{
    keywords, Auto, Check, Flag, OptimizerKind, OptionField, OptionRow, OptionType, OptionValue,
    Pair,
};
use crate::tensor::{Result, TensorError};

optimizer_options! {
    lr: Number, "learning rate", check 1 |v| below_zero(v, "Invalid learning rate")
        => {
            SGD: Number::float(1e-3), Adam: Number::float(1e-3), AdamW: Number::float(1e-3),
            RMSprop: Number::float(1e-2), Adagrad: Number::float(1e-2)
        };
    lr_decay: Number, "learning rate decay per step",
        check 2 |v| below_zero(v, "Invalid lr_decay value") => { Adagrad: Number::int(0) };
    alpha: Number, "smoothing constant of the square average",
        check 7 |v| below_zero(v, "Invalid alpha value") => { RMSprop: Number::float(0.99) };
    momentum: Number, "momentum factor", check 4 |v| below_zero(v, "Invalid momentum value")
        => { SGD: Number::int(0), RMSprop: Number::int(0) };
    dampening: Number, "dampening for momentum" => { SGD: Number::int(0) };
    betas: Pair, "decay rates of the two moment estimates", check 5 betas_outside_unit
        => {
            Adam: (Number::float(0.9), Number::float(0.999)),
            AdamW: (Number::float(0.9), Number::float(0.999))
        };
    eps: Number, "added to the denominator", check 3 |v| below_zero(v, "Invalid epsilon value")
        => {
            Adam: Number::float(1e-8), AdamW: Number::float(1e-8), RMSprop: Number::float(1e-8),
            Adagrad: Number::float(1e-10)
        };
    weight_decay: Number, "weight decay (an L2 penalty unless decoupled)",
        check 6 |v| below_zero(v, "Invalid weight_decay value")
        => {
            SGD: Number::int(0), Adam: Number::int(0), AdamW: Number::float(1e-2),
            RMSprop: Number::int(0), Adagrad: Number::int(0)
        };
    initial_accumulator_value: Number, "the starting value of the sums of squares",
        check 8 |v| below_zero(v, "Invalid initial_accumulator_value value")
        => { Adagrad: Number::int(0) };
    nesterov: Flag, "Nesterov momentum" => { SGD: false };
    centered: Flag, "normalize by the gradient's variance instead" => { RMSprop: false };
    amsgrad: Flag, "the AMSGrad variant" => { Adam: false, AdamW: false };
    maximize: Flag, "maximize the objective instead"
        => { SGD: false, Adam: false, AdamW: false, RMSprop: false, Adagrad: false };
    foreach: Auto, "the multi-tensor path; None picks it when every parameter is on a GPU"
        => { SGD: None, Adam: None, AdamW: None, RMSprop: None, Adagrad: None };
    capturable: Flag, "CUDA-graph capturable steps", only OptionValue::Flag(false)
        => [Adam, AdamW, RmsProp];
    differentiable: Flag, "autograd through the step", only OptionValue::Flag(false)
        => [Sgd, Adam, AdamW, RmsProp, Adagrad];
    fused: Auto, "the fused kernel", only OptionValue::Auto(None) => [Sgd, Adam, AdamW, Adagrad];
    decoupled_weight_decay: Flag, "decay the parameters themselves rather than the gradient"
        => { Adam: false, AdamW fixed: true };
}

/// `not 0.0 <= x` as PyTorch writes it (so NaN is refused too): `"{what}: {x}"`.
fn below_zero(value: OptionValue, what: &str) -> Option<String> {
    let n = Number::unwrap(value)?;
    if n.value >= 0.0 {
        None
    } else {
        Some(format!("{what}: {n}"))
    }
}

/// `not 0.0 <= beta < 1.0` for each beta, in order.
fn betas_outside_unit(value: OptionValue) -> Option<String> {
    let (b1, b2) = Pair::unwrap(value)?;
    [b1, b2]
        .into_iter()
        .enumerate()
        .find(|(_, beta)| !(0.0..1.0).contains(&beta.value))
        .map(|(i, beta)| format!("Invalid beta parameter at index {i}: {beta}"))
}

impl SgdOptions {
    /// PyTorch's checks in `SGD.__init__`, with its messages.
    pub fn check(&self) -> Result<()> {
        super::option_table::check_all(OPTIONS, OptimizerKind::Sgd, |name| self.get(name))?;
        // The one check of two options together.
        if self.nesterov && (self.momentum.value <= 0.0 || self.dampening.value != 0.0) {
            return Err(TensorError::value(
                "Nesterov momentum requires a momentum and zero dampening",
            ));
        }
        Ok(())
    }
}

impl AdamOptions {
    /// PyTorch's checks in `Adam.__init__`, with its messages.
    pub fn check(&self) -> Result<()> {
        super::option_table::check_all(OPTIONS, OptimizerKind::Adam, |name| self.get(name))
    }
}

impl RmsPropOptions {
    /// PyTorch's checks in `RMSprop.__init__`, with its messages.
    pub fn check(&self) -> Result<()> {
        super::option_table::check_all(OPTIONS, OptimizerKind::RmsProp, |name| self.get(name))
    }
}

impl AdagradOptions {
    /// PyTorch's checks in `Adagrad.__init__`, with its messages; it checks `eps` last, where
    /// Adam and RMSprop check it second.
    pub fn check(&self) -> Result<()> {
        let kind = OptimizerKind::Adagrad;
        super::option_table::check_all(OPTIONS, kind, |name| match name {
            "eps" => None,
            _ => self.get(name),
        })?;
        super::option_table::check_all(OPTIONS, kind, |name| match name {
            "eps" => self.get(name),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn adam_checks_eps_before_betas_as_its_init_does() {
        let both = AdamOptions {
            eps: Number::float(-1.0),
            betas: (Number::float(2.0), Number::float(0.999)),
            ..AdamOptions::adam()
        };
        assert_eq!(
            both.check().unwrap_err().message(),
            "Invalid epsilon value: -1.0"
        );
        let nan = AdamOptions {
            lr: Number::float(f64::NAN),
            ..AdamOptions::adam()
        };
        assert_eq!(
            nan.check().unwrap_err().message(),
            "Invalid learning rate: nan"
        );
    }

    #[test]
    fn rows_give_each_optimizer_pytorchs_keywords_in_signature_order() {
        let names =
            |kind| -> Vec<&str> { keywords(OPTIONS, kind).iter().map(|r| r.name).collect() };
        assert_eq!(
            names(OptimizerKind::Sgd).join(", "),
            "lr, momentum, dampening, weight_decay, nesterov, maximize, foreach, differentiable, fused"
        );
        assert_eq!(
            names(OptimizerKind::Adam).join(", "),
            "lr, betas, eps, weight_decay, amsgrad, maximize, foreach, capturable, differentiable, fused, decoupled_weight_decay"
        );
        // AdamW always decouples: its group holds the option, its signature has no keyword.
        assert!(!names(OptimizerKind::AdamW).contains(&"decoupled_weight_decay"));
        let adamw = AdamOptions::adamw();
        assert_eq!(
            adamw.get("decoupled_weight_decay"),
            Some(OptionValue::Flag(true))
        );
        assert_eq!(adamw.get("weight_decay").unwrap().to_string(), "0.01");
    }

    #[test]
    fn set_takes_a_value_of_the_rows_type_only() {
        let mut o = SgdOptions::default();
        assert!(o.set("momentum", OptionValue::Number(Number::float(0.9))));
        assert_eq!(o.momentum, Number::float(0.9));
        assert!(!o.set("momentum", OptionValue::Flag(true)));
        assert!(!o.set("betas", OptionValue::Pair((Number::int(0), Number::int(0)))));
    }
}
