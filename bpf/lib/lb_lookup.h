/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The service and backend lookups both load balancers share: bpf_lxc's per packet (lib/lb.h) and
 * bpf_sock's per socket (bpf_sock.c). Nothing here touches a packet or conntrack:
 *   - lb4_lookup_service / lb6_lookup_service: the master entry of address:port for the protocol,
 *     then for any protocol (proto 0); none, but the address has a wildcard entry (port 0): the
 *     caller is told the VIP exists without that port (per packet DROP_NO_SERVICE);
 *   - lb4_lookup_nodeport / lb6_lookup_nodeport: the NodePort surrogate (0.0.0.0:port, [::]:port)
 *     of a destination that is one of the node's own addresses (bpf_sock decides that);
 *   - lb4_slot_backend / lb6_slot_backend: the backend of slot 1 + n % count (the backends that
 *     take new flows; terminating ones sit in the slots above count);
 *   - lb_affinity_backend: a client's unexpired ClientIP-affinity choice, when it is still one of
 *     the service's backends.
 */
#ifndef CELLIUM_LB_LOOKUP_H
#define CELLIUM_LB_LOOKUP_H

#include "lb_maps.h"

/* SVC_FLAG2_NO_BACKEND_DROP in a master's flags2: drop instead of reject (--service-no-backend-response=drop). */
#define SVC_FLAG2_NO_BACKEND_DROP (1 << 6)

/*
 * lb4_lookup_service(key, no_port) / lb6_lookup_service: the master entry of
 * key->address:key->dport for key->proto, else for proto 0 (key->proto is left at the one that
 * matched, so the slots are looked up under it). NULL when there is none; then *no_port says
 * whether the address is a VIP with a wildcard entry (a port it does not have). One body for
 * both families (the key type and map differ).
 */
#define LB_LOOKUP_SERVICE(name, key_type, services)						\
static __always_inline struct lb4_service *name(struct key_type *key, int *no_port)		\
{												\
	struct lb4_service *svc;								\
	__be16 dport = key->dport;								\
	__u8 proto = key->proto;								\
												\
	*no_port = 0;										\
	svc = bpf_map_lookup_elem(&services, key);						\
	if (svc)										\
		return svc;									\
	key->proto = 0;										\
	svc = bpf_map_lookup_elem(&services, key);						\
	if (svc)										\
		return svc;									\
	key->dport = 0;										\
	*no_port = bpf_map_lookup_elem(&services, key) != 0;					\
	key->dport = dport;									\
	key->proto = proto;									\
	return 0;										\
}

LB_LOOKUP_SERVICE(lb4_lookup_service, lb4_key, cellium_lb4_services)
LB_LOOKUP_SERVICE(lb6_lookup_service, lb6_key, cellium_lb6_services)

/*
 * lb4_lookup_nodeport(key) / lb6_lookup_nodeport: the master entry of the NodePort surrogate
 * (0.0.0.0 / ::) at key->dport for key->proto, else for proto 0 (Cilium's sock4_wildcard_lookup);
 * only a NodePort master counts. When found, key->address is left at the surrogate (and key->proto
 * at the one that matched), so the slots are looked up under it; else the key is restored. The
 * caller checks first that the destination is one of the node's own addresses.
 */
#define LB_LOOKUP_NODEPORT(name, key_type, services)						\
static __always_inline struct lb4_service *name(struct key_type *key)				\
{												\
	struct key_type orig = *key;								\
	struct lb4_service *svc;								\
												\
	__builtin_memset(&key->address, 0, sizeof(key->address));				\
	svc = bpf_map_lookup_elem(&services, key);						\
	if (!svc) {										\
		key->proto = 0;									\
		svc = bpf_map_lookup_elem(&services, key);					\
	}											\
	if (svc && (svc->flags & SVC_FLAG_NODEPORT))						\
		return svc;									\
	*key = orig;										\
	return 0;										\
}

LB_LOOKUP_NODEPORT(lb4_lookup_nodeport, lb4_key, cellium_lb4_services)
LB_LOOKUP_NODEPORT(lb6_lookup_nodeport, lb6_key, cellium_lb6_services)

/*
 * lb4_slot_backend(key, svc, n, id) / lb6_slot_backend: the backend in slot 1 + n % count of the
 * service whose master `key` found (its ID in *id); NULL when the service has no backends for new
 * flows or the slot or backend is missing.
 */
#define LB_SLOT_BACKEND(name, key_type, backend_type, services, backends)			\
static __always_inline struct backend_type *name(struct key_type *key, const struct lb4_service *svc, __u32 n, __u32 *id) \
{												\
	struct lb4_service *slot;								\
												\
	if (!svc->count)									\
		return 0;									\
	key->backend_slot = (n % svc->count) + 1;						\
	slot = bpf_map_lookup_elem(&services, key);						\
	key->backend_slot = 0;									\
	if (!slot)										\
		return 0;									\
	*id = slot->backend_id;									\
	return bpf_map_lookup_elem(&backends, id);						\
}

LB_SLOT_BACKEND(lb4_slot_backend, lb4_key, lb4_backend, cellium_lb4_services, cellium_lb4_backends)
LB_SLOT_BACKEND(lb6_slot_backend, lb6_key, lb6_backend, cellium_lb6_services, cellium_lb6_backends)

/*
 * ClientIP affinity: the backend a client's unexpired choice names (the master's backend_id is the
 * timeout in seconds), when it is still one of the service's (cellium_lb_affinity_match); else 0.
 */
static __always_inline __u32 lb_affinity_backend(const struct lb_affinity_val *v, const struct lb4_service *svc, __u32 now)
{
	struct lb_affinity_match m = {};

	if (!v || v->last_used + svc->backend_id < now)
		return 0;
	m.backend_id = v->backend_id;
	m.rev_nat_id = svc->rev_nat_index;
	return bpf_map_lookup_elem(&cellium_lb_affinity_match, &m) ? v->backend_id : 0;
}

#endif
