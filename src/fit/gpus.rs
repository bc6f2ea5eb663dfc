//! The GPUs `fit` knows by name: the total `cudaMemGetInfo` reports on each and the memory a
//! PyTorch process holds there outside the caching allocator, with where each figure comes from;
//! and `--gpu`/`--devices` read into machines of such GPUs.
//!
//! Note [usable memory]: PyTorch's allocator gets what `cudaMalloc` can still hand out, which is
//! the device's total less what the process took before (the CUDA context, loaded kernels) and
//! what cuBLAS takes at the first matrix product (its handle, not its workspace: the 32 MiB
//! workspaces come from the allocator and are counted there). On the H200 a PyTorch 2.11 process
//! holds 552402944 B after CUDA starts and 678232064 B after its first cuBLAS matmul, of a total
//! of 150109880320 B. `fit` takes the after-cuBLAS figure off for the whole run (the memory a
//! script allocates before its first matmul cannot be counted on once cuBLAS loads), and only the
//! context when the run multiplied no matrices. Other tenants' memory (`--reserve`) comes off too.
use torchlet_session::fit::parse_size;

/// The H200's measured figures (PyTorch 2.11, CUDA 13).
const H200_TOTAL: u64 = 150_109_880_320;
/// Outside the allocator after CUDA initialises, on the H200.
const CONTEXT: u64 = 552_402_944;
/// Outside the allocator after the first cuBLAS matmul, on the H200.
const CONTEXT_CUBLAS: u64 = 678_232_064;

/// A GPU model: its names and its memory.
pub struct Model {
    /// The name `--gpu` takes (case-insensitive), as the report prints it.
    pub name: &'static str,
    /// The total `cudaMemGetInfo` reports, in bytes.
    pub total: u64,
    /// Whether the total was measured (not read from a rounded published figure).
    pub measured: bool,
    /// Where the total comes from.
    pub source: &'static str,
}

/// A total given in GiB to two decimals, as PyTorch's out-of-memory message prints it.
const fn gib100(hundredths: u64) -> u64 {
    hundredths * (1 << 30) / 100
}

/// The table. Totals other than the H200's are the "total capacity" PyTorch's out-of-memory
/// messages print on those GPUs (rounded to 0.01 GiB), or derived from nvidia-smi's figure where
/// no such message was found; all of them are estimates.
pub const MODELS: &[Model] = &[
    Model { name: "H200", total: H200_TOTAL, measured: true, source: "measured: cudaMemGetInfo on an H200 (PyTorch 2.11, CUDA 13)" },
    Model { name: "H100-80GB", total: gib100(7911), measured: false, source: "79.11 GiB, the total capacity PyTorch's OOM message prints on an H100 80GB" },
    Model { name: "H100-94GB", total: gib100(9300), measured: false, source: "nvidia-smi's 95830 MiB for an H100 NVL, less the 0.6 GiB the H200's cudaMemGetInfo total is below its nvidia-smi figure" },
    Model { name: "A100-80GB", total: gib100(7915), measured: false, source: "79.15 GiB, the total capacity PyTorch's OOM message prints on an A100 80GB" },
    Model { name: "A100-40GB", total: gib100(3950), measured: false, source: "39.50 GiB, the total capacity in a PyTorch OOM message on an A100 40GB (github.com/TianheWu/CoSeR/issues/10)" },
    Model { name: "L40S", total: gib100(4442), measured: false, source: "44.42 GiB, the total capacity in a PyTorch OOM message on an L40S (github.com/stepfun-ai/Step-Video-T2V/issues/8)" },
    Model { name: "L4", total: gib100(2217), measured: false, source: "22.17 GiB, the total capacity PyTorch's OOM message prints on an L4" },
    Model { name: "A10G", total: gib100(2219), measured: false, source: "22.19 GiB, the total capacity PyTorch's OOM message prints on an A10G" },
    Model { name: "RTX-4090", total: gib100(2364), measured: false, source: "23.64 GiB, the total capacity in PyTorch OOM messages on an RTX 4090 (github.com/ali-vilab/VGen/issues/104)" },
    Model { name: "RTX-3090", total: gib100(2369), measured: false, source: "23.69 GiB, the total capacity PyTorch's OOM message prints on an RTX 3090" },
    Model { name: "RTX-A6000", total: gib100(4754), measured: false, source: "47.54 GiB, the total capacity PyTorch's OOM message prints on an RTX A6000" },
    Model { name: "T4", total: gib100(1475), measured: false, source: "14.75 GiB, the total capacity in a PyTorch OOM message on a T4 (github.com/hpcaitech/Open-Sora/issues/697)" },
    Model { name: "V100-16GB", total: gib100(1577), measured: false, source: "15.77 GiB, the total capacity PyTorch's OOM message prints on a V100 16GB" },
    Model { name: "V100-32GB", total: gib100(3175), measured: false, source: "31.75 GiB, the total capacity in a PyTorch OOM message on a V100 32GB (github.com/hiyouga/LlamaFactory/issues/182)" },
];

