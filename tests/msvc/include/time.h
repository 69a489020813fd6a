/* Minimal stand-in for the MSVC C runtime's <time.h> (see math.h here). */
#ifndef NBWD_TEST_MSVC_TIME_H
#define NBWD_TEST_MSVC_TIME_H
typedef long clock_t;
typedef long long time_t;
#define CLOCKS_PER_SEC ((clock_t)1000)
clock_t clock(void);
time_t time(time_t *);
#endif
