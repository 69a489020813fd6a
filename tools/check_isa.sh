#!/bin/sh
# check_isa.sh - a plain `cc -O2` object (no -m flags) must carry real AVX2
# and AVX-512 code: the AVX2 kernels use ymm registers and FMA, the AVX-512
# kernels zmm registers and k masks, and VCVTNEPS2BF16 (with VFPCLASSPS for the
# denormal test) in their bf16i kernels, which avx512_bf16 runs, and nowhere
# else; the sse path has 16-bit kernels of its own. Reads the disassembly of
# each function.
#   ISA_OBJ=FILE: read FILE, the implementation file already built by the
#   same compiler as `$CC -std=c99 -O2 -I. -c`, instead of building it (make
#   test passes the compile-cost gate's gcc -O2 object when CC is that gcc)
set -u
B=${BUILD:-build}/check-isa
CC=${CC:-cc}
mkdir -p "$B"
PASS=0 FAIL=0
printf '#define NORM_BWD_IMPLEMENTATION\n#include "norm_bwd.h"\n' > "$B/isa.c"
if [ -n "${ISA_OBJ:-}" ]; then
    [ -s "$ISA_OBJ" ] || { echo "FAIL: ISA_OBJ=$ISA_OBJ: no such object"; echo "0 passed, 1 failed"; exit 1; }
    echo "reading $ISA_OBJ (the implementation file, built with gcc -std=c99 -O2)"
    cp "$ISA_OBJ" "$B/isa.o"
else
    $CC -std=c99 -O2 -I. -c "$B/isa.c" -o "$B/isa.o" || { echo "0 passed, 1 failed"; exit 1; }
fi
objdump -d --no-show-raw-insn "$B/isa.o" > "$B/isa.s"

expect() { # function regex description (the function with the clones the
            # compiler split off it, such as name.part.0)
    body=$(awk -v f="$1" '$2 == "<" f ">:" || index($2, "<" f ".") == 1 { on = 1; next } on && /^$/ { on = 0 } on' \
        "$B/isa.s")
    if [ -z "$body" ]; then FAIL=$((FAIL + 1)); echo "FAIL: $1 not found in the object"; return; fi
    n=$(printf '%s\n' "$body" | grep -cE "$2")
    if [ "$n" -gt 0 ]; then PASS=$((PASS + 1)); echo "ok: $1: $n instructions with $3"
    else FAIL=$((FAIL + 1)); echo "FAIL: $1 has no $3"; fi
}
# Kernel names: nbwd__<kernel>_<format>_<path> (norm_bwd.h, ENTRY POINTS):
# formats f32, 16 (bf16/f16 data), bf16i (bf16 narrowed by the path's bf16
# instruction, which only avx512_bf16's and neon_bf16's tables name);
# ln_rows_dx (the LayerNorm row pipeline), ln_narrow<vectors> (narrow rows),
# bn_rows (BatchNorm NXC), planes_* (BatchNorm NCX).
for f in nbwd__planes_reduce_f32_avx2 nbwd__planes_apply_f32_avx2 nbwd__ln_rows_dx_f32_avx2 nbwd__ln_rows_dx_16_avx2 \
         nbwd__ln_narrow3_f32_avx2 nbwd__bn_rows_f32_avx2; do
    expect $f '%ymm' 'ymm registers'
    expect $f 'vfmadd|vfnmadd' 'FMA'
done
expect nbwd__planes_apply_16_avx2 'vcvtph2ps' 'F16C widening'
expect nbwd__planes_apply_16_avx2 'vcvtps2ph' 'F16C narrowing'
expect nbwd__ln_rows_dx_16_avx2 'vcvtps2ph' 'F16C narrowing'
expect nbwd__ln_narrow3_f32_avx2 'vmaskmovps' 'masked loads (partial vectors)'
expect nbwd__bn_relu_rows_f32_avx2 'vfmadd|vfnmadd' 'FMA'
expect nbwd__bn_relu_rows_f32_avx2 'vmovmskps' "the fused ReLU's mask bits"
expect nbwd__bn_relu_rows_16_avx2 'vmovmskps' "the fused ReLU's mask bits"
expect nbwd__bn_relu_rows_16_avx2 'vcvtph2ps' 'F16C widening'
for f in nbwd__planes_reduce_f32_avx512 nbwd__planes_apply_f32_avx512 nbwd__ln_rows_dx_f32_avx512 \
         nbwd__ln_rows_dx_16_avx512 nbwd__ln_narrow2_f32_avx512 nbwd__bn_rows_f32_avx512; do
    expect $f '%zmm' 'zmm registers'
    expect $f 'vfmadd|vfnmadd' 'FMA'
