//! Numbers as Python has them: true division, floor modulo and `floordiv`, `int`, `float`,
//! `round` (ties to even), exact float comparisons, `min`/`max` of arrays, and `fmt_bytes` for
//! memory figures.
//!
//! Rhai's `7 / 2` is 3 and its `%` truncates; a user who computes `allocated / 1024 / 1024` or a
//! fraction of memory gets silently different numbers from Python. Rhai consults its built-in
//! integer operators before registered functions unless fast operators are off, so the engine
//! turns them off (see [`crate::new_engine`]) and the operators here win.
use super::documented::Documented;
use rhai::{Array, Dynamic, Engine, ImmutableString, FLOAT, INT};

use super::convert::Res;
use super::errors::{raise, type_error, value_error};

/// Register the operators and functions.
pub(crate) fn register(engine: &mut Engine) {
    register_division(engine);
    register_modulo(engine);
    register_conversions(engine);
    register_rounding(engine);
    register_float_comparisons(engine);
    engine
        .register_doc("fmt_bytes", &["fmt_bytes(n) — a byte count in binary units: fmt_bytes(4000256) is \"3.81 MiB\""], |n: INT| fmt_bytes(n as f64))
        .register_fn("fmt_bytes", fmt_bytes)
        .register_doc("min", &["min(a, b) or min(array) — the smaller number, or the smallest in an array (t.min() for a tensor)"], |items: Array| extreme(items, "min", |a, b| b < a))
        .register_doc("max", &["max(a, b) or max(array) — the larger number, or the largest in an array (t.max() for a tensor)"], |items: Array| extreme(items, "max", |a, b| b > a))
        // Python's min and max give back one of their arguments, an int stays an int.
        .register_fn("min", |a: INT, b: FLOAT| {
            pick(a, b, (b < a as FLOAT) as usize)
        })
        .register_fn("min", |a: FLOAT, b: INT| {
            pick(a, b, ((b as FLOAT) < a) as usize)
        })
        .register_fn("max", |a: INT, b: FLOAT| {
            pick(a, b, (b > a as FLOAT) as usize)
        })
        .register_fn("max", |a: FLOAT, b: INT| {
            pick(a, b, (b as FLOAT > a) as usize)
        });
}

/// `a` (`which == 0`) or `b`, keeping its type.
fn pick(a: impl Into<Dynamic>, b: impl Into<Dynamic>, which: usize) -> Dynamic {
    if which == 0 {
        a.into()
    } else {
        b.into()
    }
}

/// Float comparisons are exact, as in Python: Rhai's built-in ones allow a relative epsilon,
/// so `0.1 + 0.2 == 0.3` was true and `float("inf") > 1e308` false.
fn register_float_comparisons(engine: &mut Engine) {
    type Compare = fn(FLOAT, FLOAT) -> bool;
    let comparisons: [(&str, Compare); 6] = [
        ("==", |a, b| a == b),
        ("!=", |a, b| a != b),
        ("<", |a, b| a < b),
        ("<=", |a, b| a <= b),
        (">", |a, b| a > b),
        (">=", |a, b| a >= b),
    ];
    for (op, holds) in comparisons {
        engine
            .register_fn(op, move |a: FLOAT, b: FLOAT| holds(a, b))
            .register_fn(op, move |a: INT, b: FLOAT| holds(a as FLOAT, b))
            .register_fn(op, move |a: FLOAT, b: INT| holds(a, b as FLOAT));
    }
}

fn zero_division(message: &str) -> Box<rhai::EvalAltResult> {
    raise("ZeroDivisionError", message)
}

/// `a / b`, Python's true division of two numbers.
fn true_div(a: FLOAT, b: FLOAT, message: &str) -> Res<FLOAT> {
    if b == 0.0 {
        return Err(zero_division(message));
    }
    Ok(a / b)
}

fn register_division(engine: &mut Engine) {
    const INTS: &str = "division by zero";
    const FLOATS: &str = "float division by zero";
    engine
        .register_fn("/", |a: INT, b: INT| true_div(a as FLOAT, b as FLOAT, INTS))
        .register_fn("/", |a: INT, b: FLOAT| true_div(a as FLOAT, b, FLOATS))
        .register_fn("/", |a: FLOAT, b: INT| true_div(a, b as FLOAT, FLOATS))
        .register_fn("/", |a: FLOAT, b: FLOAT| true_div(a, b, FLOATS))
        .register_fn("/=", |a: &mut FLOAT, b: INT| -> Res<()> {
            *a = true_div(*a, b as FLOAT, FLOATS)?;
            Ok(())
        })
        .register_fn("/=", |a: &mut FLOAT, b: FLOAT| -> Res<()> {
            *a = true_div(*a, b, FLOATS)?;
            Ok(())
        })
        // `n /= 2` makes an int variable a float, so this one works on the variable itself.
        .register_raw_fn(
            "/=",
            [std::any::TypeId::of::<INT>(), std::any::TypeId::of::<INT>()],
            |_, args| -> Res<()> {
                let (a, b) = (args[0].as_int().unwrap_or(0), args[1].as_int().unwrap_or(1));
                *args[0] = Dynamic::from_float(true_div(a as FLOAT, b as FLOAT, INTS)?);
                Ok(())
            },
        )
        .register_doc("floordiv", &["floordiv(a, b) — Python's a // b (rounds toward -infinity); `//` starts a comment here"], int_floordiv)
        .register_fn("floordiv", |a: INT, b: FLOAT| float_floordiv(a as FLOAT, b))
        .register_fn("floordiv", |a: FLOAT, b: INT| float_floordiv(a, b as FLOAT))
        .register_fn("floordiv", float_floordiv);
}

