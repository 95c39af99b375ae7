/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The ipcache (address -> identity, longest-prefix match), shared by bpf_lxc (through maps.h) and
 * bpf_sock (which needs it to tell the node's own addresses: the agent writes every address of
 * the host, loopback's too, as the host identity; src/cells/datapath-bpf/datapath.ts). Pinned by
 * name; the loaders bind the agent's map (--bpf-ipcache-map-max) at load.
 */
#ifndef CELLIUM_IPCACHE_H
#define CELLIUM_IPCACHE_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "common.h"

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__type(key, struct ipcache_key);
	__type(value, struct ipcache_value);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cellium_ipcache SEC(".maps");

/* The identity of an address (IPv4: its 4 bytes), IDENTITY_WORLD when the ipcache has none. */
static __always_inline __u32 ipcache_identity(__u8 family, const void *addr)
{
	struct ipcache_key key = {};
	struct ipcache_value *v;

	key.family = family;
	if (family == FAMILY_IPV4) {
		key.prefixlen = IPCACHE_STATIC_PREFIX + 32;
		__builtin_memcpy(key.addr, addr, 4);
	} else {
		key.prefixlen = IPCACHE_STATIC_PREFIX + 128;
		__builtin_memcpy(key.addr, addr, 16);
	}
	v = bpf_map_lookup_elem(&cellium_ipcache, &key);
	return v ? v->identity : IDENTITY_WORLD;
}

#endif
