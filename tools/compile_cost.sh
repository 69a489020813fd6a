#!/bin/sh
# compile_cost.sh - what dropping norm_bwd.h into a project costs: the
# implementation file (one file holding `#define NORM_BWD_IMPLEMENTATION`
# and the include, every path compiled in) built with gcc and clang at -O2,
# -O0 and -O0 -g, and a file that only includes the header. For each: CPU
# time (user + sys, the least of RUNS builds), peak compiler memory
# (/usr/bin/time), .text (size), the largest function (nm --size-sort). A
# figure over its budget fails the check; the last line is "N passed,
# N failed" (one check per budget line).
#   Budget: -O2 at most 5 s, 300 MB, 400 KB of .text; -O0 and -O0 -g at most
#   6 s, 500 MB, 3 MB of .text and no function over 64 KB; the include-only
#   file at most 0.2 s.
# The seconds are those of the machine where the budget was set (a 2-core
# Zen 4 VM). CI lands on other CPUs (a Zen 3 compiles the same file in about
# twice the time), and a VM's neighbours can slow a build of this size by a
# fifth for minutes, so each -O2 build (gcc and clang) runs beside a gcc
# -O2 build of a yardstick, on the other core: norm_bwd.h as it was at
# 9555be6 (tools/compile_cost_yardstick.tar.xz, never changed), which the
# same slow spells slow alike. Every time is scaled by (the yardstick's
# gcc -O2 time on the budget's machine) / (its time here) before it is
# checked: the code's growth over the yardstick decides, not the CPU. The
# -O2 lines take the median of the pairs' ratios (header / the yardstick
# built beside it): least times taken apart could pair a quiet minute's
# yardstick with a busier minute's header. Both raw and scaled times are
# printed.
# The -O2 lines, with the least room, take RUNS pairs; the -O0 lines, far
# under their budgets, one build each, scaled by the least yardstick time;
# a scaled time over its line is measured again (RUNS more builds, all
# of them kept), but for gcc -O2, which the compiler's instruction counts
# for the header and the yardstick under cachegrind then decide
# (instr_ratio; without valgrind, measured again too).
# Other work running beside the script inflates its times.
set -u
B=${BUILD:-build}/compile-cost
RUNS=${RUNS:-3}
# The yardstick's least CPU time of 3 gcc 12 -O2 builds on the budget's
# machine (bench/NOTES.md, compile cost: 4.58-4.66 s in quiet minutes).
YS_REF=${YS_REF:-4.6}
YS=$YS_REF # unscaled until the yardstick is built
mkdir -p "$B/yardstick"
xz -dc tools/compile_cost_yardstick.tar.xz | tar -xf - -C "$B/yardstick" ||
    { echo "compile cost: cannot unpack the yardstick (xz, tar)"; echo "0 passed, 1 failed"; exit 1; }
PASS=0 FAIL=0
printf '#define NORM_BWD_IMPLEMENTATION\n#include "norm_bwd.h"\n' > "$B/impl.c"
cp "$B/impl.c" "$B/yardstick/impl.c"
printf '#include "norm_bwd.h"\nfloat nbwd_cost_probe(void) { return nbwd_bf16_to_f32(0x3f80); }\n' > "$B/include_only.c"

