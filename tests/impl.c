/* impl.c - the one translation unit of the tests that compiles norm_bwd's
   implementation. */
#define NORM_BWD_IMPLEMENTATION
#include "norm_bwd.h"
