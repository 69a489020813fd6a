#!/bin/sh
# ab_ports.sh BUILD... - the byte compare of `make bench-ab` (bench/ab.c:
# nbwd_ab OLD.so NEW.so compare) on each build named:
#   native   $CC, the paths this CPU runs, full sweep; and again with a
#            16 KiB non-temporal threshold (-DNORM_BWD_STREAM_BYTES=16384)
#   emu      $CC -DNORM_BWD_SIMD_EMULATE -Wno-psabi: the avx2, avx512,
#            avx512_bf16 and neon layers through SIMDe, full sweep on those
#            four paths (scalar and sse are native's); also with the 16 KiB
#            threshold
#   aarch64  aarch64-linux-gnu-gcc, run under qemu-aarch64 (QEMU_CPU=max:
#            scalar, sse through SIMDe, neon, neon_bf16), --quick sweep
#   armhf    arm-linux-gnueabihf-gcc (hard float, as tools/test_ports.sh),
#            run under qemu-arm (scalar, neon), --quick sweep
#   all      all four
# Both sides are the working tree's headers (.) and the old revision's
# ($AB_OLD_DIR, default $AB_OUT/old, which bench.mk fills from AB_OLD),
# each compiled into its shared object with $AB_CFLAGS. Environment: CC,
# AB_OUT (default build/ab), AB_OLD_DIR, AB_CFLAGS. Builds go two at a
# time; compares one after the other (a 2-thread compare takes both cores).
# A missing cross compiler, C library or qemu is installed with apt-get as
# root (tools/need.sh), else that build is skipped with one line. Each
# compare's log is $AB_OUT/<build>.log; the last lines sum up each compare
# ("N cases, N differ", seconds). Exit status 1 when a compare differs or
# fails to build or run.
set -u
OUT=${AB_OUT:-build/ab}
OLD=${AB_OLD_DIR:-$OUT/old}
CC=${CC:-cc}
CFLAGS=${AB_CFLAGS:--std=c99 -O2 -fopenmp -fPIC -shared}
ABFLAGS="-std=c99 -O2 -Wall -Wextra -I."
NT=-DNORM_BWD_STREAM_BYTES=16384
NEED=tools/need.sh
SUMMARY=
STATUS=0

note() { SUMMARY="$SUMMARY
  $*"; }
abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }

# lib OUT.so COMPILER HEADER_DIR [FLAGS...]: one side, in the background
# (the caller waits); its compiler output in OUT.so.log
lib() {
    so=$1 cc=$2 inc=$3
    shift 3
    rm -f "$so"
    echo "$cc $CFLAGS $* -I$inc bench/ab_lib.c -o $so"
    $cc $CFLAGS "$@" -I"$inc" bench/ab_lib.c -o "$so" > "$so.log" 2>&1 &
}
# built LABEL FILE...: were they all built? (else the first compiler lines)
built() {
    label=$1
    shift
    for f in "$@"; do
        if [ ! -s "$f" ]; then
            echo "ab_ports: $label: building $f FAILED"
            head -n 20 "$f.log" 2>/dev/null
            note "$label: build FAILED ($f; log $f.log)"
            STATUS=1
            return 1
        fi
    done
}
# driver LABEL COMPILER OUT: nbwd_ab itself, warnings shown
driver() {
    rm -f "$3"
    echo "$2 $ABFLAGS bench/ab.c -o $3 -ldl -lm"
    $2 $ABFLAGS bench/ab.c -o "$3" -ldl -lm > "$3.log" 2>&1
    cat "$3.log"
    built "$1" "$3"
}
# compare LABEL COMMAND...: the compare's output on stdout and in the log
compare() {
    label=$1
    shift
    log=$OUT/$(echo "$label" | tr -c 'A-Za-z0-9_\n' '_').log
    echo "--- ab $label: $*"
    start=$(date +%s)
    { "$@" 2>&1; echo $? > "$log.rc"; } | tee "$log"
    rc=$(cat "$log.rc" 2>/dev/null || echo '?')
    secs=$(($(date +%s) - start))
    last=$(grep -E '^[0-9]+ cases, [0-9]+ differ$' "$log" | tail -n 1)
    if [ -z "$last" ]; then
        note "$label: FAILED to run (exit $rc; log $log)"
        STATUS=1
        return
    fi
    note "$label: $last, ${secs} s"
    case $last in *" 0 differ") ;; *) STATUS=1 ;; esac
}
# cross LABEL TRIPLET QEMU LIBC_PKG LIBGOMP_PKG: the cross tools, installed
# when missing (root), else one line and status 1
cross() {
    label=$1 t=$2 q=$3
    if command -v "$t-gcc" > /dev/null 2>&1 && command -v "$q" > /dev/null 2>&1 &&
       [ -f "/usr/$t/include/stdio.h" ] && [ -e "/usr/$t/lib/libgomp.so.1" ]; then
        return 0
    fi
    NEED_SKIPPING="ab $label skipped" $NEED "gcc-$t" "command -v $t-gcc" &&
        NEED_SKIPPING="ab $label skipped" $NEED "$4" "test -f /usr/$t/include/stdio.h" &&
        NEED_SKIPPING="ab $label skipped" $NEED "$5" "test -e /usr/$t/lib/libgomp.so.1" &&
        NEED_SKIPPING="ab $label skipped" $NEED qemu-user "command -v $q" && return 0
    echo "ab_ports: $label: skipped (needs gcc-$t, $4, $5 and qemu-user)"
    note "$label: skipped (needs gcc-$t, $4, $5 and qemu-user)"
    return 1
}