# measure CC FLAGS FILE BUILDS YARDSTICK KEEP: sets T (seconds, least of
# BUILDS), M (MB), TEXT (bytes), BIG (bytes), BIGNAME; with YARDSTICK=1
# also YS, the yardstick's least seconds (gcc -O2, each build beside one
# of FILE's) and a ratio per pair in $B/ratios. KEEP=1: T, YS and the
# ratios carry over from the previous call (a second series).
measure() {
    [ "$6" = 1 ] || T=999
    [ "$6" = 1 ] || [ "$5" = 0 ] || { YS=999; : > "$B/ratios"; }
    M=0
    i=0
    while [ $i -lt "$4" ]; do
        if [ "$5" = 1 ]; then # the yardstick's gcc -O2 build at the same time, on the other core
            rm -f "$B/time_ys"
            /usr/bin/time -o "$B/time_ys" -f "%U %S" gcc -std=c99 -O2 -c "$B/yardstick/impl.c" -o "$B/ys.o" \
                2> "$B/log_ys" &
        fi
        if ! /usr/bin/time -o "$B/time" -f "%U %S %M" $1 -std=c99 $2 -I. -c "$3" -o "$B/cost.o" 2> "$B/log"; then
            cat "$B/log"; wait; T=999; M=0; TEXT=0; BIG=0; BIGNAME="(build failed)"; return 1
        fi
        read -r u s m < "$B/time"
        T=$(echo "$u $s $T" | awk '{t = $1 + $2; print (t < $3) ? t : $3}')
        if [ "$5" = 1 ]; then
            wait
            if ! read -r yu ys_ < "$B/time_ys" || [ -z "$ys_" ]; then
                cat "$B/log_ys"; T=999; return 1
            fi
            YS=$(echo "$yu $ys_ $YS" | awk '{t = $1 + $2; print (t < $3) ? t : $3}')
            echo "$u $s $yu $ys_" | awk '{print ($1 + $2) / ($3 + $4)}' >> "$B/ratios"
        fi
        m=$((m / 1024)); [ "$m" -gt "$M" ] && M=$m
        i=$((i + 1))
    done
    TEXT=$(size "$B/cost.o" | awk 'NR == 2 {print $1}')
    BIG=$(nm --size-sort -S "$B/cost.o" | awk '$3 ~ /^[tT]$/ {n = $4; s = $2} END {print s}')
    BIGNAME=$(nm --size-sort -S "$B/cost.o" | awk '$3 ~ /^[tT]$/ {n = $4} END {print n}')
    BIG=$(printf '%d' "0x${BIG:-0}")
    return 0
}
# instr_ratio FLAGS: sets HI and YI, the instructions (in G) gcc executes
# compiling the implementation file and the yardstick (under cachegrind,
# both at once: minutes), and IR = HI / YI; fails without valgrind. The
# counts do not move with the machine's load, which timings on these VMs
# do by 5-20 % per build (paired ratios seen from 0.93 to 1.20 within one
# run): when the timed gcc -O2 line reads over its budget, this
# ratio decides, taken as the ratio of the two builds' CPU times (the same
# compiler on code of the same kind: bench/NOTES.md compares the two).
instr_ratio() {
    command -v valgrind > /dev/null 2>&1 || return 1
    rm -f "$B"/cg_h.* "$B"/cg_y.*
    valgrind --tool=cachegrind --cache-sim=no --trace-children=yes --cachegrind-out-file="$B/cg_h.%p" \
        gcc -std=c99 $1 -I. -c "$B/impl.c" -o "$B/cg_h.o" > /dev/null 2>&1 &
    valgrind --tool=cachegrind --cache-sim=no --trace-children=yes --cachegrind-out-file="$B/cg_y.%p" \
        gcc -std=c99 $1 -c "$B/yardstick/impl.c" -o "$B/cg_y.o" > /dev/null 2>&1
    wait
    # the largest count among the driver's processes: cc1's
    HI=$(cat "$B"/cg_h.* 2> /dev/null | awk '/^summary:/ {if ($2 > m) m = $2} END {printf "%.2f", m / 1e9}')
    YI=$(cat "$B"/cg_y.* 2> /dev/null | awk '/^summary:/ {if ($2 > m) m = $2} END {printf "%.2f", m / 1e9}')
    awk -v h="$HI" -v y="$YI" 'BEGIN {exit !(h > 1 && y > 1)}' || return 1
    IR=$(echo "$HI $YI" | awk '{printf "%.3f", $1 / $2}')
}

