//! `torchlet kernel install`: writes the kernelspecs (Rhai's and Python's kernel.json and logos) where Jupyter looks.
//!
//! kernel.json is written from the hand-written template in `kernelspec/`, never through
//! `jupyter_protocol::JupyterKernelspec`: that type serialises unset fields as `null`, and
//! jupyter_client refuses a spec with `"env": null` or `"interrupt_mode": null`.
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;

use super::language::LanguageKind;

const RHAI_TEMPLATE: &str = include_str!("../../../kernelspec/kernel.json");
const PYTHON_TEMPLATE: &str = include_str!("../../../kernelspec/python/kernel.json");
const LOGO_32: &[u8] = include_bytes!("../../../kernelspec/logo-32x32.png");
const LOGO_64: &[u8] = include_bytes!("../../../kernelspec/logo-64x64.png");

/// Where `kernel install` writes the kernelspec, and what it puts in it.
#[derive(clap::Args, Debug, Default)]
#[command(
    after_help = "Without a location flag the spec goes to the first directory of \
    $JUPYTER_PATH if set, else to the user's Jupyter data directory ($JUPYTER_DATA_DIR, or \
    ~/.local/share/jupyter).\nInstalled with a simulated GPU (torchlet --simulate-cuda[=SIZE] kernel \
    install, or TORCHLET_SIMULATE_CUDA set), the kernel simulates one too; \
    --env TORCHLET_SIMULATE_CUDA=SIZE does the same explicitly."
)]
pub struct InstallArgs {
    /// Install for the current user ($JUPYTER_DATA_DIR, or the platform's Jupyter data dir).
    #[arg(long, conflicts_with_all = ["sys_prefix", "prefix"])]
    pub user: bool,
    /// Install into the current Python environment's prefix (python3's sys.prefix).
    #[arg(long, conflicts_with = "prefix")]
    pub sys_prefix: bool,
    /// Install under this prefix (DIR/share/jupyter/kernels/NAME).
    #[arg(long, value_name = "DIR")]
    pub prefix: Option<PathBuf>,
    /// Which kernelspecs: Rhai's, Python's, or both (NAME and NAME-python).
    #[arg(long, value_enum, default_value_t = Languages::Both)]
    pub language: Languages,
    /// The kernelspec's name (its directory); front ends select the kernel by it.
    #[arg(long, default_value = "torchlet")]
    pub name: String,
    /// The name front ends show (with both languages, Python's gets ", Python" after it).
    #[arg(long, value_name = "TEXT")]
    pub display_name: Option<String>,
    /// An environment variable the kernel starts with, e.g. TORCHLET_SIMULATE_CUDA=16GiB (repeatable).
    #[arg(long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
}

/// The kernelspecs `kernel install` writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Languages {
    /// Rhai's (`NAME`) and Python's (`NAME-python`).
    #[default]
    Both,
    /// Rhai's only.
    Rhai,
    /// Python's only, named NAME.
    Python,
}

