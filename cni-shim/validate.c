/* Cheap checks of the CNI variables before anything is sent to the agent; see validate.h. */
#define _GNU_SOURCE
#include "validate.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#ifndef NSFS_MAGIC
#define NSFS_MAGIC 0x6e736673
#endif
#ifndef NS_GET_NSTYPE
#define NS_GET_NSTYPE _IO(0xb7, 0x3)
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

#define IFNAME_MAX 15
#define CONTAINER_ID_MAX 128
#define NETNS_PATH_MAX 4095
#define QUOTE_MAX 64

#define IFNAME_FIX "use 1-15 characters of A-Z a-z 0-9 _ . -, starting with a letter or digit"
#define CONTAINER_ID_FIX                                                                         \
    "use 1-128 characters of A-Z a-z 0-9 _ . -, starting with a letter or digit, as libcni "    \
    "requires"
#define NETNS_FIX                                                                                \
    "pass the path of the pod's network namespace, e.g. /var/run/netns/NAME or /proc/PID/ns/net"
#define ARGS_FIX                                                                                 \
    "CNI_ARGS is KEY=VALUE pairs separated by \";\", e.g. IgnoreUnknown=1;K8S_POD_NAME=web"

/* The value in double quotes: printable ASCII as is, '"' and '\' escaped, other bytes as \xNN;
 * past 64 bytes shortened, with the full length appended. */
static void quote(const char *v, char *out, size_t n)
{
    size_t len = strlen(v), o = 0;
    char tmp[QUOTE_MAX * 4 + 64];
    tmp[o++] = '"';
    for (size_t i = 0; i < len && i < QUOTE_MAX; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c == '"' || c == '\\')
            o += (size_t)sprintf(tmp + o, "\\%c", c);
        else if (c >= 0x20 && c < 0x7f)
            tmp[o++] = (char)c;
        else
            o += (size_t)sprintf(tmp + o, "\\x%02x", c);
    }
    if (len > QUOTE_MAX)
        sprintf(tmp + o, "...\" (%zu bytes)", len);
    else
        strcpy(tmp + o, "\"");
    snprintf(out, n, "%s", tmp);
}

/* A byte as messages name it: "\";\"", "a space", "the control character 0x0a". */
static void describe(unsigned char c, char *out, size_t n)
{
    if (c == ' ')
        snprintf(out, n, "a space");
    else if (c < 0x20 || c == 0x7f)
        snprintf(out, n, "the control character 0x%02x", c);
    else if (c >= 0x80)
        snprintf(out, n, "the non-ASCII byte 0x%02x", c);
    else
        snprintf(out, n, "\"%c\"", c);
}

