#!/usr/bin/env bash
# Creates .venv-jupyter at the repository root with the Python clients the kernel tests drive:
# jupyter_kernel_test (the peer suite), jupyter_client, nbclient and nbformat. Idempotent.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$root/.venv-jupyter"
python="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "jupyter_kernel_test==0.7.*" "jupyter_client>=8" "nbclient>=0.10" "nbformat>=5.10" \
    ${TORCHLET_JUPYTER_EXTRA:-}
"$venv/bin/python" -c "import jupyter_kernel_test, jupyter_client, nbclient, nbformat; print('jupyter venv ready:', '$venv')"
