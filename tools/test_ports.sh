#!/bin/sh
# test_ports.sh - the test suite on targets other than the x86-64 host
# (`make test-ports`, run by .ci/run):
#   i386     gcc -m32, default flags (x87 float math) and -msse2
#            -mfpmath=sse, every x86 path, run natively
#   s390x    big-endian, float arithmetic evaluated in double under
#            -std=c99: the scalar path, -std=c99 and -std=gnu11, under
#            qemu-s390x
#   armhf    32-bit Arm, hard-float (gcc -fopenmp): the neon path (chosen at
#            run time from HWCAP) and scalar under qemu-arm, and the choice
#            itself on a CPU with NEON but no VFPv4 (cortex-a8: scalar)
#   tcc      a C99 compiler with no GNU extensions (inline assembly, atomic
#            builtins, attributes): NORM_BWD_NO_SIMD, the scalar path
#   wasm32   clang --target=wasm32-wasi -msimd128 (the sse path in SIMD128
#            through SIMDe, and scalar), run under node's WASI
#   windows  MinGW-w64 gcc (posix threads, OpenMP) builds the suite, wine
#            runs every x86 path (the OpenMP DLLs copied beside it); clang-cl
#            compiles the implementation twice against stand-ins for the
#            MSVC C runtime headers (tests/msvc/include): as clang-cl itself
#            (target attributes, every x86 path), and with __clang__
#            undefined and /arch:AVX512, which takes the library's MSVC
#            branch (__cpuidex, _xgetbv, __forceinline, __declspec(thread),
#            volatile atomics, no target attributes) as MSVC would; each
#            compile must give the paths listed here (from its object's
#            kernel tables); clang 16's cl driver (Debian's clang-16) also
#            compiles it with target attributes
# The runs use --quick (emulation is slow; the quick sweeps still cover
# every kind of case). Builds go two at a time (the machine has 2 cores);
# the four qemu runs then go in two chains beside the other runs. Each run
# prints one line: passed, failed, or skipped with the reason (a missing
# package that cannot be installed). The last line adds them up: "N passed,
# N failed".
set -u
B=${BUILD:-build}/ports
NEED=tools/need.sh
mkdir -p "$B"
SRC="tests/impl.c tests/main.c tests/reference.c $(ls tests/test_*.c | tr '\n' ' ')"
# (as the Makefile's test builds: the non-temporal stores and GroupNorm NXC's chunks at test sizes)
FLAGS="-O2 -Wall -Wextra -pedantic -Werror -DNORM_BWD_STREAM_BYTES=16384 -DNBWD__GN_CHUNKED_BYTES=4096 -DNBWD__GN_RESIDENT_BYTES=8192 -Itests -I."
P=0 F=0

