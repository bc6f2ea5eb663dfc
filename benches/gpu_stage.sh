#!/usr/bin/env bash
# Builds benches/gpu.rs here (the GPU machine has no Rust) and puts the stripped binary at
# .gpu/bench-gpu, beside what the release staging put in .gpu/, for benches/gpu_measure.sh:
#   bash benches/gpu_stage.sh
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
mkdir -p .gpu
grep -qxF '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
exe=$(cargo bench --bench gpu --no-run --message-format=json 2>/dev/null | python3 -c 'import json, sys
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "gpu":
        print(m["executable"])')
cp "$exe" .gpu/bench-gpu
strip .gpu/bench-gpu
ls -l .gpu/bench-gpu
