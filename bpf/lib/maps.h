/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The datapath maps. Shared maps are pinned by name under the object's pin root (the agent's
 * --bpf-root, default /sys/fs/bpf/cellium), so every endpoint's program and the agent use the same
 * ones. cellium_policy is per endpoint: the loader binds it to the pinned cellium_policy_<id> at
 * load (bpf_map__set_pin_path / bpf_map__reuse_fd). The shared program (lxc_shared) reads the
 * endpoint's constants from cellium_endpoints and its policy map from cellium_policy_maps instead. Sizes here are mirrored in the layout.ts of each map under src/maps/.
 */
#ifndef CELLIUM_MAPS_H
#define CELLIUM_MAPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "common.h"

/* sizes rather than BTF types: libbpf cannot size an inner map's packed key type */
struct policy_map {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(key_size, sizeof(struct policy_key));
	__uint(value_size, sizeof(struct policy_value));
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC);
};

/* The per-endpoint program's policy map (bound to the endpoint's pinned cellium_policy_<id>). */
struct policy_map cellium_policy SEC(".maps");

/*
 * The shared program's policy maps: slot = endpoint ID, value = that endpoint's pinned
 * cellium_policy_<id> (the agent writes the slot; policy updates still write the inner map).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, ENDPOINT_ID_SLOTS);
	__type(key, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
	__array(values, struct policy_map);
} cellium_policy_maps SEC(".maps");

/* The shared program's endpoints by host interface index (struct endpoint_info). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct endpoint_info);
	__uint(max_entries, ENDPOINT_ID_SLOTS);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cellium_endpoints SEC(".maps");

/* cellium_ipcache: lib/ipcache.h (bpf_sock's too). */
#include "ipcache.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct lxc_key);
	__type(value, struct lxc_value);
	__uint(max_entries, 65536);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cellium_lxc SEC(".maps");

/*
 * Conntrack, shared by every endpoint (Cilium's global CT maps). The agent creates them with the
 * sizes of --bpf-ct-global-tcp-max / --bpf-ct-global-any-max and binds them at load; the sizes
 * here are the defaults.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct ipv4_ct_tuple);
	__type(value, struct ct_entry);
	__uint(max_entries, 524288);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cellium_ct4_global SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct ipv4_ct_tuple);
	__type(value, struct ct_entry);
	__uint(max_entries, 262144);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cellium_ct_any4_global SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct ipv6_ct_tuple);
	__type(value, struct ct_entry);
	__uint(max_entries, 524288);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cellium_ct6_global SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct ipv6_ct_tuple);
	__type(value, struct ct_entry);
	__uint(max_entries, 262144);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cellium_ct_any6_global SEC(".maps");

/*
 * cellium_ct_stats (per-CPU array, CT_STATS_SLOTS per conntrack map in the order above): the
 * entries the datapath created in the map (a key that was not there; a replaced entry is not new)
 * and the entries userspace deleted from it (garbage collection, scrubs, flushes; the agent and
 * the CLI write that slot). The agent compares them with the maps' occupancy: what the table lost
 * beyond those deletes, the kernel's LRU evicted (it reports evictions nowhere).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, CT_STATS_MAX_ENTRIES);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cellium_ct_stats SEC(".maps");

/* Load balancing: lib/lb_maps.h (also bpf_sock's, which needs only those). */
#include "lb_maps.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct metrics_value);
	__uint(max_entries, METRICS_MAX_ENTRIES);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cellium_metrics SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cellium_events SEC(".maps");

#endif
