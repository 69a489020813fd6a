#!/bin/sh
# The CUDA checks on a machine with a GPU, in one go: the device tests, the
# C-linked test, the benchmark, then the tests again under compute-sanitizer
# (memcheck, then racecheck over the race subset; SAN_SECONDS each, default 240, 0 skips them)
# when it exists. Uses the binaries of `make gpu`
# when they are there (build/gpu, copied from a build machine), else builds
# them. Logs go to $OUT (default build/gpu/out); each step prints its tail.
# `gpu_device_run.sh cpu` instead runs the CPU benchmark on the machine's
# own cores (build/bench/nbwd_bench and build/lib from tools/lease_kit.sh):
# the default set at 1 and 2 threads (the README's table; CPU_SECONDS,
# default 360) and BatchNorm/GroupNorm/LayerNorm rows at 1-16 threads.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu/out}
mkdir -p "$out"
if [ "${1:-}" = cpu ]; then
    final=$out out=/tmp/nbwd_cpu  # logs and CSVs, then one archive in $OUT
    mkdir -p /tmp/nbwd_lib $out
    for f in build/lib/*; do
        case $f in *.xz) xz -dc "$f" > /tmp/nbwd_lib/"$(basename "$f" .xz)" ;; *) cp "$f" /tmp/nbwd_lib/ ;; esac
    done
    export LD_LIBRARY_PATH="/tmp/nbwd_lib:${LD_LIBRARY_PATH:-}"
    lscpu | grep -E 'Model name|^CPU\(s\)'
    # the default set (nbwd_bench --default-shapes) in three parts, so that
    # a part cut off by its time loses that part alone
    all=$(build/bench/nbwd_bench --default-shapes)
    for i in 1 2 3; do # LayerNorm and RMSNorm, BatchNorm, the others
        shapes=$(echo "$all" | tr ',' '\n' | awk -v p=$i '{ q = /^(ln|rms)/ ? 1 : /^bn/ ? 2 : 3 } q == p' | paste -sd, -)
        timeout $(( ${CPU_SECONDS:-360} / 3 )) build/bench/nbwd_bench --threads 1,2 --shapes "$shapes" \
            --csv "$out/cpu_1_2_$i.csv" >"$out/cpu_1_2_$i.log" 2>&1
        echo "== default set part $i, 1 and 2 threads: exit $?"; grep -E '^[A-Za-z]+(\+res)? +(row|N[A-Z]*) ' "$out/cpu_1_2_$i.log"
    done
    timeout 150 build/bench/nbwd_bench --threads 1,2,4,8,16 --reps 7 --csv "$out/cpu_scaling.csv" \
        --shapes ln:32768x768,rms:16384x4096,bn-nxc:32x64x56x56,bn-ncx:32x64x56x56,bn-nxc-relu:32x64x56x56,gn-nxc:16x128x128x128/32,gn-ncx:16x128x128x128/32 \
        >"$out/cpu_scaling.log" 2>&1
    echo "== scaling: exit $?"; grep -E '^[A-Za-z]+ +(row|N[A-Z]*) ' "$out/cpu_scaling.log"
    tar -czf "$final/cpu.tgz" -C "$out" .
    exit 0
fi
export LD_LIBRARY_PATH="$PWD/build/gpu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv 2>&1 | tee "$out/smi.txt"
[ -x build/gpu/test_gpu ] || make gpu >"$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 1; }
step() { # name seconds command...
    name=$1; secs=$2; shift 2
    t0=$(date +%s)
    timeout "$secs" "$@" >"$out/$name.log" 2>&1
    rc=$?
    echo "== $name: exit $rc, $(( $(date +%s) - t0 )) s"
    tail -n "${TAIL:-4}" "$out/$name.log"
}
step test_gpu 180 build/gpu/test_gpu
step test_gpu_link 60 build/gpu/test_gpu_link
TAIL=40 step bench_gpu 180 build/gpu/bench_gpu
san=${SAN_SECONDS:-240}
if [ "$san" -gt 0 ] && command -v compute-sanitizer >/dev/null 2>&1; then
    step memcheck "$san" compute-sanitizer --tool memcheck --error-exitcode 3 build/gpu/test_gpu
    # racecheck is far slower: one small case per kernel family and shared-memory
    # scheme (NBWDT_GPU_RACE; about 30 s on an H200)
    NBWDT_GPU_RACE=1 step racecheck "$san" compute-sanitizer --tool racecheck --error-exitcode 3 build/gpu/test_gpu
fi
