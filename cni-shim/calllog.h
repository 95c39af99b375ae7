/* The shim's call log: the netconf's "log-file" and "enable-debug" keys (as cilium-cni's). One line
 * per call is appended to the file; a log that cannot be opened or written never fails the call. */
#ifndef CELLIUM_CNI_CALLLOG_H
#define CELLIUM_CNI_CALLLOG_H

#include <stddef.h>

/* Starts timing the call (call first thing in main). */
void calllog_start(void);
/* Names the file (an absolute path; NULL or "" turns logging off), the level and the command. */
void calllog_configure(const char *path, int debug, const char *command);
/* Adds a debug-only key=value to the line (ignored without enable-debug). */
void calllog_debug(const char *key, const char *value, size_t len);
/* Appends the call's line: its exit status, CNI error code (0 on success), message and the output
 * printed on stdout (the output only with enable-debug). Never fails. */
void calllog_finish(int exit_status, int cni_code, const char *msg, const char *out, size_t out_len);

#endif
