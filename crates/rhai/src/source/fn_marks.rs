//! Statement marks inside script functions: `__fsite(INPUT, LINE, COL);` at the end of the line
//! before each statement of a function body that begins its own line, so that what a function
//! allocates names its own statement and the calls that led to it.
//!
//! Note [marks at line ends]: Rhai gives no way to build a function around a rewritten body (the
//! payload type of its script functions is private), so the marks go into the text, which is
//! compiled again. Each goes after the last character of the line before its statement, where
//! that line ends a statement or opens a block (`;`, `{`, `}`), so no character of the script
//! moves: every line and column Rhai reports (errors, tracebacks) stays as written. A statement
//! that shares its line with another is named with the first; a marked text that does not
//! compile is dropped and the functions run unmarked.
use rhai::{ASTNode, Expr, Position, Stmt, AST};

use crate::runtime::lifetimes::{may_allocate, start_of};

/// The name of the statement hook the marks call.
pub const FSITE: &str = "__fsite";

/// A script function's body as the marks name it: where it starts and ends (line, column) and
/// the function's name (`<closure>` for an anonymous one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FnSpan {
    /// The body's opening `{`.
    pub start: (usize, usize),
    /// The body's closing `}`.
    pub end: (usize, usize),
    /// The function's name.
    pub name: String,
}

impl FnSpan {
    /// Whether (line, column) `at` lies inside the body.
    pub fn contains(&self, at: (usize, usize)) -> bool {
        self.start < at && at < self.end
    }
}

/// Whether a statement may allocate, so that a mark before it names something: not a variable
/// or a constant alone (a function's value), not a jump (as the top level's marks).
fn worth_marking(node: &ASTNode) -> bool {
    let ASTNode::Stmt(stmt) = node else {
        return false;
    };
    let bare = |e: &Expr| {
        matches!(
            e,
            Expr::Variable(..)
                | Expr::IntegerConstant(..)
                | Expr::FloatConstant(..)
                | Expr::StringConstant(..)
                | Expr::BoolConstant(..)
                | Expr::CharConstant(..)
                | Expr::Unit(..)
        )
    };
    may_allocate(stmt) && !matches!(stmt, Stmt::Expr(e) if bare(e))
}

/// Where a statement's first token is: the earliest position in it (Rhai places a binary
/// expression at its operator and a method call at its dot, right of where the statement
/// starts).
fn first_token(stmt: &Stmt) -> Option<(usize, usize)> {
    let at = |p: Position| Some((p.line()?, p.position()?));
    let mut first = at(start_of(stmt));
    stmt.walk(&mut Vec::new(), &mut |path: &[ASTNode]| {
        if let Some(p) = path.last().and_then(|n| at(n.position())) {
            first = Some(first.map_or(p, |f| f.min(p)));
        }
        true
    });
    first
}

/// The bodies of `ast`'s script functions.
pub fn function_spans(ast: &AST) -> Vec<FnSpan> {
    let at = |p: rhai::Position| (p.line().unwrap_or(0), p.position().unwrap_or(0));
    ast.shared_lib()
        .iter_script_fn_info()
        .map(|(_, _, name, _, def)| FnSpan {
            start: at(def.body.start_position()),
            end: at(def.body.end_position()),
            name: match name.starts_with("anon$") {
                true => "<closure>".into(),
                false => name.to_string(),
            },
        })
        .collect()
}

/// `code` with a mark tagged `input` before each statement of `ast`'s function bodies that
/// begins its line (Note [marks at line ends]); `None` when no statement can be marked.
pub fn marked(ast: &AST, code: &str, input: usize, spans: &[FnSpan]) -> Option<String> {
    let mut starts: Vec<(usize, usize)> = Vec::new();
    ast.walk(&mut |path: &[ASTNode]| {
        if let Some(ASTNode::Stmt(stmt)) = path.last().filter(|n| worth_marking(n)) {
            starts.extend(first_token(stmt));
        }
        true
    });
    let mut lines: Vec<String> = code.lines().map(str::to_string).collect();
    starts.sort_unstable();
    starts.dedup_by_key(|s| s.0);
    let mut any = false;
    for (line, col) in starts {
        if line < 2 || line > lines.len() || !spans.iter().any(|s| s.contains((line, col))) {
            continue;
        }
        let before = lines[line - 1].chars().take(col - 1).collect::<String>();
        let after_boundary = lines[line - 2].trim_end().ends_with([';', '{', '}']);
        if before.trim().is_empty() && after_boundary {
            lines[line - 2] += &format!(" {FSITE}({input}, {line}, {col});");
            any = true;
        }
    }
    any.then(|| lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marks(code: &str) -> Option<String> {
        let ast = rhai::Engine::new()
            .compile(code)
            .expect("the sample compiles");
        marked(&ast, code, 7, &function_spans(&ast))
    }

    #[test]
    fn marks_go_at_line_ends_and_move_nothing() {
        let code = "fn f(x) {\n    let y = x + 1;\n    if y > 1 {\n        y = 0;\n    }\n    y * 2\n}\nlet a = f(1);\n";
        let out = marks(code).expect("marks");
        for (was, now) in code.lines().zip(out.lines()) {
            assert!(now.starts_with(was), "{was:?} became {now:?}");
        }
        assert!(out.contains("fn f(x) { __fsite(7, 2, 5);"), "{out}");
        assert!(out.contains("let y = x + 1; __fsite(7, 3, 5);"), "{out}");
        assert!(out.contains("if y > 1 { __fsite(7, 4, 9);"), "{out}");
        assert!(out.contains("    } __fsite(7, 6, 5);"), "{out}");
        // The top level is named by the rewrite, not by these marks.
        assert!(!out.contains("__fsite(7, 8,"), "{out}");
        rhai::Engine::new()
            .compile(&out)
            .expect("the marked text compiles");
    }

    #[test]
    fn a_statement_is_marked_at_its_first_token_even_when_it_spans_lines() {
        let code = "fn f(x) {\n    let a = 1;\n    x * a\n        .abs()\n}\n";
        let out = marks(code).expect("marks");
        assert!(out.contains("let a = 1; __fsite(7, 3, 5);"), "{out}");
        assert!(!out.contains("__fsite(7, 4,"), "{out}");
        rhai::Engine::new()
            .compile(&out)
            .expect("the marked text compiles");
    }

    #[test]
    fn a_value_alone_is_not_marked() {
        let out = marks("fn f(x) {\n    let y = x + 1;\n    y\n}\n").expect("marks");
        assert!(
            out.contains("__fsite(7, 2, 5)") && !out.contains("__fsite(7, 3,"),
            "{out}"
        );
    }

    #[test]
    fn a_statement_after_a_comment_or_on_a_shared_line_is_not_marked() {
        let code = "fn f(x) {\n    let y = 1; let z = 2;\n    // a comment\n    y + z\n}\n";
        let out = marks(code).expect("marks");
        assert!(out.contains("__fsite(7, 2, 5)"), "{out}");
        assert!(!out.contains("__fsite(7, 2, 16)"), "{out}");
        assert!(!out.contains("__fsite(7, 4,"), "{out}");
    }

    #[test]
    fn a_script_without_functions_has_no_marks() {
        assert_eq!(marks("let a = 1;\nlet b = a + 1;\n"), None);
    }
}
