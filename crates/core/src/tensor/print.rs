//! PyTorch's tensor repr, reproduced exactly: value formatting, line wrapping, summarising, suffixes.

use std::fmt;

use super::{DType, Scalar, Tensor};

/// PyTorch's print options (the defaults).
const PRECISION: usize = 4;
const THRESHOLD: usize = 1000;
const EDGEITEMS: usize = 3;
const LINEWIDTH: usize = 80;

/// Python's `str(float)`-style special values, else Rust's formatting.
fn special(v: f64) -> Option<String> {
    if v.is_nan() {
        Some("nan".into())
    } else if v.is_infinite() {
        Some(if v > 0.0 { "inf".into() } else { "-inf".into() })
    } else {
        None
    }
}

/// Python's `"{:.Nf}".format(v)`.
fn fixed(v: f64, precision: usize) -> String {
    special(v).unwrap_or_else(|| format!("{v:.precision$}"))
}

/// Python's `"{:.Ne}".format(v)`: the exponent has a sign and at least two digits.
fn sci(v: f64, precision: usize) -> String {
    if let Some(s) = special(v) {
        return s;
    }
    let s = format!("{v:.precision$e}");
    let (mantissa, exp) = s.split_once('e').expect("exponent form");
    let exp: i32 = exp.parse().expect("integer exponent");
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.abs())
}

/// The widest of `values` printed by `width` (at least 1): the column width every element pads to.
fn widest(values: &[f64], width: impl Fn(f64) -> usize) -> usize {
    values.iter().map(|v| width(*v)).max().unwrap_or(1).max(1)
}

/// How every element of one tensor is printed (PyTorch's `_Formatter`).
struct Formatter {
    floating: bool,
    int_mode: bool,
    sci_mode: bool,
    max_width: usize,
}

impl Formatter {
    fn new(floating: bool, values: &[Scalar]) -> Formatter {
        let mut f = Formatter {
            floating,
            int_mode: true,
            sci_mode: false,
            max_width: 1,
        };
        if !floating {
            for v in values {
                f.max_width = f.max_width.max(int_str(*v).len());
            }
            return f;
        }
        let nonzero: Vec<f64> = values
            .iter()
            .map(|v| v.to_f64())
            .filter(|v| v.is_finite() && *v != 0.0)
            .collect();
        if nonzero.is_empty() {
            return f;
        }
        let min = nonzero
            .iter()
            .map(|v| v.abs())
            .fold(f64::INFINITY, f64::min);
        let max = nonzero.iter().map(|v| v.abs()).fold(0.0, f64::max);
        f.int_mode = nonzero.iter().all(|v| *v == v.ceil());
        if f.int_mode {
            if max / min > 1000.0 || max > 1.0e8 {
                f.sci_mode = true;
                f.max_width = widest(&nonzero, |v| sci(v, PRECISION).len());
            } else {
                // Integral floats print with a trailing '.', one column more.
                f.max_width = widest(&nonzero, |v| fixed(v, 0).len() + 1);
            }
        } else if max / min > 1000.0 || max > 1.0e8 || min < 1.0e-4 {
            f.sci_mode = true;
            f.max_width = widest(&nonzero, |v| sci(v, PRECISION).len());
        } else {
            f.max_width = widest(&nonzero, |v| fixed(v, PRECISION).len());
        }
        f
    }

    fn format(&self, v: Scalar) -> String {
        let s = if self.floating {
            let x = v.to_f64();
            if self.sci_mode {
                sci(x, PRECISION)
            } else if self.int_mode {
                let mut s = fixed(x, 0);
                if x.is_finite() {
                    s.push('.');
                }
                s
            } else {
                fixed(x, PRECISION)
            }
        } else {
            int_str(v)
        };
        format!("{s:>width$}", width = self.max_width)
    }
}

fn int_str(v: Scalar) -> String {
    match v {
        Scalar::Bool(true) => "True".into(),
        Scalar::Bool(false) => "False".into(),
        other => other.to_i64().to_string(),
    }
}

/// Row-major values with their shape, printed recursively.
struct Data<'a> {
    values: &'a [Scalar],
    shape: &'a [usize],
    strides: Vec<usize>,
}

