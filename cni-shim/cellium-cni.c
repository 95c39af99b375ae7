/*
 * cellium-cni: the CNI plugin binary that container runtimes execute. It answers VERSION itself,
 * checks the variables and the netconf cheaply (validate.c), and forwards ADD, DEL, CHECK, STATUS
 * and GC to the Cellium agent as one HTTP request over the agent's unix socket (the wire contract
 * is src/cni/protocol.ts and docs/cni.md). When the agent does not answer, DEL is queued to a
 * directory the agent replays at start and every other command fails with code 11 (try again
 * later); an answer the agent did give is never reported as 11.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "calllog.h"
#include "http.h"
#include "json.h"
#include "validate.h"

#define DEFAULT_SOCKET "/var/run/cellium/cellium.sock"
#define DEFAULT_DELETE_QUEUE "/var/run/cellium/delete-queue"
#define CNI_PATH_ON_AGENT "/v1/cellium/cni"
#define LATEST_VERSION "1.1.0"
#define MAX_STDIN (16u << 20)

/* CNI error codes used here (docs/cni.md, "Error codes"): the spec's, except that an invalid
 * variable is reported with 7 like an invalid network configuration (the spec's 4 is unused). */
enum {
    ERR_INCOMPATIBLE_VERSION = 1,
    ERR_IO = 5,
    ERR_DECODING = 6,
    ERR_INVALID_CONFIG = 7,
    ERR_INVALID_ENV = 7,
    ERR_TRY_AGAIN_LATER = 11,
};

static const char *const supported_versions[] = {"0.3.1", "0.4.0", "1.0.0", "1.1.0"};
#define N_SUPPORTED (sizeof supported_versions / sizeof supported_versions[0])

/* A command, the env variables the spec requires for it, and how long its answer may take. */
struct command {
    const char *name;
    int needs_container_id, needs_netns, needs_ifname;
    int min_version_1_1; /* STATUS and GC exist from CNI 1.1.0 on */
    int response_timeout_ms;
};

static const struct command commands[] = {
    {"ADD", 1, 1, 1, 0, 300000},  {"DEL", 1, 0, 1, 0, 300000},   {"CHECK", 1, 1, 1, 0, 60000},
    {"STATUS", 0, 0, 0, 1, 60000}, {"GC", 0, 0, 0, 1, 300000}, {"VERSION", 0, 0, 0, 0, 0},
};

/* The cniVersion echoed in replies: the requested one when we support it, else the latest. */
static const char *reply_version = LATEST_VERSION;

static const char *supported(const char *v)
{
    for (size_t i = 0; v && i < N_SUPPORTED; i++)
        if (strcmp(v, supported_versions[i]) == 0)
            return supported_versions[i];
    return NULL;
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

/* Prints the CNI error result on stdout and exits 1. */
static void fail(int code, const char *msg, const char *details)
{
    struct buf out = {0};
    char num[16];
    buf_puts(&out, "{\"cniVersion\":");
    json_put_string(&out, reply_version, strlen(reply_version));
    snprintf(num, sizeof num, ",\"code\":%d", code);
    buf_puts(&out, num);
    buf_puts(&out, ",\"msg\":");
    json_put_string(&out, msg, strlen(msg));
    buf_puts(&out, ",\"details\":");
    json_put_string(&out, details, strlen(details));
    buf_puts(&out, "}\n");
    write_all(1, out.data, out.len);
    calllog_finish(1, code, msg, out.data, out.len);
    exit(1);
}

/* A positive millisecond count from the environment, else the default. */
static int env_ms(const char *name, int def)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    long ms = strtol(v, &end, 10);
    return (*end || ms <= 0 || ms > 86400000L) ? def : (int)ms;
}

static const char *env_or_empty(const char *name)
{
    const char *v = getenv(name);
    return v ? v : "";
}

/* Reads all of stdin within the deadline; a terminal or a closed stdin reads as empty. Returns 0,
 * or the CNI error code with a message in err: 5 when not closed in time, 7 when too large. */
