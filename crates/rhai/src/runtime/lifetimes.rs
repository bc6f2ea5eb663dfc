//! Python's lifetimes for a compiled script: temporaries die when CPython would drop them.
//!
//! GPU memory is the point of torchlet, and in PyTorch it follows CPython's reference counting: a
//! value dies the moment its last reference goes. Rhai keeps some values longer, and every one of
//! those differences shows up as a different peak, a different segment or a different statistic:
//!
//! - In a method chain `x.matmul(w).relu().sum()` Rhai evaluates each call on the value the
//!   previous one returned and keeps all of them on its stack until the whole chain is done.
//!   CPython drops `x.matmul(w)` as soon as `.relu()` has returned. So a call on a temporary is
//!   rewritten into a plain function call, `sum(relu(x.matmul(w)))`: Rhai frees a call's
//!   arguments when the call returns, which is exactly CPython's order.
//! - A statement's value stays alive as the block's "last value" until the next statement has
//!   run; CPython pops an expression statement's value at once. Statements whose value nobody
//!   uses are wrapped in `__discard(…)`, which takes the value and drops it.
//! - Rebinding a variable drops its old value inside Rhai, and an array drops its items first
//!   to last; CPython's `list_dealloc` drops them last to first. Plain assignments `x = e` become
//!   `__bind x e`, which drops the old value in CPython's order (see [`drop_like_python`]) and
//!   also binds a name `del` or the session's block scoping left as a tombstone.
//! - A call of a script function from top-level code is wrapped in `__with_globals`, so that the
//!   function reads top-level variables as Python functions read globals (see
//!   [`super::globals`]).
//!
//! Conditions of `if`, `while` and `do`, and the operands of `&&` and `||`, are wrapped in
//! `__truth(…)`, Python's `bool()`: a one-element tensor is true when nonzero (as in PyTorch), a
//! larger one is PyTorch's "ambiguous" error, and numbers, strings and arrays are Python's truth.
//!
//! Calls keep their positions, so errors still point at the user's text. Method calls on
//! variables stay method calls (they may change the variable in place, as `ts.push(t)` does), and
//! so do calls of script-defined functions (which bind `this`).
use std::collections::HashSet;

use rhai::{
    ASTFlags, BinaryExpr, Dynamic, Engine, Expr, FnCallExpr, FnCallHashes, Position, Stmt,
    StmtBlock, AST,
};

/// Rhai's special method names, handled by the engine itself rather than by a registered function.
const ENGINE_METHODS: &[&str] = &["call", "curry", "is_shared", "Fn", "eval"];

/// Name of the function that drops a statement's unused value.
const DISCARD: &str = "__discard";
/// Name of the function that reports the line about to run.
const LINE: &str = "__line";
/// Name of the function that names the statement about to run, for provenance.
const SITE: &str = "__site";
/// Name of the function that gives a condition's truth value (see [`crate::surface::truth`]).
const TRUTH: &str = crate::surface::truth::TRUTH;

/// Rewrites compiled scripts for one engine; cheap to keep and to reuse.
#[derive(Clone)]
pub struct Lifetimes {
    discard: FnCallHashes,
    line: FnCallHashes,
    site: FnCallHashes,
    /// `__bind NAME EXPR`, compiled once, its inputs replaced per use.
    bind: Expr,
    /// `__with_globals EXPR`, likewise.
    with_globals: Expr,
    /// `__iteration LINE COL`, likewise.
    iteration: Expr,
    truth: FnCallHashes,
}

/// Register the functions the rewritten scripts call.
pub(crate) fn register(engine: &mut Engine, state: &super::state::State) {
    engine.register_fn(DISCARD, |value: Dynamic| drop_like_python(value));
    // Lines are marked for the session's ledger; a tool may register its own hook instead.
    let state = state.clone();
    engine.register_fn(LINE, move |line: rhai::INT, column: rhai::INT| {
        if let Some(ledger) = state.ledger.borrow_mut().as_mut() {
            ledger.on_statement(line as usize, column as usize);
        }
    });
}

