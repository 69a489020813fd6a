#!/bin/sh
# check_examples.sh [readme] - the programs in examples/, built and run as a
# user would build and run them.
#   (no argument)  each examples/NAME.c built warning-free (-Werror) as C99
#                  with $CC (default cc) -O2, and with clang -O0 -fopenmp (a
#                  debug build with threads, every path compiled in; -O0
#                  costs a tenth of -O2's compile time), and checked as C++11 (g++
#                  -fsyntax-only; -Wno-missing-field-initializers, as g++
#                  -Wextra flags C's `args = {0}`); each build run on the
#                  automatic path and with NORM_BWD_ISA=scalar, its
#                  standard output compared with examples/NAME.expected (the
#                  examples print the path they ran on to stderr: in the log).
#                  The -O2 build is the one the examples name (cc -O2 NAME.c
#                  -lm) for quickstart.c, the README's example; the others
#                  add -DNORM_BWD_NO_SIMD there: every example holds the same
#                  implementation, whose -O2 build with every path the test
#                  binaries and the compile matrix already check (once per
#                  example it was most of this script's time), while the
#                  example's own code gets the same -O2 warnings either way
#   readme         README.md's example block (the ```c fence between
#                  <!-- example:begin --> and <!-- example:end -->) must be
#                  examples/quickstart.c byte for byte
# Each ends with a "N passed, N failed" line.
set -u
B=${BUILD:-build}/examples
PASS=0 FAIL=0
ok() { PASS=$((PASS + 1)); }
fail() { FAIL=$((FAIL + 1)); echo "FAIL: $*"; }

if [ "${1:-}" = readme ]; then
    mkdir -p "$B"
    block=$B/readme_block.c
    # the lines strictly inside the fence: drop the begin marker, the ```c
    # line, the end marker and the closing ``` line
    sed -n '/<!-- example:begin -->/,/<!-- example:end -->/p' README.md > "$B/readme_block.md"
    sed '1,2d;$d' "$B/readme_block.md" | sed '$d' > "$block"
    if [ "$(sed -n 2p "$B/readme_block.md")" != '```c' ] || [ "$(tail -n 2 "$B/readme_block.md" | head -n 1)" != '```' ]; then
        fail "README.md: no \`\`\`c fence right inside <!-- example:begin --> ... <!-- example:end -->"
    elif cmp -s "$block" examples/quickstart.c; then
        echo "README.md's example block is examples/quickstart.c, byte for byte"; ok
    else
        fail "README.md's example block (between <!-- example:begin --> and <!-- example:end -->) differs" \
             "from examples/quickstart.c: the README must embed that file verbatim (diff below: README, then the file)"
        diff -u "$block" examples/quickstart.c | head -n 40
    fi
    echo "$PASS passed, $FAIL failed"
    [ $FAIL -eq 0 ]; exit
fi

CC=${CC:-cc}
W="-Wall -Wextra -pedantic -Werror"
OMPCC=clang
command -v clang >/dev/null 2>&1 || OMPCC=$CC
CXX=g++
command -v g++ >/dev/null 2>&1 || CXX=c++
rm -rf "$B"; mkdir -p "$B"
# (an example that includes <mpi.h>, sync_batch_norm.c, is built with mpicc
# and run by mpirun in tools/check_mpi.sh: make test-mpi)
names=$(cd examples && for f in *.c; do grep -q '^#include <mpi.h>' "$f" || echo "${f%.c}"; done)
[ -n "$names" ] || { fail "no examples/*.c"; echo "$PASS passed, $FAIL failed"; exit 1; }

# Builds, each leaving a .ok or a .fail file: two lanes (2 cores), each
# building every other example.
build() { # name label command...
    bn=$1 bl=$2; shift 2
    if "$@" > "$B/$bn.$bl.log" 2>&1; then : > "$B/$bn.$bl.ok"; else : > "$B/$bn.$bl.fail"; fi
}
lane() { # index (0 or 1)
    li=0
    for n in $names; do
        if [ $((li % 2)) -eq "$1" ]; then
            nosimd=-DNORM_BWD_NO_SIMD; [ "$n" = quickstart ] && nosimd=
            build "$n" plain $CC -std=c99 -O2 $W $nosimd -I. "examples/$n.c" -o "$B/$n" -lm
            build "$n" openmp $OMPCC -std=c99 -O0 $W -fopenmp -I. "examples/$n.c" -o "$B/$n.omp" -lm
            # C++11: the declarations, the implementation and the example parse cleanly
            build "$n" cxx11 $CXX -x c++ -std=c++11 $W -Wno-missing-field-initializers -fsyntax-only -I. "examples/$n.c"
        fi
        li=$((li + 1))
    done
}
lane 0 & lane 1 & wait

for n in $names; do
    if [ ! -f "examples/$n.expected" ]; then fail "examples/$n.expected is missing"; continue; fi
    plain="$CC -O2"; [ "$n" = quickstart ] || plain="$plain NO_SIMD"
    for b in plain:"$plain":"$B/$n" openmp:"$OMPCC -O0 -fopenmp":"$B/$n.omp" cxx11:"$CXX -std=c++11 -fsyntax-only":; do
        bl=${b%%:*} rest=${b#*:}; what=${rest%%:*} exe=${rest#*:}
        if [ -f "$B/$n.$bl.ok" ]; then ok; else
            fail "$n.c: $what"; head -n 20 "$B/$n.$bl.log"; continue
        fi
        [ -n "$exe" ] || continue
        for isa in auto scalar; do
            out=$B/$n.$bl.$isa.out
            if [ $isa = auto ]; then "$exe" > "$out" 2> "$out.err"; else NORM_BWD_ISA=$isa "$exe" > "$out" 2> "$out.err"; fi
            rc=$?
            if [ $rc -ne 0 ]; then
                fail "$n ($what, $isa path): exit $rc"; cat "$out.err"
            elif ! cmp -s "$out" "examples/$n.expected"; then
                fail "$n ($what, $isa path): output differs from examples/$n.expected"
                diff -u "examples/$n.expected" "$out" | head -n 20
            else
                echo "$n ($what, $isa path: $(head -n 1 "$out.err")): as expected"; ok
            fi
        done
    done
done
echo "$PASS passed, $FAIL failed"
[ $FAIL -eq 0 ]
