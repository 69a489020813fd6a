#!/bin/sh
# compile_cost.sh [--gate] - what dropping norm_bwd.h into a project costs:
# the implementation file (one file holding `#define NORM_BWD_IMPLEMENTATION`
# and the include, every path compiled in) built with gcc and clang at -O2,
# -O0 and -O0 -g, and a file that only includes the header.
#   Budget (gcc and clang alike): -O2 at most 8 s, 400 MB of peak compiler
#   memory, 600 KB of .text; -O0 and -O0 -g at most 3 s, 500 MB, 3 MB of
#   .text; no function over 64 KB on any line; the include-only file at
#   most 0.2 s. (.text: the text column of size(1), read-only sections
#   included; the largest function: nm --size-sort.)
#
# --gate (make compile-gate; make test runs it): only the figures that do
# not move with the machine's load: .text, the largest function and the
# compiler's peak memory (/usr/bin/time %M), one build per line, no timing
# at all. .text and the largest function are the same bytes in every build;
# peak memory moves with address-space randomization (identical gcc -O2
# builds differ by up to 1.7 %, clang -O2 and the -O0 lines by 0.3 %), so
# a reading passes up to MEM_MARGIN percent (4: more than twice the spread
# seen) over its line: a file within its budget does not fail on that noise.
# One line per check, then "N passed, N failed".
#
# Without an argument (make compile-cost; run by hand, not by make test) the
# same checks, the same limits, and the CPU times (user + sys) against the
# budget's seconds: a measurement, whose figures move by 5-20 % on a VM as
# its neighbours come and go.
# The seconds are those of the machine where the budget was set (a 2-core
# Zen 4 VM). Other CPUs take other times (a Zen 3 compiles the same file in
# about twice the time), and a VM's neighbours can slow a build of this size
# by a fifth for minutes, so each -O2 build (gcc and clang) runs beside a
# gcc -O2 build of a yardstick, on the other core: an older norm_bwd.h
# (tools/compile_cost_yardstick.tar.xz, never changed), which the same slow
# spells slow alike. Every time is scaled by (the yardstick's
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
# Other work running beside the script inflates its times (not its memory,
# .text or functions).
set -u
GATE=0
case "${1:-}" in
    --gate) GATE=1 ;;
    "") ;;
    *) echo "usage: $0 [--gate]"; exit 2 ;;
esac
# The budget; the gate checks all but the seconds.
O2_S=8 O2_MB=400 O2_KB=600      # -O2
O0_S=3 O0_MB=500 O0_KB=3072     # -O0 and -O0 -g
BIG_KB=64                       # the largest function, every line
INC_S=0.2                       # the include-only file
MEM_MARGIN=${MEM_MARGIN:-4}     # percent of a memory line (see the head)
B=${BUILD:-build}/compile-cost
RUNS=${RUNS:-3}
# The yardstick's least CPU time of 3 gcc 12 -O2 builds on the budget's
# machine (bench/NOTES.md, compile cost: 4.58-4.66 s in quiet minutes).
YS_REF=${YS_REF:-4.6}
YS=$YS_REF # unscaled until the yardstick is built
mkdir -p "$B"
if [ $GATE = 0 ]; then
    mkdir -p "$B/yardstick"
    xz -dc tools/compile_cost_yardstick.tar.xz | tar -xf - -C "$B/yardstick" ||
        { echo "compile cost: cannot unpack the yardstick (xz, tar)"; echo "0 passed, 1 failed"; exit 1; }
fi
PASS=0 FAIL=0
printf '#define NORM_BWD_IMPLEMENTATION\n#include "norm_bwd.h"\n' > "$B/impl.c"
[ $GATE = 1 ] || cp "$B/impl.c" "$B/yardstick/impl.c"
printf '#include "norm_bwd.h"\nfloat nbwd_cost_probe(void) { return nbwd_bf16_to_f32(0x3f80); }\n' > "$B/include_only.c"

# kib N: N / 1024 with one decimal (KB to MB, bytes to KB)
kib() { awk -v n="$1" 'BEGIN {printf "%.1f", n / 1024}'; }

