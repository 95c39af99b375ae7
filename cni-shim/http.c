/* One HTTP/1.1 request over a non-blocking unix socket, every wait bounded by poll() deadlines. */
#define _GNU_SOURCE
#include "http.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_RESPONSE (64u << 20)

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for events on fd until the deadline: 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short events, long long deadline)
{
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0)
            return 0;
        struct pollfd pfd = {fd, events, 0};
        int rc = poll(&pfd, 1, left > 1000000 ? 1000000 : (int)left);
        if (rc > 0)
            return 1;
        if (rc < 0 && errno != EINTR)
            return -1;
    }
}

/* Connects to the socket, retrying while its backlog is full; -1 with err set on failure. */
static int connect_unix(const char *path, long long deadline, char *err, size_t errlen)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa.sun_path) {
        snprintf(err, errlen, "socket path %s is longer than %zu bytes", path,
                 sizeof sa.sun_path - 1);
        return -1;
    }
    strcpy(sa.sun_path, path);
    for (;;) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            snprintf(err, errlen, "socket: %s", strerror(errno));
            return -1;
        }
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
            return fd;
        int e = errno;
        if (e == EINPROGRESS) {
            int w = wait_fd(fd, POLLOUT, deadline);
            socklen_t sl = sizeof e;
            if (w == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl) == 0 && e == 0)
                return fd;
            if (w == 0) {
                close(fd);
                snprintf(err, errlen, "timed out connecting to %s", path);
                return -1;
            }
        }
        close(fd);
        if (e == EAGAIN || e == EINTR) {
            long long left = deadline - now_ms();
            if (left <= 0) {
                snprintf(err, errlen, "timed out connecting to %s (backlog full)", path);
                return -1;
            }
            struct timespec ts = {0, (left < 10 ? left : 10) * 1000000L};
            nanosleep(&ts, NULL);
            continue;
        }
        snprintf(err, errlen, "cannot connect to %s: %s", path, strerror(e));
        return -1;
    }
}

static int send_all(int fd, const char *p, size_t n, long long deadline)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
        } else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (wait_fd(fd, POLLOUT, deadline) != 1)
                return -1;
        } else {
            return -1;
        }
    }
    return 0;
}

/* Decodes a chunked body from raw[0..n): 1 complete (body filled), 0 needs more, -1 malformed. */
static int dechunk(const char *raw, size_t n, struct buf *body)
{
    size_t pos = 0;
    body->len = 0;
    for (;;) {
        const char *eol = memmem(raw + pos, n - pos, "\r\n", 2);
        if (!eol)
            return 0;
        char *end;
        unsigned long size = strtoul(raw + pos, &end, 16);
        if (end == raw + pos || (end != eol && *end != ';' && *end != ' '))
            return -1;
        pos = (size_t)(eol - raw) + 2;
        if (size == 0) {
            if (n - pos >= 2 && raw[pos] == '\r' && raw[pos + 1] == '\n')
                return 1;
            return memmem(raw + pos, n - pos, "\r\n\r\n", 4) ? 1 : 0;
        }
        if (size > MAX_RESPONSE)
            return -1;
        if (n - pos < size + 2)
            return 0;
        buf_append(body, raw + pos, size);
        pos += size;
        if (raw[pos] != '\r' || raw[pos + 1] != '\n')
            return -1;
        pos += 2;
    }
}

struct head {
    size_t body_start;
    long long content_length; /* -1 when absent */
    int chunked;
};

/* Parses the status line and the headers that matter in raw[0..hdr_len). */
static int parse_head(const char *raw, size_t hdr_len, struct head *h, struct http_response *resp)
{
    int minor;
    if (sscanf(raw, "HTTP/1.%d %3d", &minor, &resp->status) != 2 || resp->status < 100)
        return -1;
    h->content_length = -1;
    h->chunked = 0;
    const char *line = memchr(raw, '\n', hdr_len);
    while (line && (size_t)(line - raw) + 1 < hdr_len) {
        line++;
        const char *eol = memchr(line, '\n', hdr_len - (size_t)(line - raw));
        if (!eol)
            break;
        const char *colon = memchr(line, ':', (size_t)(eol - line));
        if (colon) {
            size_t name_len = (size_t)(colon - line);
            const char *v = colon + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            char *end;
            if (name_len == 14 && strncasecmp(line, "Content-Length", 14) == 0) {
                h->content_length = strtoll(v, &end, 10);
                if (end == v || h->content_length < 0)
                    return -1;
            } else if (name_len == 17 && strncasecmp(line, "Transfer-Encoding", 17) == 0) {
                h->chunked = strncasecmp(v, "chunked", 7) == 0;
            } else if (name_len == 23 && strncasecmp(line, "X-Cellium-Cni-Exit-Code", 23) == 0) {
                long code = strtol(v, &end, 10);
                if (end == v || code < 0 || code > 255)
                    return -1;
                resp->exit_code = (int)code;
            } else if (name_len == 24 && strncasecmp(line, "X-Cellium-Max-Body-Bytes", 24) == 0) {
                long long max = strtoll(v, &end, 10);
                resp->max_body = (end == v || max < 0) ? -1 : max;
            }
        }
        line = eol;
    }
    return 0;
}

