#!/usr/bin/env bash
# The engine's unsafe code and its owner path under the nightly checkers:
#
# * Miri runs hierstat's unit tests (the row pointers and exposed chunk
#   addresses of `rows.rs`, the row tables of `table.rs` and the handle's
#   cached pointers of `group.rs`, with the owner path taken: under
#   Miri owners keep their plain path and fence, as under loom) and a bounded
#   set of integration tests that drive those pointers through the public
#   API, checking every access for undefined behaviour and data races;
# * ThreadSanitizer runs the owner-path real-thread tests (owners and
#   sharers on one tree with racing flushes, seat hand-overs, thread churn
#   reusing seats), and the per-CPU mode's tests on the per-thread mode a
#   per-CPU tree falls back to under TSan, with the
#   standard library rebuilt instrumented.
#
# Neither sees the per-CPU mode's restartable sequences: Miri builds
# (cfg(miri)) and TSan processes choose the per-thread fallback
# (`HierStats::mode()` says so); loom models the sections instead, and
# tests/percpu.rs checks the real ones on real threads.
#
# Both need the nightly toolchain with the `miri` and `rust-src` components;
# the script adds the components if the toolchain lacks them, and says so
# (and exits 0) only where the toolchain cannot be had at all.
#
#     scripts/sanitizers.sh            # CI's set: Miri on the unit tests, TSan
#     ONLY=miri scripts/sanitizers.sh  # or ONLY=tsan
#     FULL=1 scripts/sanitizers.sh     # Miri also on 26 integration tests
#
# CI's set takes about 8 minutes on a 2-core host (most of it Miri's unit
# tests and the instrumented standard library's build); FULL=1 adds about 14
# minutes of Miri (the owner:: tests race a flusher against three updaters
# for thousands of updates each).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/step.sh
. scripts/step.sh
only="${ONLY:-}"

if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    echo "== installing the nightly toolchain (Miri and ThreadSanitizer need it)"
    rustup toolchain install nightly --profile minimal || {
        echo "== SKIP sanitizers: the nightly toolchain cannot be installed here"
        exit 0
    }
fi
rustup component add --toolchain nightly miri rust-src >/dev/null

host="$(rustc -vV | sed -n 's/^host: //p')"

if [ -z "$only" ] || [ "$only" = miri ]; then
    # -Zmiri-disable-isolation: the tests read the monotonic clock.
    # -Zmiri-permissive-provenance: a chunk's head holds its exposed address
    # by design (rows.rs), which Miri otherwise warns about at every use.
    export MIRIFLAGS="${MIRIFLAGS:--Zmiri-disable-isolation -Zmiri-permissive-provenance}"
    step "Miri: hierstat unit tests" \
        env CARGO_TARGET_DIR=target/miri cargo +nightly miri test -p hierstat --lib
    if [ -n "${FULL:-}" ]; then
        step "Miri: integration tests through the handles' pointers" \
            env CARGO_TARGET_DIR=target/miri cargo +nightly miri test -p hierstat --test it -- \
            basics:: owner:: selftests::three_level contracts::foreign \
            bounds::a_read_between bounds::a_leaf_reset bounds::a_counter_that
    else
        echo "== Miri: integration tests skipped (FULL=1 runs them, about 14 minutes)"
    fi
fi

tsan_tests() {
    RUSTFLAGS="-Zsanitizer=thread --cfg hierstat_tsan" RUSTDOCFLAGS="-Zsanitizer=thread" \
        TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
        CARGO_TARGET_DIR=target/tsan \
        cargo +nightly test -Zbuild-std --target "$host" -p hierstat --test it -- \
        owner:: stress::bounds_hold_right_after
    RUSTFLAGS="-Zsanitizer=thread --cfg hierstat_tsan" RUSTDOCFLAGS="-Zsanitizer=thread" \
        TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
        CARGO_TARGET_DIR=target/tsan \
        cargo +nightly test -Zbuild-std --target "$host" -p hierstat --test churn
    # The per-CPU mode's real-thread tests: a ThreadSanitizer process gets
    # no per-CPU mode (TSan cannot see the sections' stores: the engine
    # falls back under --cfg hierstat_tsan, or where it finds the runtime's
    # __tsan_init), so they run on the
    # per-thread mode a per-CPU tree falls back to, migrations and signals
    # included, and print the mode they got.
    HIERSTAT_PERCPU_UPDATES=20000 HIERSTAT_PERCPU_SEEDS=2 \
        RUSTFLAGS="-Zsanitizer=thread --cfg hierstat_tsan" RUSTDOCFLAGS="-Zsanitizer=thread" \
        TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
        CARGO_TARGET_DIR=target/tsan \
        cargo +nightly test -Zbuild-std --target "$host" -p hierstat --test percpu -- --nocapture
}
if [ -z "$only" ] || [ "$only" = tsan ]; then
    step "ThreadSanitizer: hierstat owner-path tests on real threads" tsan_tests
fi
echo "== sanitizers: clean"
