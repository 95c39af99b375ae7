/* A one-shot HTTP/1.1 POST over a unix socket with bounded connect and response times. */
#ifndef CELLIUM_CNI_HTTP_H
#define CELLIUM_CNI_HTTP_H

#include <stddef.h>

#include "buf.h"

/* Outcome of http_post_unix. */
enum http_result {
    HTTP_OK = 0,           /* a complete response was read (any status) */
    HTTP_UNREACHABLE = 1,  /* the socket could not be connected to before the connect timeout */
    HTTP_TIMEOUT = 2,      /* connected, but the response did not complete before its timeout */
    HTTP_NO_ANSWER = 3,    /* connected, but the peer closed or reset before a complete answer */
    HTTP_BAD_RESPONSE = 4  /* an answer came, but it was not HTTP (or too large) */
};

/* A parsed response. exit_code is -1 when the X-Cellium-Cni-Exit-Code header was absent,
 * max_body -1 when the X-Cellium-Max-Body-Bytes header (sent with 413) was. */
struct http_response {
    int status;
    int exit_code;
    long long max_body;
    struct buf body;
};

/* Sends `POST path` with a JSON body to the unix socket at socket_path and reads the whole answer
 * (Content-Length, chunked, or until close). A peer that answers before reading the whole body and
 * closes (413) is still heard: a failed send is followed by reading what it answered. err receives
 * a message on any result but HTTP_OK. */
enum http_result http_post_unix(const char *socket_path, const char *path, const char *body,
                                size_t body_len, int connect_timeout_ms, int response_timeout_ms,
                                struct http_response *resp, char *err, size_t errlen);

#endif
