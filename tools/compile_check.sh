#!/bin/sh
# compile_check.sh - the header must build warning-free (-Werror) as C99 and
# C++11, with gcc and clang, at -O0 and -O2, with and without OpenMP, in a
# program of two translation units (one holds the implementation), as an
# editor's main file (NORM_BWD_IDE), and the README's example must compile
# and run exactly as written.
#   MATRIX=full (the default; `make compile-check`, .ci/run): every build below
#   MATRIX=core (`make test`): the builds named in is_core: each compiler in
#     both languages, with and without OpenMP, -O0 once, NO_SIMD, the
#     refused builds (one of each kind; the rest runs in CI). gcc's C99 -O2
#     -fopenmp and AArch64 gcc's C99 -O2 builds run in CI only: they are the
#     test binaries' own builds (build/nbwd_tests, nbwd_tests_a64), -Werror
#     included. The
#     README example's own command lines are not core: `make test` builds
#     and runs examples/quickstart.c, which tools/check_examples.sh readme
#     holds byte for byte equal to the README's block.
#   MATRIX=rest (.ci/run, after `make test`): every build but the core ones
set -u
MATRIX=${MATRIX:-full}
case $MATRIX in full|core|rest) ;; *) echo "MATRIX must be full, core or rest"; echo "0 passed, 1 failed"; exit 1 ;; esac
is_core() { # label
    case $1 in
        "g++ c++11 -O2 "|"clang c99 -O2 "|"clang++ c++11 -O2 -fopenmp") return 0 ;;
        "gcc c99 -O0 "|"gcc c99 NO_SIMD"|"refused: "*) return 0 ;;
        "editor: clang -fsyntax-only") return 0 ;;
    esac
    return 1
}
B=${BUILD:-build}/compile-check
rm -rf "$B"; mkdir -p "$B"
PASS=0 FAIL=0
W="-Wall -Wextra -pedantic -Werror"

# check() only writes a build down, each in its own folder; run_builds runs
# them two at a time (the machine has 2 cores), the next one starting as
# soon as either finishes (xargs -P), so a short build never waits for a
# long one.
SEQ=0
check() { # label command...
    label=$1; shift
    case $MATRIX in
        core) is_core "$label" || return 0 ;;
        rest) is_core "$label" && return 0 ;;
    esac
    SEQ=$((SEQ + 1))
    d="$B/job$(printf %02d $SEQ)"; mkdir -p "$d"
    printf '%s\n' "$label" > "$d/label"
    printf '%s\n' "$*" > "$d/cmd"
}
run_builds() {
    cat > "$B/run_job.sh" <<'RUN_JOB'
d=$1
if JOB="$d" sh "$d/cmd" > "$d/log" 2>&1; then echo ok > "$d/result"
else { echo "FAIL: $(cat "$d/label")"; sed 's/^/  /' "$d/cmd"; head -n 30 "$d/log"; } > "$d/result"; fi
RUN_JOB
    ls -d "$B"/job* 2>/dev/null | xargs -P 2 -n 1 sh "$B/run_job.sh"
}
build_run() { # label compiler std flags...
    # (names of their own: sh has no locals, and the loop below uses cc)
    br_label=$1; br_cc=$2; br_std=$3; shift 3
    br_lang=c; case $br_std in c++*) br_lang=c++ ;; esac
    check "$br_label" "$br_cc -x $br_lang -std=$br_std $W $* -I. -c tests/compile_two_tu_a.c -o \$JOB/a.o && \
        $br_cc -x $br_lang -std=$br_std $W $* -I. -c tests/compile_two_tu_b.c -o \$JOB/b.o && \
        $br_cc $* \$JOB/a.o \$JOB/b.o -o \$JOB/two_tu -lm && \$JOB/two_tu"
}

for cc in gcc clang; do
    cxx=g++; [ $cc = clang ] && cxx=clang++
    for opt in -O0 -O2; do
        for omp in "" -fopenmp; do
            build_run "$cc c99 $opt $omp" $cc c99 $opt $omp
            build_run "$cxx c++11 $opt $omp" $cxx c++11 $opt $omp
        done
    done
    build_run "$cc c99 NO_SIMD" $cc c99 -O2 -DNORM_BWD_NO_SIMD
    build_run "$cc c99 -march=native" $cc c99 -O2 -march=native -fopenmp
    build_run "$cc c99 -Os" $cc c99 -Os
    build_run "$cc c99 STATIC" $cc c99 -O2 -DNORM_BWD_STATIC
    check "$cxx compile_cpp.cc" "$cxx -std=c++11 $W -O2 -I. tests/compile_cpp.cc -o \$JOB/cpp -lm && \$JOB/cpp"
done

build_run "gcc c99 NO_AVX512_BF16" gcc c99 -O2 -DNORM_BWD_NO_AVX512_BF16

