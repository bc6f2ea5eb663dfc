//! The language-neutral view of a named value that every explanation walks.
//!
//! A language (Rhai today, Python next) turns each of its variables into a [`Value`]: tensors as
//! they are, containers as lists and maps, and objects that hold tensors under fixed names (an
//! optimizer's state) as [`Value::Holds`]. The explanations never see a language's own types.
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
}

/// A variable: its name and what it holds.
pub type Named = (String, Value);
