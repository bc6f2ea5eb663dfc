//! Provenance for the script layer: `__site(LINE, COL)` before each top-level statement and
//! `__fsite(INPUT, LINE, COL)` before each statement of a script function
//! ([`crate::source::fn_marks`]) name it, as `FILE:LINE:COL: text`, for the allocations it makes
//! (see [`torchlet_alloc::site`]), with the calls that led to it when it runs inside a function.
//!
//! The names and the stacks are made once per statement (and per chain of calls) and shared after
//! that, so a statement in a loop costs a table lookup per run, not a string.
use std::collections::HashMap;
use std::sync::Arc;

use crate::source::fn_marks::FnSpan;

use super::state::{LanguageState, State};

/// A statement: the input that holds it (its index in the inputs run), its line and column.
type Key = (usize, i64, i64);

/// Maps keyed by statements, hashed as rustc's FxHash does: SipHash's resistance to chosen keys
/// buys nothing for line numbers and cost a marked statement most of its time.
type Fast<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<Fx>>;

/// FxHash: one rotate, xor and multiply per word.
#[derive(Default)]
struct Fx(u64);

impl std::hash::Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_i64(&mut self, v: i64) {
        self.write_u64(v as u64);
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}

/// One input as run: its source, its text and its script functions' bodies.
struct Text {
    source: String,
    code: String,
    functions: Vec<FnSpan>,
}

/// The input running now, and every input run so far (a function defined by one runs later).
#[derive(Default)]
pub struct Input {
    texts: Vec<Text>,
    /// The input running now, if any.
    current: Option<usize>,
    /// The statement entered last at the top level: where an error with no position of its own
    /// happened.
    last: Option<(i64, i64)>,
    /// The statements running now, outermost first, and the call level of each.
    keys: Vec<Key>,
    levels: Vec<usize>,
    names: Fast<Key, Arc<str>>,
    stacks: Fast<Vec<Key>, Arc<str>>,
}

/// Register `__site(LINE, COL)` and `__fsite(INPUT, LINE, COL)`.
pub(crate) fn register(engine: &mut rhai::Engine, state: &State) {
    let top = state.clone();
    engine.register_fn("__site", move |line: rhai::INT, col: rhai::INT| {
        let mut input = top.input.borrow_mut();
        let Some(id) = input.current else { return };
        input.last = Some((line, col));
        enter(&mut input, 0, (id, line, col));
    });
    let state = state.clone();
    engine.register_fn(
        crate::source::fn_marks::FSITE,
        move |ctx: rhai::NativeCallContext, id: rhai::INT, line: rhai::INT, col: rhai::INT| {
            let mut input = state.input.borrow_mut();
            if input.current.is_some() {
                enter(&mut input, ctx.call_level(), (id as usize, line, col));
            }
        },
    );
}

/// The index the next input [`begin_input`] starts will have (what its function marks carry).
pub fn next_input(state: &LanguageState) -> usize {
    state.input.borrow().texts.len()
}

/// An input starts: its statements will be named from `code`, under `source`; `functions` are
/// the bodies of the script functions it defines.
pub fn begin_input(state: &LanguageState, source: &str, code: &str, functions: Vec<FnSpan>) {
    let mut input = state.input.borrow_mut();
    input.texts.push(Text {
        source: source.to_string(),
        code: code.to_string(),
        functions,
    });
    input.current = Some(input.texts.len() - 1);
    input.last = None;
}

/// The input is done: allocations made now belong to no statement. The (line, column) of the
/// statement that ran last, for an error Rhai gives no position (one raised in a module's
/// function, such as `cuda::all_reduce`).
pub fn end_input(state: &LanguageState) -> Option<(usize, usize)> {
    let mut input = state.input.borrow_mut();
    input.current = None;
    input.keys.clear();
    input.levels.clear();
    torchlet_alloc::site::set(None);
    input
        .last
        .take()
        .map(|(line, col)| (line as usize, col as usize))
}

/// The statement `key` runs at call level `level`: the calls at deeper levels have returned.
fn enter(input: &mut Input, level: usize, key: Key) {
    let open = input.levels.iter().take_while(|&&l| l < level).count();
    input.keys.truncate(open);
    input.levels.truncate(open);
    input.keys.push(key);
    input.levels.push(level);
    let name = input.name(key);
    let stack = (input.keys.len() > 1).then(|| input.stack());
    torchlet_alloc::site::set_with_stack(Some(name), stack);
}

impl Input {
    /// `FILE:LINE:COL: text` of a statement.
    fn name(&mut self, key: Key) -> Arc<str> {
        if let Some(name) = self.names.get(&key) {
            return name.clone();
        }
        let (id, line, col) = key;
        let name: Arc<str> = match self.texts.get(id) {
            Some(t) => Arc::from(format!("{}:{line}:{col}: {}", t.source, t.line(line))),
            None => Arc::from(format!("<input>:{line}:{col}")),
        };
        self.names.insert(key, name.clone());
        name
    }

    /// The running statements as a traceback shows them, outermost first:
    /// `File "F", line L, in NAME: text`.
    fn stack(&mut self) -> Arc<str> {
        if let Some(stack) = self.stacks.get(self.keys.as_slice()) {
            return stack.clone();
        }
        let lines: Vec<String> = self
            .keys
            .iter()
            .zip(&self.levels)
            .map(|(&(id, line, col), &level)| match self.texts.get(id) {
                Some(t) => format!(
                    "File \"{}\", line {line}, in {}: {}",
                    t.source,
                    if level == 0 {
                        "<module>"
                    } else {
                        t.function_at(line, col)
                    },
                    t.line(line)
                ),
                None => format!("line {line}"),
            })
            .collect();
        let stack: Arc<str> = Arc::from(lines.join("\n"));
        self.stacks.insert(self.keys.clone(), stack.clone());
        stack
    }
}

impl Text {
    /// Line `line` (1-based) of the input, trimmed.
    fn line(&self, line: i64) -> &str {
        self.code
            .lines()
            .nth((line as usize).saturating_sub(1))
            .unwrap_or("")
            .trim()
    }

    /// The innermost script function whose body holds (line, col).
    fn function_at(&self, line: i64, col: i64) -> &str {
        let at = (line as usize, col as usize);
        self.functions
            .iter()
            .filter(|f| f.contains(at))
            .min_by_key(|f| (f.end.0 - f.start.0, f.end.1.abs_diff(f.start.1)))
            .map_or("<function>", |f| f.name.as_str())
    }
}
