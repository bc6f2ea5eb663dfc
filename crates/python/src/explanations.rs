//! What the front ends' magics ask of a Python session between runs: its variables walked for
//! the explanations (`%holders`, `%why NAME`, `%vars`), by the names of `__main__`.

use rustpython_vm::builtins::PyStr;
use rustpython_vm::PyObjectRef;
use torchlet_explain::explain_free::{self, Way};
use torchlet_explain::holders::{self, BlockHolders, HolderMap};

use crate::interpreter::Python;
use crate::named_values::{walk, Walked, Walker};

/// The longest preview `%vars` gives of a value that is no tensor.
const PREVIEW_CHARS: usize = 40;

impl Python {
    /// The variables of `__main__`, walked into what the explanations read.
    pub fn named_values(&self) -> Walked {
        self.interpreter.enter(|vm| {
            let globals: PyObjectRef = self.main.globals.clone().into();
            walk(vm, &globals, &[]).unwrap_or_default()
        })
    }

    /// Every live block of cuda:`device`, biggest first, with what holds it.
    pub fn memory_holders(&self, device: usize) -> Vec<BlockHolders> {
        let walked = self.named_values();
        let map = HolderMap::of_variables(walked.iter());
        holders::block_holders(&map, device)
    }

    /// What each of the four ways to free `text` (a variable or a path into one:
    /// `model.fc.weight`, `cache['k']`, `opt.state[model.fc.weight]`) would do now on
    /// cuda:`device`, with the path as the explanations spell it; `None` when nothing is there.
    pub fn explain_free(&self, text: &str, device: usize) -> Option<(String, Vec<Way>)> {
        let walked = self.named_values();
        let (path, value) = self
            .interpreter
            .enter(|vm| walked.lookup(vm, text.trim()))?;
        let ways = explain_free::explain_free(&path, &value, walked.iter(), device);
        Some((path, ways))
    }

    /// The variables of `__main__` that are no tensor, module, class or function: name, type
    /// and a one-line preview of at most 40 characters.
    pub fn other_variables(&self) -> Vec<[String; 3]> {
        self.interpreter.enter(|vm| {
            let walker = Walker::new(vm);
            let globals = self.main.globals.clone();
            let mut rows = Vec::new();
            for (key, value) in globals.items_vec() {
                let Some(name) = key.downcast_ref::<PyStr>().map(|n| n.to_string_lossy()) else {
                    continue;
                };
                let skip = name.starts_with('_')
                    || crate::native::args::tensor_of(&value).is_some()
                    || walker.is_code_or_module(&value);
                if skip {
                    continue;
                }
                let shown = value
                    .repr(vm)
                    .map(|r| r.to_string_lossy().replace('\n', " "))
                    .unwrap_or_default();
                let preview = match shown.chars().count() > PREVIEW_CHARS {
                    true => shown.chars().take(PREVIEW_CHARS - 3).collect::<String>() + "...",
                    false => shown,
                };
                rows.push([name.to_string(), value.class().name().to_string(), preview]);
            }
            rows
        })
    }
}
