//! The language-neutral view of a named value that every explanation walks.
//!
//! A language (Rhai today, Python next) turns each of its variables into a [`Value`]: tensors as
//! they are, containers as lists and maps, dicts keyed by tensors (an optimizer's `state`) as
//! [`Value::Keyed`], functions with what they captured as [`Value::Function`]. The explanations
//! never see a language's own types. Each tensor a value reaches has a path that the language
//! spells the same way (`model.blocks[0].fc.weight`, `opt.state[w].exp_avg`): [`tensor_paths`]
//! lists them and [`resolve`] reads one back.
use torchlet_core::tensor::Tensor;

/// What a variable holds, as far as memory is concerned.
#[derive(Clone, Debug)]
pub enum Value {
    /// A tensor (its storage, `.grad` and graph are walked from it).
    Tensor(Tensor),
    /// A sequence: item `i` is reached as `path[i]`.
    List(Vec<Value>),
    /// Named members: `path.key` for identifiers, `path["key"]` otherwise.
    Map(Vec<(String, Value)>),
    /// Tensors an object holds under sub-paths of its own (`state[0].exp_avg` of an optimizer).
    Holds(Vec<(String, Tensor)>),
    /// A dict keyed by tensors, as an optimizer's `state`: the entry for `w` is `path[w]`, named
    /// after the variable that holds the key (`path[0]`, its position, when none does).
    Keyed(Vec<(Tensor, Value)>),
    /// Items reached by subscript, each with its index as the language writes it: the entry
    /// `("'lr'", v)` is `path['lr']` (a Python dict; an optimizer's state keyed by parameter paths).
    Indexed(Vec<(String, Value)>),
    /// A function and the values it captured (a closure): capture `i` is `path.__closure__[i]`.
    Function(Vec<Value>),
    /// Anything that holds no tensor (numbers, strings, functions).
    Other,
}

impl Value {
    /// The tensor, when this is one.
    pub fn as_tensor(&self) -> Option<&Tensor> {
        match self {
            Value::Tensor(t) => Some(t),
            _ => None,
        }
    }

    /// Whether a function (a closure) is among what this value holds.
    pub fn holds_function(&self) -> bool {
        match self {
            Value::Function(_) => true,
            Value::List(items) => items.iter().any(Value::holds_function),
            Value::Map(members) | Value::Indexed(members) => {
                members.iter().any(|(_, v)| v.holds_function())
            }
            Value::Keyed(entries) => entries.iter().any(|(_, v)| v.holds_function()),
            _ => false,
        }
    }
}

/// A variable: its name and what it holds.
pub type Named = (String, Value);

/// `path.key`, or `path["key"]` when the key is no identifier.
pub fn member_path(path: &str, key: &str) -> String {
    let is_ident = !key.is_empty()
        && !key.starts_with(|c: char| c.is_ascii_digit())
        && key.chars().all(|c| c.is_alphanumeric() || c == '_');
    if is_ident {
        format!("{path}.{key}")
    } else {
        format!("{path}[{key:?}]")
    }
}

/// Every tensor `variables` reach through containers, each with its path, in the order a reader
/// meets them (variables in order, members in order). A tensor key of a [`Value::Keyed`] is
/// spelled by the path of the first top-level variable holding that tensor.
pub fn tensor_paths<'a>(
    variables: impl Iterator<Item = (&'a str, &'a Value)> + Clone,
) -> Vec<(String, Tensor)> {
    let names: Vec<(String, Tensor)> = variables
        .clone()
        .filter_map(|(n, v)| Some((n.to_string(), v.as_tensor()?.clone())))
        .collect();
    let mut out = Vec::new();
    for (name, value) in variables {
        walk(name, value, &names, &mut out);
    }
    out
}

/// The spelling of tensor `key` at position `i` of a keyed dict.
pub fn key_name(key: &Tensor, i: usize, names: &[(String, Tensor)]) -> String {
    names
        .iter()
        .find(|(_, t)| t.same_tensor(key))
        .map_or_else(|| i.to_string(), |(n, _)| n.clone())
}

fn walk(path: &str, value: &Value, names: &[(String, Tensor)], out: &mut Vec<(String, Tensor)>) {
    match value {
        Value::Tensor(t) => out.push((path.to_string(), t.clone())),
        Value::List(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(&format!("{path}[{i}]"), item, names, out);
            }
        }
        Value::Map(members) => {
            for (key, item) in members {
                walk(&member_path(path, key), item, names, out);
            }
        }
        Value::Indexed(entries) => {
            for (index, item) in entries {
                walk(&format!("{path}[{index}]"), item, names, out);
            }
        }
        Value::Holds(tensors) => {
            for (sub, t) in tensors {
                out.push((format!("{path}.{sub}"), t.clone()));
            }
        }
        Value::Keyed(entries) => {
            for (i, (key, item)) in entries.iter().enumerate() {
                let at = format!("{path}[{}]", key_name(key, i, names));
                walk(&at, item, names, out);
            }
        }
        Value::Function(captured) => {
            for (i, item) in captured.iter().enumerate() {
                walk(&format!("{path}.__closure__[{i}]"), item, names, out);
            }
        }
        Value::Other => {}
    }
}

