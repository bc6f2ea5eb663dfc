//! Registering a function together with its one-line help, kept as the function's Rhai doc comment.
//!
//! `help()`, `name?`, completion and the kernel's inspect all read these comments back (see
//! [`super::help`]), so a name's help is written once, where the name is registered. The help line
//! starts with its usage, whose form says what it documents: `NAME(…)` a function, `t.NAME(…)` a
//! tensor method, `t.NAME` a property, `cuda::NAME(…)` a member of the `cuda` module. Only the
//! overload that carries the line needs it; the others register as usual.
use rhai::RhaiNativeFunc;
use rhai::{Engine, FuncRegistration, Module, Variant};

/// The Rhai doc comments that hold `docs`, one help line each.
pub fn comments(docs: &[&str]) -> Vec<String> {
    docs.iter().map(|doc| format!("/// {doc}")).collect()
}

/// Registration of a function with its help line(s) on an `Engine`.
pub trait Documented {
    /// Register `f` as `name`, documented by `docs` (usually one line; two where one overload is
    /// both a function and a method, as `matmul` is).
    fn register_doc<A: 'static, const N: usize, const X: bool, R, const F: bool, FUNC>(
        &mut self,
        name: &str,
        docs: &[&str],
        f: FUNC,
    ) -> &mut Self
    where
        R: Variant + Clone,
        FUNC: RhaiNativeFunc<A, N, X, R, F> + 'static;

    /// Register `get` as the getter of property `name`, documented by `doc` (`t.NAME — …`).
    fn register_get_doc<A: 'static, const X: bool, R, const F: bool, FUNC>(
        &mut self,
        name: &str,
        doc: &str,
        get: FUNC,
    ) -> &mut Self
    where
        R: Variant + Clone,
        FUNC: RhaiNativeFunc<A, 1, X, R, F> + 'static;
}

impl Documented for Engine {
    fn register_doc<A: 'static, const N: usize, const X: bool, R, const F: bool, FUNC>(
        &mut self,
        name: &str,
        docs: &[&str],
        f: FUNC,
    ) -> &mut Self
    where
        R: Variant + Clone,
        FUNC: RhaiNativeFunc<A, N, X, R, F> + 'static,
    {
        FuncRegistration::new(name)
            .with_comments(comments(docs))
            .register_into_engine(self, f);
        self
    }

    fn register_get_doc<A: 'static, const X: bool, R, const F: bool, FUNC>(
        &mut self,
        name: &str,
        doc: &str,
        get: FUNC,
    ) -> &mut Self
    where
        R: Variant + Clone,
        FUNC: RhaiNativeFunc<A, 1, X, R, F> + 'static,
    {
        FuncRegistration::new_getter(name)
            .with_comments(comments(&[doc]))
            .register_into_engine(self, get);
        self
    }
}

/// Registration into a `Module` with help line(s): as `Module::set_native_fn`, whose functions
/// return a `Result` (which lets `|| Ok(x)` closures infer their error type).
pub trait DocumentedModule {
    /// Register `f` as `module::name`, documented by `docs`.
    fn register_doc<A: 'static, const N: usize, const X: bool, R, FUNC>(
        &mut self,
        name: &str,
        docs: &[&str],
        f: FUNC,
    ) -> &mut Self
    where
        R: Variant + Clone,
        FUNC: RhaiNativeFunc<A, N, X, R, true> + 'static;
}

impl DocumentedModule for Module {
    // As `Module::set_native_fn` registers: callable as `module::name`, pure, not volatile.
    fn register_doc<A: 'static, const N: usize, const X: bool, R, FUNC>(
        &mut self,
        name: &str,
        docs: &[&str],
        f: FUNC,
    ) -> &mut Self
    where
        R: Variant + Clone,
        FUNC: RhaiNativeFunc<A, N, X, R, true> + 'static,
    {
        FuncRegistration::new(name)
            .in_internal_namespace()
            .with_purity(true)
            .with_volatility(false)
            .with_comments(comments(docs))
            .set_into_module(self, f);
        self
    }
}