static int is_alnum(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static int is_name_char(unsigned char c)
{
    return is_alnum(c) || c == '_' || c == '.' || c == '-';
}

/* Why v is not a name of [A-Za-z0-9_.-] starting with a letter or digit; 0 when it is one. */
static int name_problem(const char *v, char *why, size_t n)
{
    char d[48];
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (!is_name_char(*p)) {
            describe(*p, d, sizeof d);
            snprintf(why, n, "contains %s", d);
            return -1;
        }
    if (!is_alnum((unsigned char)v[0])) {
        snprintf(why, n, "starts with \"%c\"", v[0]);
        return -1;
    }
    return 0;
}

/* Writes `invalid VAR: "value" why (fix)` into msg and returns -1. */
static int invalid(char *msg, size_t n, const char *var, const char *v, const char *why,
                   const char *fix)
{
    char q[QUOTE_MAX * 4 + 64];
    quote(v, q, sizeof q);
    snprintf(msg, n, "invalid %s: %s %s (%s)", var, q, why, fix);
    return -1;
}

int check_ifname(const char *v, char *msg, size_t n)
{
    char why[128];
    size_t len = strlen(v);
    if (len > IFNAME_MAX)
        snprintf(why, sizeof why, "is %zu bytes long, the kernel allows at most %d", len, IFNAME_MAX);
    else if (strcmp(v, ".") == 0 || strcmp(v, "..") == 0)
        snprintf(why, sizeof why, "is \".\" or \"..\", which the kernel refuses");
    else if (name_problem(v, why, sizeof why) == 0)
        return 0;
    return invalid(msg, n, "CNI_IFNAME", v, why, IFNAME_FIX);
}

int check_container_id(const char *v, char *msg, size_t n)
{
    char why[128];
    size_t len = strlen(v);
    if (len > CONTAINER_ID_MAX)
        snprintf(why, sizeof why, "is %zu characters long, at most %d are allowed", len,
                 CONTAINER_ID_MAX);
    else if (name_problem(v, why, sizeof why) == 0)
        return 0;
    return invalid(msg, n, "CNI_CONTAINERID", v, why, CONTAINER_ID_FIX);
}

static const char *ns_type_name(int type)
{
    switch (type) {
    case CLONE_NEWNS: return "mnt";
    case CLONE_NEWUTS: return "uts";
    case CLONE_NEWIPC: return "ipc";
    case CLONE_NEWUSER: return "user";
    case CLONE_NEWPID: return "pid";
    case CLONE_NEWCGROUP: return "cgroup";
    case CLONE_NEWTIME: return "time";
    default: return "unknown";
    }
}

/* What the path is when it is not a network namespace (fits "it is ..."); 0 when it is one. */
static int netns_problem(const char *v, char *why, size_t n)
{
    struct stat st;
    if (stat(v, &st)) {
        if (errno == ENOENT || errno == ENOTDIR)
            snprintf(why, n, "does not exist");
        else
            snprintf(why, n, "is not a network namespace: it is unreadable (%s)", strerror(errno));
        return -1;
    }
    const char *kind = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : NULL;
    struct statfs sf;
    if (!kind && (statfs(v, &sf) || sf.f_type != NSFS_MAGIC))
        kind = "a regular file";
    if (kind) {
        snprintf(why, n, "is not a network namespace: it is %s", kind);
        return -1;
    }
    /* a file of the nsfs filesystem: opening it has no side effect */
    int fd = open(v, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        snprintf(why, n, "is not a network namespace: it is a namespace file that cannot be opened (%s)",
                 strerror(errno));
        return -1;
    }
    int type = ioctl(fd, NS_GET_NSTYPE);
    close(fd);
    /* kernels before 4.11 lack the ioctl: the agent finds the type out */
    if (type < 0 || type == CLONE_NEWNET)
        return 0;
    snprintf(why, n, "is not a network namespace: it is a %s namespace", ns_type_name(type));
    return -1;
}

int check_netns(const char *v, int probe, char *msg, size_t n)
{
    char why[256], d[48];
    size_t len = strlen(v);
    if (v[0] != '/') {
        snprintf(why, sizeof why, "is not an absolute path");
    } else if (len > NETNS_PATH_MAX) {
        snprintf(why, sizeof why, "is %zu bytes long, at most %d are allowed", len, NETNS_PATH_MAX);
    } else {
        const unsigned char *p = (const unsigned char *)v;
        while (*p && *p >= 0x20 && *p != 0x7f)
            p++;
        if (*p) {
            describe(*p, d, sizeof d);
            snprintf(why, sizeof why, "contains %s", d);
        } else if (!probe || netns_problem(v, why, sizeof why) == 0) {
            return 0;
        }
    }
    return invalid(msg, n, "CNI_NETNS", v, why, NETNS_FIX);
}

/* The first control byte of v, or NULL. */
static const unsigned char *control_byte(const char *v)
{
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return p;
    return NULL;
}

int check_cni_args(const char *v, char *msg, size_t n)
{
    char d[48], q[QUOTE_MAX * 4 + 64];
    const unsigned char *bad = control_byte(v);
    if (bad) {
        describe(*bad, d, sizeof d);
        snprintf(msg, n, "invalid CNI_ARGS: contains %s (%s)", d, ARGS_FIX);
        return -1;
    }
    const char *p = v;
    while (*p) {
        const char *end = strchr(p, ';');
        size_t plen = end ? (size_t)(end - p) : strlen(p);
        if (plen) {
            char pair[QUOTE_MAX + 1];
            snprintf(pair, sizeof pair, "%.*s", (int)(plen < QUOTE_MAX ? plen : QUOTE_MAX), p);
            const char *eq = memchr(p, '=', plen);
            const char *why = !eq                                               ? "without \"=\""
                              : eq == p                                         ? "without a key"
                              : memchr(eq + 1, '=', plen - (size_t)(eq - p) - 1) ? "with more than one \"=\""
                                                                                 : NULL;
            if (why) {
                quote(pair, q, sizeof q);
                snprintf(msg, n, "invalid CNI_ARGS: has the pair %s %s (%s)", q, why, ARGS_FIX);
                return -1;
            }
        }
        p += plen + (end ? 1 : 0);
    }
    return 0;
}

int check_cni_path(const char *v, char *msg, size_t n)
{
    char d[48], why[64];
    const unsigned char *bad = control_byte(v);
    if (!bad)
        return 0;
    describe(*bad, d, sizeof d);
    snprintf(why, sizeof why, "contains %s", d);
    return invalid(msg, n, "CNI_PATH", v, why, "CNI_PATH is a \":\"-separated list of directories");
}
