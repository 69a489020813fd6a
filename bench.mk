# bench.mk - the benchmark (issue 4). Included by the main Makefile; also
# works alone: make -f bench.mk bench
#   make bench         install what is missing (as root: libdnnl-dev,
#                      gnuplot-nox; otherwise one line each and go on), build
#                      $(BUILD)/bench/nbwd_bench and run the default set:
#                      one table on stdout, plus $(BUILD)/bench/results.csv
#                      and results.png (when gnuplot is there)
#   make bench-build   build only (oneDNN columns only if dnnl.h is found)
#   make bench BENCH_ARGS='--quick --shapes ln:8192x1024'   other options
# Plain -O2 -fopenmp, no -march: the library picks its SIMD path at run time.
CC ?= cc
BUILD ?= build
BENCH_OUT = $(BUILD)/bench
BENCH_BIN = $(BENCH_OUT)/nbwd_bench
BENCH_CFLAGS ?= -std=c99 -O2 -fopenmp -Wall -Wextra -pedantic
BENCH_ARGS ?= --csv $(BENCH_OUT)/results.csv --plot $(BENCH_OUT)/results.png

# The oneDNN probe runs when the recipe runs (after a possible install).
BENCH_BUILD_CMD = mkdir -p $(BENCH_OUT) && \
	if printf '\#include <dnnl.h>\nint main(void){return 0;}\n' | $(CC) -x c -o /dev/null - -ldnnl >/dev/null 2>&1; \
	then bench_dnnl="-DNBWD_BENCH_ONEDNN"; bench_lib="-ldnnl"; \
	else bench_dnnl=""; bench_lib=""; echo "bench: dnnl.h not found, building without oneDNN"; fi; \
	if bench_rev=$$(git rev-parse --short HEAD 2>/dev/null); then \
	    git diff --quiet HEAD -- norm_bwd.h norm_bwd_simd.h || bench_rev="$$bench_rev+modified"; \
	else bench_rev=unknown; fi; \
	echo "$(CC) $(BENCH_CFLAGS) -I. bench/bench.c bench/onednn.c $$bench_dnnl -o $(BENCH_BIN) $$bench_lib -lm"; \
	$(CC) $(BENCH_CFLAGS) -I. -DNBWD_BENCH_REV="\"$$bench_rev\"" bench/bench.c bench/onednn.c $$bench_dnnl \
	    -o $(BENCH_BIN) $$bench_lib -lm

.PHONY: bench bench-build

bench-build:
	@$(BENCH_BUILD_CMD)

bench:
	@CC="$(CC)" sh bench/deps.sh
	@$(BENCH_BUILD_CMD)
	$(BENCH_BIN) $(BENCH_ARGS)
