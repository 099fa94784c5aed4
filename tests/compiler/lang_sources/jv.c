#include "jv.h"
#include <stdio.h>

/* A typedef'd struct. */
typedef struct {
  int a;
} jv_parser;

struct node { int b; };

// Frees things.
static int *jv_free(jv x) {
  jv_mem_free(x.u.ptr);
  p->cb(x);
  return 0;
}

enum kind { K_A };
int main(int argc, char **argv) { return jv_free(argc); }
