#include <stdlib.h>
#include "jv.h"

static int check(jv v) { return v.kind; }

jv jv_null(void) {
  jv v = {0};
  return v;
}

void jv_free(jv v) {
  if (check(v)) free(0);
}
