/* Minimal stand-in for the MSVC C runtime's <stdlib.h> (see math.h here). */
#ifndef NBWD_TEST_MSVC_STDLIB_H
#define NBWD_TEST_MSVC_STDLIB_H
#include <stddef.h>
void *malloc(size_t);
void *calloc(size_t, size_t);
void *realloc(void *, size_t);
void free(void *);
void abort(void);
void exit(int);
char *getenv(const char *);
long strtol(const char *, char **, int);
unsigned long strtoul(const char *, char **, int);
double strtod(const char *, char **);
int atoi(const char *);
int abs(int);
long long llabs(long long);
void qsort(void *, size_t, size_t, int (*)(const void *, const void *));
#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
#endif
