#!/usr/bin/env bash
# Run the article's four methods, then the demos, on the GPU, or on a simulated one when there is none.
# Set TORCHLET_SIMULATE_CUDA=16GiB to force the simulated GPU.
set -euo pipefail
cd "$(dirname "$0")/.."

simulate=()
if [[ -z "${TORCHLET_SIMULATE_CUDA:-}" ]] && ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "no NVIDIA GPU found: running on a simulated 16 GiB GPU"
    simulate=(--simulate-cuda)
fi

cargo build --release --quiet
for script in scripts/[0-9]*.rhai; do
    echo "=== $script"
    if [[ "$script" == *11_will_it_fit* ]]; then
        # Shapes only: the largest batch of a GPT-2 small step that fits an 80 GiB and a 24 GiB GPU.
        cargo run --release --quiet -- fit "$script" --gpu 80GiB --sweep batch=1..256 || true
        cargo run --release --quiet -- fit "$script" --gpu 24GiB --sweep batch=1..64 || true
        continue
    fi
    if [[ "$script" == *08_two_gpus* && ${#simulate[@]} -gt 0 ]]; then
        # Two simulated devices; on real GPUs the script itself says when it needs two.
        cargo run --release --quiet -- --simulate-cuda=16GiB,8GiB run "$script"
    else
        cargo run --release --quiet -- "${simulate[@]}" run "$script"
    fi
done
