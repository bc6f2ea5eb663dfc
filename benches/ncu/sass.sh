#!/usr/bin/env bash
# A torchlet kernel's machine code beside PyTorch's, on a development machine (no GPU needed):
#   bash benches/ncu/sass.sh KERNEL DTYPE OUT_DIR [TORCH_PATTERN]
#   bash benches/ncu/sass.sh unary_c_gelu f32 /tmp/sass 'vectorized_elementwise_kernelILi4EZZZNS0_18GeluCUDAKernelImplERNS_18TensorIteratorBaseENS0_8GeluTypeEENKUlvE0_clEvENKUlvE0_'
# Fetches with pip, once, into $SASS_CACHE (default ~/.cache/torchlet-sass): cuobjdump, nvdisasm, NVRTC 13.0
# (the H200 machine's), and with TORCH_PATTERN PyTorch 2.11's wheel (530 MB). Writes
# OUT_DIR/torchlet.sass and its registers (examples/kernel_cubin.rs compiles the module with the
# backend's own options), and OUT_DIR/torch.sass: the sm_90 functions of libtorch_cuda.so whose
# mangled names match TORCH_PATTERN (a grep -E pattern). benches/RESULTS.md, eleventh run, used it.
set -euo pipefail
kernel=$1 dtype=$2 out=$3 pattern=${4:-}
cache=${SASS_CACHE:-$HOME/.cache/torchlet-sass}
mkdir -p "$cache" "$out"
fetch() { # wheel-spec name: the wheel unpacked into $cache/name
  [ -d "$cache/$2" ] && return
  pip download -q --no-deps -d "$cache/wheels/$2" "$1"
  python3 -m zipfile -e "$cache"/wheels/"$2"/*.whl "$cache/$2"
}
fetch nvidia-cuda-cuobjdump cuobjdump
fetch nvidia-cuda-nvdisasm nvdisasm
fetch "nvidia-cuda-nvrtc==13.0.*" nvrtc
cuobjdump=$(find "$cache/cuobjdump" -name cuobjdump -type f | head -1)
nvdisasm=$(find "$cache/nvdisasm" -name nvdisasm -type f | head -1)
chmod +x "$cuobjdump" "$nvdisasm"
export NVDISASM_PATH=$(dirname "$nvdisasm")
nvrtc=$(dirname "$(find "$cache/nvrtc" -name 'libnvrtc.so.*' | head -1)")
LD_LIBRARY_PATH=$nvrtc cargo run -q --example kernel_cubin -- "$dtype" "$out/torchlet_$dtype.cubin"
"$cuobjdump" -sass -fun "${kernel}_$dtype" "$out/torchlet_$dtype.cubin" > "$out/torchlet.sass"
"$cuobjdump" -res-usage "$out/torchlet_$dtype.cubin" | grep -A1 "Function ${kernel}_$dtype:" >> "$out/torchlet.sass"
echo "$out/torchlet.sass: $(grep -c '/\*[0-9a-f]\{4\}\*/' "$out/torchlet.sass") instructions"
[ -n "$pattern" ] || exit 0
fetch "torch==2.11.*" torch
lib=$(find "$cache/torch" -name libtorch_cuda.so | head -1)
elves=$cache/torch-sm90
if [ ! -d "$elves" ]; then mkdir -p "$elves"; (cd "$elves" && "$cuobjdump" -xelf sm_90 "$lib" > /dev/null); fi
: > "$out/torch.sass"
for cubin in $(grep -lE "$pattern" "$elves"/*.cubin); do
  "$cuobjdump" -sass "$cubin" | awk -v p="$pattern" '/Function :/ {on = ($0 ~ p)} on' >> "$out/torch.sass"
done
echo "$out/torch.sass: $(grep -c 'Function :' "$out/torch.sass") functions"
