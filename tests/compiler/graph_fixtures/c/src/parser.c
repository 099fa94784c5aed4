#include "parser.h"
#include "util/buf.h"

int parse(const char *s) {
  jv v = jv_null();
  buf_reset();
  jv_free(v);
  return 0;
}