done
expect nbwd__planes_apply_16_avx512 '%k[1-7]' 'mask registers (bf16 NaN lanes)'
expect nbwd__bn_rows_16_avx512 '%k[1-7]' 'mask registers (bf16 NaN lanes)'
expect nbwd__ln_narrow2_f32_avx512 '%k[1-7]' 'mask registers (partial vectors)'
expect nbwd__bn_relu_rows_f32_avx512 '%zmm' 'zmm registers'
expect nbwd__bn_relu_rows_f32_avx512 '%k[1-7]' "mask registers (the fused ReLU's bits)"
expect nbwd__bn_relu_rows_16_avx512 '%k[1-7]' "mask registers (the fused ReLU's bits)"
for f in nbwd__planes_apply_bf16i_avx512 nbwd__ln_rows_dx_bf16i_avx512 nbwd__ln_narrow2_bf16i_avx512 \
         nbwd__bn_rows_bf16i_avx512 nbwd__bn_relu_rows_bf16i_avx512 nbwd__add_store_bf16i_avx512 \
         nbwd__narrow_bf16i_avx512; do
    expect $f 'vcvtneps2bf16' 'AVX512_BF16 narrowing'
done
expect nbwd__ln_rows_dx_bf16i_avx512 'vfpclassps' 'AVX512DQ denormal test (VFPCLASSPS)'
# the avx512 path runs on CPUs without AVX512_BF16: no other kernel holds it
n=$(awk '/^[0-9a-f]+ <nbwd__/ { f = $2 } /vcvtneps2bf16/ && f !~ /_bf16i_avx512>:$/ { print f }' "$B/isa.s" | sort -u)
if [ -z "$n" ]; then PASS=$((PASS + 1)); echo "ok: VCVTNEPS2BF16 only in the bf16i kernels"
else FAIL=$((FAIL + 1)); echo "FAIL: VCVTNEPS2BF16 outside the bf16i kernels: $n"; fi
# sse: 16-bit data in its own kernels (SSE2: the bf16 pack, 4-lane vectors)
expect nbwd__ln_rows_dx_16_sse 'packssdw' 'SSE2 bf16 packing'
expect nbwd__planes_apply_16_sse '%xmm' 'xmm registers'
# AArch64 (when the cross compiler is here): neon_bf16 narrows with BFCVTN
if command -v aarch64-linux-gnu-gcc >/dev/null 2>&1; then
    aarch64-linux-gnu-gcc -std=c99 -O2 -I. -c "$B/isa.c" -o "$B/isa_a64.o" || { FAIL=$((FAIL + 1)); echo "FAIL: aarch64 build"; }
    aarch64-linux-gnu-objdump -d --no-show-raw-insn "$B/isa_a64.o" > "$B/isa.s"
    for f in nbwd__ln_rows_dx_bf16i_neon nbwd__bn_rows_bf16i_neon nbwd__bn_relu_rows_bf16i_neon nbwd__narrow_bf16i_neon; do
        expect $f 'bfcvtn' 'BFCVTN (Armv8.6 BF16) narrowing'
    done
    n=$(awk '/^[0-9a-f]+ <nbwd__/ { f = $2 } /bfcvtn/ && f !~ /_bf16i_neon>:$/ { print f }' "$B/isa.s" | sort -u)
    if [ -z "$n" ]; then PASS=$((PASS + 1)); echo "ok: BFCVTN only in the bf16i kernels"
    else FAIL=$((FAIL + 1)); echo "FAIL: BFCVTN outside the bf16i kernels: $n"; fi
    expect nbwd__ln_rows_dx_f32_neon 'fmla' 'NEON FMA'
    expect nbwd__bn_relu_rows_f32_neon 'cmtst' "the fused ReLU's mask from its bits"
    expect nbwd__bn_relu_rows_16_neon 'cmtst' "the fused ReLU's mask from its bits"
else
    echo "skipped: the AArch64 checks (no aarch64-linux-gnu-gcc: gcc-aarch64-linux-gnu)"
fi
echo "$PASS passed, $FAIL failed"
[ $FAIL -eq 0 ]
