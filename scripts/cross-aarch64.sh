#!/usr/bin/env bash
# hierstat's per-CPU mode on aarch64, cross-compiled (issue 36): the
# library is built for aarch64-unknown-linux-gnu (an rlib needs no cross
# linker), and its objects must hold the restartable sequences' sections
# (`__rseq_cs`, `__rseq_failure`), so that the aarch64 assembly was
# assembled, not compiled out. Nothing runs: no aarch64 machine here.
set -euo pipefail
cd "$(dirname "$0")/.."
target=aarch64-unknown-linux-gnu
if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
    if ! rustup target add "$target" >/dev/null 2>&1; then
        echo "== skipped: the $target standard library is not installed and rustup could not fetch it"
        exit 0
    fi
fi
dir=target/cross-$target
cargo build -q -p hierstat --lib --target "$target" --target-dir "$dir"
rlib=$(ls -t "$dir/$target"/debug/deps/libhierstat-*.rlib | head -1)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
(cd "$scratch" && ar x "$OLDPWD/$rlib")
sections=0
for o in "$scratch"/*.o; do
    n=$(readelf -S "$o" | grep -c '__rseq_' || true)
    sections=$((sections + n))
done
if [ "$sections" -eq 0 ]; then
    echo "hierstat for $target: no __rseq_* section in $rlib (the per-CPU sections were not assembled)" >&2
    exit 1
fi
echo "hierstat for $target: built; $sections __rseq_* section headers in its objects"
