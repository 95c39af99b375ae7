/* A tiny JSON validator that captures a few top-level string keys, and a JSON string writer. */
#ifndef CELLIUM_CNI_JSON_H
#define CELLIUM_CNI_JSON_H

#include <stddef.h>

#include "buf.h"

/* A top-level key to capture. After json_scan_object: present is 1 when the key occurred, is_string
 * is 1 when its (last) value was a string, and then value holds the unescaped text; otherwise raw and
 * raw_len point at the value's JSON text inside the scanned input (true, 42, {...}). */
struct json_field {
    const char *key;
    int present;
    int is_string;
    struct buf value;
    const char *raw;
    size_t raw_len;
};

/* 1 when the field's value is the JSON literal `lit` (true, false, null). */
int json_field_is(const struct json_field *f, const char *lit);

/* Validates that text[0..len) is one JSON object (RFC 8259 grammar, nesting up to 256 levels) and
 * fills the fields found at its top level. Returns 0 when valid, else -1 with a message in err. */
int json_scan_object(const char *text, size_t len, struct json_field *fields, size_t nfields,
                     char *err, size_t errlen);

/* Appends s[0..n) as a quoted JSON string; bytes that are not valid UTF-8 become U+FFFD. */
void json_put_string(struct buf *out, const char *s, size_t n);

#endif
