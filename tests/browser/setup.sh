#!/usr/bin/env bash
# Prepares the browser test: .venv-browser (JupyterLab, pinned) at the repository root and
# tests/browser/node_modules (playwright-core from package-lock.json). Idempotent; no browser download.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="$root/.venv-browser"
python="${PYTHON:-python3}"
if ! "$venv/bin/python" -c "import jupyterlab; assert jupyterlab.__version__ == '4.6.6'" 2>/dev/null; then
    [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "jupyterlab==4.6.6"
fi
if [ ! -f "$here/node_modules/playwright-core/package.json" ]; then
    # playwright-core never downloads a browser on install; the test points it at /usr/bin/chromium.
    (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi
echo "browser test ready: $venv, $here/node_modules"