# check LABEL VALUE LIMIT UNIT
check() {
    if awk -v v="$2" -v l="$3" 'BEGIN {exit !(v <= l)}'; then PASS=$((PASS + 1)); verdict=ok
    else FAIL=$((FAIL + 1)); verdict="OVER BUDGET"; fi
    printf '    %-34s %10s %s (budget %s %s) %s\n' "$1" "$2" "$4" "$3" "$4" "$verdict"
}

# scale: S = T * YS_REF / YS, the time on the budget's machine; with paired
# builds (scale 1: gcc -O2) S = YS_REF * the median paired ratio
scale() {
    if [ "${1:-0}" = 1 ] && [ -s "$B/ratios" ]; then
        S=$(sort -g "$B/ratios" | awk -v r="$YS_REF" '{v[NR] = $1}
            END {m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f", m * r}')
    else
        S=$(echo "$T $YS_REF $YS" | awk '{printf "%.2f", $1 * $2 / $3}')
    fi
}

echo "compile cost: the implementation file, every path compiled in ($(uname -m)); CPU times scaled to the"
echo "budget's machine by a yardstick built beside each -O2 build (the header at 9555be6; see the script's head)"
for cc in gcc clang; do
    command -v $cc > /dev/null 2>&1 || { echo "  $cc: not found"; FAIL=$((FAIL + 1)); continue; }
    for opt in "-O2" "-O0" "-O0 -g"; do
        ys=0 runs=1
        [ "$opt" = "-O2" ] && runs=$RUNS
        [ "$opt" = "-O2" ] && ys=1
        if ! measure $cc "$opt" "$B/impl.c" $runs $ys 0; then
            echo "  $cc $opt: the build failed"; FAIL=$((FAIL + 1)); continue
        fi
        limit=6
        [ "$opt" = "-O2" ] && limit=5
        scale $ys
        if awk -v t="$S" -v l="$limit" 'BEGIN {exit !(t > l)}'; then
            first=$S
            # gcc -O2: the instruction counts decide at once where valgrind
            # exists (a second series of timings moves as much as the first)
            if [ $cc = gcc ] && [ "$opt" = -O2 ] && instr_ratio "$opt"; then
                echo "  $cc $opt: $first s over the budget: the compiler's instructions instead (cachegrind, no" \
                    "timing): $HI here, $YI for the yardstick, ratio $IR"
                S=$(echo "$IR $YS_REF" | awk '{printf "%.2f", $1 * $2}')
            else
                measure $cc "$opt" "$B/impl.c" "$RUNS" $ys 1 || true
                scale $ys
                echo "  $cc $opt: $first s over the budget; measured again: $S s"
            fi
        fi
        if [ $ys = 1 ]; then
            echo "  $cc $opt: $T s here (least of $runs), the yardstick $YS s here and $YS_REF s there;" \
                "paired ratios $(sort -g "$B/ratios" | awk '{printf "%s%.3f", (NR > 1 ? " " : ""), $1}'); largest function $BIGNAME"
        else
            echo "  $cc $opt: $T s here; largest function $BIGNAME"
        fi
        if [ "$opt" = "-O2" ]; then
            check "$cc $opt CPU time (scaled)" "$S" 5 s
            check "$cc $opt compiler peak memory" "$M" 300 MB
            check "$cc $opt .text" "$((TEXT / 1024))" 400 KB
        else
            check "$cc $opt CPU time (scaled)" "$S" 6 s
            check "$cc $opt compiler peak memory" "$M" 500 MB
            check "$cc $opt .text" "$((TEXT / 1024))" 3072 KB
            check "$cc $opt largest function" "$((BIG / 1024))" 64 KB
        fi
    done
done
if measure gcc "-O2" "$B/include_only.c" 1 0 0; then
    scale
    echo "  gcc -O2, a file that only includes the header: $T s here"
    check "include-only CPU time (scaled)" "$S" 0.2 s
else
    FAIL=$((FAIL + 1))
fi
echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
