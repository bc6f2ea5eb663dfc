//! Python's scoping for an input: a name first bound inside `if`/`for`/`while`/`try` or a
//! grad-mode block stays bound after the block, and `x = …` binds a new name.
//!
//! Rhai gives every block its own scope and needs `let` for a new name; Python has one scope per
//! function, and a loop's `loss = forward(x)` keeps the previous iteration's `loss` alive until it
//! is reassigned, which decides the loop's peak memory. So before an input runs, the session
//! declares every name the input binds outside functions (as a tombstone: reading it before it is
//! bound is still a `NameError`), and a `let` inside a block becomes a plain assignment by
//! blanking the keyword: `let loss = …` → `    loss = …`. Blanking keeps every line and column,
//! so errors still point at the user's text. A plain `{ … }` block, which Python does not have,
//! keeps Rhai's scoping: it is how a script keeps a name local on purpose.
use rhai::{ASTFlags, Expr, Position, Stmt, AST};

/// What an input needs before it runs.
#[derive(Debug, Default, PartialEq)]
pub struct Plan {
    /// Names the input binds outside functions, in order of first appearance.
    pub names: Vec<String>,
    /// Where a `let` inside a block starts (to be blanked).
    pub nested_lets: Vec<Position>,
}

/// The names `ast`'s top-level code binds and the nested `let`s to turn into assignments.
pub fn plan(ast: &AST) -> Plan {
    let mut plan = Plan::default();
    statements(ast.statements(), 0, &mut plan);
    plan
}

/// `code` with the `let` keyword at each of `positions` replaced by spaces; a `let` without a
/// value (`let x;`) keeps its keyword, since `x;` alone would read the name.
pub fn blank_lets(code: &str, positions: &[Position]) -> String {
    let mut lines: Vec<String> = code.split('\n').map(str::to_string).collect();
    for pos in positions {
        let (Some(line), Some(column)) = (pos.line(), pos.position()) else {
            continue;
        };
        let Some(text) = lines.get_mut(line - 1) else {
            continue;
        };
        let start = match text.char_indices().nth(column - 1) {
            Some((byte, _)) => byte,
            None => continue,
        };
        if binds_a_value(&text[start..]) {
            text.replace_range(start..start + 3, "   ");
        }
    }
    lines.join("\n")
}

/// Whether `text` reads `let NAME = …` (not `let NAME;`, not `==`).
fn binds_a_value(text: &str) -> bool {
    let Some(rest) = text.strip_prefix("let") else {
        return false;
    };
    if !rest.starts_with(char::is_whitespace) {
        return false;
    }
    let rest = rest.trim_start();
    let name_end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let after = rest[name_end..].trim_start();
    name_end > 0 && after.starts_with('=') && !after.starts_with("==")
}

fn statements(stmts: &[Stmt], depth: usize, plan: &mut Plan) {
    for stmt in stmts {
        statement(stmt, depth, plan);
    }
}

fn statement(stmt: &Stmt, depth: usize, plan: &mut Plan) {
    match stmt {
        Stmt::Var(x, flags, pos) => {
            expr(&x.1, depth, plan);
            if depth > 0 && !flags.contains(ASTFlags::CONSTANT) {
                declare(plan, x.0.name.as_str());
                plan.nested_lets.push(*pos);
            }
        }
        Stmt::Assignment(x) => {
            let (op, target) = &**x;
            if let Expr::Variable(v, ..) = &target.lhs {
                if !op.is_op_assignment() && v.2.is_empty() {
                    declare(plan, v.1.as_str());
                }
            }
            expr(&target.rhs, depth, plan);
        }
        Stmt::If(x, _) | Stmt::While(x, _) | Stmt::Do(x, ..) | Stmt::TryCatch(x, _) => {
            expr(&x.expr, depth, plan);
            statements(x.body.statements(), depth + 1, plan);
            statements(x.branch.statements(), depth + 1, plan);
        }
        Stmt::For(x, _) => {
            expr(&x.2.expr, depth, plan);
            statements(x.2.body.statements(), depth + 1, plan);
        }
        // A plain `{ … }` has no Python counterpart: it stays the way to keep names local.
        Stmt::Block(_) => {}
        Stmt::Expr(e) => expr(e, depth, plan),
        _ => {}
    }
}

/// Blocks inside expressions: a grad-mode block's body, a `{ … }` expression.
fn expr(e: &Expr, depth: usize, plan: &mut Plan) {
    match e {
        Expr::Stmt(block) => statements(block.statements(), depth + 1, plan),
        Expr::Custom(x, _) => {
            for input in x.inputs.iter() {
                expr(input, depth, plan);
            }
        }
        _ => {}
    }
}

fn declare(plan: &mut Plan, name: &str) {
    if !plan.names.iter().any(|n| n == name) {
        plan.names.push(name.to_string());
    }
}
