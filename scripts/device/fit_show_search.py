"""Find, in PyTorch on this GPU, the largest batch of fit_show.py's GPT-2 medium step that fits:
on the whole GPU, and limited to LIMIT bytes with set_per_process_memory_fraction (an RTX 4090's
usable memory as `torchlet fit` counts it). Each probe is a fresh process. The batches `fit`
predicted (files whole_gpu_batch, rtx4090_batch beside this one, when present) and the next ones are
run too. Writes one JSON document of every probe.

    python3 fit_show_search.py OUT.json RTX4090_USABLE_BYTES
"""
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STARTED = time.time()
BUDGET_S = 300


def probe(batch, limit, seen):
    key = (batch, limit)
    if key in seen:
        return seen[key]
    if time.time() - STARTED > BUDGET_S:
        return None
    try:
        p = subprocess.run([sys.executable, os.path.join(HERE, "fit_show.py"), str(batch), str(limit)],
                           capture_output=True, text=True, timeout=40)
        line = [l for l in p.stdout.splitlines() if l.startswith("{")]
        r = json.loads(line[-1]) if line else {"batch": batch, "limit": limit, "error": p.stderr[-800:]}
    except subprocess.TimeoutExpired:
        r = {"batch": batch, "limit": limit, "error": "timed out"}
    r["wall_s"] = round(time.time() - STARTED, 1)
    seen[key] = r
    print(json.dumps(r), flush=True)
    return r


def fits(r):
    return r is not None and r.get("oom") is False


def largest(limit, lo, hi, seen):
    """Bisection: lo fits, hi does not (checked first)."""
    if not fits(probe(lo, limit, seen)):
        return None
    if fits(probe(hi, limit, seen)):
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        r = probe(mid, limit, seen)
        if r is None:
            return None
        if fits(r):
            lo = mid
        else:
            hi = mid
    return lo


def predicted(name):
    path = os.path.join(HERE, name)
    return int(open(path).read().strip()) if os.path.exists(path) else None


def main():
    out, rtx_limit = sys.argv[1], int(sys.argv[2])
    seen = {}
    doc = {"rtx4090_limit": rtx_limit}
    for name, limit in (("whole_gpu_batch", 0), ("rtx4090_batch", rtx_limit)):
        b = predicted(name)
        if b:
            doc[name + "_fit"] = b
            probe(b, limit, seen)
            probe(b + 1, limit, seen)
    doc["whole_gpu_largest_torch"] = largest(0, 1, 64, seen)
    doc["rtx4090_largest_torch"] = largest(rtx_limit, 1, 16, seen)
    doc["probes"] = list(seen.values())
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
