/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Identity resolution (ipcache longest-prefix match; unknown -> world) and the policy decision,
 * exactly as src/cells/datapath/verdict-model.ts computes it:
 *   1. ARP and IPv6 neighbour discovery (ICMPv6 133-137) pass (before conntrack, in bpf_lxc.c);
 *   2. ingress from the host identity passes (allow-localhost);
 *   3. egress ICMP/ICMPv6 echo request or reply to the host identity passes;
 *   4. two LPM lookups of the policy map: the peer identity and identity 0; a deny from either
 *      drops (policy-deny), otherwise a match from either passes, otherwise drop (policy).
 */
#ifndef CELLIUM_POLICY_H
#define CELLIUM_POLICY_H

#include "maps.h"
#include "parse.h"

static __always_inline __u32 resolve_identity(__u8 family, const __u8 *addr)
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

static __always_inline int is_neighbour_discovery(const struct pkt *p)
{
	return p->family == FAMILY_IPV6 && p->protocol == IPPROTO_ICMPV6 && p->has_l4 &&
	       p->icmp_type >= 133 && p->icmp_type <= 137;
}

static __always_inline int is_echo(const struct pkt *p)
{
	if (!p->has_l4)
		return 0;
	if (p->protocol == IPPROTO_ICMP)
		return p->icmp_type == 8 || p->icmp_type == 0;
	if (p->protocol == IPPROTO_ICMPV6)
		return p->icmp_type == 128 || p->icmp_type == 129;
	return 0;
}

/* DROP_NONE when the packet may pass, otherwise the drop reason. */
static __always_inline enum drop_reason policy_lookup(__u8 egress, __u32 identity, const struct pkt *p)
{
	struct policy_key key = {
		.prefixlen = POLICY_PREFIX_FULL,
		.egress = egress,
		.identity = identity,
		.protocol = p->protocol,
		.dport = p->dport,
	};
	struct policy_value *peer, *any;

	peer = bpf_map_lookup_elem(&cellium_policy, &key);
	key.identity = IDENTITY_ANY;
	any = bpf_map_lookup_elem(&cellium_policy, &key);
	if ((peer && peer->deny) || (any && any->deny))
		return DROP_POLICY_DENY;
	if (peer || any)
		return DROP_NONE;
	return DROP_POLICY;
}

/* The verdict for an IP packet whose peer resolved to `identity`. */
static __always_inline enum drop_reason policy_verdict(__u8 egress, __u32 identity, const struct pkt *p)
{
	if (!egress && identity == IDENTITY_HOST)
		return DROP_NONE;
	if (egress && identity == IDENTITY_HOST && is_echo(p))
		return DROP_NONE;
	return policy_lookup(egress, identity, p);
}

#endif
