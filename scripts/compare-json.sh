#!/usr/bin/env bash
# Behaviour check for refactorings: runs every built-in simulated-mode
# scenario with `mmlab run NAME --seed S --runs 2 --json` and compares the
# JSON (and the text report, which carries the seed claims) with a recorded
# baseline. Simulated mode is deterministic (virtual time, seeded RNG, the
# shipped default costs), so the outputs must match byte for byte; the
# real-thread scenarios measure wall-clock time and are skipped.
#
#   scripts/compare-json.sh record DIR [MMLAB]   write the baseline into DIR
#   scripts/compare-json.sh check  DIR [MMLAB]   re-run and diff against DIR
#
# MMLAB defaults to target/release/mmlab (build it with `cargo build --release`).
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:?usage: compare-json.sh record|check DIR [MMLAB]}"
dir="${2:?usage: compare-json.sh record|check DIR [MMLAB]}"
bin="$(realpath "${3:-target/release/mmlab}")"
seeds="${SEEDS:-1 7}"

# Simulated-mode scenarios, from `mmlab list` (second column starts with "sim,").
scenarios=$("$bin" list | awk '$2 == "sim," { print $1 }')

mkdir -p "$dir"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail=0
for sc in $scenarios; do
    for s in $seeds; do
        base="$sc.s$s"
        out="$work/$base"
        (cd "$work" && "$bin" run "$sc" --seed "$s" --runs 2 --json "$out.json" --no-store >"$out.txt")
        case "$mode" in
        record)
            cp "$out.json" "$out.txt" "$dir/"
            echo "recorded $base"
            ;;
        check)
            if cmp -s "$out.json" "$dir/$base.json" && cmp -s "$out.txt" "$dir/$base.txt"; then
                echo "same     $base"
            else
                echo "DIFFERS  $base"
                diff <(python3 -m json.tool --sort-keys "$dir/$base.json") \
                     <(python3 -m json.tool --sort-keys "$out.json") | head -20 || true
                diff "$dir/$base.txt" "$out.txt" | head -20 || true
                fail=1
            fi
            ;;
        *) echo "unknown mode $mode" >&2; exit 2 ;;
        esac
    done
done
exit $fail