/// Write the kernelspecs `args` asks for, and say where they went.
pub fn install(args: &InstallArgs) -> Result<ExitCode, String> {
    let specs: &[LanguageKind] = match args.language {
        Languages::Both => &[LanguageKind::Rhai, LanguageKind::Python],
        Languages::Rhai => &[LanguageKind::Rhai],
        Languages::Python => &[LanguageKind::Python],
    };
    let each: Vec<InstallArgs> = specs.iter().map(|&k| for_language(args, k)).collect();
    // Every name is checked before anything is written.
    let dirs = each.iter().map(kernel_dir).collect::<Result<Vec<_>, _>>()?;
    for (spec, dir) in each.iter().zip(&dirs) {
        install_one(spec, dir)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `args` for one language's spec: with both, Python's is `NAME-python`, and a display name
/// given is marked ", Python".
fn for_language(args: &InstallArgs, kind: LanguageKind) -> InstallArgs {
    let both = args.language == Languages::Both;
    let python = kind == LanguageKind::Python;
    InstallArgs {
        language: if python {
            Languages::Python
        } else {
            Languages::Rhai
        },
        name: if both && python {
            format!("{}-python", args.name)
        } else {
            args.name.clone()
        },
        display_name: match &args.display_name {
            Some(text) if both && python => Some(format!("{text}, Python")),
            other => other.clone(),
        },
        env: args.env.clone(),
        prefix: args.prefix.clone(),
        ..*args
    }
}

fn install_one(args: &InstallArgs, dir: &Path) -> Result<(), String> {
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| format!("cannot find the path of the torchlet executable: {e}"))?;
    let mut env = args.env.clone();
    let simulate = simulation_requested();
    if let Some(size) = &simulate {
        if !env.iter().any(|e| e.starts_with("TORCHLET_SIMULATE_CUDA=")) {
            env.push(format!("TORCHLET_SIMULATE_CUDA={size}"));
        }
    }
    let spec = kernel_json(args, &env, &exe)?;
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("cannot create {}: {e} (try --user)", dir.display()))?;
    let write = |name: &str, bytes: &[u8]| {
        std::fs::write(dir.join(name), bytes)
            .map_err(|e| format!("cannot write {}: {e}", dir.join(name).display()))
    };
    write("kernel.json", spec.as_bytes())?;
    write("logo-32x32.png", LOGO_32)?;
    write("logo-64x64.png", LOGO_64)?;
    println!("Installed kernelspec {} in {}", args.name, dir.display());
    if let Some(size) = simulate {
        println!(
            "The kernel simulates CUDA devices of {size} (TORCHLET_SIMULATE_CUDA in kernel.json)."
        );
    }
    Ok(())
}

/// The GPU simulation this command runs with (`--simulate-cuda[=SIZE]` or TORCHLET_SIMULATE_CUDA):
/// someone who installs with a simulated GPU wants the kernel to have one too.
fn simulation_requested() -> Option<String> {
    let flag = std::env::args().skip(1).find_map(|arg| {
        if arg == "--simulate-cuda" {
            Some("16GiB".to_string())
        } else {
            arg.strip_prefix("--simulate-cuda=").map(str::to_string)
        }
    });
    flag.or_else(|| std::env::var("TORCHLET_SIMULATE_CUDA").ok())
        .filter(|size| !size.is_empty())
}

/// The kernel.json text: the template with this executable's absolute path, the options, and
/// `env` (`KEY=VALUE` pairs).
pub fn kernel_json(args: &InstallArgs, env: &[String], exe: &Path) -> Result<String, String> {
    let template = match args.language {
        Languages::Python => PYTHON_TEMPLATE,
        Languages::Both | Languages::Rhai => RHAI_TEMPLATE,
    };
    let mut spec: Value = serde_json::from_str(template).expect("kernelspec templates are JSON");
    spec["argv"][0] = Value::String(exe.to_string_lossy().into_owned());
    if let Some(name) = &args.display_name {
        spec["display_name"] = Value::String(name.clone());
    }
    if !env.is_empty() {
        let pairs = env;
        let mut env = serde_json::Map::new();
        for pair in pairs {
            let (key, value) = pair
                .split_once('=')
                .filter(|(k, _)| !k.is_empty())
                .ok_or_else(|| format!("--env expects KEY=VALUE, got '{pair}'"))?;
            env.insert(key.to_string(), Value::String(value.to_string()));
        }
        spec["env"] = Value::Object(env);
    }
    Ok(serde_json::to_string_pretty(&spec).expect("JSON values serialise") + "\n")
}