enum http_result http_post_unix(const char *socket_path, const char *path, const char *body,
                                size_t body_len, int connect_timeout_ms, int response_timeout_ms,
                                struct http_response *resp, char *err, size_t errlen)
{
    resp->status = 0;
    resp->exit_code = -1;
    resp->max_body = -1;
    resp->body.len = 0;
    int fd = connect_unix(socket_path, now_ms() + connect_timeout_ms, err, errlen);
    if (fd < 0)
        return HTTP_UNREACHABLE;

    long long deadline = now_ms() + response_timeout_ms;
    enum http_result result = HTTP_BAD_RESPONSE;
    struct buf req = {0}, raw = {0};
    char line[256];
    snprintf(line, sizeof line,
             "POST %s HTTP/1.1\r\nHost: cellium\r\nUser-Agent: cellium-cni\r\n"
             "Content-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
             path, body_len);
    buf_puts(&req, line);
    buf_append(&req, body, body_len);
    int send_failed = send_all(fd, req.data, req.len, deadline) ? errno : 0;
    if (send_failed && now_ms() >= deadline) {
        result = HTTP_TIMEOUT;
        snprintf(err, errlen, "timed out sending the request to %s", socket_path);
        goto out;
    }
    if (send_failed && send_failed != EPIPE && send_failed != ECONNRESET) {
        result = HTTP_NO_ANSWER;
        snprintf(err, errlen, "%s sending the request to %s", strerror(send_failed), socket_path);
        goto out;
    }
    /* EPIPE / ECONNRESET: the agent answered early (413) and closed; its answer is still queued */

    struct head h = {0};
    int have_head = 0, complete = 0;
    char chunk[65536];
    while (!complete) {
        ssize_t r = recv(fd, chunk, sizeof chunk, 0);
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
            int w = wait_fd(fd, POLLIN, deadline);
            if (w == 0) {
                result = HTTP_TIMEOUT;
                snprintf(err, errlen, "no complete answer from %s within %d ms", socket_path,
                         response_timeout_ms);
                goto out;
            }
            if (w < 0)
                r = -1;
            else
                continue;
        }
        if (r < 0) {
            result = HTTP_NO_ANSWER;
            snprintf(err, errlen, "reading the answer from %s: %s", socket_path, strerror(errno));
            goto out;
        }
        if (r > 0) {
            if (raw.len + (size_t)r > MAX_RESPONSE) {
                snprintf(err, errlen, "answer from %s exceeds %u bytes", socket_path, MAX_RESPONSE);
                goto out;
            }
            buf_append(&raw, chunk, (size_t)r);
        }
        if (!have_head) {
            const char *e = raw.data ? memmem(raw.data, raw.len, "\r\n\r\n", 4) : NULL;
            if (e) {
                h.body_start = (size_t)(e - raw.data) + 4;
                if (parse_head(raw.data, h.body_start, &h, resp)) {
                    snprintf(err, errlen, "malformed HTTP answer from %s", socket_path);
                    goto out;
                }
                have_head = 1;
            }
        }
        if (have_head) {
            const char *b = raw.data + h.body_start;
            size_t avail = raw.len - h.body_start;
            if (h.chunked) {
                int d = dechunk(b, avail, &resp->body);
                if (d < 0) {
                    snprintf(err, errlen, "malformed chunked answer from %s", socket_path);
                    goto out;
                }
                complete = d == 1;
            } else if (h.content_length >= 0 && avail >= (size_t)h.content_length) {
                resp->body.len = 0;
                buf_append(&resp->body, b, (size_t)h.content_length);
                complete = 1;
            } else if (r == 0 && h.content_length < 0) {
                resp->body.len = 0;
                buf_append(&resp->body, b, avail);
                complete = 1;
            }
        }
        if (r == 0 && !complete) {
            result = HTTP_NO_ANSWER;
            snprintf(err, errlen, "%s closed the connection before a complete answer%s",
                     socket_path, send_failed ? " (while the request was being sent)" : "");
            goto out;
        }
    }
    result = HTTP_OK;
out:
    close(fd);
    buf_free(&req);
    buf_free(&raw);
    return result;
}
