#!/usr/bin/env bash
# Nsight Compute on torchlet's and PyTorch's kernels for the sweep's shortfalls, on the GPU machine:
#   bash .gpu/run.sh bash benches/ncu/profile.sh TORCHLET_BINARY OUT_DIR [NAME]
# Profiles NAME.rhai and its twin NAME_torch.py (NAME defaults to `shortfalls`) and writes
# OUT_DIR/{torchlet,torch}.ncu-rep and their details pages as CSV (see benches/RESULTS.md).
# NCU_CACHE=none keeps the L2 warm between replays, as a bench's loop does (default: flushed).
set -eu
bin=$1 out=$2 name=${3:-shortfalls}
here=$(dirname "$0")
sections="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats
  --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis
  --cache-control ${NCU_CACHE:-all}"
ncu $sections -k 'regex:cast_s|softmax|reduce|gelu' -o "$out/torchlet" -f "$bin" run "$here/$name.rhai"
ncu $sections -k 'regex:elementwise|softmax|reduce|gelu' -o "$out/torch" -f python3 "$here/${name}_torch.py"
for r in torchlet torch; do ncu -i "$out/$r.ncu-rep" --page details --csv > "$out/$r.csv"; done
