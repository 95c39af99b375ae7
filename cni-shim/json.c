/* Recursive-descent JSON validation (RFC 8259) keeping only the top-level string keys asked for,
 * plus a writer that quotes arbitrary bytes as a JSON string. No allocation besides the captures. */
#include "json.h"

#include <stdio.h>
#include <string.h>

#define MAX_DEPTH 256

struct parser {
    const unsigned char *s;
    size_t n;
    size_t i;
    int depth;
    char *err;
    size_t errlen;
};

static int fail(struct parser *p, const char *what)
{
    snprintf(p->err, p->errlen, "%s at offset %zu", what, p->i);
    return -1;
}

static void skip_ws(struct parser *p)
{
    while (p->i < p->n) {
        unsigned char c = p->s[p->i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            return;
        p->i++;
    }
}

static int hex4(struct parser *p, unsigned *out)
{
    unsigned v = 0;
    if (p->n - p->i < 4)
        return fail(p, "truncated \\u escape");
    for (int k = 0; k < 4; k++) {
        unsigned char c = p->s[p->i++];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= c - '0';
        else if (c >= 'a' && c <= 'f')
            v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v |= c - 'A' + 10;
        else
            return fail(p, "bad \\u escape");
    }
    *out = v;
    return 0;
}

static void put_utf8(struct buf *b, unsigned cp)
{
    char t[4];
    size_t n;
    if (cp < 0x80) {
        t[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        t[0] = (char)(0xC0 | (cp >> 6));
        t[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        t[0] = (char)(0xE0 | (cp >> 12));
        t[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        t[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        t[0] = (char)(0xF0 | (cp >> 18));
        t[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        t[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        t[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    buf_append(b, t, n);
}

/* Parses a string starting at the opening quote; appends its decoded text to out when not NULL. */
static int parse_string(struct parser *p, struct buf *out)
{
    p->i++; /* opening quote */
    for (;;) {
        if (p->i >= p->n)
            return fail(p, "unterminated string");
        unsigned char c = p->s[p->i];
        if (c == '"') {
            p->i++;
            if (out)
                buf_append(out, "", 0); /* terminates, even when empty */
            return 0;
        }
        if (c < 0x20)
            return fail(p, "control character in string");
        if (c != '\\') {
            size_t start = p->i;
            while (p->i < p->n && p->s[p->i] != '"' && p->s[p->i] != '\\' && p->s[p->i] >= 0x20)
                p->i++;
            if (out)
                buf_append(out, p->s + start, p->i - start);
            continue;
        }
        p->i++;
        if (p->i >= p->n)
            return fail(p, "unterminated escape");
        char e = (char)p->s[p->i++];
        char lit;
        switch (e) {
        case '"': lit = '"'; break;
        case '\\': lit = '\\'; break;
        case '/': lit = '/'; break;
        case 'b': lit = '\b'; break;
        case 'f': lit = '\f'; break;
        case 'n': lit = '\n'; break;
        case 'r': lit = '\r'; break;
        case 't': lit = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (hex4(p, &cp))
                return -1;
            if (cp >= 0xD800 && cp <= 0xDBFF && p->n - p->i >= 6 && p->s[p->i] == '\\' &&
                p->s[p->i + 1] == 'u') {
                size_t save = p->i;
                p->i += 2;
                if (hex4(p, &lo))
                    return -1;
                if (lo >= 0xDC00 && lo <= 0xDFFF)
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                else
                    p->i = save;
            }
            if (cp >= 0xD800 && cp <= 0xDFFF)
                cp = 0xFFFD; /* lone surrogate */
            if (out)
                put_utf8(out, cp);
            continue;
        }
        default:
            p->i--;
            return fail(p, "bad escape");
        }
        if (out)
            buf_putc(out, lit);
    }
}

static int parse_number(struct parser *p)
{
    size_t start = p->i;
    if (p->s[p->i] == '-')
        p->i++;
    if (p->i < p->n && p->s[p->i] == '0') {
        p->i++;
    } else if (p->i < p->n && p->s[p->i] >= '1' && p->s[p->i] <= '9') {
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9')
            p->i++;
    } else {
        p->i = start;
        return fail(p, "bad number");
    }
    if (p->i < p->n && p->s[p->i] == '.') {
        p->i++;
        if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9')
            return fail(p, "bad fraction");
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9')
            p->i++;
    }
    if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
        p->i++;
        if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-'))
            p->i++;
        if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9')
            return fail(p, "bad exponent");
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9')
            p->i++;
    }
    return 0;
}

static int parse_literal(struct parser *p, const char *word)
{
    size_t k = strlen(word);
    if (p->n - p->i < k || memcmp(p->s + p->i, word, k) != 0)
        return fail(p, "unexpected character");
    p->i += k;
    return 0;
}

static int parse_value(struct parser *p, struct json_field *fields, size_t nfields);

/* Parses an object; fields is non-NULL only for the top-level object. */
static int parse_object(struct parser *p, struct json_field *fields, size_t nfields)
{
    struct buf key = {0};
    int rc = -1;
    p->i++; /* { */
    skip_ws(p);
    if (p->i < p->n && p->s[p->i] == '}') {
        p->i++;
        return 0;
    }
    for (;;) {
        skip_ws(p);
        if (p->i >= p->n || p->s[p->i] != '"') {
            fail(p, "expected object key");
            goto out;
        }
        key.len = 0;
        if (parse_string(p, fields ? &key : NULL))
            goto out;
        skip_ws(p);
        if (p->i >= p->n || p->s[p->i] != ':') {
            fail(p, "expected ':'");
            goto out;
        }
        p->i++;
        skip_ws(p);
        struct json_field *f = NULL;
        for (size_t k = 0; fields && k < nfields; k++)
            if (strlen(fields[k].key) == key.len && memcmp(fields[k].key, key.data, key.len) == 0)
                f = &fields[k];
        if (f) {
            f->present = 1;
            f->is_string = p->i < p->n && p->s[p->i] == '"';
            f->value.len = 0;
            size_t start = p->i;
            if (f->is_string ? parse_string(p, &f->value) : parse_value(p, NULL, 0))
                goto out;
            f->raw = (const char *)p->s + start;
            f->raw_len = p->i - start;
        } else if (parse_value(p, NULL, 0)) {
            goto out;
        }
        skip_ws(p);
        if (p->i < p->n && p->s[p->i] == ',') {
            p->i++;
            continue;
        }
        if (p->i < p->n && p->s[p->i] == '}') {
            p->i++;
            rc = 0;
            goto out;
        }
        fail(p, "expected ',' or '}'");
        goto out;
    }
out:
    buf_free(&key);
    return rc;
}

static int parse_array(struct parser *p)
{
    p->i++; /* [ */
    skip_ws(p);
    if (p->i < p->n && p->s[p->i] == ']') {
        p->i++;
        return 0;
    }
    for (;;) {
        skip_ws(p);
        if (parse_value(p, NULL, 0))
            return -1;
        skip_ws(p);
        if (p->i < p->n && p->s[p->i] == ',') {
            p->i++;
            continue;
        }
        if (p->i < p->n && p->s[p->i] == ']') {
            p->i++;
            return 0;
        }
        return fail(p, "expected ',' or ']'");
    }
}

static int parse_value(struct parser *p, struct json_field *fields, size_t nfields)
{
    int rc;
    if (p->i >= p->n)
        return fail(p, "unexpected end of input");
    if (++p->depth > MAX_DEPTH)
        return fail(p, "nested too deep");
    switch (p->s[p->i]) {
    case '{': rc = parse_object(p, fields, nfields); break;
    case '[': rc = parse_array(p); break;
    case '"': rc = parse_string(p, NULL); break;
    case 't': rc = parse_literal(p, "true"); break;
    case 'f': rc = parse_literal(p, "false"); break;
    case 'n': rc = parse_literal(p, "null"); break;
    default: rc = parse_number(p); break;
    }
    p->depth--;
    return rc;
}

int json_scan_object(const char *text, size_t len, struct json_field *fields, size_t nfields,
                     char *err, size_t errlen)
{
    struct parser p = {(const unsigned char *)text, len, 0, 0, err, errlen};
    skip_ws(&p);
    if (p.i >= p.n)
        return fail(&p, "empty input");
    if (p.s[p.i] != '{')
        return fail(&p, "top-level value is not an object");
    if (parse_value(&p, fields, nfields))
        return -1;
    skip_ws(&p);
    if (p.i != p.n)
        return fail(&p, "trailing characters after the object");
    return 0;
}

/* Length of the valid UTF-8 sequence at s[0..n), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t k;
    unsigned min, cp;
    if (c >= 0xC2 && c <= 0xDF) {
        k = 2; min = 0x80; cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        k = 3; min = 0x800; cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        k = 4; min = 0x10000; cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < k)
        return 0;
    for (size_t j = 1; j < k; j++) {
        if ((s[j] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[j] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return k;
}

void json_put_string(struct buf *out, const char *str, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    buf_putc(out, '"');
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            buf_append(out, e, 2);
            i++;
        } else if (c == '\n') {
            buf_puts(out, "\\n");
            i++;
        } else if (c == '\t') {
            buf_puts(out, "\\t");
            i++;
        } else if (c == '\r') {
            buf_puts(out, "\\r");
            i++;
        } else if (c < 0x20 || c == 0x7F) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xF]};
            buf_append(out, e, 6);
            i++;
        } else if (c < 0x80) {
            size_t start = i;
            while (i < n && s[i] >= 0x20 && s[i] < 0x7F && s[i] != '"' && s[i] != '\\')
                i++;
            buf_append(out, s + start, i - start);
        } else {
            size_t k = utf8_len(s + i, n - i);
            if (k) {
                buf_append(out, s + i, k);
                i += k;
            } else {
                buf_puts(out, "\\ufffd");
                i++;
            }
        }
    }
    buf_putc(out, '"');
}

int json_field_is(const struct json_field *f, const char *lit)
{
    return f->present && !f->is_string && f->raw_len == strlen(lit) && memcmp(f->raw, lit, f->raw_len) == 0;
}