# AArch64 (when the cross tools are here): gcc, also with -march naming BF16
# (the neon_bf16 inline assembly must not clash with it), and clang 14, whose
# assembler does not know BFCVTN by name: compile only.
if command -v aarch64-linux-gnu-gcc >/dev/null 2>&1; then
    for march in "" -march=armv8.6-a+bf16; do
        check "aarch64-linux-gnu-gcc c99 -O2 $march" "aarch64-linux-gnu-gcc -std=c99 $W -O2 $march -fopenmp -I. -c tests/compile_two_tu_a.c -o \$JOB/a.o && \
            aarch64-linux-gnu-gcc -std=c99 $W -O2 $march -I. -c tests/compile_two_tu_b.c -o \$JOB/b.o"
    done
    # (C++ would need the AArch64 libstdc++ headers, which the C cross
    # compiler package does not bring)
    check "clang --target=aarch64-linux-gnu c99 -O2" "clang --target=aarch64-linux-gnu --sysroot=/usr/aarch64-linux-gnu \
        -std=c99 $W -O2 -I. -c tests/compile_two_tu_a.c -o \$JOB/a.o"

fi

# Mistakes a user makes must stop the build with a message that says what
# to do: the implementation compiled with -ffast-math (a file that only calls
# the library may use it), and norm_bwd_simd.h left behind when copying.
for cc in gcc clang; do
    check "refused: $cc -ffast-math" "! $cc -std=c99 -O2 -ffast-math -I. -c tests/compile_two_tu_a.c -o \$JOB/a.o \
            > \$JOB/err 2>&1 && grep -q 'without -ffast-math' \$JOB/err && \
        $cc -std=c99 $W -O2 -ffast-math -I. -c tests/compile_two_tu_b.c -o \$JOB/b.o"
done
check "refused: missing norm_bwd_simd.h" "mkdir -p \$JOB/h && cp norm_bwd.h \$JOB/h/ && \
    ! gcc -std=c99 -O2 -I\$JOB/h -c tests/compile_two_tu_a.c -o \$JOB/a.o > \$JOB/err 2>&1 && \
    grep -q 'norm_bwd_simd.h' \$JOB/err && grep -q 'NORM_BWD_NO_SIMD' \$JOB/err && \
    gcc -std=c99 $W -O2 -DNORM_BWD_NO_SIMD -I\$JOB/h -c tests/compile_two_tu_a.c -o \$JOB/a.o"

# An editor that opens norm_bwd.h itself (its main file) reads the
# implementation and the kernel template as live code: it must compile
# warning-free so, the scalar kernels included; where it is only included,
# NORM_BWD_IDE must change nothing.
check "editor: gcc, norm_bwd.h as the main file" "gcc -std=c99 $W -O1 -x c -DNORM_BWD_IDE -c norm_bwd.h -o \$JOB/ide.o && \
    nm \$JOB/ide.o | grep -q ' nbwd__ln_rows_f32_scalar' && nm \$JOB/ide.o | grep -q ' nbwd__ln_rows_16_avx2' && \
    gcc -std=c99 $W -O1 -DNORM_BWD_IDE -I. -c tests/compile_two_tu_b.c -o \$JOB/b.o && \
    ! nm \$JOB/b.o | grep -q ' T nbwd_layer_norm_bwd'"
check "editor: clang -fsyntax-only" "clang -std=c99 $W -fsyntax-only -x c -D__CLANGD__ norm_bwd.h && \
    clang++ -std=c++11 $W -fsyntax-only -x c++ -D__CLANGD__ norm_bwd.h"

# The README example, as a user would: a folder with the two headers.
ex=$B/readme_example
rm -rf "$ex"; mkdir -p "$ex"
cp norm_bwd.h norm_bwd_simd.h "$ex/"
sed -n '/<!-- example:begin -->/,/<!-- example:end -->/p' README.md | sed '1,2d;$d' | sed '$d' > "$ex/example.c"
if [ -s "$ex/example.c" ]; then
    check "README example: cc -O2 example.c -lm" "cd $ex && cc -O2 example.c -lm -o plain && ./plain"
    check "README example: cc -O2 -fopenmp example.c -lm" "cd $ex && cc -O2 -fopenmp example.c -lm -o omp && ./omp"
else
    FAIL=$((FAIL + 1)); echo "FAIL: no example between <!-- example:begin --> and <!-- example:end --> in README.md"
fi
run_builds
# a renamed build must not drop out of the core set (or a build out of the matrix) unseen
core_expected=9 full_expected=34
command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 && full_expected=37
case $MATRIX in
    core) expected=$core_expected ;;
    rest) expected=$((full_expected - core_expected)) ;;
    *) expected=$full_expected ;;
esac
if [ $SEQ -ne $expected ]; then
    FAIL=$((FAIL + 1)); echo "FAIL: the $MATRIX matrix ran $SEQ builds, expected $expected (see is_core)"
fi
for d in "$B"/job*; do
    [ -d "$d" ] || continue
    if [ ! -f "$d/result" ]; then FAIL=$((FAIL + 1)); echo "FAIL: $(cat "$d/label"): it never ran"
    elif [ "$(cat "$d/result")" = ok ]; then PASS=$((PASS + 1)); else FAIL=$((FAIL + 1)); cat "$d/result"; fi
done
echo "$PASS passed, $FAIL failed"
[ $FAIL -eq 0 ]