static int read_stdin(struct buf *in, int timeout_ms, char *err, size_t errlen)
{
    if (isatty(0))
        return 0;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    char chunk[65536];
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        long long spent = (now.tv_sec - start.tv_sec) * 1000LL + (now.tv_nsec - start.tv_nsec) / 1000000;
        if (spent >= timeout_ms) {
            snprintf(err, errlen, "stdin was not closed within %d ms", timeout_ms);
            return ERR_IO;
        }
        struct pollfd pfd = {0, POLLIN, 0};
        int rc = poll(&pfd, 1, (int)(timeout_ms - spent));
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0 || (pfd.revents & POLLNVAL))
            return 0;
        if (rc == 0)
            continue;
        ssize_t r = read(0, chunk, sizeof chunk);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r <= 0)
            return 0;
        if (in->len + (size_t)r > MAX_STDIN) {
            snprintf(err, errlen, "network configuration too large: more than %u bytes, limit %u",
                     MAX_STDIN, MAX_STDIN);
            return ERR_INVALID_CONFIG;
        }
        buf_append(in, chunk, (size_t)r);
    }
}

static void put_field(struct buf *b, const char *key, const char *val, size_t len, int first)
{
    if (!first)
        buf_putc(b, ',');
    json_put_string(b, key, strlen(key));
    buf_putc(b, ':');
    json_put_string(b, val, len);
}

/* The request body of the wire contract: {"command","containerId","netns","ifName","args","path","stdin"}. */
static void build_request(struct buf *b, const char *cmd, const struct buf *in)
{
    const char *cid = env_or_empty("CNI_CONTAINERID"), *netns = env_or_empty("CNI_NETNS");
    const char *ifname = env_or_empty("CNI_IFNAME"), *args = env_or_empty("CNI_ARGS");
    const char *path = env_or_empty("CNI_PATH");
    buf_putc(b, '{');
    put_field(b, "command", cmd, strlen(cmd), 1);
    put_field(b, "containerId", cid, strlen(cid), 0);
    put_field(b, "netns", netns, strlen(netns), 0);
    put_field(b, "ifName", ifname, strlen(ifname), 0);
    put_field(b, "args", args, strlen(args), 0);
    put_field(b, "path", path, strlen(path), 0);
    put_field(b, "stdin", in->data ? in->data : "", in->len, 0);
    buf_putc(b, '}');
}

static int mkdir_p(const char *dir)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s", dir) >= (int)sizeof tmp)
        return errno = ENAMETOOLONG, -1;
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0755) && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return (mkdir(tmp, 0755) && errno != EEXIST) ? -1 : 0;
}

/* Writes the DEL request atomically as <unix-ns>-<pid>-<container id>.json in the queue dir (the
 * container id was checked: it is a safe file name part of at most 128 bytes). */