/// Register `__line(line, column)`, which the rewrite puts before each statement when lines
/// are marked; `hook` gets the line.
pub fn register_line_hook(engine: &mut Engine, hook: impl Fn(usize) + 'static) {
    engine.register_fn(LINE, move |line: rhai::INT, _column: rhai::INT| {
        hook(line as usize)
    });
}

/// Drop a value as CPython would: an array's items last to first, recursively.
pub fn drop_like_python(value: Dynamic) {
    if value.is_array() {
        if let Ok(mut items) = value.into_array() {
            while let Some(item) = items.pop() {
                drop_like_python(item);
            }
        }
    }
}

impl Lifetimes {
    /// Take the hashes of the helper calls from the engine's own parser, so they stay right
    /// whatever Rhai's hashing is.
    pub fn new(engine: &Engine) -> Lifetimes {
        let first_call = |code: &str| -> FnCallHashes {
            let ast = engine.compile(code).expect("a helper call compiles");
            match ast.statements().first() {
                Some(Stmt::FnCall(f, _)) => f.hashes,
                Some(Stmt::Expr(e)) => match &**e {
                    Expr::Dot(x, ..) => match &x.rhs {
                        Expr::MethodCall(f, _) => f.hashes,
                        other => unreachable!("a method call, not {other:?}"),
                    },
                    Expr::FnCall(f, _) => f.hashes,
                    other => unreachable!("a call, not {other:?}"),
                },
                other => unreachable!("a call statement, not {other:?}"),
            }
        };
        let custom = |code: &str| -> Expr {
            let ast = engine.compile(code).expect("a helper expression compiles");
            match ast.statements().first() {
                Some(Stmt::Expr(e)) if matches!(**e, Expr::Custom(..)) => (**e).clone(),
                other => unreachable!("a custom expression, not {other:?}"),
            }
        };
        Lifetimes {
            discard: first_call(&format!("{DISCARD}(0)")),
            line: first_call(&format!("{LINE}(0, 0)")),
            site: first_call(&format!("{SITE}(0, 0)")),
            bind: custom(&format!("{} x 0;", super::syntax::BIND)),
            with_globals: custom(&format!("{} 0;", super::globals::WITH_GLOBALS)),
            iteration: custom(&format!("{} 0 0;", super::leaks::ITERATION)),
            truth: first_call(&format!("{TRUTH}(0)")),
        }
    }

    /// `ast` with Python's lifetimes; `known_functions` are the script functions already defined
    /// (their method calls keep `this`), `bound` the variables already defined (a top-level `let`
    /// of one of them drops its old value). With `mark_lines`, each statement first reports its
    /// line.
    pub fn rewrite(
        &self,
        engine: &Engine,
        ast: &AST,
        known_functions: &AST,
        bound: &[String],
        mark_lines: bool,
    ) -> AST {
        let mut script_fns: HashSet<String> = HashSet::new();
        for lib in [ast.shared_lib(), known_functions.shared_lib()] {
            for (_, _, name, _, _) in lib.iter_script_fn_info() {
                script_fns.insert(name.to_string());
            }
        }
        let pass = Pass {
            hashes: self,
            engine,
            script_fns,
            mark_lines,
        };
        let body = pass.top_level(ast.statements(), bound);
        // Function bodies keep Rhai's own lifetimes: Rhai gives no way to build a function
        // around a rewritten body (its payload type is private), so a chain inside `fn` keeps
        // its temporaries until the chain ends.
        let lib = ast.shared_lib().clone();
        let mut rewritten = AST::new(body, lib);
        if let Some(source) = ast.source() {
            rewritten.set_source(source);
        }
        rewritten
    }
}

/// One rewrite of one AST.
struct Pass<'a> {
    hashes: &'a Lifetimes,
    engine: &'a Engine,
    script_fns: HashSet<String>,
    mark_lines: bool,
}

