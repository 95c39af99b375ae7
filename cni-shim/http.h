/* A one-shot HTTP/1.1 POST over a unix socket with bounded connect and response times. */
#ifndef CELLIUM_CNI_HTTP_H
#define CELLIUM_CNI_HTTP_H

#include <stddef.h>

#include "buf.h"

/* Outcome of http_post_unix. */
enum http_result {
    HTTP_OK = 0,          /* a complete response was read (any status) */
    HTTP_UNREACHABLE = 1, /* the socket could not be connected to before the connect timeout */
    HTTP_TIMEOUT = 2,     /* connected, but the response did not complete before its timeout */
    HTTP_BAD_RESPONSE = 3 /* connected, but the exchange failed or the answer was not HTTP */
};

/* A parsed response. exit_code is -1 when the X-Cellium-Cni-Exit-Code header was absent. */
struct http_response {
    int status;
    int exit_code;
    struct buf body;
};

/* Sends `POST path` with a JSON body to the unix socket at socket_path and reads the whole answer
 * (Content-Length, chunked, or until close). err receives a message on any result but HTTP_OK. */
enum http_result http_post_unix(const char *socket_path, const char *path, const char *body,
                                size_t body_len, int connect_timeout_ms, int response_timeout_ms,
                                struct http_response *resp, char *err, size_t errlen);

#endif
