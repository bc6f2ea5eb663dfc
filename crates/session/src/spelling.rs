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
        let missing = hints::missing_semicolon_at(compiled, &site);
        if let Some(first) =
            missing.filter(|&(l, _)| error.hint == Some(hints::semicolon_hint(&[l])))
        {
            let lines = self.missing_semicolons(compiled, first);
            error.hint = Some(hints::semicolon_hint(&lines));
            // The caret goes where the `;` is missing, not under the next statement.
            let (line, end) = first;
            let start = compiled[..end].rfind('\n').map_or(0, |nl| nl + 1);
            error.line = Some(line);
            error.column = Some(compiled[start..end].chars().count() + 1);
            error.source_line = typed.lines().nth(line - 1).map(str::to_string);
        }
        error
    }

    /// Every line of `compiled` whose statement lacks its `;`, from the first one (`first`, as
    /// [`hints::missing_semicolon_at`] gives it): each found is mended and the text parsed again,
    /// so a cell with several reports them all at once.
    fn missing_semicolons(&self, compiled: &str, first: (usize, usize)) -> Vec<usize> {
        let mut text = compiled.to_string();
        let mut found = vec![first];
        // Each round mends one statement; a cell has few, and the bound keeps a bad case short.
        while found.len() < 50 {
            let (_, end) = *found.last().unwrap();
            text.insert(end, ';');
            let Err(e) = self.engine.compile_with_scope(&self.scope, &text) else {
                break;
            };
            let message = e.err_type().to_string();
            let site = ErrorSite {
                kind: "SyntaxError",
                message: &message,
                line: e.position().line(),
                column: e.position().position(),
            };
            match hints::missing_semicolon_at(&text, &site) {
                Some(next) => found.push(next),
                None => break,
            }
        }
        let mut lines: Vec<usize> = found.into_iter().map(|(line, _)| line).collect();
        lines.dedup();
        lines
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