/// One GPU as `fit` runs it: what the allocator can use there, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Gpu {
    /// As asked (`H200`, `24GiB`).
    pub name: String,
    /// The total `cudaMemGetInfo` would report.
    pub total: u64,
    /// Whether the total was measured.
    pub measured: bool,
    /// Where the total comes from.
    pub source: String,
    /// Held outside the allocator by the process: the CUDA context alone.
    pub context: u64,
    /// The same after cuBLAS loads (the first matrix product).
    pub context_cublas: u64,
    /// Whether the context figures were measured on this GPU.
    pub context_measured: bool,
    /// Held for other tenants (`--reserve`).
    pub reserve: u64,
}

impl Gpu {
    /// What the caching allocator can get from `cudaMalloc` (Note [usable memory]).
    pub fn usable(&self, cublas: bool) -> u64 {
        let outside = if cublas {
            self.context_cublas
        } else {
            self.context
        };
        self.total.saturating_sub(outside + self.reserve)
    }

    /// The outside-the-allocator memory as the report explains it.
    pub fn why(&self, cublas: bool) -> String {
        let outside = if cublas {
            self.context_cublas
        } else {
            self.context
        };
        let total = format!(
            "{} total{}",
            super::size(self.total),
            if self.measured { "" } else { " (estimated)" }
        );
        let mut why = if outside == 0 {
            format!("{total}; nothing held outside the allocator (--no-context)")
        } else {
            format!(
                "{total}; less {} held outside the allocator ({}, {})",
                super::size(outside),
                if cublas {
                    "CUDA context and cuBLAS"
                } else {
                    "CUDA context; the run multiplied no matrices, so cuBLAS never loaded"
                },
                if self.context_measured {
                    "measured"
                } else {
                    "estimated from the H200's"
                }
            )
        };
        if self.reserve > 0 {
            why += &format!("; less {} --reserve", super::size(self.reserve));
        }
        why
    }
}

/// The options that shape every GPU asked.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// `--no-context`: a plain size is all the allocator's.
    pub no_context: bool,
    /// `--reserve SIZE`, in bytes.
    pub reserve: u64,
}

/// One GPU by name (`H200`, case-insensitive) or size (`24GiB`, `24GB`).
pub fn gpu(word: &str, options: Options) -> Result<Gpu, String> {
    let word = word.trim();
    if let Some(m) = MODELS.iter().find(|m| m.name.eq_ignore_ascii_case(word)) {
        return Ok(Gpu {
            name: m.name.to_string(),
            total: m.total,
            measured: m.measured,
            source: m.source.to_string(),
            context: CONTEXT,
            context_cublas: CONTEXT_CUBLAS,
            context_measured: m.measured,
            reserve: options.reserve,
        });
    }
    let total = sized(word)?;
    let (context, context_cublas) = if options.no_context {
        (0, 0)
    } else {
        (CONTEXT, CONTEXT_CUBLAS)
    };
    Ok(Gpu {
        name: word.to_string(),
        total,
        measured: true,
        source: "as given".into(),
        context,
        context_cublas,
        context_measured: false,
        reserve: options.reserve,
    })
}

