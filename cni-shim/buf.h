/* A growable byte buffer: the only allocation helper the shim needs. */
#ifndef CELLIUM_CNI_BUF_H
#define CELLIUM_CNI_BUF_H

#include <stddef.h>

/* Bytes in data[0..len), always NUL-terminated when data is not NULL. */
struct buf {
    char *data;
    size_t len;
    size_t cap;
};

/* Appends n bytes; exits the process with status 1 when memory runs out. */
void buf_append(struct buf *b, const void *p, size_t n);
/* Appends a NUL-terminated string. */
void buf_puts(struct buf *b, const char *s);
/* Appends one byte. */
void buf_putc(struct buf *b, char c);
/* Releases the buffer and resets it to empty. */
void buf_free(struct buf *b);

#endif
