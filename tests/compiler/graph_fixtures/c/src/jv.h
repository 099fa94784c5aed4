#ifndef JV_H
#define JV_H
typedef struct jv { int kind; } jv;
jv jv_null(void);
void jv_free(jv v);
#endif
