//! What a notebook asks between cells: is this text a whole cell, what completes the word at the
//! cursor, and what is the name under it (`_torchlet_notebook.py` answers in Python).

use rustpython_vm::builtins::PyListRef;
use rustpython_vm::compiler::Mode;
use rustpython_vm::{PyObjectRef, PyResult, VirtualMachine};

use crate::interpreter::Python;

/// Whether a cell's text can run as it stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellState {
    /// It parses: run it.
    Complete,
    /// More lines would finish it (an open bracket, a block with no blank line after it yet).
    Incomplete,
    /// No continuation makes it parse.
    Invalid,
}

/// The text a completion replaces, and what may replace it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Completions {
    /// Byte offset where the replaced word starts (after the last dot of `x.sh`).
    pub start: usize,
    /// Byte offset where it ends (the cursor).
    pub end: usize,
    /// The candidates, sorted.
    pub names: Vec<String>,
}

impl Python {
    /// How `source` stands, as a console's "is it complete?" asks before running it.
    pub fn cell_state(&self, source: &str) -> CellState {
        if self.needs_more(source) {
            return CellState::Incomplete;
        }
        self.interpreter
            .enter(|vm| match vm.compile(source, Mode::Exec, "<cell>".into()) {
                Ok(_) => CellState::Complete,
                Err(_) => CellState::Invalid,
            })
    }

    /// Names that complete the dotted word ending at byte `cursor` of `code`: the namespace's,
    /// builtins and keywords, or the attributes of the object before the last dot.
    pub fn complete(&self, code: &str, cursor: usize) -> Completions {
        let cursor = floor_char_boundary(code, cursor);
        let token = dotted_word_before(code, cursor);
        let start = cursor - token.rsplit('.').next().map_or(0, str::len);
        let names = self
            .notebook_call("complete", token)
            .ok()
            .and_then(|value| strings(value, self));
        Completions {
            start,
            end: cursor,
            names: names.unwrap_or_default(),
        }
    }

    /// Help on the dotted name at byte `cursor` of `code`: its signature or type, its value
    /// and its docstring; `None` for a name the namespace does not have.
    pub fn inspect(&self, code: &str, cursor: usize) -> Option<String> {
        let cursor = floor_char_boundary(code, cursor);
        let after = code[cursor..]
            .find(|c: char| !is_name_char(c))
            .map_or(code.len(), |n| cursor + n);
        let name = dotted_word_before(code, after).trim_matches('.');
        if name.is_empty() {
            return None;
        }
        let value = self.notebook_call("describe", name).ok()?;
        self.interpreter.enter(|vm| {
            (!vm.is_none(&value))
                .then(|| value.str(vm).map(|s| s.to_string_lossy().to_string()).ok())?
        })
    }

    /// Call `_torchlet_notebook.FUNCTION(__main__'s namespace, argument)`.
    fn notebook_call(&self, function: &'static str, argument: &str) -> PyResult<PyObjectRef> {
        self.interpreter.enter(|vm| {
            let helpers = vm.import("_torchlet_notebook", 0)?;
            let f = helpers.get_attr(function, vm)?;
            let namespace: PyObjectRef = self.main.globals.clone().into();
            f.call((namespace, vm.ctx.new_str(argument)), vm)
        })
    }
}

/// A Python list of strings as Rust strings.
fn strings(value: PyObjectRef, python: &Python) -> Option<Vec<String>> {
    python.interpreter.enter(|vm: &VirtualMachine| {
        let list = value.downcast::<rustpython_vm::builtins::PyList>().ok()?;
        let list: PyListRef = list;
        let items = list.borrow_vec();
        items
            .iter()
            .map(|item| item.str(vm).ok().map(|s| s.to_string_lossy().to_string()))
            .collect()
    })
}

/// The run of name characters and dots that ends at `end` (`model.fc.we` in `print(model.fc.we`).
fn dotted_word_before(code: &str, end: usize) -> &str {
    let start = code[..end]
        .rfind(|c: char| !(is_name_char(c) || c == '.'))
        .map_or(0, |i| {
            i + code[i..].chars().next().map_or(1, char::len_utf8)
        });
    &code[start..end]
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `cursor`, moved back to the start of the character it falls in.
fn floor_char_boundary(code: &str, cursor: usize) -> usize {
    let mut at = cursor.min(code.len());
    while !code.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_is_incomplete_until_its_blank_line_and_garbage_is_invalid() {
        let python = Python::new().unwrap();
        assert_eq!(python.cell_state("x = 1\n"), CellState::Complete);
        assert_eq!(
            python.cell_state("with torch.no_grad():\n    h = 1\n"),
            CellState::Incomplete
        );
        assert_eq!(python.cell_state("x = (1,\n"), CellState::Incomplete);
        assert_eq!(python.cell_state("x = = 1\n"), CellState::Invalid);
    }

    #[test]
    fn completion_offers_what_dir_offers_after_a_dot() {
        let python = Python::new().unwrap();
        python
            .run_source(
                "import torch\nx = torch.zeros(2)\nxylophone = 1\n",
                "<t>",
                false,
            )
            .unwrap();
        let names = python.complete("x.sha", 5);
        assert_eq!((names.start, names.end), (2, 5));
        assert_eq!(names.names, ["shape"]);
        let top = python.complete("print(xy", 8);
        assert_eq!((top.start, top.names), (6, vec!["xylophone".to_string()]));
        let methods = python.complete("x.", 2).names;
        assert!(methods.contains(&"cuda".to_string()), "{methods:?}");
        assert!(
            methods.iter().all(|m| !m.starts_with('_')),
            "private names only when asked for"
        );
        assert!(python.complete("nothing_here.x", 14).names.is_empty());
    }

    #[test]
    fn inspect_gives_the_value_or_signature_of_the_name_under_the_cursor() {
        let python = Python::new().unwrap();
        python
            .run_source(
                "import torch\nx = torch.zeros(2)\ndef f(a, b=2):\n    'Adds.'\n    return a\n",
                "<t>",
                false,
            )
            .unwrap();
        let shown = python.inspect("x.sum()", 0).unwrap();
        assert!(shown.starts_with("x: Tensor\ntensor([0., 0.])"), "{shown}");
        assert_eq!(python.inspect("f(1)", 1).unwrap(), "f(a, b=2)\n\nAdds.");
        assert_eq!(python.inspect("unknown_name", 3), None);
    }
}
