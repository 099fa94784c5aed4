void buf_reset(void);
