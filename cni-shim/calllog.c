/* The call log (calllog.h). The file is opened with O_APPEND (one write per line, so concurrent
 * shims do not interleave), created 0600 when missing, never through a symlink (O_NOFOLLOW) and
 * never when it is not a regular file (a FIFO or a device could block or swallow the call). Every
 * value is written as a JSON string, so no value can break the line or forge another one. */
#define _GNU_SOURCE
#include "calllog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "json.h"

#define MAX_OUT_LOGGED 4096

static struct timespec started;
static const char *log_path;
static const char *log_command = "";
static int log_debug;
static struct buf extra; /* the debug-only keys */

void calllog_start(void)
{
    clock_gettime(CLOCK_MONOTONIC, &started);
}

void calllog_configure(const char *path, int debug, const char *command)
{
    log_path = path && *path ? path : NULL;
    log_debug = debug;
    log_command = command ? command : "";
}

static void put_kv(struct buf *b, const char *key, const char *value, size_t len)
{
    buf_putc(b, ' ');
    buf_puts(b, key);
    buf_putc(b, '=');
    json_put_string(b, value ? value : "", value ? len : 0);
}

static void put_env(struct buf *b, const char *key, const char *name)
{
    const char *v = getenv(name);
    put_kv(b, key, v, v ? strlen(v) : 0);
}

void calllog_debug(const char *key, const char *value, size_t len)
{
    if (log_debug)
        put_kv(&extra, key, value, len);
}

/* The parent directory of the log, created 0700 when missing (one level, like a runtime's state
 * directory); failures are left to open() to report. */
static void make_parent(const char *path)
{
    char dir[4096];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
        return;
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return;
    *slash = '\0';
    (void)mkdir(dir, 0700);
}

static int open_log(const char *path)
{
    int flags = O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
    int fd = open(path, flags, 0600);
    if (fd < 0 && errno == ENOENT) {
        make_parent(path);
        fd = open(path, flags, 0600);
    }
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return -1;
    }
    return fd;
}

void calllog_finish(int exit_status, int cni_code, const char *msg, const char *out, size_t out_len)
{
    static int finished;
    if (!log_path || finished)
        return;
    finished = 1;
    struct timespec now, wall;
    clock_gettime(CLOCK_MONOTONIC, &now);
    clock_gettime(CLOCK_REALTIME, &wall);
    double ms = (double)(now.tv_sec - started.tv_sec) * 1e3 + (double)(now.tv_nsec - started.tv_nsec) / 1e6;
    struct tm tm;
    gmtime_r(&wall.tv_sec, &tm);
    char stamp[64], num[96];
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);

    struct buf line = {0};
    buf_puts(&line, stamp);
    snprintf(num, sizeof num, ".%03ldZ", wall.tv_nsec / 1000000);
    buf_puts(&line, num);
    put_kv(&line, "command", log_command, strlen(log_command));
    put_env(&line, "containerId", "CNI_CONTAINERID");
    put_env(&line, "netns", "CNI_NETNS");
    put_env(&line, "ifname", "CNI_IFNAME");
    snprintf(num, sizeof num, " code=%d exit=%d durationMs=%.1f pid=%d", cni_code, exit_status, ms, (int)getpid());
    buf_puts(&line, num);
    if (msg && *msg)
        put_kv(&line, "msg", msg, strlen(msg));
    if (log_debug) {
        put_env(&line, "args", "CNI_ARGS");
        put_env(&line, "path", "CNI_PATH");
        if (extra.len)
            buf_append(&line, extra.data, extra.len);
        if (out)
            put_kv(&line, "output", out, out_len < MAX_OUT_LOGGED ? out_len : MAX_OUT_LOGGED);
    }
    buf_putc(&line, '\n');

    int fd = open_log(log_path);
    if (fd >= 0) {
        /* one write: O_APPEND places the whole line at the end; a short write is not retried */
        ssize_t w;
        do
            w = write(fd, line.data, line.len);
        while (w < 0 && errno == EINTR);
        close(fd);
    }
    buf_free(&line);
}
