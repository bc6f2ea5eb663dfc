//! Grad mode: whether ops record a graph; thread-local, switched by guards that restore on drop.

use std::cell::Cell;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
    static INFERENCE: Cell<bool> = const { Cell::new(false) };
}

/// Whether ops on this thread record autograd graphs.
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(Cell::get)
}

/// Whether this thread is inside `inference_mode`.
pub fn is_inference_mode() -> bool {
    INFERENCE.with(Cell::get)
}

/// Restores the grad mode (and inference mode) that was current when it was made.
#[must_use = "the mode reverts when the guard is dropped"]
pub struct GradModeGuard {
    grad: bool,
    inference: bool,
}

impl GradModeGuard {
    fn switch(grad: bool, inference: bool) -> GradModeGuard {
        let guard = GradModeGuard {
            grad: is_grad_enabled(),
            inference: is_inference_mode(),
        };
        GRAD_ENABLED.with(|c| c.set(grad));
        INFERENCE.with(|c| c.set(inference));
        guard
    }
}

impl Drop for GradModeGuard {
    fn drop(&mut self) {
        GRAD_ENABLED.with(|c| c.set(self.grad));
        INFERENCE.with(|c| c.set(self.inference));
    }
}

/// Stop recording graphs until the guard drops (`torch.no_grad()`).
pub fn no_grad() -> GradModeGuard {
    GradModeGuard::switch(false, is_inference_mode())
}

/// Record graphs again until the guard drops (`torch.enable_grad()`), also inside `no_grad`.
pub fn enable_grad() -> GradModeGuard {
    GradModeGuard::switch(true, is_inference_mode())
}

/// Set recording on or off until the guard drops (`torch.set_grad_enabled(mode)`).
pub fn set_grad_enabled(enabled: bool) -> GradModeGuard {
    GradModeGuard::switch(enabled, is_inference_mode())
}

/// No graphs, and tensors made inside are inference tensors (`torch.inference_mode()`).
pub fn inference_mode() -> GradModeGuard {
    GradModeGuard::switch(false, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_nest_and_restore() {
        assert!(is_grad_enabled());
        {
            let _a = no_grad();
            assert!(!is_grad_enabled());
            {
                let _b = enable_grad();
                assert!(is_grad_enabled());
            }
            assert!(!is_grad_enabled());
            {
                let _c = inference_mode();
                assert!(is_inference_mode() && !is_grad_enabled());
            }
            assert!(!is_inference_mode());
        }
        assert!(is_grad_enabled());
    }
}
