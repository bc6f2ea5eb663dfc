//! The REPL's prompts: `>>> `, `... ` for continuation lines, and device memory with `:prompt mem`.
use torchlet_session::memory;

/// The prompt that starts an input.
pub const FIRST: &str = ">>> ";
/// The prompt of a continuation line.
pub const MORE: &str = "... ";

/// The first-line prompt; with `show_memory`, each device's allocated/reserved before it.
pub fn first(show_memory: bool) -> String {
    if !show_memory {
        return FIRST.into();
    }
    match memory::sample() {
        Ok(devices) if !devices.is_empty() => {
            let parts: Vec<String> = devices
                .iter()
                .map(|d| {
                    format!(
                        "cuda:{} {}/{}",
                        d.index,
                        memory::human(d.allocated),
                        memory::human(d.reserved)
                    )
                })
                .collect();
            format!("[{}] {FIRST}", parts.join(" | "))
        }
        _ => format!("[no cuda] {FIRST}"),
    }
}