/// Python's `a // b` on ints: rounded toward negative infinity.
fn int_floordiv(a: INT, b: INT) -> Res<INT> {
    if b == 0 {
        return Err(zero_division("integer division or modulo by zero"));
    }
    let q = a
        .checked_div(b)
        .ok_or_else(|| raise("OverflowError", "integer overflow"))?;
    Ok(if a % b != 0 && (a < 0) != (b < 0) {
        q - 1
    } else {
        q
    })
}

/// Python's `a // b` on floats (CPython's `float_floor_div`, so the corner cases agree).
fn float_floordiv(a: FLOAT, b: FLOAT) -> Res<FLOAT> {
    if b == 0.0 {
        return Err(zero_division("float floor division by zero"));
    }
    let m = a % b;
    let mut div = (a - m) / b;
    if m != 0.0 && (b < 0.0) != (m < 0.0) {
        div -= 1.0;
    }
    Ok(if div != 0.0 {
        let floor = div.floor();
        if div - floor > 0.5 {
            floor + 1.0
        } else {
            floor
        }
    } else {
        (0.0 as FLOAT).copysign(a / b)
    })
}

/// Python's `a % b` on ints: the result takes the divisor's sign.
fn int_mod(a: INT, b: INT) -> Res<INT> {
    if b == 0 {
        return Err(zero_division("integer modulo by zero"));
    }
    let r = a.wrapping_rem(b);
    Ok(if r != 0 && (r < 0) != (b < 0) {
        r + b
    } else {
        r
    })
}

/// Python's `a % b` on floats (CPython's `float_rem`).
fn float_mod(a: FLOAT, b: FLOAT) -> Res<FLOAT> {
    if b == 0.0 {
        return Err(zero_division("float modulo by zero"));
    }
    let r = a % b;
    Ok(if r != 0.0 {
        if (b < 0.0) != (r < 0.0) {
            r + b
        } else {
            r
        }
    } else {
        (0.0 as FLOAT).copysign(b)
    })
}

fn register_modulo(engine: &mut Engine) {
    engine
        .register_fn("%", int_mod)
        .register_fn("%", |a: INT, b: FLOAT| float_mod(a as FLOAT, b))
        .register_fn("%", |a: FLOAT, b: INT| float_mod(a, b as FLOAT))
        .register_fn("%", float_mod)
        .register_fn("%=", |a: &mut INT, b: INT| -> Res<()> {
            *a = int_mod(*a, b)?;
            Ok(())
        })
        .register_fn("%=", |a: &mut FLOAT, b: INT| -> Res<()> {
            *a = float_mod(*a, b as FLOAT)?;
            Ok(())
        })
        .register_fn("%=", |a: &mut FLOAT, b: FLOAT| -> Res<()> {
            *a = float_mod(*a, b)?;
            Ok(())
        });
}

/// Python's `int(x)` of a float: truncated toward zero.
fn int_of_float(f: FLOAT) -> Res<INT> {
    if f.is_nan() {
        return Err(value_error("cannot convert float NaN to integer"));
    }
    if f.is_infinite() {
        return Err(raise(
            "OverflowError",
            "cannot convert float infinity to integer",
        ));
    }
    let t = f.trunc();
    // i64's range is [-2^63, 2^63): the upper bound itself does not fit.
    if t < -(2f64.powi(63)) || t >= 2f64.powi(63) {
        return Err(raise(
            "OverflowError",
            format!("int({f}) does not fit in a 64-bit int"),
        ));
    }
    Ok(t as INT)
}

/// Python's `int("…")`: blanks around, a sign, digits with single `_` between them.
fn int_of_str(s: &str) -> Res<INT> {
    let invalid = || value_error(format!("invalid literal for int() with base 10: '{s}'"));
    let text = s.trim();
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let well_formed = !digits.is_empty()
        && !digits.starts_with('_')
        && !digits.ends_with('_')
        && !digits.contains("__")
        && digits.chars().all(|c| c.is_ascii_digit() || c == '_');
    if !well_formed {
        return Err(invalid());
    }
    let magnitude: String = digits.chars().filter(|&c| c != '_').collect();
    let signed = if negative {
        format!("-{magnitude}")
    } else {
        magnitude
    };
    signed.parse::<INT>().map_err(|_| {
        raise(
            "OverflowError",
            format!("int('{s}') does not fit in a 64-bit int"),
        )
    })
}