impl Pass<'_> {
    /// An input's own statements: as [`Pass::statements`], and a `let` of a name already bound
    /// is followed by `__unshadow NAME`, which drops the value the name held.
    fn top_level(&self, statements: &[Stmt], bound: &[String]) -> Vec<Stmt> {
        let mut bound: HashSet<String> = bound.iter().cloned().collect();
        let mut out = Vec::with_capacity(statements.len());
        for stmt in self.statements(statements, true) {
            let rebound = match &stmt {
                Stmt::Var(x, flags, _) if !flags.contains(ASTFlags::CONSTANT) => {
                    let name = x.0.name.to_string();
                    (!bound.insert(name.clone())).then_some(name)
                }
                _ => None,
            };
            let pos = stmt.position();
            out.push(stmt);
            if let Some(unshadow) = rebound.and_then(|name| self.unshadow(&name, pos)) {
                out.push(unshadow);
            }
        }
        out
    }

    /// `__unshadow NAME;`, compiled by the engine so that the custom statement is its own.
    fn unshadow(&self, name: &str, pos: Position) -> Option<Stmt> {
        let code = format!("{} {name};", crate::runtime::syntax::UNSHADOW);
        let ast = self.engine.compile(code).ok()?;
        let mut stmt = ast.statements().first()?.clone();
        if let Stmt::Expr(e) = &mut stmt {
            e.set_position(pos);
        }
        Some(stmt)
    }

    /// A block's statements; `value_used` says whether the block's value (its last statement's)
    /// is used by whatever runs the block.
    fn statements(&self, statements: &[Stmt], value_used: bool) -> Vec<Stmt> {
        let mut out = Vec::with_capacity(statements.len() * if self.mark_lines { 2 } else { 1 });
        let last = statements.len().saturating_sub(1);
        for (i, stmt) in statements.iter().enumerate() {
            if self.mark_lines {
                if let Some(line) = stmt.position().line() {
                    out.push(self.line_mark(line, stmt.position()));
                }
            }
            if may_allocate(stmt) {
                out.push(self.site_mark(start_of(stmt)));
            }
            out.push(self.statement(stmt, value_used && i == last));
        }
        out
    }

    fn block(&self, block: &StmtBlock, value_used: bool) -> StmtBlock {
        StmtBlock::new(
            self.statements(block.statements(), value_used),
            block.position(),
            block.end_position(),
        )
    }

    fn statement(&self, stmt: &Stmt, value_used: bool) -> Stmt {
        match stmt {
            Stmt::Expr(e) if !value_used && holds_value(e) => {
                self.discard(self.expr(e), e.position())
            }
            // A grad-mode block whose value nobody uses: its last statement's value is a
            // temporary too (`no_grad { x.matmul(w); }` frees the product at once, as Python).
            Stmt::Expr(e) if !value_used && matches!(**e, Expr::Custom(..)) => {
                Stmt::Expr(Box::new(self.custom_statement(e)))
            }
            Stmt::Expr(e) => Stmt::Expr(Box::new(self.expr(e))),
            Stmt::FnCall(f, pos) if self.is_script_call(f) => {
                let call = self.call(f, *pos);
                if value_used {
                    Stmt::Expr(Box::new(call))
                } else {
                    self.discard(call, *pos)
                }
            }
            Stmt::FnCall(f, pos) => {
                let call = Box::new(self.call_args(f));
                if value_used {
                    Stmt::FnCall(call, *pos)
                } else {
                    self.discard(Expr::FnCall(call, *pos), *pos)
                }
            }
            Stmt::Var(x, flags, pos) => {
                let (name, value, index) = &**x;
                Stmt::Var(
                    Box::new((name.clone(), self.expr(value), *index)),
                    *flags,
                    *pos,
                )
            }
            Stmt::Assignment(x) => self.assignment(stmt, &x.0, &x.1),
            Stmt::If(x, pos) => Stmt::If(Box::new(self.flow(x, value_used, true)), *pos),
            Stmt::While(x, pos) => Stmt::While(Box::new(self.loop_flow(x, *pos, true)), *pos),
            Stmt::Do(x, flags, pos) => {
                Stmt::Do(Box::new(self.loop_flow(x, *pos, true)), *flags, *pos)
            }
            Stmt::For(x, pos) => {
                let (var, counter, flow) = &**x;
                Stmt::For(
                    Box::new((
                        var.clone(),
                        counter.clone(),
                        self.loop_flow(flow, *pos, false),
                    )),
                    *pos,
                )
            }
            Stmt::TryCatch(x, pos) => {
                Stmt::TryCatch(Box::new(self.flow(x, value_used, false)), *pos)
            }
            Stmt::Block(block) => Stmt::Block(Box::new(self.block(block, value_used))),
            Stmt::Return(Some(e), flags, pos) => {
                Stmt::Return(Some(Box::new(self.expr(e))), *flags, *pos)
            }
            Stmt::BreakLoop(Some(e), flags, pos) => {
                Stmt::BreakLoop(Some(Box::new(self.expr(e))), *flags, *pos)
            }
            Stmt::Switch(x, pos) => {
                let (subject, cases) = &**x;
                let mut cases = cases.clone();
                for case in cases.expressions.iter_mut() {
                    case.lhs = self.expr(&case.lhs);
                    case.rhs = self.expr(&case.rhs);
                }
                Stmt::Switch(Box::new((self.expr(subject), cases)), *pos)
            }
            other => other.clone(),
        }
    }

    /// A loop's flow, its body starting with `__iteration LINE COL` (see [`super::leaks`]);
    /// `condition` as for [`Pass::flow`].
    fn loop_flow(
        &self,
        flow: &rhai::FlowControl,
        pos: Position,
        condition: bool,
    ) -> rhai::FlowControl {
        let mut flow = self.flow(flow, false, condition);
        let (line, col) = (pos.line().unwrap_or(0), pos.position().unwrap_or(0));
        let at = |n: usize| Expr::IntegerConstant(n as rhai::INT, pos);
        let marker = self.custom(&self.hashes.iteration, vec![at(line), at(col)], pos);
        let mut statements = vec![Stmt::Expr(Box::new(marker))];
        statements.extend(flow.body.statements().iter().cloned());
        flow.body = StmtBlock::new(statements, flow.body.position(), flow.body.end_position());
        flow
    }

    /// `if`/`while`/`for`/`try`: the expression (a condition for `if`, `while` and `do`), the
    /// body and the other branch.
    fn flow(
        &self,
        flow: &rhai::FlowControl,
        value_used: bool,
        condition: bool,
    ) -> rhai::FlowControl {
        rhai::FlowControl {
            expr: if condition {
                self.truth(&flow.expr)
            } else {
                self.expr(&flow.expr)
            },
            body: self.block(&flow.body, value_used),
            branch: self.block(&flow.branch, value_used),
        }
    }

    /// A condition as `__truth(condition)`, except where it is a bool already: a constant,
    /// `loop`'s missing condition (`()`), or `&&`/`||`, whose operands are wrapped instead.
    fn truth(&self, condition: &Expr) -> Expr {
        let rewritten = self.expr(condition);
        match condition {
            Expr::BoolConstant(..) | Expr::Unit(..) | Expr::And(..) | Expr::Or(..) => rewritten,
            _ => {
                let pos = condition.position();
                let call = self.helper_call(TRUTH, self.hashes.truth, vec![rewritten]);
                Expr::FnCall(Box::new(call), pos)
            }
        }
    }

    /// `x = e` on a plain variable becomes `__bind x e`; other assignments keep their form.
    fn assignment(&self, stmt: &Stmt, op: &rhai::OpAssignment, target: &BinaryExpr) -> Stmt {
        let value = self.expr(&target.rhs);
        let is_plain_variable = matches!(&target.lhs, Expr::Variable(x, ..) if x.2.is_empty());
        if op.is_op_assignment() || !is_plain_variable {
            let mut stmt = stmt.clone();
            if let Stmt::Assignment(x) = &mut stmt {
                x.1.rhs = value;
            }
            return stmt;
        }
        let Expr::Variable(var, _, pos) = &target.lhs else {
            unreachable!("a plain variable")
        };
        let name = Expr::StringConstant(var.1.clone(), *pos);
        Stmt::Expr(Box::new(self.custom(
            &self.hashes.bind,
            vec![name, value],
            *pos,
        )))
    }

    /// A custom statement whose value is unused: the blocks among its inputs keep no value.
    fn custom_statement(&self, expr: &Expr) -> Expr {
        let Expr::Custom(x, pos) = expr else {
            return self.expr(expr);
        };
        let mut custom = (**x).clone();
        for input in custom.inputs.iter_mut() {
            let rewritten = match &*input {
                Expr::Stmt(block) => Expr::Stmt(Box::new(self.block(block, false))),
                other => self.expr(other),
            };
            *input = rewritten;
        }
        Expr::Custom(Box::new(custom), *pos)
    }

    /// A copy of a compiled custom expression with new inputs.
    fn custom(&self, template: &Expr, inputs: Vec<Expr>, pos: Position) -> Expr {
        let Expr::Custom(x, _) = template else {
            unreachable!("a custom expression template")
        };
        let mut custom = (**x).clone();
        custom.inputs = inputs.into_iter().collect();
        Expr::Custom(Box::new(custom), pos)
    }

    /// A call of a script function, which may read top-level variables while it runs.
    fn call(&self, f: &FnCallExpr, pos: Position) -> Expr {
        let call = Expr::FnCall(Box::new(self.call_args(f)), pos);
        self.custom(&self.hashes.with_globals, vec![call], pos)
    }

    fn is_script_call(&self, f: &FnCallExpr) -> bool {
        !f.is_qualified() && self.script_fns.contains(f.name.as_str())
    }

    /// Whether a `.` chain calls a script function as a method (`x.f()` binds `this`).
    fn calls_script_method(&self, expr: &Expr) -> bool {
        match expr {
            Expr::Dot(x, ..) => {
                self.calls_script_method(&x.lhs) || self.calls_script_method(&x.rhs)
            }
            Expr::MethodCall(f, _) => self.is_script_call(f),
            _ => false,
        }
    }

    fn expr(&self, expr: &Expr) -> Expr {
        match expr {
            Expr::Dot(..) if self.calls_script_method(expr) => {
                let chain = self.chain(expr);
                self.custom(&self.hashes.with_globals, vec![chain], expr.position())
            }
            Expr::Dot(..) => self.chain(expr),
            Expr::FnCall(f, pos) if self.is_script_call(f) => self.call(f, *pos),
            Expr::FnCall(f, pos) => Expr::FnCall(Box::new(self.call_args(f)), *pos),
            Expr::Index(..) => self.chain_part(expr),
            Expr::Array(items, pos) => {
                Expr::Array(items.iter().map(|e| self.expr(e)).collect(), *pos)
            }
            Expr::Map(x, pos) => {
                let mut map = (**x).clone();
                for (_, value) in map.0.iter_mut() {
                    *value = self.expr(value);
                }
                Expr::Map(Box::new(map), *pos)
            }
            Expr::InterpolatedString(parts, pos) => {
                Expr::InterpolatedString(parts.iter().map(|e| self.expr(e)).collect(), *pos)
            }
            Expr::And(x, pos) => {
                Expr::And(Box::new(x.iter().map(|e| self.truth(e)).collect()), *pos)
            }
            Expr::Or(x, pos) => Expr::Or(Box::new(x.iter().map(|e| self.truth(e)).collect()), *pos),
            Expr::Coalesce(x, pos) => {
                Expr::Coalesce(Box::new(x.iter().map(|e| self.expr(e)).collect()), *pos)
            }
            Expr::Stmt(block) => Expr::Stmt(Box::new(self.block(block, true))),
            Expr::Custom(x, pos) => {
                let mut custom = (**x).clone();
                for input in custom.inputs.iter_mut() {
                    *input = self.expr(input);
                }
                Expr::Custom(Box::new(custom), *pos)
            }
            other => other.clone(),
        }
    }

    fn call_args(&self, f: &FnCallExpr) -> FnCallExpr {
        let mut call = f.clone();
        for arg in call.args.iter_mut() {
            *arg = self.expr(arg);
        }
        call
    }

    /// A `.` chain, with every method call on a temporary turned into a function call.
    fn chain(&self, expr: &Expr) -> Expr {
        let Some((root, links)) = flatten(expr) else {
            return self.expr_parts_of_chain(expr);
        };
        // The first group (root, its properties and the first method call) stays a Rhai chain:
        // on a variable it works in place and writes properties back, as Rhai's chains do.
        let first_call = links.iter().position(|l| matches!(l, Expr::MethodCall(..)));
        let split = first_call.map_or(links.len(), |i| i + 1);
        let (head, tail) = links.split_at(split);
        let mut value = self.expr(&root);
        if !head.is_empty() {
            let head: Vec<Expr> = head.iter().map(|l| self.chain_part(l)).collect();
            value = nest(value, head, expr.position());
        }
        for link in tail {
            value = match link {
                Expr::MethodCall(f, pos) if self.may_become_function(f) => {
                    let mut call = self.call_args(f);
                    call.hashes = FnCallHashes::from_native_only(f.hashes.native());
                    call.args.insert(0, value);
                    Expr::FnCall(Box::new(call), *pos)
                }
                other => nest(value, vec![self.chain_part(other)], other.position()),
            };
        }
        value
    }

    /// A chain this pass does not restructure (indexing, `?.`): rewrite only its arguments.
    fn expr_parts_of_chain(&self, expr: &Expr) -> Expr {
        match expr {
            Expr::Dot(x, flags, pos) => Expr::Dot(
                Box::new(BinaryExpr {
                    lhs: self.chain_part(&x.lhs),
                    rhs: self.chain_part(&x.rhs),
                }),
                *flags,
                *pos,
            ),
            other => self.expr(other),
        }
    }

    /// One part of a chain (a link, an index, a sub-chain) with its arguments rewritten.
    fn chain_part(&self, expr: &Expr) -> Expr {
        match expr {
            Expr::MethodCall(f, pos) => Expr::MethodCall(Box::new(self.call_args(f)), *pos),
            Expr::Dot(..) => self.expr_parts_of_chain(expr),
            Expr::Index(x, flags, pos) => Expr::Index(
                Box::new(BinaryExpr {
                    lhs: self.chain_part(&x.lhs),
                    rhs: self.chain_part(&x.rhs),
                }),
                *flags,
                *pos,
            ),
            other => self.expr(other),
        }
    }

    fn may_become_function(&self, f: &FnCallExpr) -> bool {
        !f.is_qualified()
            && !ENGINE_METHODS.contains(&f.name.as_str())
            && !self.script_fns.contains(f.name.as_str())
    }

    fn discard(&self, value: Expr, pos: Position) -> Stmt {
        Stmt::FnCall(
            Box::new(self.helper_call(DISCARD, self.hashes.discard, vec![value])),
            pos,
        )
    }

    /// `__site(LINE, COL)`: the statement at `pos` is about to run (see [`super::provenance`]).
    fn site_mark(&self, pos: Position) -> Stmt {
        let at = |n: Option<usize>| Expr::IntegerConstant(n.unwrap_or(0) as rhai::INT, pos);
        let args = vec![at(pos.line()), at(pos.position())];
        Stmt::FnCall(
            Box::new(self.helper_call(SITE, self.hashes.site, args)),
            pos,
        )
    }

    fn line_mark(&self, line: usize, pos: Position) -> Stmt {
        let column = Expr::IntegerConstant(pos.position().unwrap_or(0) as rhai::INT, pos);
        let line = Expr::IntegerConstant(line as rhai::INT, pos);
        Stmt::FnCall(
            Box::new(self.helper_call(LINE, self.hashes.line, vec![line, column])),
            pos,
        )
    }

    fn helper_call(&self, name: &str, hashes: FnCallHashes, args: Vec<Expr>) -> FnCallExpr {
        FnCallExpr {
            namespace: Default::default(),
            name: name.into(),
            hashes,
            args: args.into_iter().collect(),
            capture_parent_scope: false,
            op_token: None,
        }
    }
}

