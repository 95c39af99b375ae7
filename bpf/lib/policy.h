/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The policy decision (identities: ipcache_identity of lib/ipcache.h, unknown -> world),
 * exactly as src/datapath/model/verdict.ts computes it:
 *   1. ARP and IPv6 neighbour discovery (ICMPv6 133-137) pass (before conntrack, in bpf_lxc.c);
 *   2. ingress from the host identity passes (allow-localhost);
 *   3. egress ICMP/ICMPv6 echo request or reply to the host identity passes;
 *   4. two LPM lookups of the policy map: the peer identity and identity 0; a deny from either
 *      drops (policy-deny), otherwise a match from either passes, otherwise drop (policy).
 * For policy verdict events the deciding entry's kind is found with two more lookups (only when
 * asked, i.e. for new connections): the same key at the identity's prefix and at the protocol's
 * prefix; the one that returns the deciding entry itself tells how long its prefix is.
 */
#ifndef CELLIUM_POLICY_H
#define CELLIUM_POLICY_H

#include "maps.h"
#include "parse.h"

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

/* The kind of rule `hit` (found for `key` at the full prefix) is: 0 L3, 1 protocol, 2 port. */
static __always_inline __u8 policy_entry_kind(void *policy, struct policy_key *key, const struct policy_value *hit)
{
	struct policy_value *v;

	key->prefixlen = 40;	/* egress + identity */
	v = bpf_map_lookup_elem(policy, key);
	if (v && v == hit)
		return 0;
	key->prefixlen = 48;	/* + protocol */
	v = bpf_map_lookup_elem(policy, key);
	if (v && v == hit)
		return 1;
	return 2;
}

/* The match type of the deciding entry (`peer`: it was found for the peer identity, else for any). */
static __always_inline __u8 policy_match_type(void *policy, struct policy_key *key, const struct policy_value *hit, int peer)
{
	__u8 kind;

	if (!hit)
		return POLICY_MATCH_NONE;
	kind = policy_entry_kind(policy, key, hit);
	if (peer)
		return kind == 0 ? POLICY_MATCH_L3_ONLY : kind == 1 ? POLICY_MATCH_L3_PROTO : POLICY_MATCH_L3_L4;
	return kind == 0 ? POLICY_MATCH_ALL : kind == 1 ? POLICY_MATCH_PROTO_ONLY : POLICY_MATCH_L4_ONLY;
}

/*
 * DROP_NONE when the packet may pass, otherwise the drop reason; with `match` set, also the match
 * type of the entry that decided (POLICY_MATCH_NONE when none matched).
 */
static __always_inline enum drop_reason policy_lookup(void *policy, __u8 egress, __u32 identity, const struct pkt *p, __u8 *match)
{
	struct policy_key key = {
		.prefixlen = POLICY_PREFIX_FULL,
		.egress = egress,
		.identity = identity,
		.protocol = p->protocol,
		.dport = p->dport,
	};
	struct policy_value *peer, *any;

	if (!policy)
		return DROP_POLICY;	/* no policy map (shared program, empty slot): nothing matches */
	peer = bpf_map_lookup_elem(policy, &key);
	key.identity = IDENTITY_ANY;
	any = bpf_map_lookup_elem(policy, &key);
	if ((peer && peer->deny) || (any && any->deny)) {
		if (match) {
			int by_peer = peer && peer->deny;

			key.identity = by_peer ? identity : IDENTITY_ANY;
			*match = policy_match_type(policy, &key, by_peer ? peer : any, by_peer);
		}
		return DROP_POLICY_DENY;
	}
	if (peer || any) {
		if (match) {
			key.identity = peer ? identity : IDENTITY_ANY;
			*match = policy_match_type(policy, &key, peer ? peer : any, peer != 0);
		}
		return DROP_NONE;
	}
	return DROP_POLICY;
}

/*
 * The verdict for an IP packet whose peer resolved to `identity`, looked up in the endpoint's
 * policy map `policy` (NULL: none, only the always-allowed cases pass); with `match` set, also the match
 * type (the always-allowed host cases are POLICY_MATCH_ALL).
 */
static __always_inline enum drop_reason policy_verdict(void *policy, __u8 egress, __u32 identity, const struct pkt *p, __u8 *match)
{
	if ((!egress && identity == IDENTITY_HOST) || (egress && identity == IDENTITY_HOST && is_echo(p))) {
		if (match)
			*match = POLICY_MATCH_ALL;
		return DROP_NONE;
	}
	return policy_lookup(policy, egress, identity, p, match);
}

#endif
