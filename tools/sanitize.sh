#!/bin/sh
# sanitize.sh MODE - the hardening runs of norm_bwd (issue 6); each run's
# closing "N passed, N failed" line is added up into one final line.
#   sanitize   the main suite (tests/*.c) under ASan+UBSan with gcc and with
#              clang on the native paths (scalar, sse, avx2, avx512 and
#              avx512_bf16 where the CPU has them), with clang also on the
#              SIMDe-emulated avx512, avx512_bf16 and neon, the hardening
#              test under the same sanitizers, and
#              the hardening test's pthread part under ThreadSanitizer (clang,
#              no OpenMP: libgomp/libomp are not TSan-instrumented).
#              (the emulated avx512 layer in full). SANITIZE_FULL=1: the main
#              suite without --quick under clang everywhere.
#   valgrind   memcheck over --quick, scalar and avx2 paths, plus the
#              hardening test's nan/overflow/threads suites.
#   fuzz       each libFuzzer target for FUZZ_SECONDS over a copy of its seed
#              corpus in tests/fuzz/corpus/<target>/.
#   hardening  the hardening test, native and SIMDe-emulated (avx2, avx512,
#              avx512_bf16, neon), and (with aarch64-linux-gnu-gcc and
#              qemu-aarch64) cross-built for AArch64, nan and threads under
#              qemu: neon and neon_bf16 on QEMU_CPU=max, neon on cortex-a53;
#              HUGE=1 adds the 2^31 + 7 element LayerNorm.
# Environment: BUILD (build), CC (cc), FUZZ_SECONDS (60), HUGE, SANITIZE_FULL.
set -u
cd "$(dirname "$0")/.."
B=${BUILD:-build}
CC=${CC:-cc}
OUT=$B/hardening
LOG=$OUT/logs
mkdir -p "$OUT" "$LOG"
PASS=0 FAIL=0 RUNS=0
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
W="-Wall -Wextra -pedantic -Werror"
TEST_SRC_REST="tests/main.c tests/reference.c $(ls tests/test_*.c 2>/dev/null | sort | tr '\n' ' ')"
TEST_SRC="tests/impl.c $TEST_SRC_REST" # (impl.c: the one file with the implementation)
HARD=tests/hardening/test_hardening.c
# as the Makefile's test builds: a low streaming threshold so the
# non-temporal store path runs on test-sized tensors, and GroupNorm NXC's
# chunked order (and its chunks of samples) at test sizes
GN_CHUNK_DEFS="-DNBWD__GN_CHUNKED_BYTES=4096 -DNBWD__GN_RESIDENT_BYTES=8192"
TEST_DEFS="-DNORM_BWD_STREAM_BYTES=16384 $GN_CHUNK_DEFS"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
# clang's emulated build (this step's longest) and the suite's own files
# leave out UBSan's pointer-overflow check: it is about a third of their
# compile time (bench/NOTES.md). gcc's builds keep it over every native
# path's kernels, and so does clang's library of the suite and the fuzz
# targets (clang_impl).
san_of() { # COMPILER: the sanitizer flags of its builds
    if [ "$1" = clang ]; then echo "$SAN -fno-sanitize=pointer-overflow"; else echo "$SAN"; fi
}
# Debug information: line tables alone (clang -gline-tables-only, gcc -g1)
# give the reports the same file:line frames as -g, at two thirds of the
# compile time of the header's instrumented builds (bench/NOTES.md).
dbg_of() { # COMPILER
    if [ "$1" = clang ]; then echo -gline-tables-only; else echo -g1; fi
}
# A failed huge allocation is a status the tests expect, not a report.
export ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=1:detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# libomp keeps a few runtime allocations until exit: not ours.
printf 'leak:libomp.so\nleak:libgomp.so\n' > "$OUT/lsan.supp"
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$OUT/lsan.supp:print_suppressions=0}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}

need() { tools/need.sh "$@" || { echo "norm_bwd: $1 missing"; exit 1; }; }

build() { # label output command... (stops the whole run on a build failure)
    label=$1; out=$2; shift 2
    if ! "$@" -o "$out" > "$LOG/build_$label.log" 2>&1; then
        echo "--- build $label: FAILED"; cat "$LOG/build_$label.log" | head -n 40
        FAIL=$((FAIL + 1)); return 1
    fi
}

