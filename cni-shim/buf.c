/* A growable byte buffer. Running out of memory ends the process: a CNI call cannot do better. */
#include "buf.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void buf_append(struct buf *b, const void *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d) {
            static const char msg[] = "cellium-cni: out of memory\n";
            (void)!write(2, msg, sizeof msg - 1);
            _exit(1);
        }
        b->data = d;
        b->cap = cap;
    }
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void buf_puts(struct buf *b, const char *s)
{
    buf_append(b, s, strlen(s));
}

void buf_putc(struct buf *b, char c)
{
    buf_append(b, &c, 1);
}

void buf_free(struct buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
