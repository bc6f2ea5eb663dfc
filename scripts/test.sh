#!/usr/bin/env bash
# Every test: installs with apt-get what the tests need beyond Rust and Python 3, only what is
# missing, then runs `cargo test` with this script's arguments (`scripts/test.sh --test lang del::`).
# - tests/front_ends/browser.rs drives JupyterLab in headless chromium (Playwright, installed by
#   tests/browser/setup.sh), and tests/front_ends/snapshot_viewer.rs opens snapshots in PyTorch's
#   memory viewer (puppeteer-core, tests/memory_viz/setup.sh): both need chromium, node and npm,
#   unless TORCHLET_SKIP_BROWSER=1 skips them.
# - tests/gpu/contig_walk.rs builds a host harness with a C++ compiler (`c++`, or `CXX`).
# - The Jupyter and browser tests make their own venvs (tests/jupyter/setup.sh, on first use),
#   which Debian's python3 can only do with python3-venv.
# - Tests that need a real GPU are reported as ignored unless built with `--features gpu-tests`;
#   TORCHLET_TEST_DEVICE=cuda then points them at the real GPU.
set -euo pipefail
cd "$(dirname "$0")/.."

# The Debian packages of the tools that are missing. Only those: where Node.js came from another
# source (NodeSource's nodejs bundles npm), asking apt for Debian's npm as well conflicts with it
# and apt refuses the whole install.
missing_packages() {
    if [ "${TORCHLET_SKIP_BROWSER:-}" != 1 ]; then
        command -v chromium >/dev/null || echo chromium
        command -v node >/dev/null || echo nodejs
        command -v npm >/dev/null || echo npm
    fi
    local cxx="${CXX:-c++}"
    command -v "${cxx%% *}" >/dev/null || echo g++
    "${PYTHON:-python3}" -c 'import ensurepip, venv' 2>/dev/null || echo python3-venv
}

# Stops with why the packages `$2…` cannot be installed (`$1`) and how to get them.
cannot_install() {
    local why="$1"
    shift
    {
        echo "scripts/test.sh: the tests need these Debian packages, which are missing: $*"
        echo "  They cannot be installed here: $why."
        echo "  Install them (on Debian or Ubuntu: sudo apt-get install $*), then run scripts/test.sh again;"
        if [[ " $* " =~ \ (chromium|nodejs|npm)\  ]]; then
            echo "  TORCHLET_SKIP_BROWSER=1 leaves out the browser tests and with them chromium, nodejs and npm."
        fi
    } >&2
    exit 1
}

# Installs `$@` with apt-get (through sudo when not root), waiting for another apt run's lock
# rather than failing on it.
install_packages() {
    local apt=(env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600)
    if ! command -v apt-get >/dev/null; then
        cannot_install "there is no apt-get on this machine" "$@"
    fi
    if [ "$(id -u)" -ne 0 ]; then
        if ! command -v sudo >/dev/null; then
            cannot_install "this user is not root and there is no sudo" "$@"
        fi
        if [ ! -t 0 ] && ! sudo -n true 2>/dev/null; then
            cannot_install "this user is not root and sudo asks for a password, with no terminal to type it" "$@"
        fi
        apt=(sudo "${apt[@]}")
    fi
    echo "scripts/test.sh: installing $* with apt-get" >&2
    if ! "${apt[@]}" update -qq || ! "${apt[@]}" install -y -qq "$@" >/dev/null; then
        cannot_install "apt-get failed (its messages are above)" "$@"
    fi
}

mapfile -t missing < <(missing_packages)
if [ ${#missing[@]} -gt 0 ]; then
    install_packages "${missing[@]}"
    mapfile -t still < <(missing_packages)
    if [ ${#still[@]} -gt 0 ]; then
        cannot_install "apt-get installed them, yet they are still not found on PATH" "${still[@]}"
    fi
fi

exec cargo test "$@"
