#!/usr/bin/env bash
# Installs puppeteer-core (pinned by package-lock.json) into tests/memory_viz/node_modules for the
# headless viewer check of tests/front_ends/snapshot_viewer.rs. Idempotent: a second run with the same lock is a no-op.
set -euo pipefail
cd "$(dirname "$0")"
if [ -f node_modules/.package-lock.json ] && cmp -s package-lock.json node_modules/.lock-installed; then
    exit 0
fi
npm ci --no-audit --no-fund --loglevel=error
cp package-lock.json node_modules/.lock-installed
