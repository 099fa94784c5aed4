#include "../src/jv.h"
int parse(const char *s);
