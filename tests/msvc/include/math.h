/* Minimal stand-in for the MSVC C runtime's <math.h> (tests/msvc: a compile
   check of norm_bwd.h in clang's MSVC mode; Debian has no MSVC headers).
   Declarations only, as the UCRT declares them. */
#ifndef NBWD_TEST_MSVC_MATH_H
#define NBWD_TEST_MSVC_MATH_H
double sqrt(double);
float sqrtf(float);
double fabs(double);
float fabsf(float);
double exp(double);
float expf(float);
double log(double);
float logf(float);
double floor(double);
float floorf(float);
double ceil(double);
float ceilf(float);
double pow(double, double);
double ldexp(double, int);
double frexp(double, int *);
double fmod(double, double);
double nearbyint(double);
float nearbyintf(float);
double rint(double);
float rintf(float);
double round(double);
float roundf(float);
double trunc(double);
float truncf(float);
double fma(double, double, double);
float fmaf(float, float, float);
double copysign(double, double);
float copysignf(float, float);
double fmin(double, double);
double fmax(double, double);
float fminf(float, float);
float fmaxf(float, float);
double sin(double);
double cos(double);
#define HUGE_VAL __builtin_huge_val()
#define HUGE_VALF __builtin_huge_valf()
#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
#define isnan(x) __builtin_isnan(x)
#define isinf(x) __builtin_isinf(x)
#define isfinite(x) __builtin_isfinite(x)
#define signbit(x) __builtin_signbit(x)
#endif
