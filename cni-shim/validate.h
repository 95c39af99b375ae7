/* The shim's cheap checks of the CNI variables, with the rules and words of the agent's
 * src/cells/cni-server/validate.ts (the agent repeats them and is authoritative). */
#ifndef CELLIUM_CNI_VALIDATE_H
#define CELLIUM_CNI_VALIDATE_H

#include <stddef.h>

/* Each check returns 0 when the value is acceptable, else -1 with the whole CNI error message
 * (`invalid CNI_IFNAME: "eth0;id" contains ";" (use ...)`) in msg. */
int check_ifname(const char *v, char *msg, size_t n);
int check_container_id(const char *v, char *msg, size_t n);
/* The path's syntax; with probe, also that it names a network namespace (stat, statfs, and the
 * NS_GET_NSTYPE ioctl on a file of the nsfs filesystem only). */
int check_netns(const char *v, int probe, char *msg, size_t n);
int check_cni_args(const char *v, char *msg, size_t n);
int check_cni_path(const char *v, char *msg, size_t n);

#endif