/// A size with its unit; a bare number is refused, as `--simulate-cuda` refuses it.
fn sized(word: &str) -> Result<u64, String> {
    if word.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(format!(
            "'{word}' is neither a GPU this table knows ({}) nor a size with a unit (24GiB, 24GB)",
            names()
        ));
    }
    parse_size(word).map_err(|e| {
        format!(
            "'{word}': not a known GPU ({}), and as a size: {e}",
            names()
        )
    })
}

/// The names `--gpu` takes.
pub fn names() -> String {
    MODELS.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
}

/// `--gpu A,B,C`: one machine of one GPU per name, each answered on its own.
pub fn each(list: &str, options: Options) -> Result<Vec<Vec<Gpu>>, String> {
    list.split(',')
        .filter(|w| !w.trim().is_empty())
        .map(|w| gpu(w, options).map(|g| vec![g]))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("--gpu {e}"))
}

/// `--devices 2xH100-80GB` (or `H100-80GB+H200`): one machine with several GPUs.
pub fn machine(spec: &str, options: Options) -> Result<Vec<Gpu>, String> {
    let mut gpus = Vec::new();
    for part in spec.split('+') {
        let part = part.trim();
        let (count, name) = match part.split_once(['x', 'X']) {
            Some((n, name)) if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) => {
                (n.parse::<usize>().unwrap_or(0), name)
            }
            _ => (1, part),
        };
        if count == 0 {
            return Err(format!(
                "--devices {spec}: '{part}' asks for no GPU; write NxGPU with N at least 1, e.g. 2xH100-80GB"
            ));
        }
        let g = gpu(name, options).map_err(|e| format!("--devices {spec}: {e}"))?;
        gpus.extend(std::iter::repeat_n(g, count));
    }
    Ok(gpus)
}

/// The machine as the report heads it: `H200`, `2xH100-80GB`.
pub fn machine_name(gpus: &[Gpu]) -> String {
    let mut parts: Vec<(usize, &str)> = Vec::new();
    for g in gpus {
        match parts.last_mut() {
            Some((n, name)) if *name == g.name => *n += 1,
            _ => parts.push((1, &g.name)),
        }
    }
    parts
        .iter()
        .map(|(n, name)| {
            if *n == 1 {
                name.to_string()
            } else {
                format!("{n}x{name}")
            }
        })
        .collect::<Vec<_>>()
        .join("+")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_case_insensitive_and_sizes_keep_their_unit() {
        let h200 = gpu("h200", Options::default()).unwrap();
        assert_eq!(h200.total, H200_TOTAL);
        assert_eq!(h200.usable(true), H200_TOTAL - CONTEXT_CUBLAS);
        let gib = gpu("80GiB", Options::default()).unwrap();
        let gb = gpu("80GB", Options::default()).unwrap();
        assert_eq!(gib.total, 80 << 30);
        assert_eq!(gb.total, 80_000_000_000);
        let bare = gpu(
            "80GiB",
            Options {
                no_context: true,
                reserve: 1 << 30,
            },
        )
        .unwrap();
        assert_eq!(bare.usable(true), (80 << 30) - (1 << 30));
        assert!(gpu("80", Options::default())
            .unwrap_err()
            .contains("H100-80GB"));
    }

    #[test]
    fn devices_make_one_machine() {
        let m = machine("2xH100-80GB", Options::default()).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(machine_name(&m), "2xH100-80GB");
        assert!(machine("0xH200", Options::default()).is_err());
        assert_eq!(
            each("H200,RTX-4090,24GiB", Options::default())
                .unwrap()
                .len(),
            3
        );
    }
}