/// Python's `float("…")`: blanks around, `inf`, `nan`, exponents, `_` between digits.
fn float_of_str(s: &str) -> Res<FLOAT> {
    let text = s.trim();
    let clean = !text.starts_with('_') && !text.ends_with('_') && !text.contains("__");
    let parsed = clean
        .then(|| text.replace('_', "").parse::<FLOAT>().ok())
        .flatten();
    parsed.ok_or_else(|| value_error(format!("could not convert string to float: '{s}'")))
}

fn register_conversions(engine: &mut Engine) {
    engine
        .register_doc("int", &["int(x) — a number or string (\"42\") as an int, truncating floats toward zero; t.item() for a tensor"], |i: INT| i)
        .register_fn("int", int_of_float)
        .register_fn("int", |b: bool| b as INT)
        .register_fn("int", |s: ImmutableString| int_of_str(&s))
        // Not on tensors: Rhai cannot tell the call `float(t)` from the method call `t.float()`,
        // which is PyTorch's float32 copy (and `t.int()` its int32 one); `t.item()` is the number.
        .register_doc("float", &["float(x) — a number or string (\"2.5\", \"inf\") as a float; t.float() is a float32 tensor"], |i: INT| i as FLOAT)
        .register_fn("float", |f: FLOAT| f)
        .register_fn("float", |b: bool| b as INT as FLOAT)
        .register_fn("float", |s: ImmutableString| float_of_str(&s));
}

/// Python's `round(f)`: the nearest int, ties to even.
fn round_float(f: FLOAT) -> Res<INT> {
    int_of_float(f.round_ties_even())
}

/// Python's `round(f, n)`: correctly rounded to `n` decimals, ties to even.
fn round_float_to(f: FLOAT, n: INT) -> Res<FLOAT> {
    if !f.is_finite() || n > 323 {
        return Ok(f);
    }
    if n >= 0 {
        // Rust formats the exact binary value and breaks exact ties to even, as CPython's
        // `round` does through its own decimal conversion: round(2.675, 2) is 2.67.
        return Ok(format!("{f:.0$}", n as usize).parse().unwrap_or(f));
    }
    if n < -308 {
        return Ok((0.0 as FLOAT).copysign(f));
    }
    let scale = (10.0 as FLOAT).powi((-n) as i32);
    let y = f / scale;
    let mut z = y.round();
    if (y - z).abs() == 0.5 {
        z = 2.0 * (y / 2.0).round();
    }
    Ok(z * scale)
}

/// Python's `round(i, n)`: ints stay ints; a negative `n` rounds to tens, hundreds …, ties to even.
fn round_int_to(i: INT, n: INT) -> INT {
    if n >= 0 {
        return i;
    }
    let Some(scale) = 10i64.checked_pow((-n) as u32) else {
        return 0;
    };
    let (q, r) = (i.div_euclid(scale), i.rem_euclid(scale));
    let twice = r.saturating_mul(2);
    let up = twice > scale || (twice == scale && q % 2 != 0);
    (q + up as INT).saturating_mul(scale)
}

fn register_rounding(engine: &mut Engine) {
    engine
        .register_doc("round", &["round(x) — the nearest int, ties to even (round(2.5) == 2); round(x, n) — to n decimals"], round_float)
        .register_fn("round", |i: INT| i)
        .register_fn("round", round_float_to)
        .register_fn("round", round_int_to);
}

/// A byte count in binary units with two decimals: `3.81 MiB`; under 1 KiB, `512 B`.
pub fn fmt_bytes(bytes: FLOAT) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let sign = if bytes < 0.0 { "-" } else { "" };
    let mut value = bytes.abs();
    if value < 1024.0 {
        return if value.fract() == 0.0 {
            format!("{sign}{value} B")
        } else {
            format!("{sign}{value:.2} B")
        };
    }
    let mut unit = 0;
    // Move up while the value would print as 1024.00 or more, so 1048575 B is "1.00 MiB".
    while unit + 1 < UNITS.len() && value >= 1024.0 - 0.005 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{sign}{value:.2} {}", UNITS[unit])
}

/// `min(array)`/`max(array)` of numbers, as Python's `min(iterable)`.
fn extreme(items: Array, name: &str, better: fn(FLOAT, FLOAT) -> bool) -> Res<Dynamic> {
    let mut best: Option<(FLOAT, Dynamic)> = None;
    for item in items {
        let value = match (item.as_int(), item.as_float()) {
            (Ok(i), _) => i as FLOAT,
            (_, Ok(f)) => f,
            _ => {
                return Err(type_error(format!(
                    "{name}() of an array compares numbers, not {}",
                    item.type_name()
                )))
            }
        };
        if best.as_ref().is_none_or(|(b, _)| better(*b, value)) {
            best = Some((value, item));
        }
    }
    best.map(|(_, item)| item)
        .ok_or_else(|| value_error(format!("{name}() arg is an empty sequence")))
}

pub use torchlet_explain::bytes::human_bytes;