static int queue_delete(const struct buf *req, char *err, size_t errlen)
{
    const char *dir = getenv("CELLIUM_CNI_DELETE_QUEUE");
    if (!dir || !*dir)
        dir = DEFAULT_DELETE_QUEUE;
    /* checked by check_container_id: [A-Za-z0-9][A-Za-z0-9_.-]*, at most 128 bytes */
    const char *cid = env_or_empty("CNI_CONTAINERID");
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char name[4096], tmp[4096];
    snprintf(name, sizeof name, "%s/%lld%09ld-%d-%s.json", dir, (long long)ts.tv_sec, ts.tv_nsec,
             (int)getpid(), cid);
    snprintf(tmp, sizeof tmp, "%s/.%lld%09ld-%d.tmp", dir, (long long)ts.tv_sec, ts.tv_nsec,
             (int)getpid());
    if (mkdir_p(dir)) {
        snprintf(err, errlen, "cannot create %.512s: %s", dir, strerror(errno));
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create %.512s: %s", tmp, strerror(errno));
        return -1;
    }
    size_t off = 0;
    while (off < req->len) {
        ssize_t w = write(fd, req->data + off, req->len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            snprintf(err, errlen, "cannot write %.512s: %s", tmp, strerror(w < 0 ? errno : EIO));
            close(fd);
            unlink(tmp);
            return -1;
        }
        off += (size_t)w;
    }
    if (fsync(fd) || close(fd) || rename(tmp, name)) {
        snprintf(err, errlen, "cannot store %.512s: %s", name, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* The agent's message in an error answer: its JSON string body unescaped, else the text, printable
 * and at most 300 bytes. */
static void agent_message(const struct buf *body, char *out, size_t n)
{
    struct buf wrapped = {0};
    struct json_field f[] = {{"m", 0, 0, {0}, 0, 0}};
    char jerr[64];
    buf_puts(&wrapped, "{\"m\":");
    buf_append(&wrapped, body->data ? body->data : "", body->len);
    buf_putc(&wrapped, '}');
    int is_string = json_scan_object(wrapped.data, wrapped.len, f, 1, jerr, sizeof jerr) == 0 &&
                    f[0].is_string;
    const char *text = is_string ? f[0].value.data : (body->data ? body->data : "");
    size_t len = is_string ? f[0].value.len : body->len;
    snprintf(out, n, "%.*s", (int)(len < 300 ? len : 300), text);
    for (char *c = out; *c; c++)
        if ((unsigned char)*c < 0x20)
            *c = ' ';
    buf_free(&wrapped);
    buf_free(&f[0].value);
}

/* Fails for an answer other than 200: 429 is "try again later" (the agent is busy; 503 was handled
 * as unavailable), 413 an invalid (too large) network configuration, anything else an I/O failure
 * carrying the agent's message. Returns for 200. */
static void report_http_error(const struct http_response *resp, const char *socket_path,
                              size_t request_len, size_t stdin_len)
{
    char msg[512], details[1024], said[320];
    if (resp->status == 200)
        return;
    agent_message(&resp->body, said, sizeof said);
    snprintf(details, sizeof details, "agent at %s answered HTTP %d: %s", socket_path, resp->status,
             said);
    if (resp->status == 429)
        fail(ERR_TRY_AGAIN_LATER, "cellium agent is busy, try again later", details);
    if (resp->status == 413) {
        char limit[32] = "unknown";
        if (resp->max_body >= 0)
            snprintf(limit, sizeof limit, "%lld", resp->max_body);
        snprintf(msg, sizeof msg, "network configuration too large: %zu bytes, limit %s",
                 request_len, limit);
        snprintf(details, sizeof details,
                 "the %zu-byte network configuration makes a %zu-byte request; the agent at %s "
                 "accepts at most %s (its --api-max-body-bytes): shrink the network configuration "
                 "or raise the agent's limit",
                 stdin_len, request_len, socket_path, limit);
        fail(ERR_INVALID_CONFIG, msg, details);
    }
    snprintf(msg, sizeof msg, "cellium agent refused the request: HTTP %d: %s", resp->status, said);
    fail(ERR_IO, msg, details);
}

/* The CNI error code and message of an agent's answer (code 0 and no message for a success). */
static int answer_code(const struct buf *body, int exit_code, char *msg, size_t n)
{
    struct json_field f[] = {{"code", 0, 0, {0}, 0, 0}, {"msg", 0, 0, {0}, 0, 0}};
    char jerr[64];
    int code = 0;
    msg[0] = '\0';
    if (exit_code != 0 && body->len &&
        json_scan_object(body->data, body->len, f, 2, jerr, sizeof jerr) == 0) {
        if (f[0].present && !f[0].is_string && f[0].raw_len < 12) {
            char num[16];
            memcpy(num, f[0].raw, f[0].raw_len);
            num[f[0].raw_len] = '\0';
            code = atoi(num);
        }
        if (f[1].is_string)
            snprintf(msg, n, "%s", f[1].value.data);
    }
    buf_free(&f[0].value);
    buf_free(&f[1].value);
    return code;
}

/* Checks the netconf's log keys (a string absolute "log-file", a boolean "enable-debug"); returns 0,
 * or -1 with the whole error message in err. */
static int check_log_keys(const struct json_field *file, const struct json_field *debug, char *err, size_t n)
{
    if (file->present && (!file->is_string || file->value.len == 0 || file->value.data[0] != '/' ||
                          strlen(file->value.data) != file->value.len || file->value.len > 4000)) {
        snprintf(err, n, "invalid network configuration: log-file must be an absolute file path (a string "
                         "such as \"/var/run/cellium/cellium-cni.log\"), or left out to log nothing");
        return -1;
    }
    if (debug->present && !json_field_is(debug, "true") && !json_field_is(debug, "false")) {
        snprintf(err, n, "invalid network configuration: enable-debug must be true or false");
        return -1;
    }
    return 0;
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    calllog_start();
    char err[1024];
    const char *cmd_name = getenv("CNI_COMMAND");
    const struct command *cmd = NULL;
    for (size_t i = 0; cmd_name && i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(cmd_name, commands[i].name) == 0)
            cmd = &commands[i];

    struct buf in = {0};
    int read_code = read_stdin(&in, env_ms("CELLIUM_CNI_STDIN_TIMEOUT_MS", 30000), err, sizeof err);
    if (read_code == ERR_INVALID_CONFIG)
        fail(read_code, err, "shrink the network configuration given on stdin");
    if (read_code)
        fail(read_code, "cannot read the network configuration from stdin", err);

    struct json_field fields[] = {
        {"cniVersion", 0, 0, {0}, 0, 0}, {"name", 0, 0, {0}, 0, 0}, {"type", 0, 0, {0}, 0, 0},
        {"socket-path", 0, 0, {0}, 0, 0}, {"log-file", 0, 0, {0}, 0, 0}, {"enable-debug", 0, 0, {0}, 0, 0},
    };
    int json_ok = in.len > 0 &&
                  json_scan_object(in.data, in.len, fields, 6, err, sizeof err) == 0;
    const char *requested = fields[0].is_string ? fields[0].value.data : NULL;
    if (json_ok && supported(requested))
        reply_version = supported(requested);
    char log_err[256];
    int log_keys_ok = !json_ok || check_log_keys(&fields[4], &fields[5], log_err, sizeof log_err) == 0;
    if (json_ok && log_keys_ok && fields[4].present) {
        calllog_configure(fields[4].value.data, json_field_is(&fields[5], "true"), cmd_name ? cmd_name : "");
        if (fields[1].is_string)
            calllog_debug("network", fields[1].value.data, fields[1].value.len);
        char num[32];
        snprintf(num, sizeof num, "%zu", in.len);
        calllog_debug("stdinBytes", num, strlen(num));
    }

    if (!cmd_name || !*cmd_name)
        fail(ERR_INVALID_ENV, "required env variables [CNI_COMMAND] missing",
             "cellium-cni is a CNI plugin: run it from a container runtime");
    if (!cmd) {
        char shown[80];
        snprintf(shown, sizeof shown, "%.64s", cmd_name);
        for (char *c = shown; *c; c++)
            if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f || *c == '"')
                *c = '?';
        snprintf(err, sizeof err,
                 "invalid CNI_COMMAND: \"%s\" is not a CNI command (use ADD, DEL, CHECK, STATUS, GC "
                 "or VERSION)", shown);
        fail(ERR_INVALID_ENV, err, "");
    }
    if (strcmp(cmd->name, "VERSION") == 0) {
        struct buf out = {0};
        buf_puts(&out, "{\"cniVersion\":");
        json_put_string(&out, reply_version, strlen(reply_version));
        buf_puts(&out, ",\"supportedVersions\":[");
        for (size_t i = 0; i < N_SUPPORTED; i++) {
            if (i)
                buf_putc(&out, ',');
            json_put_string(&out, supported_versions[i], strlen(supported_versions[i]));
        }
        buf_puts(&out, "]}\n");
        write_all(1, out.data, out.len);
        calllog_finish(0, 0, NULL, out.data, out.len);
        return 0;
    }

    char missing[128] = "";
    if (cmd->needs_container_id && !*env_or_empty("CNI_CONTAINERID"))
        strcat(missing, " CNI_CONTAINERID");
    if (cmd->needs_netns && !*env_or_empty("CNI_NETNS"))
        strcat(missing, " CNI_NETNS");
    if (cmd->needs_ifname && !*env_or_empty("CNI_IFNAME"))
        strcat(missing, " CNI_IFNAME");
    if (*missing) {
        snprintf(err, sizeof err, "required env variables [%s] missing", missing + 1);
        fail(ERR_INVALID_ENV, err, "");
    }
    if (cmd->needs_container_id) {
        /* ADD, CHECK, DEL: the variables' syntax; ADD and CHECK also need a network namespace */
        const char *netns = env_or_empty("CNI_NETNS");
        if (check_container_id(env_or_empty("CNI_CONTAINERID"), err, sizeof err) ||
            check_ifname(env_or_empty("CNI_IFNAME"), err, sizeof err) ||
            (*netns && check_netns(netns, cmd->needs_netns, err, sizeof err)) ||
            check_cni_args(env_or_empty("CNI_ARGS"), err, sizeof err) ||
            check_cni_path(env_or_empty("CNI_PATH"), err, sizeof err))
            fail(ERR_INVALID_ENV, err, "");
    }

    if (in.len == 0)
        fail(ERR_DECODING, "error decoding network configuration", "stdin is empty");
    if (!json_ok)
        fail(ERR_DECODING, "error decoding network configuration", err);
    if (!fields[0].present || !fields[0].is_string || !supported(requested)) {
        snprintf(err, sizeof err, "config is \"%.64s\", plugin supports [0.3.1 0.4.0 1.0.0 1.1.0]",
                 requested ? requested : "");
        fail(ERR_INCOMPATIBLE_VERSION, "incompatible CNI versions", err);
    }
    if (cmd->min_version_1_1 && strcmp(requested, "1.1.0") != 0) {
        snprintf(err, sizeof err, "config version %s does not allow %s (needs 1.1.0)", requested,
                 cmd->name);
        fail(ERR_INCOMPATIBLE_VERSION, "incompatible CNI versions", err);
    }
    for (int i = 1; i <= 2; i++)
        if (!fields[i].is_string || fields[i].value.len == 0) {
            snprintf(err, sizeof err, "invalid network configuration: %s is required (a non-empty string)",
                     fields[i].key);
            fail(ERR_INVALID_CONFIG, err, "the network configuration needs a string name and type");
        }
    const char *socket_path = DEFAULT_SOCKET;
    if (fields[3].present) {
        struct buf *sp = &fields[3].value;
        if (!fields[3].is_string || sp->len == 0 || strlen(sp->data) != sp->len || sp->len > 107)
            fail(ERR_INVALID_CONFIG, "invalid network configuration: socket-path is invalid",
                 "socket-path must be a non-empty unix socket path of at most 107 bytes");
        socket_path = sp->data;
    }
    if (!log_keys_ok)
        fail(ERR_INVALID_CONFIG, log_err, "fix the key in the plugin's entry of the network configuration");
    calllog_debug("socket", socket_path, strlen(socket_path));

    struct buf req = {0};
    build_request(&req, cmd->name, &in);
    struct http_response resp = {0};
    int is_del = strcmp(cmd->name, "DEL") == 0;
    enum http_result r = http_post_unix(
        socket_path, CNI_PATH_ON_AGENT, req.data, req.len,
        env_ms("CELLIUM_CNI_CONNECT_TIMEOUT_MS", 2000),
        env_ms("CELLIUM_CNI_RESPONSE_TIMEOUT_MS", cmd->response_timeout_ms), &resp, err, sizeof err);
    int unavailable = r == HTTP_UNREACHABLE || (r == HTTP_OK && resp.status == 503);
    if (r == HTTP_OK && resp.status == 503)
        snprintf(err, sizeof err, "agent at %s answered 503 (not ready)", socket_path);
    if (unavailable && is_del) {
        char qerr[1024], both[2100];
        if (queue_delete(&req, qerr, sizeof qerr) == 0) {
            snprintf(both, sizeof both, "agent unavailable, DEL queued: %s", err);
            calllog_finish(0, 0, both, NULL, 0);
            return 0;
        }
        snprintf(both, sizeof both, "%s; queueing the DEL failed: %s", err, qerr);
        fail(ERR_TRY_AGAIN_LATER, "cellium agent unreachable and DEL could not be queued", both);
    }
    if (unavailable) {
        char msg[256];
        snprintf(msg, sizeof msg, "cellium agent unreachable at %s, try again later", socket_path);
        fail(ERR_TRY_AGAIN_LATER, msg, err);
    }
    if (r == HTTP_TIMEOUT || r == HTTP_NO_ANSWER)
        fail(ERR_TRY_AGAIN_LATER, "cellium agent did not answer, try again later", err);
    if (r != HTTP_OK)
        fail(ERR_IO, "cellium agent answered an invalid response", err);
    report_http_error(&resp, socket_path, req.len, in.len);
    if (resp.exit_code < 0) {
        snprintf(err, sizeof err, "agent at %s answered without X-Cellium-Cni-Exit-Code", socket_path);
        fail(ERR_IO, "cellium agent answered an invalid response", err);
    }
    write_all(1, resp.body.data ? resp.body.data : "", resp.body.len);
    char said[512];
    int code = answer_code(&resp.body, resp.exit_code, said, sizeof said);
    calllog_finish(resp.exit_code, code, said, resp.body.data, resp.body.len);
    return resp.exit_code;
}
