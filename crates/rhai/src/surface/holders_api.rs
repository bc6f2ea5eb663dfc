//! `memory_holders([device])` and `explain_free(x)`: who holds GPU memory, and what each way to
//! free `x` would do. Both read the caller's variables, so both are custom syntax (a registered
//! function cannot see the scope).
use rhai::{Array, Dynamic, EvalAltResult, EvalContext, Expression, ImmutableString, Map, INT};

use torchlet_explain::explain_free::{self, Way};
use torchlet_explain::holders::{self, HolderMap};
use torchlet_explain::Value;

/// The tag of the array `memory_holders(device)` returns, plus the device: the echo of that very
/// array is the holders table (`:holders`'s), while the array itself stays an array of maps for
/// scripts (`.filter`, `.map`, `for`); an array made from it has no tag and echoes as maps.
/// (Rhai's tag is an `i16` on 32-bit targets, so the tags stay within one.)
const HOLDERS_TAG: i16 = 0x4800;

/// The holders table of `value` when it is an array `memory_holders` returned, as it returned it.
pub(crate) fn holders_display(value: &Dynamic) -> Option<crate::DisplayData> {
    let device = usize::try_from(i32::from(value.tag()) - i32::from(HOLDERS_TAG)).ok()?;
    if device > 0xff {
        return None;
    }
    let rows = value.read_lock::<Array>()?;
    let blocks: Option<Vec<holders::BlockHolders>> = rows.iter().map(block_of).collect();
    Some(holders::table(device, &blocks?))
}

/// One row of `memory_holders` read back.
fn block_of(row: &Dynamic) -> Option<holders::BlockHolders> {
    let m = row.read_lock::<Map>()?;
    let int = |k: &str| m.get(k)?.as_int().ok().map(|v| v as u64);
    let holders = m.get("holders")?.read_lock::<Array>()?;
    Some(holders::BlockHolders {
        address: int("address")?,
        size: int("size")?,
        requested: int("requested")?,
        segment: int("segment")?,
        segment_size: int("segment_size")?,
        holders: holders.iter().map(|h| h.to_string()).collect(),
        made_by: m.get("made_by").and_then(|v| v.clone().into_string().ok()),
    })
}

/// What `explain_free(x)` returns: prints as a table; `.ways` gives the rows as maps.
#[derive(Clone, Debug)]
pub struct FreeReport {
    /// The variable it is about.
    pub name: String,
    /// The four ways, in the article's order.
    pub ways: Vec<Way>,
}

impl FreeReport {
    /// The table, plain and HTML.
    pub fn display(&self) -> crate::DisplayData {
        explain_free::table(&self.name, &self.ways)
    }
}

/// Help of the custom syntax here, which has no function metadata to carry it.
pub(crate) static SYNTAX_HELP: &[(&str, &str)] = &[
    ("memory_holders", "memory_holders([device]) — every live GPU block, biggest first, with what holds it (variables, .grad, graphs)"),
    ("empty_cache_report", "empty_cache_report([device]) — the segments empty_cache() cannot release, and the variables that pin each"),
    ("explain_free", "explain_free(x) — what del x, x = x.cpu(), empty_cache() and both would free right now, and why; .ways gives the rows"),
];

/// Register both.
pub(crate) fn register(engine: &mut rhai::Engine) {
    engine
        .register_type_with_name::<FreeReport>("FreeReport")
        .register_fn("to_string", |r: &mut FreeReport| r.display().plain)
        .register_fn("to_debug", |r: &mut FreeReport| r.display().plain)
        .register_get("ways", |r: &mut FreeReport| -> Array {
            r.ways.iter().map(way_map).collect()
        });
    engine.register_custom_syntax_with_state_raw(
        "memory_holders",
        parse_optional_arg,
        false,
        eval_holders,
    );
    engine.register_custom_syntax_with_state_raw(
        "explain_free",
        parse_path_arg,
        false,
        eval_explain,
    );
    engine.register_custom_syntax_with_state_raw(
        "empty_cache_report",
        parse_optional_arg,
        false,
        eval_cache_report,
    );
}

/// KEYWORD `(` [EXPR] `)`, or KEYWORD `()`
fn parse_optional_arg(
    symbols: &[ImmutableString],
    look_ahead: &str,
    _state: &mut Dynamic,
) -> Result<Option<ImmutableString>, rhai::ParseError> {
    Ok(match (symbols.len(), symbols.last().map(|s| s.as_str())) {
        // Rhai reads `()` as one token, the unit value.
        (1, _) if look_ahead == "()" => Some("()".into()),
        (1, _) => Some("(".into()),
        (2, Some("()")) => None,
        (2, _) if look_ahead == ")" => Some(")".into()),
        (2, _) => Some("$expr$".into()),
        (3, Some(")")) => None,
        (3, _) => Some(")".into()),
        _ => None,
    })
}

/// KEYWORD `(` PATH `)`: a variable or a path into one (`l1.weight`, `opt.state[w].exp_avg`).
fn parse_path_arg(
    symbols: &[ImmutableString],
    _look_ahead: &str,
    _state: &mut Dynamic,
) -> Result<Option<ImmutableString>, rhai::ParseError> {
    Ok(match symbols.len() {
        1 => Some("(".into()),
        2 => Some("$expr$".into()),
        3 => Some(")".into()),
        _ => None,
    })
}

