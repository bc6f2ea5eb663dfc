#!/bin/bash
# PyTorch's side of nanoGPT's peaks (run on the GPU machine): train3.py at a few batches, with
# nanoGPT's SDPA attention and with its manual one, each a fresh process. Prints one JSON line each.
cd "$(dirname "$0")"
for attention in flash manual; do
  for batch in 1 8 32; do
    out=$(python3 train3.py "$batch" "$attention" 2>&1 | tail -1)
    echo "{\"batch\": $batch, \"attention\": \"$attention\", \"torch\": \"$out\"}"
  done
done
