#!/bin/sh
# check_mpi.sh - examples/sync_batch_norm.c, the BatchNorm backward over a
# batch split across processes (nbwd_batch_norm_bwd_reduce, MPI_Allreduce,
# nbwd_batch_norm_bwd_apply), built with mpicc (C99, -O2, -Werror) and run
# by mpirun on 2 and 3 processes (MPI_NP; N = 7 images, so the slices are
# unequal). The program checks its dx, dgamma and dbeta against one call
# over the whole batch and exits non-zero on a mismatch; each mpirun is one
# check. Open MPI is Debian's (openmpi-bin, libopenmpi-dev), installed by
# tools/need.sh when root; without it (not root, or apt-get failed) one line
# says the runs are skipped, and the exit status is 0.
# Ends with a "N passed, N failed" line (make test-mpi; make test runs it).
set -u
B=${BUILD:-build}/mpi
MPI_NP=${MPI_NP:-2 3}
PASS=0 FAIL=0
ok() { PASS=$((PASS + 1)); echo "$*"; }
fail() { FAIL=$((FAIL + 1)); echo "FAIL: $*"; }

# (--no-install-recommends: libopenmpi-dev recommends Fortran coarrays)
export NEED_SKIPPING="the MPI example runs (make test-mpi) are skipped" NEED_NO_RECOMMENDS=1
tools/need.sh openmpi-bin 'command -v mpirun' &&
    tools/need.sh libopenmpi-dev 'command -v mpicc && echo "#include <mpi.h>" | mpicc -E -x c - -o /dev/null' ||
    exit 0

rm -rf "$B"; mkdir -p "$B"
exe=$B/sync_batch_norm
if mpicc -std=c99 -O2 -Wall -Wextra -pedantic -Werror -I. examples/sync_batch_norm.c -o "$exe" -lm \
        > "$B/build.log" 2>&1; then
    ok "mpicc -std=c99 -O2 -Werror examples/sync_batch_norm.c ($(mpirun --version 2>/dev/null | head -n 1))"
else
    fail "mpicc examples/sync_batch_norm.c"; head -n 20 "$B/build.log"
    echo "$PASS passed, $FAIL failed"; exit 1
fi

# More processes than cores (--oversubscribe); root needs Open MPI's consent
# (both the flag and, for the 4.1 of Debian 12, the variables). Shared
# memory without the single-copy mechanism (CMA's ptrace is refused in many
# containers); a time limit in case a launch hangs.
opts="--oversubscribe --mca btl self,vader --mca btl_vader_single_copy_mechanism none"
if [ "$(id -u)" = 0 ]; then
    opts="$opts --allow-run-as-root"
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMP_NUM_THREADS=1
for np in $MPI_NP; do
    log=$B/np$np.log
    # shellcheck disable=SC2086
    timeout 120 mpirun -np "$np" $opts "$exe" > "$log" 2> "$log.err"
    rc=$?
    if [ $rc -eq 0 ] && grep -q ': match$' "$log"; then
        ok "mpirun -np $np: $(tr '\n' ' ' < "$log" | sed 's/  */ /g; s/ $//')"
    else
        fail "mpirun -np $np ($opts): exit $rc"; cat "$log"; tail -n 20 "$log.err"
    fi
done
echo "$PASS passed, $FAIL failed"
[ $FAIL -eq 0 ]
