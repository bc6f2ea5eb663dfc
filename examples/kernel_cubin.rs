//! Compiles one dtype's CUDA module for sm_90 exactly as the backend does and writes the cubin, so
//! its machine code can be read without a GPU (benches/ncu/sass.sh):
//! `cargo run --example kernel_cubin -- f32 OUT.cubin`, with NVRTC on the library path.

use torchlet_alloc::types::DType;
use torchlet_core::device::cuda::compile;
use torchlet_core::device::cuda::elem::CudaDType;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [suffix, out] = args.as_slice() else {
        eprintln!(
            "usage: kernel_cubin DTYPE OUT.cubin (DTYPE: f32, f16, bf16, f64, i64, i32, u8, bool)"
        );
        std::process::exit(2);
    };
    let Some(elem) = DType::ALL.into_iter().find(|d| d.suffix() == suffix) else {
        eprintln!("kernel_cubin: no dtype with kernel suffix {suffix:?}");
        std::process::exit(2);
    };
    let source = compile::module_source(elem);
    match compile::compile(&source, &format!("torchlet_{suffix}.cu"), "sm_90") {
        Ok(image) => std::fs::write(out, image).unwrap_or_else(|e| {
            eprintln!("kernel_cubin: cannot write {out}: {e}");
            std::process::exit(1);
        }),
        Err(e) => {
            eprintln!("kernel_cubin: {e}");
            std::process::exit(1);
        }
    }
}