/// The value at `path` (`l1.weight`, `model["blocks"][0].fc`, `opt.state[w].exp_avg`) among
/// `variables`; `None` when nothing is there.
pub fn resolve<'a>(
    variables: impl Iterator<Item = (&'a str, &'a Value)> + Clone,
    path: &str,
) -> Option<Value> {
    let steps = parse_path(path)?;
    let (first, rest) = steps.split_first()?;
    let Step::Member(name) = first else {
        return None;
    };
    let mut value = variables
        .clone()
        .find(|(n, _)| *n == name.as_str())?
        .1
        .clone();
    for step in rest {
        value = step_into(&value, step, variables.clone())?;
    }
    Some(value)
}

/// `path` spelled as the explanations spell it (`l1["weight"]` is `l1.weight`); `None` when it
/// is no path.
pub fn canonical_path(path: &str) -> Option<String> {
    let steps = parse_path(path)?;
    let mut out = String::new();
    for step in steps {
        out = match step {
            Step::Member(m) if out.is_empty() => m,
            Step::Member(m) => member_path(&out, &m),
            Step::Index(i) => format!("{out}[{i}]"),
            Step::Key(k) => format!("{out}[{k}]"),
        };
    }
    Some(out)
}

/// One step of a path: `.name` or `["name"]`, `[3]`, or `[w]` (a variable used as a key).
#[derive(Debug, PartialEq)]
enum Step {
    Member(String),
    Index(usize),
    Key(String),
}

fn step_into<'a>(
    value: &Value,
    step: &Step,
    variables: impl Iterator<Item = (&'a str, &'a Value)> + Clone,
) -> Option<Value> {
    match (value, step) {
        (Value::List(items), Step::Index(i)) => items.get(*i).cloned(),
        (Value::Map(members), Step::Member(key)) => members
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone()),
        (Value::Indexed(entries), Step::Index(i)) => {
            let index = i.to_string();
            entries
                .iter()
                .find(|(k, _)| *k == index)
                .map(|(_, v)| v.clone())
        }
        (Value::Indexed(entries), Step::Key(k) | Step::Member(k)) => entries
            .iter()
            .find(|(index, _)| index == k || index.trim_matches(['\'', '"']) == k)
            .map(|(_, v)| v.clone()),
        (Value::Keyed(entries), Step::Index(i)) => entries.get(*i).map(|(_, v)| v.clone()),
        (Value::Keyed(entries), Step::Key(name)) => {
            let key = variables
                .clone()
                .find(|(n, _)| *n == name.as_str())?
                .1
                .as_tensor()?;
            let found = entries.iter().find(|(k, _)| k.same_tensor(key));
            found.map(|(_, v)| v.clone())
        }
        (Value::Function(captured), Step::Member(m)) if m == "__closure__" => {
            Some(Value::List(captured.clone()))
        }
        (Value::Holds(tensors), step) => {
            let sub = match step {
                Step::Member(m) => m.clone(),
                Step::Index(i) => format!("[{i}]"),
                Step::Key(k) => format!("[{k}]"),
            };
            let prefix: Vec<(String, Tensor)> = tensors
                .iter()
                .filter_map(|(s, t)| {
                    let rest = s.strip_prefix(&sub)?;
                    Some((rest.trim_start_matches('.').to_string(), t.clone()))
                })
                .collect();
            match prefix.as_slice() {
                [] => None,
                [(rest, t)] if rest.is_empty() => Some(Value::Tensor(t.clone())),
                _ => Some(Value::Holds(prefix)),
            }
        }
        _ => None,
    }
}

/// `a.b[0]["c d"][w]` as steps; `None` when it is no path.
fn parse_path(path: &str) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    let mut rest = path.trim();
    let ident_len = |s: &str| {
        s.char_indices()
            .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
            .map_or(s.len(), |(i, _)| i)
    };
    let first = ident_len(rest);
    if first == 0 {
        return None;
    }
    steps.push(Step::Member(rest[..first].to_string()));
    rest = &rest[first..];
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let n = ident_len(after);
            if n == 0 {
                return None;
            }
            steps.push(Step::Member(after[..n].to_string()));
            rest = &after[n..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let close = after.find(']')?;
            let inner = after[..close].trim();
            steps.push(if let Ok(i) = inner.parse::<usize>() {
                Step::Index(i)
            } else if inner.len() >= 2 && (inner.starts_with('"') || inner.starts_with('\'')) {
                Step::Member(inner[1..inner.len() - 1].to_string())
            } else if ident_len(inner) == inner.len() && !inner.is_empty() {
                Step::Key(inner.to_string())
            } else {
                return None;
            });
            rest = &after[close + 1..];
        } else {
            return None;
        }
    }
    Some(steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse_into_members_items_and_keys() {
        assert_eq!(
            parse_path("model.blocks[0][\"fc\"].weight"),
            Some(vec![
                Step::Member("model".into()),
                Step::Member("blocks".into()),
                Step::Index(0),
                Step::Member("fc".into()),
                Step::Member("weight".into()),
            ])
        );
        assert_eq!(
            parse_path("opt.state[w].exp_avg"),
            Some(vec![
                Step::Member("opt".into()),
                Step::Member("state".into()),
                Step::Key("w".into()),
                Step::Member("exp_avg".into()),
            ])
        );
        assert_eq!(parse_path("x +"), None);
        assert_eq!(parse_path(""), None);
    }

    #[test]
    fn members_that_are_no_identifiers_are_quoted() {
        assert_eq!(member_path("m", "fc"), "m.fc");
        assert_eq!(member_path("m", "0"), "m[\"0\"]");
        assert_eq!(member_path("m", "a b"), "m[\"a b\"]");
    }
}
