#!/usr/bin/env bash
# The whole test suite: unit, integration, property and end-to-end tests
# (including the HTML report opened in headless Chromium), then the loom
# model checks of the engine's update/flush races.
set -euo pipefail
cd "$(dirname "$0")/.."

# The HTML report test drives a real browser: Debian's chromium.
if ! command -v chromium >/dev/null 2>&1; then
    echo "== installing chromium (needed by the HTML report test)"
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi

echo "== cargo test --workspace"
cargo test --workspace

echo "== loom model checks (hierstat)"
LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}" \
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
    cargo test -p hierstat --test loom --release
