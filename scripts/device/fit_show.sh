#!/bin/bash
# PyTorch's side of `torchlet fit scripts/11_will_it_fit.rhai layers=24 width=1024 heads=16
# --sweep batch=…` (GPT-2 medium, AdamW, batch x 1024 tokens) on the H200: the largest batch that
# fits the whole GPU, and an RTX 4090 emulated with set_per_process_memory_fraction at the memory
# fit says its allocator gets (24705024655 B), each probe a fresh process; and the batches fit
# predicted, when its answers (whole_gpu_batch, rtx4090_batch) lie beside this file.
D=$(dirname "$0")
O="$OUT/fit"
mkdir -p "$O"
{
  nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'
} > "$O/env.txt" 2>&1
python3 "$D/fit_show_search.py" "$O/torch.json" 24705024655 > "$O/probes.jsonl" 2> "$O/stderr.txt"
tail -c 4000 "$O/stderr.txt" > "$O/stderr_tail.txt"; rm -f "$O/stderr.txt"
cat "$O/probes.jsonl"