/// Where a statement starts (Rhai places an assignment at its `=`).
pub(crate) fn start_of(stmt: &Stmt) -> Position {
    match stmt {
        Stmt::Assignment(x) => x.1.lhs.position(),
        other => other.position(),
    }
}

/// Whether a statement may allocate, so that its allocations should name it: not `del`, not the
/// markers, not jumps (a grad-mode block's statements name themselves).
pub(crate) fn may_allocate(stmt: &Stmt) -> bool {
    !matches!(
        stmt,
        Stmt::Noop(..) | Stmt::BreakLoop(None, ..) | Stmt::Return(None, ..)
    ) && !matches!(stmt, Stmt::Expr(e) if matches!(&**e, Expr::Custom(c, _) if !is_del(c)))
}

/// Whether a custom statement is `del`: it frees, so the frees are named after it.
fn is_del(custom: &rhai::CustomExpr) -> bool {
    custom.tokens.first().is_some_and(|t| t.as_str() == "del")
}

/// Whether an expression statement can leave a value worth dropping early (a call's result);
/// variables, constants and custom statements (`del`, `no_grad { … }`) keep their form.
fn holds_value(expr: &Expr) -> bool {
    matches!(
        expr,
        Expr::FnCall(..) | Expr::MethodCall(..) | Expr::Dot(..) | Expr::Index(..)
    )
}

