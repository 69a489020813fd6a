/* bench/ab_lib.c - one side of bench/ab.c's A/B: the implementation of
   whichever norm_bwd.h the include path finds first, as a shared object. */
#define NORM_BWD_IMPLEMENTATION
#include "norm_bwd.h"
