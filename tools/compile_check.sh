#!/bin/sh
# compile_check.sh - the header must build warning-free (-Werror) as C99 and
# C++11, with gcc and clang, at -O0 and -O2, with and without OpenMP, in a
# program of two translation units (one holds the implementation), and the
# README's example must compile and run exactly as written.
set -u
B=${BUILD:-build}/compile-check
mkdir -p "$B"
PASS=0 FAIL=0
W="-Wall -Wextra -pedantic -Werror"

check() { # label command...
    label=$1; shift
    if "$@" > "$B/last.log" 2>&1; then PASS=$((PASS + 1)); else
        FAIL=$((FAIL + 1)); echo "FAIL: $label"; echo "  $*"; head -n 30 "$B/last.log"; fi
}
build_run() { # label compiler std flags...
    label=$1; cc=$2; std=$3; shift 3
    lang=c; case $std in c++*) lang=c++ ;; esac
    check "$label" sh -c "$cc -x $lang -std=$std $W $* -I. -c tests/compile_two_tu_a.c -o $B/a.o && \
        $cc -x $lang -std=$std $W $* -I. -c tests/compile_two_tu_b.c -o $B/b.o && \
        $cc $* $B/a.o $B/b.o -o $B/two_tu -lm && $B/two_tu"
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
    check "$cxx compile_cpp.cc" sh -c "$cxx -std=c++11 $W -O2 -I. tests/compile_cpp.cc -o $B/cpp -lm && $B/cpp"
done

# The README example, as a user would: a folder with the two headers.
ex=$B/readme_example
rm -rf "$ex"; mkdir -p "$ex"
cp norm_bwd.h norm_bwd_simd.h "$ex/"
sed -n '/<!-- example:begin -->/,/<!-- example:end -->/p' README.md | sed '1,2d;$d' | sed '$d' > "$ex/example.c"
if [ -s "$ex/example.c" ]; then
    check "README example: cc -O2 example.c -lm" sh -c "cd $ex && cc -O2 example.c -lm && ./a.out"
    check "README example: cc -O2 -fopenmp example.c -lm" sh -c "cd $ex && cc -O2 -fopenmp example.c -lm && ./a.out"
else
    FAIL=$((FAIL + 1)); echo "FAIL: no example between <!-- example:begin --> and <!-- example:end --> in README.md"
fi
echo "$PASS passed, $FAIL failed"
[ $FAIL -eq 0 ]
