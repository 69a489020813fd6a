#!/bin/sh
# run_tests.sh MODE - run the test binaries once per ISA path and add up the
# runners' closing "N passed, N failed" lines into one final line.
#   native    scalar, sse, avx2, avx512, avx512_bf16 (a path the CPU lacks is skipped),
#             and the GNU C build's determinism suite on avx2, avx512, avx512_bf16
#   emulated  avx512, avx512_bf16 and neon through SIMDe (build/nbwd_tests_emu)
#   neon      the AArch64 build under qemu-aarch64 (cortex-a53 and max, --quick;
#             neon_bf16 under max, which has BF16, and skipped on cortex-a53)
#   quick     native paths with --quick
#   packaging the examples (make examples: the README's example block is a
#             run of its own) and the CMake and pkg-config routes (make
#             check-packaging)
#   mpi       examples/sync_batch_norm.c under mpirun -np 2 and 3 (make
#             test-mpi: one check per run; skipped in one line without Open MPI)
#   all       the compile-cost gate (tools/compile_cost.sh --gate: peak compiler
#             memory, .text and the largest function against the budget; no
#             timing) and check-isa beside compile-check (its core matrix);
#             then native and emulated, with neon (if built), CMake,
#             pkg-config and mpi beside them on a second core; the examples
set -u
B=${BUILD:-build}
LOG=$B/test-logs
mkdir -p "$LOG"
PASS=0 FAIL=0 RUNS=0 BROKEN=0
rm -f "$LOG/failed-runs"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}