/// `kernels/NAME` under the directory the flags (or Jupyter's variables) choose.
pub fn kernel_dir(args: &InstallArgs) -> Result<PathBuf, String> {
    let valid = !args.name.is_empty()
        && args
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !valid {
        return Err(format!(
            "kernel name '{}' is not allowed: use letters, digits, '.', '_' and '-' only",
            args.name
        ));
    }
    let base = if let Some(prefix) = &args.prefix {
        prefix.join("share").join("jupyter")
    } else if args.sys_prefix {
        python_prefix()?.join("share").join("jupyter")
    } else if args.user {
        jupyter_data_dir()?
    } else if let Some(first) = jupyter_path_first() {
        first
    } else {
        jupyter_data_dir()?
    };
    Ok(base.join("kernels").join(&args.name))
}

/// The first directory of `$JUPYTER_PATH` (a search path, like `$PATH`), if set.
fn jupyter_path_first() -> Option<PathBuf> {
    let path = std::env::var_os("JUPYTER_PATH")?;
    std::env::split_paths(&path).find(|p| !p.as_os_str().is_empty())
}

/// Jupyter's user data directory, as `jupyter --data-dir` prints it.
pub fn jupyter_data_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("JUPYTER_DATA_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let missing = || "cannot find your home directory; pass --prefix DIR".to_string();
    if cfg!(target_os = "macos") {
        return Ok(dirs::home_dir()
            .ok_or_else(missing)?
            .join("Library/Jupyter"));
    }
    // dirs::data_dir honours XDG_DATA_HOME on Linux and is %APPDATA% on Windows, as Jupyter's is.
    Ok(dirs::data_dir().ok_or_else(missing)?.join("jupyter"))
}

fn python_prefix() -> Result<PathBuf, String> {
    for python in ["python3", "python"] {
        let Ok(out) = std::process::Command::new(python)
            .args(["-c", "import sys; print(sys.prefix)"])
            .output()
        else {
            continue;
        };
        if out.status.success() {
            let prefix = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if !prefix.is_empty() {
                return Ok(PathBuf::from(prefix));
            }
        }
    }
    Err(
        "--sys-prefix needs python3 on PATH to find sys.prefix; activate the environment \
         Jupyter runs in, or pass --prefix DIR"
            .into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> InstallArgs {
        InstallArgs {
            name: "torchlet".into(),
            ..Default::default()
        }
    }

    #[test]
    fn spec_has_no_nulls_and_the_absolute_executable() {
        let text = kernel_json(&args(), &[], Path::new("/opt/bin/torchlet")).unwrap();
        let spec: Value = serde_json::from_str(&text).unwrap();
        assert!(!text.contains("null"), "{text}");
        assert_eq!(
            spec["argv"],
            serde_json::json!([
                "/opt/bin/torchlet",
                "kernel",
                "--connection-file",
                "{connection_file}"
            ])
        );
        assert_eq!(spec["language"], "rhai");
        assert_eq!(spec["interrupt_mode"], "message");
        assert!(spec.get("env").is_none());
        assert!(spec["metadata"].get("supported_encryption").is_none());
    }

    #[test]
    fn env_pairs_land_in_the_spec_and_bad_ones_are_refused() {
        let a = args();
        let env = ["TORCHLET_SIMULATE_CUDA=16GiB".to_string()];
        let text = kernel_json(&a, &env, Path::new("/t")).unwrap();
        let spec: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(spec["env"]["TORCHLET_SIMULATE_CUDA"], "16GiB");
        let bad = ["NOEQUALS".to_string()];
        let refused = kernel_json(&a, &bad, Path::new("/t")).unwrap_err();
        assert!(refused.contains("KEY=VALUE"));
    }

    #[test]
    fn prefix_and_names() {
        let mut a = args();
        a.prefix = Some(PathBuf::from("/p"));
        assert_eq!(
            kernel_dir(&a).unwrap(),
            PathBuf::from("/p/share/jupyter/kernels/torchlet")
        );
        a.name = "bad name".into();
        assert!(kernel_dir(&a).unwrap_err().contains("not allowed"));
    }
}
