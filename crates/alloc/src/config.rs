//! Allocator settings in PyTorch's `PYTORCH_CUDA_ALLOC_CONF` syntax, read from `TORCHLET_CUDA_ALLOC_CONF`.

use super::error::AllocError;
use super::size::{self, LARGE_BUFFER, ROUNDUP_INTERVALS};

/// The environment variable torchlet reads its allocator settings from.
pub const CONF_ENV: &str = "TORCHLET_CUDA_ALLOC_CONF";
/// PyTorch's name for the same variable, read when [`CONF_ENV`] is unset.
pub const CONF_ENV_ALIAS: &str = "PYTORCH_CUDA_ALLOC_CONF";

const MIB: usize = 1 << 20;
const KNOWN_KEYS: &str = "max_split_size_mb, max_non_split_rounding_mb, roundup_power2_divisions, \
     garbage_collection_threshold, expandable_segments, backend, release_lock_on_cudamalloc";

/// The caching allocator's settings: `PYTORCH_CUDA_ALLOC_CONF`, with PyTorch's syntax and checks.
#[derive(Clone, Debug, PartialEq)]
pub struct AllocConfig {
    max_split_size: usize,
    max_non_split_rounding: usize,
    roundup_power2_divisions: [usize; ROUNDUP_INTERVALS],
    garbage_collection_threshold: f64,
    expandable_segments: bool,
    settings: String,
}

impl Default for AllocConfig {
    fn default() -> Self {
        AllocConfig {
            max_split_size: usize::MAX,
            max_non_split_rounding: LARGE_BUFFER,
            roundup_power2_divisions: [0; ROUNDUP_INTERVALS],
            garbage_collection_threshold: 0.0,
            expandable_segments: false,
            settings: String::new(),
        }
    }
}

impl AllocConfig {
    /// Parses a settings string such as `max_split_size_mb:128,expandable_segments:True`.
    pub fn parse(settings: &str) -> Result<AllocConfig, AllocError> {
        let mut config = AllocConfig::default();
        config.apply(settings)?;
        Ok(config)
    }

    /// Reads `TORCHLET_CUDA_ALLOC_CONF` (or its alias `PYTORCH_CUDA_ALLOC_CONF`); defaults when unset.
    pub fn from_env() -> Result<AllocConfig, AllocError> {
        AllocConfig::from_vars(|var| std::env::var(var).ok())
    }

    /// [`AllocConfig::from_env`] over any source of variables (`lookup` gives a variable's value).
    pub fn from_vars(lookup: impl Fn(&str) -> Option<String>) -> Result<AllocConfig, AllocError> {
        for var in [CONF_ENV, CONF_ENV_ALIAS] {
            if let Some(value) = lookup(var) {
                return AllocConfig::parse(&value)
                    .map_err(|e| AllocError::Config(format!("{var}={value:?}: {e}")));
            }
        }
        Ok(AllocConfig::default())
    }

    /// Applies a settings string on top of this configuration: keys it names change, others stay
    /// (as PyTorch's `_set_allocator_settings` does). On error nothing changes.
    pub fn apply(&mut self, settings: &str) -> Result<(), AllocError> {
        let mut next = self.clone();
        Parser::new(settings).run(&mut next)?;
        next.settings = settings.to_string();
        *self = next;
        Ok(())
    }

    /// Blocks of at least this many bytes are "oversize"; `usize::MAX` when unlimited.
    pub fn max_split_size(&self) -> usize {
        self.max_split_size
    }
    /// Slack allowed when an oversize cached block is reused whole.
    pub fn max_non_split_rounding(&self) -> usize {
        self.max_non_split_rounding
    }
    /// The division setting of each of the 16 power-of-two size intervals.
    pub fn roundup_power2_divisions(&self) -> [usize; ROUNDUP_INTERVALS] {
        self.roundup_power2_divisions
    }
    /// Fraction of the allowed memory above which cached blocks are collected (0 = off).
    pub fn garbage_collection_threshold(&self) -> f64 {
        self.garbage_collection_threshold
    }
    /// Whether new memory is mapped page by page into growing segments.
    pub fn expandable_segments(&self) -> bool {
        self.expandable_segments
    }
    /// The last settings string applied (empty for the defaults).
    pub fn settings(&self) -> &str {
        &self.settings
    }

