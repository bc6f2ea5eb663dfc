//! PyTorch's spelling in a session: inputs read through the session's `import` aliases, errors with hints.
use torchlet_rhai::source::hints::{self, ErrorSite, Known};
use torchlet_rhai::source::python_spelling::{self, Aliases};

use super::{ScriptError, Session};

impl Session {
    /// `code` as the session compiles it (PyTorch's spellings rewritten, see
    /// [`python_spelling`]), without remembering its `import` lines. Lines and columns are the
    /// typed ones, so front ends may look up a cursor's position in either.
    pub fn spelled(&self, code: &str) -> String {
        let mut aliases = self.aliases.clone();
        python_spelling::translate(code, &mut aliases, |n| self.is_variable(n))
    }

    /// `code` as the session compiles it; its `import` lines bind their names for later inputs.
    pub(super) fn spell(&mut self, code: &str) -> String {
        let mut aliases: Aliases = std::mem::take(&mut self.aliases);
        let spelled = python_spelling::translate(code, &mut aliases, |n| self.is_variable(n));
        self.aliases = aliases;
        spelled
    }

    fn is_variable(&self, name: &str) -> bool {
        self.scope
            .get(name)
            .is_some_and(|v| !torchlet_rhai::runtime::syntax::is_deleted(v))
    }

    /// `error` (found in the compiled text `compiled`) as the user sees it: on the line they typed
    /// in `typed`, with a `hint:` line when one applies.
    pub(super) fn as_typed(
        &self,
        mut error: ScriptError,
        typed: &str,
        compiled: &str,
    ) -> ScriptError {
        error.source_line = error
            .line
            .and_then(|l| typed.lines().nth(l - 1))
            .map(str::to_string);
        let site = ErrorSite {
            kind: &error.kind,
            message: &error.message,
            line: error.line,
            column: error.column,
        };
        // A hint found while compiling (floor division written `//`) is the more precise one.
        if error.hint.is_none() {
            error.hint = hints::hint(typed, compiled, &site, &self.known_names());
        }
        error
    }

    /// What a misspelt name may have meant: variables, functions, `cuda::` members, tensor members.
    fn known_names(&self) -> Known {
        let mut names: Vec<String> = self.global_names().0.into_keys().collect();
        names.extend(
            self.module_members("cuda")
                .0
                .into_keys()
                .map(|m| format!("cuda::{m}")),
        );
        // Tensor members only: Rhai's array and string methods (`some`, `splice` …) are no
        // likely meaning of a misspelt tensor method.
        let members = torchlet_rhai::surface::help::tensor_member_names();
        Known {
            names,
            members: members.into_iter().map(str::to_string).collect(),
        }
    }
}