/// A `.` chain as its root and its links (properties and method calls), or `None` when the chain
/// has links this pass leaves to Rhai (indexing, `?.`, terminated sub-chains).
fn flatten(expr: &Expr) -> Option<(Expr, Vec<Expr>)> {
    let Expr::Dot(x, flags, _) = expr else {
        return None;
    };
    if !flags.is_empty() {
        return None;
    }
    let (root, mut links) = match &x.lhs {
        Expr::Dot(..) => flatten(&x.lhs)?,
        Expr::Index(..) => return None,
        root => (root.clone(), Vec::new()),
    };
    collect_links(&x.rhs, &mut links)?;
    Some((root, links))
}

fn collect_links(expr: &Expr, links: &mut Vec<Expr>) -> Option<()> {
    match expr {
        Expr::MethodCall(..) | Expr::Property(..) => {
            links.push(expr.clone());
            Some(())
        }
        Expr::Dot(x, flags, _) if flags.is_empty() => {
            collect_links(&x.lhs, links)?;
            collect_links(&x.rhs, links)
        }
        _ => None,
    }
}

/// `value.l1.l2…` as Rhai's parser nests it: `Dot(value, Dot(l1, Dot(l2, …)))`.
fn nest(value: Expr, links: Vec<Expr>, pos: Position) -> Expr {
    let mut links = links.into_iter().rev();
    let mut rhs = links.next().expect("at least one link");
    for link in links {
        let link_pos = rhs.position();
        rhs = Expr::Dot(
            Box::new(BinaryExpr { lhs: link, rhs }),
            ASTFlags::empty(),
            link_pos,
        );
    }
    Expr::Dot(
        Box::new(BinaryExpr { lhs: value, rhs }),
        ASTFlags::empty(),
        pos,
    )
}