run() { # label command...
    label=$1; shift
    log="$LOG/$(echo "$label" | tr ' /=' '___').log"
    start=$(date +%s)
    "$@" > "$log" 2>&1
    rc=$?
    tally "$label" "$log" $rc $(( $(date +%s) - start ))
}
tally() { # label log exit-status seconds: adds the log's last result line in
    label=$1 log=$2 rc=$3 secs=$4
    last=$(grep -E '^([A-Za-z_]+: )?[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    if [ -z "$last" ]; then
        if [ $rc -eq 0 ] && grep -qi 'skipped' "$log"; then
            echo "--- $label: skipped ($(grep -i -m1 skipped "$log"))"; return
        fi
        echo "--- $label: FAILED to run (exit $rc, no result line; log $log)"
        grep -E 'ERROR|runtime error|SUMMARY|WARNING: ThreadSanitizer|FAIL' "$log" | head -n 20
        tail -n 5 "$log"
        FAIL=$((FAIL + 1)); return
    fi
    p=$(echo "$last" | sed -E 's/^([A-Za-z_]+: )?([0-9]+) passed, ([0-9]+) failed.*/\2/')
    f=$(echo "$last" | sed -E 's/^([A-Za-z_]+: )?([0-9]+) passed, ([0-9]+) failed.*/\3/')
    if [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ $rc -eq 0 ] && grep -qi 'skipped' "$log"; then
        echo "--- $label: skipped ($(grep -i -m1 skipped "$log"))"; return
    fi
    PASS=$((PASS + p)); FAIL=$((FAIL + f)); RUNS=$((RUNS + 1))
    if [ "$f" -ne 0 ] || [ $rc -ne 0 ]; then
        echo "--- $label: $p passed, $f failed, exit $rc (${secs}s; log $log)"
        grep -E 'FAIL|ERROR|runtime error|SUMMARY' "$log" | head -n 20
        [ "$f" -eq 0 ] && FAIL=$((FAIL + 1))
    else
        echo "--- $label: $p passed (${secs}s)"
    fi
}

# The machine has two cores and most steps here are one compiler or one
# test process: `beside NAME command...` runs the command (a function of
# builds and runs) in a subshell on the other core, its lines into
# $LOG/NAME.lines and its counts into $LOG/NAME.counts; `joined NAME`
# waits for it, prints its lines and adds its counts in.
beside() {
    name=$1; shift
    rm -f "$LOG/$name.counts"
    ( PASS=0 FAIL=0 RUNS=0
      "$@" > "$LOG/$name.lines" 2>&1
      echo "$PASS $FAIL $RUNS" > "$LOG/$name.counts" ) &
    eval "pid_$name=$!"
}
joined() {
    name=$1
    eval "wait \$pid_$name"
    cat "$LOG/$name.lines"
    if read -r bp bf br < "$LOG/$name.counts"; then
        PASS=$((PASS + bp)); FAIL=$((FAIL + bf)); RUNS=$((RUNS + br))
    else
        echo "--- $name: FAILED: its subshell left no counts"; FAIL=$((FAIL + 1))
    fi
}

native_isas() { echo scalar sse avx2 avx512 avx512_bf16; }
# The gcc suite's runs (about a minute each) go to whichever chain is free
# first: a chain claims a path with mkdir, which only one of them can do,
# so the two chains end within about a minute of each other however long
# their builds took.
san_gcc_runs() {
    for isa in $(native_isas); do
        mkdir "$OUT/san-gcc/claim-$isa" 2>/dev/null &&
            run "asan+ubsan gcc tests $isa" "$OUT/san-gcc/nbwd_tests" --isa $isa
    done
}

sanitize() {
    need libsimde-dev 'test -f /usr/include/simde/x86/sse2.h'
    need clang 'command -v clang'
    need libclang-rt-14-dev 'ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.asan-x86_64.a'
    need libomp-dev 'ls /usr/lib/llvm-*/lib/libomp.so'
    # gcc: the whole suite on the native paths; clang: the native paths and
    # the SIMDe-emulated layers, --quick unless SANITIZE_FULL=1. (gcc 12
    # takes over a quarter of an hour to compile the emulated layers with
    # ASan at -O1, clang four minutes: the emulated layers run under clang.)
    quick_clang=--quick
    [ "${SANITIZE_FULL:-0}" = 1 ] && quick_clang=
    mkdir -p "$OUT/san-gcc" "$OUT/san-clang" "$OUT/san-tsan"
    # Four instrumented builds of the whole header (minutes each; the
    # hardening test links the suite's) and the TSan one, with their runs,
    # in two chains, one per core; the gcc suite's runs (san_gcc_runs) end
    # both, and wait in the second chain for their build in the first.
    rm -rf "$OUT/san-gcc/built" "$OUT"/san-gcc/claim-*
    beside san_emulated san_chain_emulated
    san_chain_main
    joined san_emulated
}
# clang's suite library is also the fuzz targets' library (the whole header
# under ASan is minutes of compiling, once instead of twice): built with
# libFuzzer's coverage instrumentation, which costs the suite's runs little
# (without libFuzzer linked in, the sanitizer runtime's stand-ins take its
# callbacks), and with UBSan's pointer-overflow check, which the fuzz
# targets' odd strides are there to reach. Either step builds it unless it
# is current (these flags, newer than the headers), and the other links it.
CLANG_IMPL_FLAGS="-std=c99 -O1 $(dbg_of clang) $W $SAN -fsanitize=fuzzer-no-link $TEST_DEFS -fopenmp -Itests -I."
clang_impl() { # $OUT/san-clang/impl.o, built unless current (sets no D: its callers' own)
    ci_o=$OUT/san-clang/impl.o; mkdir -p "$OUT/san-clang"
    if [ -f "$ci_o" ] && [ "$(cat "$ci_o.flags" 2>/dev/null)" = "$CLANG_IMPL_FLAGS" ] &&
       [ -z "$(find norm_bwd.h norm_bwd_simd.h tests/impl.c -newer "$ci_o")" ]; then
        return 0
    fi
    rm -f "$ci_o" "$ci_o.flags"
    build clang-asan-impl "$ci_o" clang $CLANG_IMPL_FLAGS -c tests/impl.c && echo "$CLANG_IMPL_FLAGS" > "$ci_o.flags"
}
san_suite() { # CC: the instrumented library (tests/impl.c: the suite's allocator hooks) and the suite on it
    D=$OUT/san-$1
    if [ $1 = clang ]; then
        clang_impl
    else
        build $1-asan-impl "$D/impl.o" $1 -std=c99 -O1 $(dbg_of $1) $W $(san_of $1) $TEST_DEFS -fopenmp -Itests -I. -c tests/impl.c
    fi &&
        build $1-asan-tests "$D/nbwd_tests" $1 -std=c99 -O1 $(dbg_of $1) $W $(san_of $1) $TEST_DEFS -fopenmp -Itests -I. \
            $TEST_SRC_REST "$D/impl.o" -lm
}
san_hardening() { # CC: the hardening test on the suite's library (-DTH_SEPARATE_IMPL)
    D=$OUT/san-$1
    build $1-asan-hardening "$D/test_hardening" $1 -std=c99 -O1 $(dbg_of $1) $W $(san_of $1) -fopenmp -DTH_SEPARATE_IMPL -I. $HARD \
        "$D/impl.o" -lm -lpthread &&
        run "asan+ubsan $1 hardening" "$D/test_hardening" --quick
}
san_chain_main() {
    if san_suite gcc; then echo ok; else echo failed; fi > "$OUT/san-gcc/built"
    if san_suite clang; then
        for isa in $(native_isas); do
            run "asan+ubsan clang tests $isa${quick_clang:+ quick}" "$OUT/san-clang/nbwd_tests" --isa $isa $quick_clang
        done
        san_hardening clang
    fi
    D=$OUT/san-tsan
    # -O0: its runs take a second at any level, and -O1 made the build ten
    # times longer (20 s against 2 here); -O0 keeps every access instrumented
    if build tsan-hardening "$D/test_hardening" clang -std=c99 -O0 -g $W -fsanitize=thread -I. $HARD -lm -lpthread
    then
        run "tsan clang hardening threads" "$D/test_hardening" --suite threads
        # the first-call race once more, with the choice capped through the environment
        run "tsan clang hardening threads (NORM_BWD_ISA=sse)" env NORM_BWD_ISA=sse "$D/test_hardening" --suite threads
    fi
    # (the gcc runs that the other chain has not claimed)
    [ "$(cat "$OUT/san-gcc/built")" = ok ] && san_gcc_runs
}
san_chain_emulated() {
    D=$OUT/san-clang
    # the layers this CPU lacks, through SIMDe (avx2 is native above); the
    # emulated avx512 in full: its 16-lane sweep runs on the large cases
    # alone, and CPUs without AVX-512 have no native run of it (no sse
    # layer: the native runs have it)
    if build clang-asan-tests-emu "$D/nbwd_tests_emu" clang -std=c99 -O1 $(dbg_of clang) $W -Wno-psabi $(san_of clang) $TEST_DEFS \
        -DNORM_BWD_SIMD_EMULATE -DNORM_BWD_NO_SSE -fopenmp -Itests -I. $TEST_SRC -lm
    then
        for isa in avx512 avx512_bf16 neon; do
            qe=$quick_clang; [ $isa = avx512 ] && qe=
            run "asan+ubsan clang tests $isa emulated${qe:+ quick}" "$D/nbwd_tests_emu" --isa $isa $qe
        done
    fi
    waited=0 # for the other chain's gcc build (its first step; an hour at most)
    while [ ! -s "$OUT/san-gcc/built" ] && [ $waited -lt 3600 ]; do sleep 2; waited=$((waited + 2)); done
    if [ "$(cat "$OUT/san-gcc/built" 2>/dev/null)" = ok ]; then
        san_gcc_runs
        san_hardening gcc
    elif [ $waited -ge 3600 ]; then
        echo "--- asan+ubsan gcc: FAILED: its build never finished"; FAIL=$((FAIL + 1))
    fi
}

valgrind_mode() {
    need valgrind 'command -v valgrind'
    D=$OUT/valgrind; mkdir -p "$D"
    VG="valgrind --quiet --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite --track-origins=yes"
    build vg-tests "$D/nbwd_tests" gcc -std=c99 -O1 -g $W -fopenmp -Itests -I. $TEST_SRC -lm || return
    build vg-hardening "$D/test_hardening" gcc -std=c99 -O1 -g $W -fopenmp -I. $HARD -lm -lpthread || return
    for isa in scalar avx2; do run "memcheck tests $isa quick" $VG "$D/nbwd_tests" --isa $isa --quick; done
    # valgrind emulates AVX2 but not AVX-512; the nested suite's thread sampler is timing-based: left out
    run "memcheck hardening" $VG "$D/test_hardening" --quick --suite nan --suite overflow --suite threads
}

fuzz() {
    need clang 'command -v clang'
    need libclang-rt-14-dev 'ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a'
    need libomp-dev 'ls /usr/lib/llvm-*/lib/libomp.so' # (the suite's library is built with OpenMP)
    D=$OUT/../fuzz; mkdir -p "$D"
    fsecs=${FUZZ_SECONDS:-60}
    # (TEST_DEFS, as the library's: GroupNorm NXC's chunked order within a
    # fuzz input's sizes)
    fzflags="-std=c99 -O1 $(dbg_of clang) $W $SAN $TEST_DEFS -fopenmp -I."
    # The library is clang's suite library (clang_impl: built by
    # `make test-sanitize` before, or here), linked into each target, whose
    # own file builds in seconds (-DFZ_SEPARATE_IMPL); the targets fuzz two
    # at a time, each on one core (OMP_NUM_THREADS=1 below).
    clang_impl || return
    export OMP_NUM_THREADS=1
    for t in layer_norm batch_norm misc group_norm; do
        rm -f "$D/fuzz_$t"
        build "fuzz_$t" "$D/fuzz_$t" clang $fzflags -fsanitize=fuzzer -DFZ_SEPARATE_IMPL -Itests/fuzz \
            tests/fuzz/fuzz_$t.c "$OUT/san-clang/impl.o" -lm
    done
    fuzz_one() { # target
        [ -x "$D/fuzz_$1" ] || return 0 # (its failed build is counted and printed)
        rm -rf "$D/corpus_$1"; mkdir -p "$D/corpus_$1" "$D/artifacts"
        [ -d tests/fuzz/corpus/$1 ] && cp tests/fuzz/corpus/$1/* "$D/corpus_$1/" 2>/dev/null
        run "fuzz $1 ${fsecs}s" sh -c "'$D/fuzz_$1' -max_total_time=$fsecs -timeout=10 -rss_limit_mb=2048 -max_len=512 \
            -print_final_stats=1 -artifact_prefix='$D/artifacts/${1}-' '$D/corpus_$1' && \
            echo 'fuzz_$1: 1 passed, 0 failed'"
    }
    beside fuzz_pair1 fuzz_one layer_norm
    fuzz_one batch_norm
    joined fuzz_pair1
    beside fuzz_pair2 fuzz_one misc
    fuzz_one group_norm
    joined fuzz_pair2
}

hardening() {
    D=$OUT; huge=
    [ "${HUGE:-0}" = 1 ] && huge=--huge
    need libsimde-dev 'test -f /usr/include/simde/x86/sse2.h'
    beside hardening_emu hardening_emulated # (its build is the longest: the other core)
    build hardening "$D/test_hardening" $CC -std=c99 -O2 $W -fopenmp -I. $HARD -lm -lpthread &&
        run "hardening native" "$D/test_hardening" $huge
    hardening_a64
    joined hardening_emu
}
hardening_emulated() {
    build hardening-emu "$D/test_hardening_emu" $CC -std=c99 -O2 $W -Wno-psabi -fopenmp -DNORM_BWD_SIMD_EMULATE -DNORM_BWD_NO_SSE \
        -I. $HARD -lm -lpthread || return
    for isa in avx2 avx512 avx512_bf16 neon; do
        run "hardening emulated $isa" "$D/test_hardening_emu" --isa $isa --suite nan --suite threads --suite nested
    done
}

# The hardening test cross-built for AArch64 (native NEON, and BFCVTN where
# HWCAP2 has BF16) and run under qemu-aarch64: nan and threads, --quick. Each
# of these runs must really run its path: a skip counts as a failure
# (QEMU_CPU=max has BF16, cortex-a53 has plain NEON).
hardening_a64() {
    if ! command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || ! command -v qemu-aarch64 >/dev/null 2>&1; then
        echo "--- hardening aarch64: skipped (no aarch64-linux-gnu-gcc or qemu-aarch64; Debian packages gcc-aarch64-linux-gnu, qemu-user)"
        return
    fi
    omp=; [ -e /usr/aarch64-linux-gnu/lib/libgomp.so.1 ] && omp=-fopenmp
    build hardening-a64 "$D/test_hardening_a64" aarch64-linux-gnu-gcc -std=c99 -O2 $W $omp -I. $HARD -lm -lpthread || return
    for cpu_isa in max:neon max:neon_bf16 cortex-a53:neon; do
        cpu=${cpu_isa%%:*} isa=${cpu_isa#*:}
        label="hardening aarch64 $cpu $isa${omp:+ openmp}"
        QEMU_LD_PREFIX=/usr/aarch64-linux-gnu QEMU_CPU=$cpu \
            run "$label" qemu-aarch64 "$D/test_hardening_a64" --isa $isa --quick --suite nan --suite threads
        log="$LOG/$(echo "$label" | tr ' /=' '___').log"
        if grep -q "^isa $isa skipped" "$log" || ! grep -q '^nan ' "$log"; then
            echo "--- $label: FAILED: the $isa path did not run (log $log)"; FAIL=$((FAIL + 1))
        fi
    done
}

case "${1:-}" in
    sanitize) sanitize ;;
    valgrind) valgrind_mode ;;
    fuzz) fuzz ;;
    hardening) hardening ;;
    *) echo "usage: $0 sanitize|valgrind|fuzz|hardening"; exit 2 ;;
esac
echo "$RUNS runs"
echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