native() {
    lib "$OUT/old.so" "$CC" "$OLD"
    lib "$OUT/new.so" "$CC" .
    wait
    lib "$OUT/old_nt.so" "$CC" "$OLD" $NT
    lib "$OUT/new_nt.so" "$CC" . $NT
    wait
    driver native "$CC" "$OUT/nbwd_ab" || return
    if built native "$OUT/old.so" "$OUT/new.so"; then
        compare native "$OUT/nbwd_ab" "$OUT/old.so" "$OUT/new.so" compare
    fi
    if built "native nt" "$OUT/old_nt.so" "$OUT/new_nt.so"; then
        compare "native nt" "$OUT/nbwd_ab" "$OUT/old_nt.so" "$OUT/new_nt.so" compare
    fi
}

emu() {
    d=$OUT/emu
    E="-Wno-psabi -DNORM_BWD_SIMD_EMULATE"
    if ! NEED_SKIPPING="ab emu skipped" $NEED libsimde-dev 'test -f /usr/include/simde/x86/sse2.h'; then
        note "emu: skipped (needs libsimde-dev)"
        return
    fi
    mkdir -p "$d"
    lib "$d/old.so" "$CC" "$OLD" $E
    lib "$d/new.so" "$CC" . $E
    wait
    lib "$d/old_nt.so" "$CC" "$OLD" $E $NT
    lib "$d/new_nt.so" "$CC" . $E $NT
    wait
    driver emu "$CC" "$d/nbwd_ab" || return
    if built emu "$d/old.so" "$d/new.so"; then
        compare emu "$d/nbwd_ab" "$d/old.so" "$d/new.so" compare --isa avx2,avx512,avx512_bf16,neon
    fi
    if built "emu nt" "$d/old_nt.so" "$d/new_nt.so"; then
        compare "emu nt" "$d/nbwd_ab" "$d/old_nt.so" "$d/new_nt.so" compare --isa avx2,avx512,avx512_bf16,neon
    fi
}

# qemu_build NAME TRIPLET QEMU [QEMU_CPU]: cross-built sides and driver,
# compared under qemu-user (dlopen works there) with the quick sweep
qemu_build() {
    name=$1 t=$2 q=$3 cpu=${4:-}
    d=$OUT/$name
    mkdir -p "$d"
    lib "$d/old.so" "$t-gcc" "$OLD"
    lib "$d/new.so" "$t-gcc" .
    wait
    driver "$name" "$t-gcc" "$d/nbwd_ab" || return
    built "$name" "$d/old.so" "$d/new.so" || return
    if [ -n "$cpu" ]; then
        compare "$name" env QEMU_LD_PREFIX="/usr/$t" QEMU_CPU="$cpu" "$q" "$d/nbwd_ab" \
            "$(abs "$d/old.so")" "$(abs "$d/new.so")" compare --quick
    else
        compare "$name" env QEMU_LD_PREFIX="/usr/$t" "$q" "$d/nbwd_ab" \
            "$(abs "$d/old.so")" "$(abs "$d/new.so")" compare --quick
    fi
}

if [ $# -eq 0 ]; then set -- native; fi
if [ ! -f "$OLD/norm_bwd.h" ]; then
    echo "ab_ports: no old headers in $OLD (make bench-ab AB_OLD=<rev> puts them there)"
    exit 2
fi
mkdir -p "$OUT"
for b in "$@"; do
    case $b in
    all) set -- native emu aarch64 armhf; break ;;
    native | emu | aarch64 | armhf) ;;
    *) echo "ab_ports: no build '$b' (native, emu, aarch64, armhf or all)"; exit 2 ;;
    esac
done
for b in "$@"; do
    case $b in
    native) native ;;
    emu) emu ;;
    aarch64)
        cross aarch64 aarch64-linux-gnu qemu-aarch64 libc6-dev-arm64-cross libgomp1-arm64-cross &&
            qemu_build aarch64 aarch64-linux-gnu qemu-aarch64 max ;;
    armhf)
        # qemu-arm's default CPU has NEON and VFPv4: the neon path runs
        cross armhf arm-linux-gnueabihf qemu-arm libc6-dev-armhf-cross libgomp1-armhf-cross &&
            qemu_build armhf arm-linux-gnueabihf qemu-arm ;;
    esac
done
echo "ab_ports: the compares (old $OLD, new .):$SUMMARY"
exit $STATUS
