#!/usr/bin/env bash
# Every GPU bench beside PyTorch in one device call, and issue 17's table from it:
#   here:   bash benches/gpu_stage.sh
#   device: bash .gpu/run.sh bash benches/gpu_measure.sh .gpu/bench-gpu "$OUT" [FILTER]
# FILTER is criterion's (a regex over GROUP/NAME); without one every group runs, the sweep and its
# PyTorch twin taking about three of the call's minutes. PyTorch's scripts run after the bench, in
# the same call, on the same GPU. Writes OUT/criterion (criterion's results), OUT/bench.log and
# OUT/*_torch.json, and prints each group's ratios and the table (benches/RESULTS.md keeps them).
set -euo pipefail
bench=$1 out=$2 filter=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export CRITERION_HOME=$out/criterion
"$bench" --bench ${filter:+"$filter"} > "$out/bench.log" 2>&1 || { tail -20 "$out/bench.log"; exit 1; }
# Without a GPU the bench says so and measures nothing.
[ -d "$out/criterion" ] || { cat "$out/bench.log"; exit 1; }
python3 "$here/ops_torch.py" "$out/ops_torch.json" > /dev/null
python3 "$here/model_ops_torch.py" "$out/model_ops_torch.json" > /dev/null
# The sweep's twin takes over a minute: only when the sweep ran.
[ -d "$out/criterion/gpu_sweep" ] && python3 "$here/sweep_torch.py" "$out/sweep_torch.json" > /dev/null
for pair in gpu:ops gpu_model_ops:model_ops gpu_sweep:sweep; do
  group=${pair%%:*} torch=$out/${pair#*:}_torch.json
  [ -d "$out/criterion/$group" ] && [ -f "$torch" ] || continue
  echo "== $group"
  python3 "$here/compare_torch.py" "$out/criterion" "$group" "$torch"
done
echo "== issue 17's table"
python3 "$here/gpu_table.py" "$out/criterion" "$out/ops_torch.json" "$out/model_ops_torch.json"
