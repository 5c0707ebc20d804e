# Sourced by .ci/run and the scripts it calls: `step NAME CMD...` prints
# `== NAME`, runs CMD, then `== NAME: N s`, and `steps_summary` prints every
# step's time (nested steps of a sourced script are listed too).
STEP_LOG="${STEP_LOG:-$(mktemp)}"
export STEP_LOG
step() {
    local name=$1 t0=$SECONDS
    shift
    echo "== $name"
    "$@"
    local took=$((SECONDS - t0))
    echo "== $name: ${took} s"
    printf '%6d s  %s\n' "$took" "$name" >>"$STEP_LOG"
}
steps_summary() {
    echo "== time per step"
    cat "$STEP_LOG"
}
