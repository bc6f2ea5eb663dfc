//! Where the REPL keeps its history: `$XDG_DATA_HOME/torchlet/history` (the user's data directory).
use std::path::PathBuf;

/// The history file, or `None` when the system names no data directory.
pub fn path() -> Option<PathBuf> {
    // dirs honours XDG_DATA_HOME on Linux and falls back to ~/.local/share.
    Some(dirs::data_dir()?.join("torchlet").join("history"))
}

/// Make sure the history file's directory exists; say why not, once, if it cannot be made.
pub fn prepare(path: &std::path::Path) -> Result<(), String> {
    let dir = path.parent().unwrap_or(path);
    std::fs::create_dir_all(dir).map_err(|e| {
        format!(
            "history will not be saved: cannot create {}: {e}",
            dir.display()
        )
    })
}