impl Data<'_> {
    /// Indices along dim `d` that are shown (edge items only when summarising).
    fn shown(&self, d: usize, summarize: bool) -> (Vec<usize>, bool) {
        let n = self.shape[d];
        if summarize && n > 2 * EDGEITEMS {
            ((0..EDGEITEMS).chain(n - EDGEITEMS..n).collect(), true)
        } else {
            ((0..n).collect(), false)
        }
    }

    /// The elements the formatter sizes its columns from (PyTorch's `get_summarized_data`).
    fn summarized(&self, d: usize, offset: usize, summarize: bool, out: &mut Vec<Scalar>) {
        if d == self.shape.len() {
            out.push(self.values[offset]);
            return;
        }
        for i in self.shown(d, summarize).0 {
            self.summarized(d + 1, offset + i * self.strides[d], summarize, out);
        }
    }

    fn render(
        &self,
        d: usize,
        offset: usize,
        indent: usize,
        summarize: bool,
        f: &Formatter,
    ) -> String {
        let dims_left = self.shape.len() - d;
        if dims_left == 0 {
            return f.format(self.values[offset]);
        }
        let (shown, cut) = self.shown(d, summarize);
        if dims_left == 1 {
            let mut items: Vec<String> = shown
                .iter()
                .map(|&i| f.format(self.values[offset + i * self.strides[d]]))
                .collect();
            if cut {
                items.insert(EDGEITEMS, " ...".into());
            }
            let per_line = ((LINEWIDTH.saturating_sub(indent)) / (f.max_width + 2)).max(1);
            let lines: Vec<String> = items.chunks(per_line).map(|c| c.join(", ")).collect();
            return format!(
                "[{}]",
                lines.join(&format!(",\n{}", " ".repeat(indent + 1)))
            );
        }
        let mut slices: Vec<String> = shown
            .iter()
            .map(|&i| {
                self.render(
                    d + 1,
                    offset + i * self.strides[d],
                    indent + 1,
                    summarize,
                    f,
                )
            })
            .collect();
        if cut {
            slices.insert(EDGEITEMS, "...".into());
        }
        let sep = format!(",{}{}", "\n".repeat(dims_left - 1), " ".repeat(indent + 1));
        format!("[{}]", slices.join(&sep))
    }
}

/// PyTorch's `_add_suffixes`: suffixes go on the last line while it stays within 80 columns.
fn add_suffixes(body: String, suffixes: &[String], indent: usize) -> String {
    let mut out = body;
    let mut last_line_len = match out.rfind('\n') {
        Some(p) => out.len() - p + 1,
        None => out.len() + 2,
    };
    for s in suffixes {
        if last_line_len + s.len() + 2 > LINEWIDTH {
            out.push_str(&format!(",\n{}{s}", " ".repeat(indent)));
            last_line_len = indent + s.len();
        } else {
            out.push_str(&format!(", {s}"));
            last_line_len += s.len() + 2;
        }
    }
    out.push(')');
    out
}

impl Tensor {
    /// The repr, or the reason the values could not be read.
    pub fn repr(&self) -> super::Result<String> {
        let prefix = "tensor(";
        let indent = prefix.len();
        let mut suffixes = Vec::new();
        if self.device() != crate::device::Device::Cpu {
            suffixes.push(format!("device='{}'", self.device()));
        }
        let dtype = self.dtype();
        let body = if self.device() == crate::device::Device::Meta {
            // PyTorch's: no values, so `...` and the size.
            let dims: Vec<String> = self.dims().iter().map(|d| d.to_string()).collect();
            suffixes.push(match dims.len() {
                1 => format!("size=({},)", dims[0]),
                _ => format!("size=({})", dims.join(", ")),
            });
            if dtype != DType::F32 {
                suffixes.push(format!("dtype={dtype}"));
            }
            "...".to_string()
        } else if self.numel() == 0 {
            if self.dim() != 1 {
                let dims: Vec<String> = self.dims().iter().map(|d| d.to_string()).collect();
                let tuple = if dims.len() == 1 {
                    format!("({},)", dims[0])
                } else {
                    format!("({})", dims.join(", "))
                };
                suffixes.push(format!("size={tuple}"));
            }
            if dtype != DType::F32 {
                suffixes.push(format!("dtype={dtype}"));
            }
            "[]".to_string()
        } else {
            if !matches!(dtype, DType::F32 | DType::I64 | DType::Bool) {
                suffixes.push(format!("dtype={dtype}"));
            }
            let values = self.to_scalars()?;
            let shape = self.shape();
            let data = Data {
                values: &values,
                shape: &shape,
                strides: super::layout::contiguous_strides(&shape),
            };
            let summarize = self.numel() > THRESHOLD;
            let mut shown = Vec::new();
            data.summarized(0, 0, summarize, &mut shown);
            let formatter = Formatter::new(dtype.is_float(), &shown);
            data.render(0, 0, indent, summarize, &formatter)
        };
        match self.grad_fn_name() {
            Some(name) => suffixes.push(format!("grad_fn=<{name}>")),
            None if self.requires_grad() => suffixes.push("requires_grad=True".into()),
            None => {}
        }
        Ok(add_suffixes(format!("{prefix}{body}"), &suffixes, indent))
    }
}

impl fmt::Display for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.repr() {
            Ok(s) => f.write_str(&s),
            Err(e) => write!(f, "<tensor that could not be read: {e}>"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_float_formats() {
        assert_eq!(sci(1234.5, 4), "1.2345e+03");
        assert_eq!(sci(1e-5, 4), "1.0000e-05");
        assert_eq!(fixed(0.25, 1), "0.2");
        assert_eq!(fixed(2.5, 0), "2");
        assert_eq!(fixed(-0.5, 4), "-0.5000");
        assert_eq!(fixed(f64::NAN, 4), "nan");
    }
}
