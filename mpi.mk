# mpi.mk - the BatchNorm backward over a batch split across processes, as
# an engine runs it with MPI (examples/sync_batch_norm.c; issue 25).
# Included by the Makefile (-include mpi.mk); alone: make -f mpi.mk test-mpi
#   test-mpi   install Open MPI from Debian when root (openmpi-bin,
#              libopenmpi-dev; otherwise one line says the runs are skipped),
#              build the example with mpicc (-std=c99 -O2 -Werror) and run it
#              with mpirun -np 2 and -np 3, each run checking its slices
#              against one call over the whole batch (tools/check_mpi.sh;
#              make test runs it through tools/run_tests.sh)
BUILD ?= build

.PHONY: test-mpi

test-mpi:
	@BUILD=$(BUILD) tools/check_mpi.sh