/// The path an expression spells (`model.blocks[0]["fc"].weight`, `opt.state[w]`), as the
/// explanations spell it; `None` for any other expression.
fn path_of(expr: &rhai::Expr) -> Option<String> {
    use rhai::Expr;
    match expr {
        Expr::Variable(v, ..) if v.2.is_empty() => Some(v.1.to_string()),
        Expr::Dot(chain, ..) => {
            let lhs = path_of(&chain.lhs)?;
            member_chain(lhs, &chain.rhs)
        }
        Expr::Index(chain, ..) => {
            let lhs = path_of(&chain.lhs)?;
            index_chain(lhs, &chain.rhs)
        }
        _ => None,
    }
}

/// `path` followed by the chain after a `.`.
fn member_chain(path: String, rhs: &rhai::Expr) -> Option<String> {
    use rhai::Expr;
    match rhs {
        Expr::Property(p, _) => Some(torchlet_explain::value::member_path(&path, &p.2)),
        Expr::Dot(chain, ..) => member_chain(member_chain(path, &chain.lhs)?, &chain.rhs),
        Expr::Index(chain, ..) => index_chain(member_chain(path, &chain.lhs)?, &chain.rhs),
        _ => None,
    }
}

/// `path` followed by the chain after a `[`.
fn index_chain(path: String, rhs: &rhai::Expr) -> Option<String> {
    use rhai::Expr;
    match rhs {
        Expr::IntegerConstant(i, _) if *i >= 0 => Some(format!("{path}[{i}]")),
        Expr::StringConstant(s, _) => Some(torchlet_explain::value::member_path(&path, s)),
        Expr::Variable(v, ..) if v.2.is_empty() => Some(format!("{path}[{}]", v.1)),
        Expr::Dot(chain, ..) => member_chain(index_chain(path, &chain.lhs)?, &chain.rhs),
        Expr::Index(chain, ..) => index_chain(index_chain(path, &chain.lhs)?, &chain.rhs),
        _ => None,
    }
}

/// The caller's variables as the explanations see them (see [`super::view::scope_values`]).
fn variables(context: &EvalContext) -> Vec<(String, Value)> {
    super::view::scope_values(context.scope())
}

fn eval_holders(
    context: &mut EvalContext,
    inputs: &[Expression],
    _state: &Dynamic,
) -> Result<Dynamic, Box<EvalAltResult>> {
    let device = match inputs.first() {
        Some(e) => {
            let value = context.eval_expression_tree(e)?;
            value.as_int().map_err(|t| {
                super::errors::type_error(format!(
                    "memory_holders(device) takes a device index, not {t}"
                ))
            })? as usize
        }
        None => torchlet_core::device::current_device(),
    };
    let vars = variables(context);
    let map = HolderMap::of_variables(vars.iter().map(|(n, v)| (n.as_str(), v)));
    let rows: Array = holders::block_holders(&map, device)
        .into_iter()
        .map(|b| {
            let mut m = Map::new();
            m.insert("address".into(), (b.address as INT).into());
            m.insert("size".into(), (b.size as INT).into());
            m.insert("requested".into(), (b.requested as INT).into());
            m.insert("segment".into(), (b.segment as INT).into());
            m.insert("segment_size".into(), (b.segment_size as INT).into());
            let held: Array = b.holders.into_iter().map(Dynamic::from).collect();
            m.insert("holders".into(), held.into());
            m.insert(
                "made_by".into(),
                b.made_by.map_or(Dynamic::UNIT, Dynamic::from),
            );
            Dynamic::from_map(m)
        })
        .collect();
    let mut rows = Dynamic::from_array(rows);
    if device <= 0xff {
        rows.set_tag((HOLDERS_TAG + device as i16).into());
    }
    Ok(rows)
}

fn eval_cache_report(
    context: &mut EvalContext,
    inputs: &[Expression],
    _state: &Dynamic,
) -> Result<Dynamic, Box<EvalAltResult>> {
    let device = match inputs.first() {
        Some(e) => context.eval_expression_tree(e)?.as_int().map_err(|t| {
            super::errors::type_error(format!(
                "empty_cache_report(device) takes a device index, not {t}"
            ))
        })? as usize,
        None => torchlet_core::device::current_device(),
    };
    let vars = variables(context);
    let map = HolderMap::of_variables(vars.iter().map(|(n, v)| (n.as_str(), v)));
    Ok(holders::pinned_text(&map, device).into())
}

fn eval_explain(
    context: &mut EvalContext,
    inputs: &[Expression],
    _state: &Dynamic,
) -> Result<Dynamic, Box<EvalAltResult>> {
    let Some(name) = path_of(&inputs[0]) else {
        return Err(super::errors::type_error(
            "explain_free() takes a variable or a path into one (`x`, `l1.weight`, \
             `model.blocks[0].fc.weight`, `opt.state[w].exp_avg`), not an expression: \
             assign it to a variable first"
                .to_string(),
        ));
    };
    // Evaluated first, so a missing variable, member or item fails as the language says.
    let _ = context.eval_expression_tree(&inputs[0])?;
    let vars = variables(context);
    let all = vars.iter().map(|(n, v)| (n.as_str(), v));
    let Some(value) = torchlet_explain::value::resolve(all.clone(), &name) else {
        return Err(super::errors::raise(
            "NameError",
            super::errors::not_defined(&name),
        ));
    };
    let ways =
        explain_free::explain_free(&name, &value, all, torchlet_core::device::current_device());
    Ok(Dynamic::from(FreeReport { name, ways }))
}

fn way_map(way: &Way) -> Dynamic {
    let mut m = Map::new();
    m.insert("way".into(), way.code.clone().into());
    m.insert("allocated".into(), (way.allocated as INT).into());
    m.insert("reserved".into(), (way.reserved as INT).into());
    m.insert("why".into(), way.why.clone().into());
    Dynamic::from_map(m)
}
