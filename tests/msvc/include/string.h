/* Minimal stand-in for the MSVC C runtime's <string.h> (see math.h here). */
#ifndef NBWD_TEST_MSVC_STRING_H
#define NBWD_TEST_MSVC_STRING_H
#include <stddef.h>
void *memcpy(void *, const void *, size_t);
void *memmove(void *, const void *, size_t);
void *memset(void *, int, size_t);
int memcmp(const void *, const void *, size_t);
size_t strlen(const char *);
int strcmp(const char *, const char *);
int strncmp(const char *, const char *, size_t);
char *strchr(const char *, int);
char *strstr(const char *, const char *);
char *strcat(char *, const char *);
size_t strcspn(const char *, const char *);
size_t strspn(const char *, const char *);
#endif
