//! A hyperparameter's number as the user wrote it, printed as Python prints it.

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
}
