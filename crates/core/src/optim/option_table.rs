//! The machinery of the options table: an option's value and type, its row, and the
//! `optimizer_options!` macro that makes the options' structs and `OPTIONS` from the rows.

use super::number::Number;
use crate::tensor::{Result, TensorError};

/// A flag (`nesterov`, `maximize` …).
pub type Flag = bool;
/// A flag PyTorch may choose itself when it is `None` (`foreach`, `fused`).
pub type Auto = Option<bool>;
/// Two numbers (`betas`).
pub type Pair = (Number, Number);

/// The optimizers the table describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptimizerKind {
    /// `torch.optim.SGD`.
    Sgd,
    /// `torch.optim.Adam`.
    Adam,
    /// `torch.optim.AdamW`.
    AdamW,
    /// `torch.optim.RMSprop`.
    RmsProp,
    /// `torch.optim.Adagrad`.
    Adagrad,
}

impl OptimizerKind {
    /// PyTorch's class name.
    pub const fn name(self) -> &'static str {
        match self {
            OptimizerKind::Sgd => "SGD",
            OptimizerKind::Adam => "Adam",
            OptimizerKind::AdamW => "AdamW",
            OptimizerKind::RmsProp => "RMSprop",
            OptimizerKind::Adagrad => "Adagrad",
        }
    }
}

/// The type of an option's value, which says how a script's value is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionType {
    /// An int or a float.
    Number,
    /// A bool.
    Flag,
    /// A bool, or `None` for PyTorch's choice.
    Auto,
    /// Two numbers.
    Pair,
}

/// An option's value, whatever its type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OptionValue {
    /// A number.
    Number(Number),
    /// A bool.
    Flag(Flag),
    /// A bool or `None`.
    Auto(Auto),
    /// Two numbers.
    Pair(Pair),
}

/// Python's `repr` of a value, as `param_groups` and `repr(optimizer)` print it.
impl std::fmt::Display for OptionValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let py = |b: bool| if b { "True" } else { "False" };
        match self {
            OptionValue::Number(n) => write!(f, "{n}"),
            OptionValue::Flag(b) => f.write_str(py(*b)),
            OptionValue::Auto(a) => f.write_str(a.map_or("None", py)),
            OptionValue::Pair((a, b)) => write!(f, "({a}, {b})"),
        }
    }
}

/// A Rust field type an option's value converts to and from.
pub trait OptionField: Copy {
    /// The value, wrapped.
    fn wrap(self) -> OptionValue;
    /// The value, if `value` is of this type.
    fn unwrap(value: OptionValue) -> Option<Self>;
}

macro_rules! option_field {
    ($($ty:ty => $variant:ident),*) => {$(
        impl OptionField for $ty {
            fn wrap(self) -> OptionValue {
                OptionValue::$variant(self)
            }
            fn unwrap(value: OptionValue) -> Option<Self> {
                match value {
                    OptionValue::$variant(v) => Some(v),
                    _ => None,
                }
            }
        }
    )*};
}
option_field!(Number => Number, Flag => Flag, Auto => Auto, Pair => Pair);

/// PyTorch's check of one option in `__init__`: its turn among the checks, and the test.
#[derive(Clone, Copy)]
pub struct Check {
    /// Where `__init__` makes it (Adam checks `eps` before `betas`, which precede it in the
    /// signature).
    pub turn: u8,
    /// PyTorch's error message for a refused value, or `None` when it is fine.
    pub refuses: fn(OptionValue) -> Option<String>,
}

/// One option: everything about it that is not the algorithm itself.
pub struct OptionRow {
    /// Its keyword (`lr`).
    pub name: &'static str,
    /// What it is, in a few words.
    pub help: &'static str,
    /// How a script's value is read.
    pub ty: OptionType,
    /// The optimizers that take it as a keyword, in the signature's order of rows.
    pub keyword_of: &'static [OptimizerKind],
    /// The optimizers whose `param_groups` hold it without taking it as a keyword (AdamW's
    /// `decoupled_weight_decay`, always true).
    pub fixed_in: &'static [OptimizerKind],
    /// For an option torchlet does not run: the only value it takes, PyTorch's default.
    pub only_default: Option<OptionValue>,
    /// PyTorch's check, if it has one.
    pub check: Option<Check>,
}

impl OptionRow {
    /// Whether `kind` takes this option as a keyword.
    pub fn is_keyword_of(&self, kind: OptimizerKind) -> bool {
        self.keyword_of.contains(&kind)
    }
    /// Whether `kind`'s `param_groups` hold it.
    pub fn in_group_of(&self, kind: OptimizerKind) -> bool {
        self.is_keyword_of(kind) || self.fixed_in.contains(&kind)
    }
}

