/* Minimal stand-in for the MSVC C runtime's <stdio.h> (see math.h here). */
#ifndef NBWD_TEST_MSVC_STDIO_H
#define NBWD_TEST_MSVC_STDIO_H
#include <stdarg.h>
#include <stddef.h>
typedef struct _iobuf { void *placeholder; } FILE;
FILE *__acrt_iob_func(unsigned index);
#define stdin (__acrt_iob_func(0))
#define stdout (__acrt_iob_func(1))
#define stderr (__acrt_iob_func(2))
#define EOF (-1)
int printf(const char *, ...);
int fprintf(FILE *, const char *, ...);
int snprintf(char *, size_t, const char *, ...);
int vsnprintf(char *, size_t, const char *, va_list);
int vfprintf(FILE *, const char *, va_list);
int fputs(const char *, FILE *);
int puts(const char *);
int fflush(FILE *);
#endif
