#!/bin/sh
# compile_cost.sh - what dropping norm_bwd.h into a project costs: the
# implementation file (one file holding `#define NORM_BWD_IMPLEMENTATION`
# and the include, every path compiled in) built with gcc and clang at -O2,
# -O0 and -O0 -g, and a file that only includes the header. For each: CPU
# time (user + sys, the least of RUNS builds: a VM's timings wander by a
# tenth), peak compiler memory (/usr/bin/time), .text (size), the largest
# function (nm --size-sort). A figure over its budget fails the check; the
# last line is "N passed, N failed" (one check per budget line).
#   Budget: -O2 at most 5 s, 300 MB, 400 KB of .text; -O0 and -O0 -g at most
#   6 s, 500 MB, 3 MB of .text and no function over 64 KB; the include-only
#   file at most 0.2 s.
# Run it on an otherwise idle machine: builds beside it inflate its times.
# A time over its budget is measured once more (RUNS more builds, the least
# of all kept): a VM's slow spell of a minute can lift every build of a
# series by a tenth, while a real overrun stays over on every try.
set -u
B=${BUILD:-build}/compile-cost
RUNS=${RUNS:-3}
mkdir -p "$B"
PASS=0 FAIL=0
printf '#define NORM_BWD_IMPLEMENTATION\n#include "norm_bwd.h"\n' > "$B/impl.c"
printf '#include "norm_bwd.h"\nfloat nbwd_cost_probe(void) { return nbwd_bf16_to_f32(0x3f80); }\n' > "$B/include_only.c"

# measure CC FLAGS FILE: sets T (seconds), M (MB), TEXT (bytes), BIG (bytes), BIGNAME
measure() {
    T=999 M=0
    i=0
    while [ $i -lt "$RUNS" ]; do
        if ! /usr/bin/time -o "$B/time" -f "%U %S %M" $1 -std=c99 $2 -I. -c "$3" -o "$B/cost.o" 2> "$B/log"; then
            cat "$B/log"; T=999; M=0; TEXT=0; BIG=0; BIGNAME="(build failed)"; return 1
        fi
        read -r u s m < "$B/time"
        T=$(echo "$u $s $T" | awk '{t = $1 + $2; print (t < $3) ? t : $3}')
        m=$((m / 1024)); [ "$m" -gt "$M" ] && M=$m
        i=$((i + 1))
    done
    TEXT=$(size "$B/cost.o" | awk 'NR == 2 {print $1}')
    BIG=$(nm --size-sort -S "$B/cost.o" | awk '$3 ~ /^[tT]$/ {n = $4; s = $2} END {print s}')
    BIGNAME=$(nm --size-sort -S "$B/cost.o" | awk '$3 ~ /^[tT]$/ {n = $4} END {print n}')
    BIG=$(printf '%d' "0x${BIG:-0}")
    return 0
}
# check LABEL VALUE LIMIT UNIT
check() {
    if awk -v v="$2" -v l="$3" 'BEGIN {exit !(v <= l)}'; then PASS=$((PASS + 1)); verdict=ok
    else FAIL=$((FAIL + 1)); verdict="OVER BUDGET"; fi
    printf '    %-34s %10s %s (budget %s %s) %s\n' "$1" "$2" "$4" "$3" "$4" "$verdict"
}

echo "compile cost: the implementation file, every path compiled in; least CPU time of $RUNS builds ($(uname -m))"
for cc in gcc clang; do
    command -v $cc > /dev/null 2>&1 || { echo "  $cc: not found"; FAIL=$((FAIL + 1)); continue; }
    for opt in "-O2" "-O0" "-O0 -g"; do
        if ! measure $cc "$opt" "$B/impl.c"; then
            echo "  $cc $opt: the build failed"; FAIL=$((FAIL + 1)); continue
        fi
        echo "  $cc $opt: largest function $BIGNAME"
        limit=6
        [ "$opt" = "-O2" ] && limit=5
        if awk -v t="$T" -v l="$limit" 'BEGIN {exit !(t > l)}'; then
            first=$T
            measure $cc "$opt" "$B/impl.c" || true
            T=$(echo "$first $T" | awk '{print ($1 < $2) ? $1 : $2}')
            echo "  $cc $opt: $first s over the budget; measured again: least $T s"
        fi
        if [ "$opt" = "-O2" ]; then
            check "$cc $opt CPU time" "$T" 5 s
            check "$cc $opt compiler peak memory" "$M" 300 MB
            check "$cc $opt .text" "$((TEXT / 1024))" 400 KB
        else
            check "$cc $opt CPU time" "$T" 6 s
            check "$cc $opt compiler peak memory" "$M" 500 MB
            check "$cc $opt .text" "$((TEXT / 1024))" 3072 KB
            check "$cc $opt largest function" "$((BIG / 1024))" 64 KB
        fi
    done
done
if measure gcc "-O2" "$B/include_only.c"; then
    echo "  gcc -O2, a file that only includes the header:"
    check "include-only CPU time" "$T" 0.2 s
else
    FAIL=$((FAIL + 1))
fi
echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