/// `kind`'s keywords, in the signature's order.
pub fn keywords(rows: &'static [OptionRow], kind: OptimizerKind) -> Vec<&'static OptionRow> {
    rows.iter().filter(|r| r.is_keyword_of(kind)).collect()
}

/// PyTorch's checks of `kind`'s options in `__init__`'s order; `value` reads an option.
pub fn check_all(
    rows: &'static [OptionRow],
    kind: OptimizerKind,
    value: impl Fn(&str) -> Option<OptionValue>,
) -> Result<()> {
    let mut checked: Vec<(&OptionRow, Check)> = rows
        .iter()
        .filter(|r| r.in_group_of(kind))
        .filter_map(|r| r.check.map(|c| (r, c)))
        .collect();
    checked.sort_by_key(|(_, c)| c.turn);
    for (row, check) in checked {
        if let Some(message) = value(row.name).and_then(check.refuses) {
            return Err(TensorError::value(message));
        }
    }
    Ok(())
}

/// The options' structs and the `OPTIONS` table, from one row per option in signature order:
///
/// `name: Type, "help" [, check TURN REFUSES] => { KIND: default, … };` for an option torchlet
/// runs, where KIND is `SGD`, `Adam`, `AdamW` (or `AdamW fixed`: in the group without being a
/// keyword), `RMSprop` or `Adagrad`, each giving a field of that optimizer's struct (Adam and
/// AdamW share `AdamOptions`); or `name: Type, "help", only DEFAULT => [Kinds];` for one taken
/// only at PyTorch's default.
macro_rules! optimizer_options {
    // Every row read: the structs, their defaults, their fields by name, and the table.
    (@rows [$($sgd:tt)*] [$($adam:tt)*] [$($adamw:tt)*] [$($rms:tt)*] [$($ada:tt)*] [$($table:tt)*]) => {
        optimizer_options!(@struct SgdOptions "`torch.optim.SGD`'s options." [$($sgd)*]);
        optimizer_options!(@struct AdamOptions "`torch.optim.Adam`'s and `AdamW`'s options." [$($adam)*]);
        optimizer_options!(@struct RmsPropOptions "`torch.optim.RMSprop`'s options." [$($rms)*]);
        optimizer_options!(@struct AdagradOptions "`torch.optim.Adagrad`'s options." [$($ada)*]);

        impl Default for SgdOptions {
            fn default() -> Self {
                optimizer_options!(@defaults SgdOptions [$($sgd)*])
            }
        }

        impl Default for RmsPropOptions {
            fn default() -> Self {
                optimizer_options!(@defaults RmsPropOptions [$($rms)*])
            }
        }

        impl Default for AdagradOptions {
            fn default() -> Self {
                optimizer_options!(@defaults AdagradOptions [$($ada)*])
            }
        }

        impl AdamOptions {
            /// Adam's defaults.
            pub fn adam() -> AdamOptions {
                optimizer_options!(@defaults AdamOptions [$($adam)*])
            }
            /// AdamW's defaults: Adam's with decoupled weight decay 1e-2.
            pub fn adamw() -> AdamOptions {
                optimizer_options!(@defaults AdamOptions [$($adamw)*])
            }
        }

        /// Every option of every optimizer, one row each, in the signatures' order.
        pub static OPTIONS: &[OptionRow] = &[$($table)*];
    };

    (@struct $struct:ident $doc:literal [$($name:ident: $ty:ident = $help:literal ($d:expr),)*]) => {
        #[doc = $doc]
        #[derive(Clone, Debug, PartialEq)]
        pub struct $struct {
            $(#[doc = $help] pub $name: $ty,)*
        }

        impl $struct {
            /// The value of the option called `name`, if this struct has it.
            pub fn get(&self, name: &str) -> Option<OptionValue> {
                match name {
                    $(stringify!($name) => Some(OptionField::wrap(self.$name)),)*
                    _ => None,
                }
            }
            /// Set the option called `name`; false when there is none or `value` has another type.
            pub fn set(&mut self, name: &str, value: OptionValue) -> bool {
                match name {
                    $(stringify!($name) => match OptionField::unwrap(value) {
                        Some(v) => {
                            self.$name = v;
                            true
                        }
                        None => false,
                    },)*
                    _ => false,
                }
            }
        }
    };
    (@defaults $struct:ident [$($name:ident: $ty:ident = $help:literal ($d:expr),)*]) => {
        $struct { $($name: $d,)* }
    };

    // Rows torchlet takes only at PyTorch's default: the table only.
    (@rows $sgd:tt $adam:tt $adamw:tt $rms:tt $ada:tt [$($table:tt)*]
        $name:ident: $ty:ident, $help:literal, only $default:expr => [$($kind:ident),+];
        $($rest:tt)*
    ) => {
        optimizer_options!(@rows $sgd $adam $adamw $rms $ada [$($table)*
            optimizer_options!(@row $name $ty $help [$($kind),+] [] [Some($default)] []),
        ] $($rest)*);
    };
    // Rows torchlet runs: each `KIND: default` entry in turn, then the table's row.
    (@rows $sgd:tt $adam:tt $adamw:tt $rms:tt $ada:tt $table:tt
        $name:ident: $ty:ident, $help:literal $(, check $turn:literal $refuses:expr)?
            => { $($entries:tt)* };
        $($rest:tt)*
    ) => {
        optimizer_options!(@entry ($name $ty $help [$($turn $refuses)?])
            $sgd $adam $adamw $rms $ada $table [] [] [$($entries)*] $($rest)*);
    };

    (@entry ($name:ident $ty:ident $help:literal $check:tt) [$($sgd:tt)*] $adam:tt $adamw:tt $rms:tt
        $ada:tt $table:tt [$($kind:ident)*] $fixed:tt [SGD: $d:expr $(, $($more:tt)*)?] $($rest:tt)*
    ) => {
        optimizer_options!(@entry ($name $ty $help $check) [$($sgd)* $name: $ty = $help ($d),]
            $adam $adamw $rms $ada $table [$($kind)* Sgd] $fixed [$($($more)*)?] $($rest)*);
    };
    (@entry ($name:ident $ty:ident $help:literal $check:tt) $sgd:tt [$($adam:tt)*] $adamw:tt $rms:tt
        $ada:tt $table:tt [$($kind:ident)*] $fixed:tt [Adam: $d:expr $(, $($more:tt)*)?] $($rest:tt)*
    ) => {
        optimizer_options!(@entry ($name $ty $help $check) $sgd [$($adam)* $name: $ty = $help ($d),]
            $adamw $rms $ada $table [$($kind)* Adam] $fixed [$($($more)*)?] $($rest)*);
    };
    (@entry ($name:ident $ty:ident $help:literal $check:tt) $sgd:tt $adam:tt [$($adamw:tt)*] $rms:tt
        $ada:tt $table:tt $kind:tt [$($fixed:ident)*] [AdamW fixed: $d:expr $(, $($more:tt)*)?]
        $($rest:tt)*
    ) => {
        optimizer_options!(@entry ($name $ty $help $check) $sgd $adam
            [$($adamw)* $name: $ty = $help ($d),] $rms $ada $table $kind [$($fixed)* AdamW]
            [$($($more)*)?] $($rest)*);
    };
    (@entry ($name:ident $ty:ident $help:literal $check:tt) $sgd:tt $adam:tt [$($adamw:tt)*] $rms:tt
        $ada:tt $table:tt [$($kind:ident)*] $fixed:tt [AdamW: $d:expr $(, $($more:tt)*)?] $($rest:tt)*
    ) => {
        optimizer_options!(@entry ($name $ty $help $check) $sgd $adam
            [$($adamw)* $name: $ty = $help ($d),] $rms $ada $table [$($kind)* AdamW] $fixed
            [$($($more)*)?] $($rest)*);
    };
    (@entry ($name:ident $ty:ident $help:literal $check:tt) $sgd:tt $adam:tt $adamw:tt [$($rms:tt)*]
        $ada:tt $table:tt [$($kind:ident)*] $fixed:tt [RMSprop: $d:expr $(, $($more:tt)*)?]
        $($rest:tt)*
    ) => {
        optimizer_options!(@entry ($name $ty $help $check) $sgd $adam $adamw
            [$($rms)* $name: $ty = $help ($d),] $ada $table [$($kind)* RmsProp] $fixed
            [$($($more)*)?] $($rest)*);
    };
    (@entry ($name:ident $ty:ident $help:literal $check:tt) $sgd:tt $adam:tt $adamw:tt $rms:tt
        [$($ada:tt)*] $table:tt [$($kind:ident)*] $fixed:tt [Adagrad: $d:expr $(, $($more:tt)*)?]
        $($rest:tt)*
    ) => {
        optimizer_options!(@entry ($name $ty $help $check) $sgd $adam $adamw $rms
            [$($ada)* $name: $ty = $help ($d),] $table [$($kind)* Adagrad] $fixed
            [$($($more)*)?] $($rest)*);
    };
    // A row's entries all read: its line of the table.
    (@entry ($name:ident $ty:ident $help:literal [$($turn:literal $refuses:expr)?]) $sgd:tt $adam:tt
        $adamw:tt $rms:tt $ada:tt [$($table:tt)*] [$($kind:ident)*] [$($fixed:ident)*] []
        $($rest:tt)*
    ) => {
        optimizer_options!(@rows $sgd $adam $adamw $rms $ada [$($table)*
            optimizer_options!(@row $name $ty $help [$($kind),*] [$($fixed),*] [None] [$($turn $refuses)?]),
        ] $($rest)*);
    };

    (@row $name:ident $ty:ident $help:literal [$($kind:ident),*] [$($fixed:ident),*] [$only:expr]
        [$($turn:literal $refuses:expr)?]) => {
        OptionRow {
            name: stringify!($name),
            help: $help,
            ty: OptionType::$ty,
            keyword_of: &[$(OptimizerKind::$kind),*],
            fixed_in: &[$(OptimizerKind::$fixed),*],
            only_default: $only,
            check: optimizer_options!(@check $($turn $refuses)?),
        }
    };
    (@check) => { None };
    (@check $turn:literal $refuses:expr) => { Some(Check { turn: $turn, refuses: $refuses }) };

    ($($rows:tt)*) => {
        optimizer_options!(@rows [] [] [] [] [] [] $($rows)*);
    };
}
pub(crate) use optimizer_options;