    /// The block size a request of `n` bytes gets (PyTorch's `round_size`): a multiple of 512, or
    /// of a `roundup_power2_divisions` step.
    #[inline]
    pub fn round_size(&self, n: usize) -> usize {
        let divisions = self.roundup_power2_divisions[size::roundup_interval(n)];
        size::round_size_with(n, divisions)
    }
}

/// Tokens of PyTorch's config lexer: `, : [ ]` stand alone, spaces vanish.
fn tokenize(s: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut buf = String::new();
    for ch in s.chars() {
        match ch {
            ',' | ':' | '[' | ']' => {
                if !buf.is_empty() {
                    tokens.push(std::mem::take(&mut buf));
                }
                tokens.push(ch.to_string());
            }
            c if c.is_whitespace() => {}
            c => buf.push(c),
        }
    }
    if !buf.is_empty() {
        tokens.push(buf);
    }
    tokens
}

struct Parser {
    tokens: Vec<String>,
    pos: usize,
}

fn err(key: &str, what: impl std::fmt::Display) -> AllocError {
    AllocError::Config(format!("allocator setting '{key}': {what}"))
}

impl Parser {
    fn new(s: &str) -> Self {
        Parser {
            tokens: tokenize(s),
            pos: 0,
        }
    }

    fn next(&mut self) -> Option<String> {
        let t = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn expect(&mut self, key: &str, tok: &str) -> Result<(), AllocError> {
        match self.next() {
            Some(t) if t == tok => Ok(()),
            Some(t) => Err(err(key, format!("expected '{tok}', found '{t}'"))),
            None => Err(err(
                key,
                format!("expected '{tok}' and a value, found the end"),
            )),
        }
    }

    fn value(&mut self, key: &str) -> Result<String, AllocError> {
        match self.next() {
            Some(t) if !matches!(t.as_str(), "," | ":" | "[" | "]") => Ok(t),
            _ => Err(err(key, "missing value")),
        }
    }

    fn number(&mut self, key: &str) -> Result<usize, AllocError> {
        let v = self.value(key)?;
        v.parse::<usize>()
            .map_err(|_| err(key, format!("expected a whole number, got '{v}'")))
    }

    fn boolean(&mut self, key: &str) -> Result<bool, AllocError> {
        match self.value(key)?.as_str() {
            "True" => Ok(true),
            "False" => Ok(false),
            v => Err(err(key, format!("expected True or False, got '{v}'"))),
        }
    }

    fn run(&mut self, c: &mut AllocConfig) -> Result<(), AllocError> {
        while let Some(key) = self.next() {
            if key == "," {
                continue;
            }
            if matches!(key.as_str(), ":" | "[" | "]") {
                return Err(AllocError::Config(format!(
                    "allocator settings: expected a key, found '{key}' (format: key:value,key:value)"
                )));
            }
            self.expect(&key, ":")?;
            self.setting(&key, c)?;
            match self.next() {
                None => break,
                Some(t) if t == "," => {}
                Some(t) => {
                    return Err(err(
                        &key,
                        format!("expected ',' after the value, found '{t}'"),
                    ))
                }
            }
        }
        Ok(())
    }

    fn setting(&mut self, key: &str, c: &mut AllocConfig) -> Result<(), AllocError> {
        match key {
            "max_split_size_mb" => {
                let n = self.number(key)?;
                if n < LARGE_BUFFER / MIB {
                    return Err(err(key, format!("{n} is too small, must be >= 20 (MiB)")));
                }
                c.max_split_size = n.min(usize::MAX / MIB) * MIB;
            }
            "max_non_split_rounding_mb" => {
                let n = self.number(key)?;
                if n < LARGE_BUFFER / MIB {
                    return Err(err(key, format!("{n} is too small, must be >= 20 (MiB)")));
                }
                c.max_non_split_rounding = n.min(usize::MAX / MIB) * MIB;
            }
            "roundup_power2_divisions" => self.divisions(key, c)?,
            "garbage_collection_threshold" => {
                let v = self.value(key)?;
                let t: f64 = v.parse().map_err(|_| {
                    err(key, format!("expected a number between 0 and 1, got '{v}'"))
                })?;
                if !(t > 0.0 && t < 1.0) {
                    return Err(err(
                        key,
                        format!("{v} is out of range, must be > 0.0 and < 1.0"),
                    ));
                }
                c.garbage_collection_threshold = t;
            }
            "expandable_segments" => c.expandable_segments = self.boolean(key)?,
            "backend" => match self.value(key)?.as_str() {
                "native" => {}
                v => {
                    return Err(err(
                        key,
                        format!("'{v}' is not supported by torchlet; use 'native'"),
                    ))
                }
            },
            "release_lock_on_cudamalloc"
            | "pinned_use_cuda_host_register"
            | "pinned_use_background_threads"
            | "graph_capture_record_stream_reuse" => {
                // Accepted for compatibility with PyTorch settings strings; they change nothing here.
                self.boolean(key)?;
            }
            "pinned_num_register_threads" => {
                self.number(key)?;
            }
            _ => {
                return Err(AllocError::Config(format!(
                    "unrecognized key '{key}' in the allocator settings (known keys: {KNOWN_KEYS})"
                )))
            }
        }
        Ok(())
    }

    fn division(&mut self, key: &str, allow_zero: bool) -> Result<usize, AllocError> {
        let d = self.number(key)?;
        if !(d.is_power_of_two() || (allow_zero && d == 0)) {
            let zero = if allow_zero {
                " or 0 to disable rounding"
            } else {
                ""
            };
            return Err(err(
                key,
                format!("divisions must be a power of 2{zero}, got {d}"),
            ));
        }
        Ok(d)
    }

    fn divisions(&mut self, key: &str, c: &mut AllocConfig) -> Result<(), AllocError> {
        if self.tokens.get(self.pos).map(String::as_str) != Some("[") {
            let d = self.division(key, false)?;
            c.roundup_power2_divisions = [d; ROUNDUP_INTERVALS];
            return Ok(());
        }
        self.pos += 1;
        let mut last: Option<usize> = None;
        loop {
            let start = self.next().ok_or_else(|| err(key, "missing ']'"))?;
            if start == "]" {
                return Ok(());
            }
            self.expect(key, ":")?;
            let d = self.division(key, true)?;
            if start == ">" {
                let from = last.map_or(0, |i| i + 1);
                c.roundup_power2_divisions[from.min(ROUNDUP_INTERVALS)..].fill(d);
            } else {
                let mb: usize = start
                    .parse()
                    .ok()
                    .filter(|v: &usize| v.is_power_of_two())
                    .ok_or_else(|| {
                        err(
                            key,
                            format!("interval start '{start}' must be a power of 2 (MiB) or '>'"),
                        )
                    })?;
                let index = (mb.trailing_zeros() as usize).min(ROUNDUP_INTERVALS - 1);
                if last.is_none() {
                    c.roundup_power2_divisions[..index].fill(d);
                }
                c.roundup_power2_divisions[index] = d;
                last = Some(index);
            }
            match self.next().as_deref() {
                Some(",") => {}
                Some("]") => return Ok(()),
                Some(t) => return Err(err(key, format!("expected ',' or ']', found '{t}'"))),
                None => return Err(err(key, "missing ']'")),
            }
        }
    }
}
