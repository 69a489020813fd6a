/* fuzz_impl.c - the library for the fuzz targets built with
   -DFZ_SEPARATE_IMPL (tools/sanitize.sh fuzz): compiled once with libFuzzer's
   coverage instrumentation (-fsanitize=fuzzer-no-link) and linked into every
   target, instead of each target compiling the whole header itself. */
#define NORM_BWD_IMPLEMENTATION
#include "norm_bwd.h"