# measure CC FLAGS FILE BUILDS YARDSTICK KEEP: sets T (seconds, least of
# BUILDS), M (peak MB, the most of BUILDS), TEXT (bytes), BIG (bytes),
# BIGNAME; with YARDSTICK=1 also YS, the yardstick's least seconds (gcc
# -O2, each build beside one of FILE's) and a ratio per pair in $B/ratios. KEEP=1: T, YS and the
# ratios carry over from the previous call (a second series).
measure() {
    [ "$6" = 1 ] || T=999
    [ "$6" = 1 ] || [ "$5" = 0 ] || { YS=999; : > "$B/ratios"; }
    MK=0
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
        [ "$m" -gt "$MK" ] && MK=$m
        i=$((i + 1))
    done
    M=$(kib "$MK")
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

# check LABEL VALUE LIMIT UNIT [ALLOW [NOTE]]: VALUE passes up to LIMIT +
# ALLOW (the memory lines' margin for allocator noise); NOTE ends the line
check() {
    if awk -v v="$2" -v l="$3" -v a="${5:-0}" 'BEGIN {exit !(v <= l + a)}'; then PASS=$((PASS + 1)); verdict=ok
    else FAIL=$((FAIL + 1)); verdict="OVER BUDGET"; fi
    budget="budget $3 $4"
    [ "${5:-0}" = 0 ] || budget="$budget, +$5 for allocator noise"
    printf '    %-34s %10s %s (%s) %s%s\n' "$1" "$2" "$4" "$budget" "$verdict" "${6:+ $6}"
}
# fixed CC OPT: the checks that no load moves (the gate's), on the figures
# measure left: peak memory, .text, the largest function
fixed() {
    mb=$O0_MB kb=$O0_KB
    [ "$2" = "-O2" ] && mb=$O2_MB kb=$O2_KB
    check "$1 $2 compiler peak memory" "$M" $mb MB $((mb * MEM_MARGIN / 100))
    check "$1 $2 .text" "$(kib "$TEXT")" $kb KB
    check "$1 $2 largest function" "$(kib "$BIG")" $BIG_KB KB 0 "($BIGNAME, $BIG bytes)"
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

if [ $GATE = 1 ]; then
    echo "compile cost gate: the implementation file, every path compiled in ($(uname -m)); peak compiler"
    echo "memory, .text and the largest function against the budget, one build each, no timing"
    rm -f "$B/impl_gcc_O2.o"
    for cc in gcc clang; do
        command -v $cc > /dev/null 2>&1 || { echo "  $cc: not found"; FAIL=$((FAIL + 1)); continue; }
        for opt in "-O2" "-O0" "-O0 -g"; do
            if ! measure $cc "$opt" "$B/impl.c" 1 0 0; then
                echo "  $cc $opt: the build failed"; FAIL=$((FAIL + 1)); continue
            fi
            fixed $cc "$opt"
            # kept for check-isa (make test runs it next: one gcc -O2 build fewer)
            [ "$cc $opt" = "gcc -O2" ] && cp "$B/cost.o" "$B/impl_gcc_O2.o"
        done
    done
    echo "$PASS passed, $FAIL failed"
    [ "$FAIL" -eq 0 ]
    exit
fi

echo "compile cost: the implementation file, every path compiled in ($(uname -m)); CPU times scaled to the"
echo "budget's machine by a yardstick built beside each -O2 build (an older header; see the script's head)"
for cc in gcc clang; do
    command -v $cc > /dev/null 2>&1 || { echo "  $cc: not found"; FAIL=$((FAIL + 1)); continue; }
    for opt in "-O2" "-O0" "-O0 -g"; do
        ys=0 runs=1
        [ "$opt" = "-O2" ] && runs=$RUNS
        [ "$opt" = "-O2" ] && ys=1
        if ! measure $cc "$opt" "$B/impl.c" $runs $ys 0; then
            echo "  $cc $opt: the build failed"; FAIL=$((FAIL + 1)); continue
        fi
        limit=$O0_S
        [ "$opt" = "-O2" ] && limit=$O2_S
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
                "paired ratios $(sort -g "$B/ratios" | awk '{printf "%s%.3f", (NR > 1 ? " " : ""), $1}')"
        else
            echo "  $cc $opt: $T s here"
        fi
        check "$cc $opt CPU time (scaled)" "$S" $limit s
        fixed $cc "$opt"
    done
done
if measure gcc "-O2" "$B/include_only.c" 1 0 0; then
    scale
    echo "  gcc -O2, a file that only includes the header: $T s here"
    check "include-only CPU time (scaled)" "$S" $INC_S s
else
    FAIL=$((FAIL + 1))
fi
echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