run() { # label command...
    label=$1; shift
    log="$LOG/$(echo "$label" | tr ' /=' '___').log"
    start=$(date +%s)
    "$@" > "$log" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    last=$(grep -E '^([A-Za-z]+: )?[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    if [ -z "$last" ]; then
        if [ $rc -eq 0 ] && grep -qi 'skip' "$log" && [ "${MUST_RUN:-0}" != 1 ]; then
            echo "--- $label: skipped ($(grep -i -m1 skip "$log"))"
            return
        fi
        echo "--- $label: FAILED to run (exit $rc, no result line; log $log)"
        echo "$label: no result line (exit $rc)" >> "$LOG/failed-runs"
        tail -n 20 "$log"
        BROKEN=$((BROKEN + 1)); FAIL=$((FAIL + 1))
        return
    fi
    if [ "$last" = "0 passed, 0 failed" ] && [ $rc -eq 0 ] && grep -q 'skipped' "$log"; then
        if [ "${MUST_RUN:-0}" = 1 ]; then # the path exists here for sure: a skip is a detection bug
            echo "--- $label: FAILED: skipped, but this CPU has the path ($(grep -m1 'skipped' "$log"))"
            echo "$label: skipped, but this CPU has the path" >> "$LOG/failed-runs"
            FAIL=$((FAIL + 1)); return
        fi
        echo "--- $label: skipped ($(grep -m1 'skipped' "$log"))"
        return
    fi
    p=$(echo "$last" | sed -E 's/^([A-Za-z]+: )?([0-9]+) passed, ([0-9]+) failed.*/\2/')
    f=$(echo "$last" | sed -E 's/^([A-Za-z]+: )?([0-9]+) passed, ([0-9]+) failed.*/\3/')
    PASS=$((PASS + p)); FAIL=$((FAIL + f)); RUNS=$((RUNS + 1))
    if [ "$f" -ne 0 ] || [ $rc -ne 0 ]; then
        echo "--- $label: $p passed, $f failed, exit $rc (${secs}s; log $log)"
        grep -E 'FAIL|OVER BUDGET' "$log" | head -n 30
        { echo "$label: $f failed, exit $rc"; grep -E 'FAIL|OVER BUDGET' "$log" | head -n 3; } >> "$LOG/failed-runs"
        [ "$f" -eq 0 ] && FAIL=$((FAIL + 1))
    else
        echo "--- $label: $p passed (${secs}s)"
    fi
}

# A run that must report its path as skipped (the CPU lacks it): a result
# with checks, a failure or no skip line is a failure.
must_skip() { # label command...
    label=$1; shift
    log="$LOG/$(echo "$label" | tr ' /=' '___').log"
    "$@" > "$log" 2>&1
    rc=$?
    last=$(grep -E '^([A-Za-z]+: )?[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    RUNS=$((RUNS + 1))
    if [ $rc -eq 0 ] && [ "$last" = "0 passed, 0 failed" ] && grep -q 'skipped' "$log"; then
        echo "--- $label: skipped, as it must ($(grep -m1 'skipped' "$log"))"
        PASS=$((PASS + 1))
    else
        echo "--- $label: FAILED: must skip, but it ran (${last:-no result line}, exit $rc; log $log)"
        tail -n 5 "$log"
        echo "$label: must skip, but it ran" >> "$LOG/failed-runs"
        FAIL=$((FAIL + 1))
    fi
}

# NORM_BWD_ISA: a runnable path becomes the automatic choice; one that cannot
# run here (neon on x86) leaves no automatic path, so
# automatic calls must fail with NBWD_ERR_UNSUPPORTED instead of running.
# The runner's banner shows the choice; the detect suite, which reads
# NORM_BWD_ISA itself, asserts it (active == sse, resp. no active path) and
# its checks are added in.
env_isa() {
    p=0 f=0
    if NORM_BWD_ISA=sse "$B/nbwd_tests" --isa auto --suite bounds 2>&1 | grep -q 'auto resolves to sse'; then
        p=$((p + 1)); else f=$((f + 1)); echo "FAIL: NORM_BWD_ISA=sse does not make auto resolve to sse"; fi
    other=neon; case "$(uname -m)" in aarch64|arm64) other=avx2 ;; esac
    if NORM_BWD_ISA=$other "$B/nbwd_tests" --isa scalar --suite reference 2>&1 | grep -q 'auto resolves to auto'; then
        p=$((p + 1)); else f=$((f + 1)); echo "FAIL: NORM_BWD_ISA=$other (not runnable) still resolves"; fi
    for want in "sse:active sse" "$other:active auto"; do
        val=${want%%:*}
        out=$(NORM_BWD_ISA=$val "$B/nbwd_tests" --isa scalar --suite detect 2>&1); rc=$?
        echo "$out" | grep -E 'FAIL|^ +/|detect: NORM_BWD_ISA'
        last=$(echo "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n 1)
        if [ -z "$last" ]; then
            f=$((f + 1)); echo "FAIL: NORM_BWD_ISA=$val: the detect suite printed no result (exit $rc)"; continue
        fi
        p=$((p + ${last%% *})); f=$((f + $(echo "$last" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')))
        if [ $rc -ne 0 ] || ! echo "$out" | grep -q "detect: NORM_BWD_ISA = $val, ${want#*:} "; then
            f=$((f + 1)); echo "FAIL: NORM_BWD_ISA=$val: the detect suite failed (exit $rc) or did not report ${want#*:}"; fi
    done
    echo "$p passed, $f failed"
    [ $f -eq 0 ]
}

native() {
    for isa in scalar sse avx2 avx512 avx512_bf16; do run "native $isa" "$B/nbwd_tests" --isa $isa "$@"; done
    run "native auto" "$B/nbwd_tests" --isa auto --quick
    # the GNU C build: determinism (and strides never changing bits) on the
    # paths where an FMA could be contracted
    for isa in avx2 avx512 avx512_bf16; do
        run "gnu11 $isa determinism, layouts" "$B/nbwd_tests_gnu" --isa $isa --suite determinism --suite layouts
    done
    # (built with NORM_BWD_NO_SSE: avx2's partial vectors through the buffer)
    run "gnu11 NO_SSE avx2 bounds" "$B/nbwd_tests_gnu" --isa avx2 --suite bounds
    run "NORM_BWD_ISA override" env_isa
    # variables the library reads once per process: the diagnostics suite
    # checks what each does (a path in upper case, one that cannot run here,
    # no such path; the stderr lines of NORM_BWD_VERBOSE)
    for e in NORM_BWD_ISA=AVX2 NORM_BWD_ISA=NeOn NORM_BWD_ISA=avx3 NORM_BWD_VERBOSE=1 NORM_BWD_VERBOSE=2; do
        run "diagnostics $e" env "$e" "$B/nbwd_tests" --isa scalar --suite diagnostics
    done
}
emulated() { # avx2 runs natively here; the emulated layers are those this CPU lacks
    for isa in avx512 avx512_bf16 neon; do run "emulated $isa" "$B/nbwd_tests_emu" --isa $isa "$@"; done
}
neon() { # [--split: leave neon_scalar to the caller] [test options...]
    split=0; [ "${1:-}" = --split ] && { split=1; shift; }
    if [ ! -x "$B/nbwd_tests_a64" ] || ! command -v qemu-aarch64 >/dev/null 2>&1; then
        echo "--- aarch64: skipped (no cross compiler or qemu-aarch64)"; return
    fi
    export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu
    # --quick: under qemu the full matrix takes minutes per run; it runs in
    # full on the emulated neon layer above.
    QEMU_CPU=cortex-a53 run "aarch64 cortex-a53 neon" qemu-aarch64 "$B/nbwd_tests_a64" --isa neon --quick "$@"
    QEMU_CPU=max run "aarch64 max neon openmp" qemu-aarch64 "$B/nbwd_tests_a64_omp" --isa neon --quick "$@"
    QEMU_CPU=max MUST_RUN=1 run "aarch64 max neon_bf16" qemu-aarch64 "$B/nbwd_tests_a64" --isa neon_bf16 --quick "$@"
    MUST_RUN=0
    QEMU_CPU=cortex-a53 must_skip "aarch64 cortex-a53 neon_bf16 (must skip)" qemu-aarch64 "$B/nbwd_tests_a64" --isa neon_bf16 --quick
    QEMU_CPU=max run "aarch64 max sse-via-simde" qemu-aarch64 "$B/nbwd_tests_a64" --isa sse --quick
    [ $split = 1 ] || neon_scalar
}
# (make test runs this one after the native and emulated runs, on their
# core, so that both lanes finish at about the same time)
neon_scalar() {
    [ -x "$B/nbwd_tests_a64_omp" ] && command -v qemu-aarch64 >/dev/null 2>&1 || return 0
    QEMU_LD_PREFIX=/usr/aarch64-linux-gnu QEMU_CPU=cortex-a53 \
        run "aarch64 cortex-a53 scalar openmp" qemu-aarch64 "$B/nbwd_tests_a64_omp" --isa scalar --quick
}

# --- examples/, CMake and pkg-config (tools/check_examples.sh, tools/check_packaging.sh)
examples() {
    run "examples" tools/check_examples.sh
    run "README example block = examples/quickstart.c" tools/check_examples.sh readme
}
cmake_pkgconfig() {
    run "packaging: CMake and pkg-config" tools/check_packaging.sh
}
packaging() {
    examples
    cmake_pkgconfig
}
# --- the batch split over processes, with MPI (tools/check_mpi.sh)
mpi() {
    run "mpi: examples/sync_batch_norm.c, mpirun -np 2 and 3" tools/check_mpi.sh
}

# check-isa reads the gate's gcc -O2 object where CC is that same gcc (the
# same file and flags: one build of the implementation fewer)
gate_and_isa() {
    run "compile-cost gate" tools/compile_cost.sh --gate
    obj=$B/compile-cost/impl_gcc_O2.o
    if [ -s "$obj" ] && ! ${CC:-cc} -dM -E -x c /dev/null 2>/dev/null | grep -q __clang__ &&
        [ "$(${CC:-cc} -dumpfullversion 2>/dev/null)" = "$(gcc -dumpfullversion 2>/dev/null)" ] &&
        [ "$(${CC:-cc} -dumpmachine 2>/dev/null)" = "$(gcc -dumpmachine 2>/dev/null)" ]; then
        ISA_OBJ=$obj run "check-isa" tools/check_isa.sh
    else
        run "check-isa" tools/check_isa.sh
    fi
}
aarch64_lane() {
    neon --split
    cmake_pkgconfig
    mpi
}
# A lane: a function run in the background, its lines kept and its counts
# added in by lane_collect (a subshell's variables do not come back).
lane_start() { # name function
    rm -f "$LOG/lane-$1.counts"
    ( PASS=0 FAIL=0 RUNS=0 BROKEN=0
      $2 > "$LOG/lane-$1.lines" 2>&1
      echo "$PASS $FAIL $RUNS $BROKEN" > "$LOG/lane-$1.counts" ) &
    eval "lane_pid_$1=\$!"
}
lane_collect() { # name
    eval "wait \"\$lane_pid_$1\""
    cat "$LOG/lane-$1.lines"
    if read -r np nf nr nb < "$LOG/lane-$1.counts"; then
        PASS=$((PASS + np)); FAIL=$((FAIL + nf)); RUNS=$((RUNS + nr)); BROKEN=$((BROKEN + nb))
    else
        echo "--- lane $1: FAILED: it left no counts"; FAIL=$((FAIL + 1)); BROKEN=$((BROKEN + 1))
    fi
}

case "${1:-all}" in
    native) native ;;
    quick) native --quick ;;
    emulated) emulated ;;
    neon) neon ;;
    packaging) packaging ;;
    mpi) mpi ;;
    all)
        if [ "$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)" -ge 2 ]; then
            # Two lanes, one per core. The gate and check-isa build one file
            # at a time, so they go beside the compile matrix (two builds at
            # a time); the AArch64 runs (qemu: one busy thread each, minutes
            # in all) and then the CMake and MPI checks beside the native
            # and emulated runs. Nothing here is timed.
            lane_start pre gate_and_isa
            MATRIX=core run "compile-check (core)" tools/compile_check.sh
            lane_collect pre
            lane_start aarch64 aarch64_lane
            native
            emulated
            neon_scalar
            lane_collect aarch64
            examples
        else
            gate_and_isa
            MATRIX=core run "compile-check (core)" tools/compile_check.sh
            native
            emulated
            neon
            packaging
            mpi
        fi
        ;;
    *) echo "usage: $0 native|quick|emulated|neon|packaging|mpi|all"; exit 2 ;;
esac
echo "$RUNS test runs, $BROKEN that printed no result"
# The failures again, right above the last line: a CI log that keeps only its
# tail still says which runs failed and how.
if [ -s "$LOG/failed-runs" ]; then echo "failed runs:"; sed 's/^/  /' "$LOG/failed-runs"; fi
echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
