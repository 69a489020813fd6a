/* Minimal stand-in for the MSVC C runtime's <setjmp.h> (see math.h here);
   clang's <intrin.h> includes it. */
#ifndef NBWD_TEST_MSVC_SETJMP_H
#define NBWD_TEST_MSVC_SETJMP_H
typedef struct { unsigned long long part[2]; } _JBTYPE;
typedef _JBTYPE jmp_buf[16];
int _setjmp(jmp_buf);
void longjmp(jmp_buf, int);
#endif
