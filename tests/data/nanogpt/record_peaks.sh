#!/bin/bash
# PyTorch's side of nanoGPT's peaks (run on the GPU machine): train3.py at a few batches, each a
# fresh process. Prints one JSON line each, with the line train3.py printed last.
cd "$(dirname "$0")"
for precision in float32 bf16; do
  for batch in 1 8 32; do
    out=$(python3 train3.py "$batch" "$precision" 2>&1 | tail -1)
    echo "{\"batch\": $batch, \"precision\": \"$precision\", \"torch\": \"$out\"}"
  done
done
