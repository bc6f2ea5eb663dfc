//! The Jupyter kernel over a `Session`.
use std::path::Path;
use std::process::ExitCode;

/// Where `kernel install` writes the kernelspec.
#[derive(clap::Args, Debug, Default)]
pub struct InstallArgs {
    /// Install for the current user.
    #[arg(long, conflicts_with_all = ["sys_prefix", "prefix"])]
    pub user: bool,
    /// Install into the current Python environment's prefix.
    #[arg(long)]
    pub sys_prefix: bool,
    /// Install under this prefix.
    #[arg(long, value_name = "DIR")]
    pub prefix: Option<std::path::PathBuf>,
}

/// Serve the kernel described by `connection_file` until shutdown.
pub fn run(_connection_file: &Path) -> Result<ExitCode, String> {
    Err("the Jupyter kernel is not built yet".into())
}

/// Write the kernelspec where `args` says.
pub fn install(_args: &InstallArgs) -> Result<ExitCode, String> {
    Err("kernel install is not built yet".into())
}