# report LABEL LOG RC: one result line from the suite's last line
report() {
    label=$1 log=$2 rc=$3
    last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    if [ -z "$last" ]; then
        echo "--- $label: FAILED to run (exit $rc; log $log)"; tail -n 5 "$log"; F=$((F + 1)); return
    fi
    p=${last%% *}
    f=$(echo "$last" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')
    if [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ "$rc" -eq 0 ] && grep -q 'skipped' "$log"; then
        echo "--- $label: skipped ($(grep -m1 skipped "$log"))"
        return
    fi
    P=$((P + p)); F=$((F + f))
    [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && F=$((F + 1))
    echo "--- $label: $p passed, $f failed"
    [ "$f" -ne 0 ] && grep -A3 'FAIL in' "$log" | head -n 20
}
# build OUT COMPILER FLAGS... (in the background: the caller waits)
build() {
    out=$1; shift
    rm -f "$out"
    "$@" $SRC -o "$out" -lm > "$out.build.log" 2>&1 &
}
built() { # LABEL OUT: did it build?
    if [ -x "$2" ]; then return 0; fi
    echo "--- $1: build FAILED"; head -n 20 "$2.build.log"; F=$((F + 1)); return 1
}

# i386: Debian's lib32gcc-12-dev and libc6-dev-i386 make gcc -m32 work
# (gcc-multilib would remove the cross compilers).
echo 'int main(void) { return 0; }' > "$B/m32.c"
rm -f "$B/m32"
m32_ok() { gcc -m32 "$B/m32.c" -o "$B/m32" 2>/dev/null && "$B/m32" 2>/dev/null; }
i386=0
if m32_ok || { NEED_SKIPPING="i386 skipped" $NEED lib32gcc-12-dev 'test -f /usr/lib/gcc/x86_64-linux-gnu/12/32/libgcc.a' &&
               NEED_SKIPPING="i386 skipped" $NEED libc6-dev-i386 'test -f /usr/lib32/crt1.o' && m32_ok; }; then
    i386=1
elif [ -x "$B/m32" ]; then # built, but the kernel refused to run it
    echo "--- i386: skipped (gcc -m32 builds, but this kernel cannot run 32-bit x86 programs: no IA32 emulation)"
else
    echo "--- i386: skipped (gcc -m32 cannot build a program: lib32gcc-12-dev, libc6-dev-i386)"
fi
# cross LABEL TRIPLET LIBC_PACKAGE QEMU: a cross gcc, its C library and qemu,
# installed when missing; else one "skipped" line and status 1
cross() {
    { command -v "$2-gcc" && command -v "$4"; } >/dev/null 2>&1 && return 0
    NEED_SKIPPING="$1 skipped" $NEED "gcc-$2" "command -v $2-gcc" &&
        NEED_SKIPPING="$1 skipped" $NEED "$3" "test -f /usr/$2/include/stdio.h" &&
        NEED_SKIPPING="$1 skipped" $NEED qemu-user "command -v $4" && return 0
    echo "--- $1: skipped (needs gcc-$2, $3 and qemu-user)"
    return 1
}
s390x=0
cross s390x s390x-linux-gnu libc6-dev-s390x-cross qemu-s390x && s390x=1
armhf=0
cross armhf arm-linux-gnueabihf libc6-dev-armhf-cross qemu-arm && armhf=1

tcc=0
if command -v tcc >/dev/null 2>&1 || NEED_SKIPPING="tcc skipped" $NEED tcc 'command -v tcc'; then
    tcc=1
else
    echo "--- tcc: skipped (needs tcc)"
fi

wasm=0
if command -v node >/dev/null 2>&1 &&
   NEED_SKIPPING="wasm32 skipped" $NEED wasi-libc 'test -f /usr/lib/wasm32-wasi/libc.a' &&
   NEED_SKIPPING="wasm32 skipped" $NEED libclang-rt-14-dev-wasm32 \
       'ls /usr/lib/llvm-14/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a'; then
    wasm=1
else
    echo "--- wasm32: skipped (needs node, wasi-libc and libclang-rt-14-dev-wasm32)"
fi

# Windows: Debian 12 installs wine64's loader as /usr/lib/wine/wine64
WINE=$(command -v wine64 || { test -x /usr/lib/wine/wine64 && echo /usr/lib/wine/wine64; } || command -v wine)
mingw=0
if { command -v x86_64-w64-mingw32-gcc-posix && [ -n "$WINE" ]; } >/dev/null 2>&1 ||
   { NEED_NO_RECOMMENDS=1 NEED_SKIPPING="windows (MinGW) skipped" $NEED gcc-mingw-w64-x86-64-posix \
         'command -v x86_64-w64-mingw32-gcc-posix' &&
     NEED_NO_RECOMMENDS=1 NEED_SKIPPING="windows (MinGW) skipped" $NEED wine64 'test -x /usr/lib/wine/wine64' &&
     WINE=$(command -v wine64 || echo /usr/lib/wine/wine64); }; then
    mingw=1
else
    echo "--- windows (MinGW): skipped (needs gcc-mingw-w64-x86-64-posix and wine64)"
fi
CLANG_CL=$(command -v clang-cl-14 || command -v clang-cl)
LLVM_NM=$(command -v llvm-nm-14 || command -v llvm-nm)
msvc=0
if [ -n "$CLANG_CL" ] && [ -n "$LLVM_NM" ]; then
    msvc=1
else
    echo "--- windows (clang-cl): skipped (needs clang-cl and llvm-nm: Debian's clang-14 and llvm-14)"
fi
cl16=0
if [ $msvc = 1 ] && { command -v clang-16 >/dev/null 2>&1 ||
                      NEED_NO_RECOMMENDS=1 NEED_SKIPPING="windows (clang-cl 16) skipped" $NEED clang-16 'command -v clang-16'; }; then
    cl16=1
fi
# SIMDe is header-only: the Windows builds take it from the host's
# /usr/include (not all of /usr/include, which is glibc's)
mkdir -p "$B/win_inc"
[ -d /usr/include/simde ] && ln -sfn /usr/include/simde "$B/win_inc/simde"

if [ $mingw = 1 ]; then
    # __USE_MINGW_ANSI_STDIO: C99 printf (%zu) instead of msvcrt's
    build "$B/suite.exe" x86_64-w64-mingw32-gcc-posix -std=c99 $FLAGS -D__USE_MINGW_ANSI_STDIO=1 \
        -isystem "$B/win_inc" -fopenmp
fi
if [ $msvc = 1 ]; then
    printf '#define NORM_BWD_IMPLEMENTATION\n#include "norm_bwd.h"\n' > "$B/msvc_impl.c"
    CL_FLAGS="/nologo /c /O2 /W4 /WX /TC /I. /imsvc tests/msvc/include /imsvc $B/win_inc"
    rm -f "$B/clang_cl.obj" "$B/msvc_model.obj" "$B/clang_cl16.obj"
    "$CLANG_CL" $CL_FLAGS /Fo"$B/clang_cl.obj" "$B/msvc_impl.c" > "$B/clang_cl.log" 2>&1 &
    [ $cl16 = 1 ] && clang-16 --driver-mode=cl $CL_FLAGS /Fo"$B/clang_cl16.obj" "$B/msvc_impl.c" > "$B/clang_cl16.log" 2>&1 &
    "$CLANG_CL" $CL_FLAGS /arch:AVX512 -U__clang__ -Wno-builtin-macro-redefined \
        /Fo"$B/msvc_model.obj" "$B/msvc_impl.c" > "$B/msvc_model.log" 2>&1 &
fi
if [ $wasm = 1 ]; then
    build "$B/suite.wasm" clang --target=wasm32-wasi --sysroot=/usr -msimd128 -std=c99 $FLAGS
fi
if [ $tcc = 1 ]; then
    rm -f "$B/tcc"
    tcc -Wall -Werror -DNORM_BWD_NO_SIMD -DNORM_BWD_STREAM_BYTES=16384 -Itests -I. $SRC -o "$B/tcc" -lm > "$B/tcc.build.log" 2>&1
fi
if [ $i386 = 1 ]; then
    build "$B/i386_x87" gcc -m32 -std=c99 $FLAGS -fopenmp
    build "$B/i386_sse2" gcc -m32 -std=c99 -msse2 -mfpmath=sse $FLAGS -fopenmp
    wait
fi
if [ $armhf = 1 ]; then
    build "$B/armhf" arm-linux-gnueabihf-gcc -std=c99 $FLAGS -fopenmp
fi
if [ $s390x = 1 ]; then
    build "$B/s390x_c99" s390x-linux-gnu-gcc -std=c99 $FLAGS
    build "$B/s390x_gnu11" s390x-linux-gnu-gcc -std=gnu11 $FLAGS
fi
wait # (every build, the clang-cl compiles too)
# The four qemu runs (a minute or more each, one core each) start now, in
# two chains beside the runs below; their results are reported at the end.
qemu_run() { # LOG [VAR=VALUE]... COMMAND...: its output into LOG, its status into LOG.rc
    log=$1; shift
    env "$@" > "$log" 2>&1; echo $? > "$log.rc"
}
qemu_s390x() { # std
    qemu_run "$B/s390x_$1.log" QEMU_LD_PREFIX=/usr/s390x-linux-gnu qemu-s390x "$B/s390x_$1" --isa scalar --quick
}
qemu_armhf() { # isa
    qemu_run "$B/armhf.$1.log" QEMU_LD_PREFIX=/usr/arm-linux-gnueabihf qemu-arm "$B/armhf" --isa $1 --quick
}
rm -f "$B"/*.log.rc # (a run that does not happen must not report an old status)
s390x_ok=0 armhf_ok=0
[ $s390x = 1 ] && [ -x "$B/s390x_c99" ] && [ -x "$B/s390x_gnu11" ] && s390x_ok=1
[ $armhf = 1 ] && [ -x "$B/armhf" ] && armhf_ok=1
( [ $s390x_ok = 1 ] && qemu_s390x c99; [ $armhf_ok = 1 ] && qemu_armhf neon ) &
qemu1=$!
( [ $s390x_ok = 1 ] && qemu_s390x gnu11; [ $armhf_ok = 1 ] && qemu_armhf scalar ) &
qemu2=$!

if [ $i386 = 1 ]; then
    for mode in x87 sse2; do
        built "i386 $mode" "$B/i386_$mode" || continue
        for isa in scalar sse avx2 avx512 avx512_bf16; do
            "$B/i386_$mode" --isa $isa --quick > "$B/i386_$mode.$isa.log" 2>&1
            report "i386 ($mode math) $isa" "$B/i386_$mode.$isa.log" $?
        done
    done
fi
if [ $msvc = 1 ]; then
    # compiled OBJ LABEL EXPECTED: the paths in OBJ's kernel tables, as expected?
    compiled() {
        paths=$("$LLVM_NM" "$1" 2>/dev/null | sed -n 's/.* nbwd__kernels_//p' | sort | tr '\n' ' ' | sed 's/ $//')
        want=$(echo $3 | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//')
        if [ ! -f "$1" ]; then
            echo "--- $2: compile FAILED"; head -n 20 "${1%.obj}.log"; F=$((F + 1))
        elif [ "$paths" != "$want" ]; then
            echo "--- $2: paths [$paths], expected [$want]"; F=$((F + 1))
        else
            echo "--- $2: compiled, paths $paths"; P=$((P + 1))
        fi
    }
    simd_sse=sse
    [ -d /usr/include/simde ] || simd_sse=
    compiled "$B/clang_cl.obj" "windows clang-cl 14 (target attributes)" "scalar $simd_sse avx2 avx512 avx512_bf16"
    [ $cl16 = 1 ] && compiled "$B/clang_cl16.obj" "windows clang-cl 16 (target attributes)" \
        "scalar $simd_sse avx2 avx512 avx512_bf16"
    compiled "$B/msvc_model.obj" "windows MSVC branch (clang-cl, __clang__ undefined, /arch:AVX512)" \
        "scalar $simd_sse avx2 avx512"
fi
if [ $mingw = 1 ] && built "windows (MinGW)" "$B/suite.exe"; then
    for dll in libgomp-1.dll libwinpthread-1.dll libgcc_s_seh-1.dll; do
        cp "$(x86_64-w64-mingw32-gcc-posix -print-file-name=$dll)" "$B/" 2>/dev/null
    done
    for isa in scalar sse avx2 avx512 avx512_bf16; do
        for try in 1 2; do
            WINEPREFIX="$PWD/$B/wineprefix" WINEDEBUG=-all "$WINE" "$B/suite.exe" --isa $isa --quick \
                > "$B/win.$isa.log" 2>&1
            rc=$?
            # wine's own server link can drop before the suite prints a
            # line ("wine client error: ... Connection reset by peer", seen
            # in CI): that run says nothing about the library, so once more
            if [ $try = 1 ] && ! grep -qE '^[0-9]+ passed, [0-9]+ failed' "$B/win.$isa.log" &&
                grep -q 'wine client error' "$B/win.$isa.log"; then
                echo "--- windows $isa: wine lost its server ($(grep -m1 'wine client error' "$B/win.$isa.log")): run again"
                continue
            fi
            break
        done
        report "windows MinGW-w64 gcc 12 + OpenMP (wine) $isa" "$B/win.$isa.log" $rc
    done
fi
if [ $wasm = 1 ] && built "wasm32" "$B/suite.wasm"; then
    for isa in sse scalar; do
        node tools/run_wasi.mjs "$B/suite.wasm" --isa $isa --quick > "$B/wasm.$isa.log" 2>&1
        report "wasm32 SIMD128 (node) $isa" "$B/wasm.$isa.log" $?
    done
fi
if [ $tcc = 1 ] && built "tcc" "$B/tcc"; then
    "$B/tcc" --isa scalar --quick > "$B/tcc.log" 2>&1
    report "tcc NORM_BWD_NO_SIMD scalar" "$B/tcc.log" $?
fi
wait $qemu1 $qemu2
if [ $s390x = 1 ]; then
    for std in c99 gnu11; do
        if built "s390x $std" "$B/s390x_$std" && [ -f "$B/s390x_$std.log.rc" ]; then
            report "s390x -std=$std scalar (qemu)" "$B/s390x_$std.log" "$(cat "$B/s390x_$std.log.rc")"
        fi
    done
fi
if [ $armhf = 1 ] && built "armhf" "$B/armhf"; then
    for isa in neon scalar; do
        report "armhf gcc 12 + OpenMP $isa (qemu-arm)" "$B/armhf.$isa.log" "$(cat "$B/armhf.$isa.log.rc")"
    done
    # NEON without VFPv4's fused multiply-add: the dispatcher must pick scalar
    QEMU_CPU=cortex-a8 QEMU_LD_PREFIX=/usr/arm-linux-gnueabihf qemu-arm "$B/armhf" --suite detect \
        > "$B/armhf.a8.log" 2>&1
    report "armhf path choice on a cortex-a8 (NEON, no VFPv4: scalar)" "$B/armhf.a8.log" $?
fi

echo "$P passed, $F failed"
[ $F -eq 0 ]
