#!/bin/sh
# check_isa.sh - a plain `cc -O2` object (no -m flags) must carry real AVX2
# and AVX-512 code: the AVX2 kernels use ymm registers and FMA, the AVX-512
# kernels zmm registers and k masks, and VCVTNEPS2BF16 (with VFPCLASSPS for the
# denormal test) in their 16-bit kernels, which avx512_bf16 runs. Reads the
# disassembly of each function.
set -u
B=${BUILD:-build}/check-isa
CC=${CC:-cc}
mkdir -p "$B"
PASS=0 FAIL=0
printf '#define NORM_BWD_IMPLEMENTATION\n#include "norm_bwd.h"\nint nbwd_check_isa_anchor(void) { return (int)nbwd_active_isa(); }\n' > "$B/isa.c"
$CC -std=c99 -O2 -I. -c "$B/isa.c" -o "$B/isa.o" || { echo "0 passed, 1 failed"; exit 1; }
objdump -d --no-show-raw-insn "$B/isa.o" > "$B/isa.s"

expect() { # function regex description
    body=$(awk -v f="<$1>:" '$2 == f { on = 1; next } on && /^$/ { exit } on' "$B/isa.s")
    if [ -z "$body" ]; then FAIL=$((FAIL + 1)); echo "FAIL: $1 not found in the object"; return; fi
    n=$(printf '%s\n' "$body" | grep -cE "$2")
    if [ "$n" -gt 0 ]; then PASS=$((PASS + 1)); echo "ok: $1: $n instructions with $3"
    else FAIL=$((FAIL + 1)); echo "FAIL: $1 has no $3"; fi
}
# Each path compiles its kernels twice, for f32 data (_f32_) and for bf16/f16
# data (_16_): ln_rows_* (LayerNorm entry; the one-pass row pipeline is
# ln_rows_dx_*), ln_narrow_*_<vectors> (narrow rows), bn_rows_* (BatchNorm
# NXC), planes_* (BatchNorm NCX). avx512_bf16 and neon_bf16 run avx512's and
# neon's kernels, which hold both bf16 narrowings.
for f in nbwd__planes_reduce_f32_avx2 nbwd__planes_apply_f32_avx2 nbwd__ln_rows_dx_f32_avx2 nbwd__ln_rows_dx_16_avx2 \
         nbwd__ln_narrow_f32_3_avx2 nbwd__bn_rows_f32_avx2; do
    expect $f '%ymm' 'ymm registers'
    expect $f 'vfmadd|vfnmadd' 'FMA'
done
expect nbwd__planes_apply_16_avx2 'vcvtph2ps' 'F16C widening'
expect nbwd__planes_apply_16_avx2 'vcvtps2ph' 'F16C narrowing'
expect nbwd__ln_rows_dx_16_avx2 'vcvtps2ph' 'F16C narrowing'
expect nbwd__ln_narrow_f32_3_avx2 'vmaskmovps' 'masked loads (partial vectors)'
for f in nbwd__planes_reduce_f32_avx512 nbwd__planes_apply_f32_avx512 nbwd__ln_rows_dx_f32_avx512 \
         nbwd__ln_rows_dx_16_avx512 nbwd__ln_narrow_f32_2_avx512 nbwd__bn_rows_f32_avx512; do
    expect $f '%zmm' 'zmm registers'
    expect $f 'vfmadd|vfnmadd' 'FMA'
done
expect nbwd__planes_apply_16_avx512 '%k[1-7]' 'mask registers (bf16 NaN lanes)'
expect nbwd__bn_rows_16_avx512 '%k[1-7]' 'mask registers (bf16 NaN lanes)'
expect nbwd__ln_narrow_f32_2_avx512 '%k[1-7]' 'mask registers (partial vectors)'
for f in nbwd__planes_apply_16_avx512 nbwd__ln_rows_dx_16_avx512 nbwd__ln_narrow_16_2_avx512 \
         nbwd__bn_rows_16_avx512 nbwd__narrow_avx512; do
    expect $f 'vcvtneps2bf16' 'AVX512_BF16 narrowing'
done
expect nbwd__ln_rows_dx_16_avx512 'vfpclassps' 'AVX512DQ denormal test (VFPCLASSPS)'
# AArch64 (when the cross compiler is here): neon_bf16 narrows with BFCVTN
if command -v aarch64-linux-gnu-gcc >/dev/null 2>&1; then
    aarch64-linux-gnu-gcc -std=c99 -O2 -I. -c "$B/isa.c" -o "$B/isa_a64.o" || { FAIL=$((FAIL + 1)); echo "FAIL: aarch64 build"; }
    aarch64-linux-gnu-objdump -d --no-show-raw-insn "$B/isa_a64.o" > "$B/isa.s"
    for f in nbwd__ln_rows_dx_16_neon nbwd__bn_rows_16_neon nbwd__narrow_neon; do
        expect $f 'bfcvtn' 'BFCVTN (Armv8.6 BF16) narrowing'
    done
    expect nbwd__ln_rows_dx_f32_neon 'fmla' 'NEON FMA'
fi
echo "$PASS passed, $FAIL failed"
[ $FAIL -eq 0 ]
