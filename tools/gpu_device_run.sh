#!/bin/sh
# The CUDA checks on a machine with a GPU, in one go: the device tests, the
# C-linked test, the benchmark, then the tests again under compute-sanitizer
# (memcheck, then racecheck over the race subset; SAN_SECONDS each, default 240, 0 skips them)
# when it exists. Uses the binaries of `make gpu`
# when they are there (build/gpu, copied from a build machine), else builds
# them. Logs go to $OUT (default build/gpu/out); each step prints its tail.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu/out}
mkdir -p "$out"
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
