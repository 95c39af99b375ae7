/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Service load balancing for packets from the endpoint (Cilium's lb4_lookup_service, lb4_local,
 * lb4_rev_nat), IPv4 and IPv6 (lb6_*: the same, without the IP checksum):
 *   - the destination is looked up in cellium_lb4_services (address, port, protocol; then protocol
 *     0); not found but the address has a wildcard entry (port 0): DROP_NO_SERVICE;
 *   - the CT_SERVICE entry (TUPLE_F_SERVICE, the backend ID in rx_bytes) keeps a flow on its
 *     backend; a backend that is gone, or not active for a new TCP connection (pure SYN), is
 *     replaced: by the client's unexpired ClientIP-affinity choice (SVC_FLAG_AFFINITY), else by
 *     the service's Maglev table (--bpf-lb-algorithm=maglev) at a hash of the 5-tuple, else by a
 *     random slot 1..count (none: DROP_NO_BACKEND);
 *   - the packet is DNATed to the backend (addresses, ports, checksums) before conntrack and the
 *     policy, which is the backend's; the connection's entry then carries the rev-NAT index;
 *   - a reply (to_container, CT_REPLY with a rev-NAT index) gets its source rewritten to the
 *     frontend from cellium_lb4_reverse_nat;
 *   - a destination that is no frontend but one of the node's addresses is looked up as the
 *     NodePort surrogate of its port (the node address kept in the CT_SERVICE entry for the reply);
 *   - a backend that is the client itself (hairpin) marks the packet (p->hairpin): bpf_lxc gives
 *     it the loopback source (lb_hairpin_snat) and turns it around; its reply's rev-NAT also
 *     restores the client as the destination (CT_F_LB_LOOPBACK).
 * The lookups of services and backends are lib/lb_lookup.h (bpf_sock shares them). The memory
 * datapath's model is src/datapath/model/lb.ts.
 */
#ifndef CELLIUM_LB_H
#define CELLIUM_LB_H

#include <stddef.h>
#include <linux/ip.h>
#include "conntrack.h"
#include "lb_lookup.h"

#ifndef BPF_F_PSEUDO_HDR
#define BPF_F_PSEUDO_HDR (1ULL << 4)
#endif
#ifndef BPF_F_MARK_MANGLED_0
#define BPF_F_MARK_MANGLED_0 (1ULL << 5)
#endif

/*
 * Rewrites the IPv4 destination (dst) or source address and port of the packet, fixing the IP and
 * L4 checksums, and `p` with it. Returns < 0 when the packet cannot be written. A global function.
 */
__attribute__((noinline)) int lb4_rewrite(struct __sk_buff *skb, struct pkt *p, __u32 addr, __u32 port, __u32 dst)
{
	__u8 vihl;
	__u32 l4off, old_addr, csum_off, flags;
	__be16 new_port = (__be16)port, old_port;

	if (!skb || !p)
		return -1;
	if (bpf_skb_load_bytes(skb, ETH_HLEN, &vihl, 1) < 0)
		return -1;
	l4off = ETH_HLEN + (vihl & 0xf) * 4;
	csum_off = l4off + (p->protocol == IPPROTO_TCP ? 16 : 6);
	flags = p->protocol == IPPROTO_UDP ? BPF_F_MARK_MANGLED_0 : 0;
	__builtin_memcpy(&old_addr, dst ? p->dst : p->src, 4);
	old_port = dst ? p->ct_dport : p->ct_sport;
	if (old_addr != addr) {
		if (bpf_l4_csum_replace(skb, csum_off, old_addr, addr, flags | BPF_F_PSEUDO_HDR | 4) < 0)
			return -1;
		if (bpf_l3_csum_replace(skb, ETH_HLEN + offsetof(struct iphdr, check), old_addr, addr, 4) < 0)
			return -1;
		if (bpf_skb_store_bytes(skb, ETH_HLEN + (dst ? offsetof(struct iphdr, daddr) : offsetof(struct iphdr, saddr)), &addr, 4, 0) < 0)
			return -1;
	}
	if (old_port != new_port) {
		if (bpf_l4_csum_replace(skb, csum_off, old_port, new_port, flags | 2) < 0)
			return -1;
		if (bpf_skb_store_bytes(skb, l4off + (dst ? 2 : 0), &new_port, 2, 0) < 0)
			return -1;
	}
	if (dst) {
		__builtin_memcpy(p->dst, &addr, 4);
		p->dport = new_port;
		p->ct_dport = new_port;
	} else {
		__builtin_memcpy(p->src, &addr, 4);
		p->ct_sport = new_port;
	}
	return 0;
}

/* A hash of the packet's 5-tuple (a murmur3 finalizer over the words): the Maglev table's index. */
static __always_inline __u32 lb_hash(const struct pkt *p)
{
	const __u32 *s = (const __u32 *)p->src, *d = (const __u32 *)p->dst;
	__u32 h = ((__u32)p->ct_sport << 16 | p->ct_dport) ^ p->protocol;

	h ^= s[0] ^ (s[1] * 31) ^ (s[2] * 131) ^ (s[3] * 1031);
	h ^= (d[0] * 7) ^ (d[1] * 37) ^ (d[2] * 137) ^ (d[3] * 1033);
	h ^= h >> 16;
	h *= 0x85ebca6b;
	h ^= h >> 13;
	h *= 0xc2b2ae35;
	h ^= h >> 16;
	return h;
}

/* The backend a Maglev table picks for the packet (0: the service has no table: random selection). */
static __always_inline __u32 lb_maglev_backend(const struct lb_maglev_lut *t, const struct pkt *p)
{
	__u32 idx;

	if (!t)
		return 0;
	idx = lb_hash(p) % LB_MAGLEV_LUT_SIZE;
	/* the verifier does not bound a modulo: the compiler must keep this check */
	asm volatile("" : "+r"(idx));
	if (idx >= LB_MAGLEV_LUT_SIZE)
		return 0;
	return t->backend_ids[idx];
}

/* lb4_egress's answer for a service without backends whose packets are rejected (ICMP unreachable). */
#define LB_REJECT 1000

/* The hairpin source address of a family (LB_LOOPBACK_IPV4 / _IPV6 of common.h), network order. */
static __always_inline void lb_loopback_addr(__u8 family, __u32 *w)
{
	if (family == FAMILY_IPV4) {
		w[0] = bpf_htonl(LB_LOOPBACK_IPV4);
		w[1] = 0;
		w[2] = 0;
		w[3] = 0;
		return;
	}
	w[0] = bpf_htonl(LB_LOOPBACK_IPV6_W0);
	w[1] = bpf_htonl(LB_LOOPBACK_IPV6_W1);
	w[2] = bpf_htonl(LB_LOOPBACK_IPV6_W2);
	w[3] = bpf_htonl(LB_LOOPBACK_IPV6_W3);
}

/*
 * The NodePort service a pod's packet to `<node address>:<port>` reaches (bpf_sock's surrogate
 * lookup, per packet): the NodePort surrogate's master at the port for the protocol, else for any
 * protocol (the hash lookups first: most packets miss them), when the destination is one of the
 * node's own addresses (the host identity in the ipcache, which the agent writes for every address
 * of the host). On a match the key holds the surrogate (0.0.0.0 / ::) and the protocol that
 * matched, so the slots are looked up under them; else the key is the packet's again. One body for
 * both families (no copy of the key: the stack of lb6_egress stays small).
 */
/* Whether the packet comes from the hairpin loopback address of its family. */
static __always_inline int lb_from_loopback(const struct pkt *p)
{
	const __u32 *s = (const __u32 *)p->src;
	__u32 lo[4];

	lb_loopback_addr(p->family, lo);
	if (p->family == FAMILY_IPV4)
		return s[0] == lo[0];
	return s[0] == lo[0] && s[1] == lo[1] && s[2] == lo[2] && s[3] == lo[3];
}

/*
 * Whether the packet's destination is one of the node's own addresses (the host identity in the
 * ipcache). A global function: its ipcache key is not on the load balancer's stack.
 */
__attribute__((noinline)) int lb_node_addr(const struct pkt *p)
{
	if (!p)
		return 0;
	return ipcache_identity(p->family, p->dst) == IDENTITY_HOST;
}

#define LB_LOOKUP_NODEPORT_PKT(name, key_type, services, alen)				\
static __always_inline struct lb4_service *name(struct key_type *key, const struct pkt *p)	\
{												\
	struct lb4_service *svc;								\
	__u8 proto = key->proto;								\
												\
	__builtin_memset(&key->address, 0, alen);						\
	svc = bpf_map_lookup_elem(&services, key);						\
	if (!svc) {										\
		key->proto = 0;									\
		svc = bpf_map_lookup_elem(&services, key);					\
	}											\
	if (svc && (svc->flags & SVC_FLAG_NODEPORT) && lb_node_addr(p))				\
		return svc;									\
	__builtin_memcpy(&key->address, p->dst, alen);						\
	key->proto = proto;									\
	return 0;										\
}

LB_LOOKUP_NODEPORT_PKT(lb4_lookup_nodeport_pkt, lb4_key, cellium_lb4_services, 4)
LB_LOOKUP_NODEPORT_PKT(lb6_lookup_nodeport_pkt, lb6_key, cellium_lb6_services, 16)

/*
 * The original destination address of a connection translated through a NodePort surrogate,
 * remembered in its CT_SERVICE entry (the frontend of the reverse-NAT table is the surrogate,
 * 0.0.0.0 or ::, not the node address the client connected to): IPv4 in tx_bytes, IPv6 in
 * rx_packets and tx_bytes (a service entry counts nothing: rx_bytes is its backend ID).
 */
static __always_inline void lb_svc_entry_set_addr(struct ct_entry *e, __u8 family, const __u8 *addr)
{
	if (family == FAMILY_IPV4) {
		__u32 a;

		__builtin_memcpy(&a, addr, 4);
		e->tx_bytes = a;
		return;
	}
	__builtin_memcpy(&e->rx_packets, addr, 8);
	__builtin_memcpy(&e->tx_bytes, addr + 8, 8);
}


/*
 * Service translation of a packet from the endpoint: 0 when its destination is no service, 1 when
 * it was translated (p->rev_nat set), -reason when it is dropped, -LB_REJECT when it is answered
 * with an ICMP port unreachable (a service without backends). A global function.
 */
__attribute__((noinline)) int lb4_egress(struct __sk_buff *skb, struct pkt *p)
{
	struct lb4_key key = {};
	struct lb4_affinity_key aff_key = {};
	struct lb_affinity_val aff = {};
	struct lb4_service *svc;
	struct lb4_backend *be = 0;
	union ct_key k = {};
	struct ct_entry *e, ne = {};
	__u32 backend_id = 0, now, lifetime;
	__u16 rev_nat;
	int syn, no_port;

	if (!skb || !p)
		return 0;
	if (p->family != FAMILY_IPV4 || p->fragment || (p->protocol != IPPROTO_TCP && p->protocol != IPPROTO_UDP))
		return 0;
	__builtin_memcpy(&key.address, p->dst, 4);
	key.dport = p->dport;
	key.proto = p->protocol;
	svc = lb4_lookup_service(&key, &no_port);
	if (!svc && !no_port) {
		svc = lb4_lookup_nodeport_pkt(&key, p);
		p->nodeport = svc != 0;
	}
	if (!svc)
		return no_port ? -DROP_NO_SERVICE : 0;
	p->rev_nat = svc->rev_nat_index;
	now = ct_now();
	lifetime = now + (p->protocol == IPPROTO_TCP ? ct_lifetime_tcp : ct_lifetime_any);
	syn = p->protocol == IPPROTO_TCP && (p->tcp_flags & (TCP_SYN | TCP_ACK)) == TCP_SYN;
	/* keyed by the frontend: a NodePort surrogate's connections by the surrogate (its reply finds it) */
	ct_key_fill(&k, FAMILY_IPV4, p->src, (const __u8 *)&key.address, p->ct_sport, p->ct_dport, p->protocol, TUPLE_F_SERVICE);
	e = ct_map_lookup(&k, FAMILY_IPV4);
	if (e && e->lifetime >= now && e->rev_nat_index == svc->rev_nat_index) {
		backend_id = e->rx_bytes;
		be = bpf_map_lookup_elem(&cellium_lb4_backends, &backend_id);
		if (!be || (be->flags != BE_STATE_ACTIVE && syn))
			backend_id = 0;
	}
	if (!backend_id) {
		if (svc->count == 0)
			return (svc->flags2 & SVC_FLAG2_NO_BACKEND_DROP) ? -DROP_NO_BACKEND : -LB_REJECT;
		if (svc->flags & SVC_FLAG_AFFINITY) {
			__builtin_memcpy(&aff_key.client_ip, p->src, 4);
			aff_key.rev_nat_id = svc->rev_nat_index;
			backend_id = lb_affinity_backend(bpf_map_lookup_elem(&cellium_lb4_affinity, &aff_key), svc, now);
			be = backend_id ? bpf_map_lookup_elem(&cellium_lb4_backends, &backend_id) : 0;
			if (!be || be->flags != BE_STATE_ACTIVE)
				backend_id = 0;
		}
		if (!backend_id) {
			rev_nat = svc->rev_nat_index;
			backend_id = lb_maglev_backend(bpf_map_lookup_elem(&cellium_lb4_maglev, &rev_nat), p);
			be = backend_id ? bpf_map_lookup_elem(&cellium_lb4_backends, &backend_id) : 0;
		}
		if (!be) {
			be = lb4_slot_backend(&key, svc, bpf_get_prandom_u32(), &backend_id);
			if (!be)
				return -DROP_NO_BACKEND;
		}
		if (svc->flags & SVC_FLAG_AFFINITY) {
			aff.last_used = now;
			aff.backend_id = backend_id;
			bpf_map_update_elem(&cellium_lb4_affinity, &aff_key, &aff, BPF_ANY);
		}
		ne.rx_bytes = backend_id;
		ne.rev_nat_index = svc->rev_nat_index;
		ne.lifetime = lifetime;
		ne.tx_packets = 1;
		if (p->nodeport)
			lb_svc_entry_set_addr(&ne, FAMILY_IPV4, p->dst);
		if (ct_map_update(&k, FAMILY_IPV4, &ne) < 0)
			return -DROP_CT_INSERT_FAILED;
		if (!e)
			ct_count_created(ct_map_index(&k, FAMILY_IPV4));	/* a new key: for the agent's eviction accounting */
	} else if (e->lifetime != lifetime) {
		e->lifetime = lifetime;
	}
	if (!be)
		return -DROP_NO_BACKEND;
	/* hairpin: the backend is the client itself; its source becomes the loopback address */
	if (be->address == *(const __u32 *)p->src)
		p->hairpin = 1;
	if (lb4_rewrite(skb, p, be->address, be->port, 1) < 0)
		return -DROP_INVALID;
	return 1;
}

/* Folds a bpf_csum_diff sum into an Internet checksum. */
static __always_inline __u16 csum_fold32(__s64 sum)
{
	__u32 c = (__u32)sum;

	c = (c & 0xffff) + (c >> 16);
	c = (c & 0xffff) + (c >> 16);
	return (__u16)~c;
}

/*
 * Turns an IPv4 packet into the ICMP port unreachable its sender gets back (from the address it
 * sent to, quoting its IP header and 8 bytes) and hands it straight to the endpoint's own interface
 * (bpf_redirect_peer from the host veth's ingress). Returns the TC action, TC_ACT_SHOT when the
 * packet cannot be made.
 * A global function.
 */
__attribute__((noinline)) int lb4_reject(struct __sk_buff *skb)
{
	__u8 eth[12], tmp[6];
	struct iphdr ip;
	__u8 icmp[36] = {};
	__u32 saddr;
	__s64 sum;

	if (!skb)
		return TC_ACT_SHOT;
	if (bpf_skb_load_bytes(skb, 0, eth, 12) < 0 || bpf_skb_load_bytes(skb, ETH_HLEN, &ip, sizeof(ip)) < 0 || ip.ihl != 5)
		return TC_ACT_SHOT;
	/* the quoted packet: its IP header and the first 8 bytes of its payload */
	if (bpf_skb_load_bytes(skb, ETH_HLEN, icmp + 8, 28) < 0)
		return TC_ACT_SHOT;
	icmp[0] = 3;	/* destination unreachable */
	icmp[1] = 3;	/* port unreachable */
	sum = bpf_csum_diff(0, 0, (__be32 *)icmp, sizeof(icmp), 0);
	if (sum < 0)
		return TC_ACT_SHOT;
	*(__u16 *)&icmp[2] = csum_fold32(sum);
	saddr = ip.saddr;
	ip.saddr = ip.daddr;
	ip.daddr = saddr;
	ip.tos = 0;
	ip.tot_len = bpf_htons(sizeof(ip) + sizeof(icmp));
	ip.id = 0;
	ip.frag_off = 0;
	ip.ttl = 64;
	ip.protocol = IPPROTO_ICMP;
	ip.check = 0;
	sum = bpf_csum_diff(0, 0, (__be32 *)&ip, sizeof(ip), 0);
	if (sum < 0)
		return TC_ACT_SHOT;
	ip.check = csum_fold32(sum);
	__builtin_memcpy(tmp, eth, 6);
	__builtin_memcpy(eth, eth + 6, 6);
	__builtin_memcpy(eth + 6, tmp, 6);
	if (bpf_skb_change_tail(skb, ETH_HLEN + sizeof(ip) + sizeof(icmp), 0) < 0)
		return TC_ACT_SHOT;
	if (bpf_skb_store_bytes(skb, 0, eth, 12, 0) < 0 || bpf_skb_store_bytes(skb, ETH_HLEN, &ip, sizeof(ip), 0) < 0 ||
	    bpf_skb_store_bytes(skb, ETH_HLEN + sizeof(ip), icmp, sizeof(icmp), 0) < 0)
		return TC_ACT_SHOT;
	/* into the pod's own interface (its ingress), not out of ours: to_container, whose ingress
	 * policy would judge an ICMP error of a flow conntrack never saw, is not in the way */
	return bpf_redirect_peer(skb->ifindex, 0);
}

/* The ICMPv6 checksum's pseudo header. */
struct lb6_pseudo_hdr {
	__u8 saddr[16];
	__u8 daddr[16];
	__be32 len;
	__be32 nexthdr;
};

/*
 * lb4_reject for IPv6: the ICMPv6 destination unreachable / port unreachable (type 1 code 4) from
 * the address the packet was sent to, quoting its IPv6 header and 8 bytes of payload, into the
 * pod. A packet with extension headers is not answered (TC_ACT_SHOT). A global function.
 */
__attribute__((noinline)) int lb6_reject(struct __sk_buff *skb)
{
	__u8 eth[12], tmp[6];
	struct ipv6hdr ip;
	__u8 icmp[56] = {};
	struct lb6_pseudo_hdr ph = {};
	__s64 sum;

	if (!skb)
		return TC_ACT_SHOT;
	if (bpf_skb_load_bytes(skb, 0, eth, 12) < 0 || bpf_skb_load_bytes(skb, ETH_HLEN, &ip, sizeof(ip)) < 0 ||
	    (ip.nexthdr != IPPROTO_TCP && ip.nexthdr != IPPROTO_UDP))
		return TC_ACT_SHOT;
	if (bpf_skb_load_bytes(skb, ETH_HLEN, icmp + 8, 48) < 0)
		return TC_ACT_SHOT;
	icmp[0] = 1;	/* destination unreachable */
	icmp[1] = 4;	/* port unreachable */
	__builtin_memcpy(ph.saddr, &ip.daddr, 16);
	__builtin_memcpy(ph.daddr, &ip.saddr, 16);
	ph.len = bpf_htonl(sizeof(icmp));
	ph.nexthdr = bpf_htonl(IPPROTO_ICMPV6);
	sum = bpf_csum_diff(0, 0, (__be32 *)&ph, sizeof(ph), 0);
	if (sum < 0)
		return TC_ACT_SHOT;
	sum = bpf_csum_diff(0, 0, (__be32 *)icmp, sizeof(icmp), (__u32)sum);
	if (sum < 0)
		return TC_ACT_SHOT;
	*(__u16 *)&icmp[2] = csum_fold32(sum);
	__builtin_memcpy(&ip.saddr, ph.saddr, 16);
	__builtin_memcpy(&ip.daddr, ph.daddr, 16);
	ip.payload_len = bpf_htons(sizeof(icmp));
	ip.nexthdr = IPPROTO_ICMPV6;
	ip.hop_limit = 64;
	__builtin_memcpy(tmp, eth, 6);
	__builtin_memcpy(eth, eth + 6, 6);
	__builtin_memcpy(eth + 6, tmp, 6);
	if (bpf_skb_change_tail(skb, ETH_HLEN + sizeof(ip) + sizeof(icmp), 0) < 0)
		return TC_ACT_SHOT;
	if (bpf_skb_store_bytes(skb, 0, eth, 12, 0) < 0 || bpf_skb_store_bytes(skb, ETH_HLEN, &ip, sizeof(ip), 0) < 0 ||
	    bpf_skb_store_bytes(skb, ETH_HLEN + sizeof(ip), icmp, sizeof(icmp), 0) < 0)
		return TC_ACT_SHOT;
	return bpf_redirect_peer(skb->ifindex, 0);
}

/*
 * Puts the rev-NAT index on the entry ct_create just wrote for an allowed new connection to a
 * service, and CT_F_LB_LOOPBACK when it is a hairpin one (p->hairpin).
 */
static __always_inline void lb4_ct_set_rev_nat(const struct pkt *p, __u32 egress, __u32 rev_nat)
{
	union ct_key k = {};
	struct ct_entry *e;

	ct_key_fill(&k, p->family, p->dst, p->src, p->ct_dport, p->ct_sport, p->protocol, egress ? TUPLE_F_OUT : TUPLE_F_IN);
	e = ct_map_lookup(&k, p->family);
	if (!e)
		return;
	e->rev_nat_index = rev_nat;
	if (p->hairpin)
		e->flags |= CT_F_LB_LOOPBACK;
}

/*
 * IPv6: rewrites the destination (dst) or source address and port (no IP checksum; the L4 one
 * covers the pseudo header). Only a TCP/UDP header right after the IPv6 header is rewritten.
 */
struct lb6_addr {
	__u8 b[16];
};

__attribute__((noinline)) int lb6_rewrite(struct __sk_buff *skb, struct pkt *p, const struct lb6_addr *addr, __u32 port, __u32 dst)
{
	__u32 l4off = ETH_HLEN + 40, csum_off, flags;
	__be16 new_port = (__be16)port, old_port;
	__u8 old[16], new[16];
	__s64 diff;

	if (!skb || !p || !addr)
		return -1;
	csum_off = l4off + (p->protocol == IPPROTO_TCP ? 16 : 6);
	flags = p->protocol == IPPROTO_UDP ? BPF_F_MARK_MANGLED_0 : 0;
	__builtin_memcpy(old, dst ? p->dst : p->src, 16);
	__builtin_memcpy(new, addr->b, 16);
	old_port = dst ? p->ct_dport : p->ct_sport;
	diff = bpf_csum_diff((__be32 *)old, 16, (__be32 *)new, 16, 0);
	if (diff < 0)
		return -1;
	if (bpf_l4_csum_replace(skb, csum_off, 0, diff, flags | BPF_F_PSEUDO_HDR) < 0)
		return -1;
	if (bpf_skb_store_bytes(skb, ETH_HLEN + (dst ? 24 : 8), new, 16, 0) < 0)
		return -1;
	if (old_port != new_port) {
		if (bpf_l4_csum_replace(skb, csum_off, old_port, new_port, flags | 2) < 0)
			return -1;
		if (bpf_skb_store_bytes(skb, l4off + (dst ? 2 : 0), &new_port, 2, 0) < 0)
			return -1;
	}
	if (dst) {
		__builtin_memcpy(p->dst, new, 16);
		p->dport = new_port;
		p->ct_dport = new_port;
	} else {
		__builtin_memcpy(p->src, new, 16);
		p->ct_sport = new_port;
	}
	return 0;
}

/* Whether two IPv6 addresses are the same. */
static __always_inline int lb6_addr_eq(const __u8 *a, const __u8 *b)
{
	const __u32 *x = (const __u32 *)a, *y = (const __u32 *)b;

	return x[0] == y[0] && x[1] == y[1] && x[2] == y[2] && x[3] == y[3];
}

/* IPv6 service translation, as lb4_egress. A global function. */
__attribute__((noinline)) int lb6_egress(struct __sk_buff *skb, struct pkt *p)
{
	struct lb6_key key = {};
	/* the affinity key and value are done with before the new entry is made: one stack slot */
	union {
		struct {
			struct lb6_affinity_key key;
			struct lb_affinity_val val;
		} aff;
		struct ct_entry ne;
	} u;
	struct lb4_service *svc;
	struct lb6_backend *be = 0;
	union ct_key k = {};
	struct ct_entry *e;
	__u32 backend_id = 0, now, lifetime;
	__u16 rev_nat;
	__u8 nexthdr;
	int syn, no_port;

	if (!skb || !p)
		return 0;
	if (p->family != FAMILY_IPV6 || p->fragment || (p->protocol != IPPROTO_TCP && p->protocol != IPPROTO_UDP))
		return 0;
	__builtin_memcpy(key.address, p->dst, 16);
	key.dport = p->dport;
	key.proto = p->protocol;
	svc = lb6_lookup_service(&key, &no_port);
	if (!svc && !no_port) {
		svc = lb6_lookup_nodeport_pkt(&key, p);
		p->nodeport = svc != 0;
	}
	if (!svc)
		return no_port ? -DROP_NO_SERVICE : 0;
	/* extension headers: not translated (the L4 header is not where lb6_rewrite writes) */
	if (bpf_skb_load_bytes(skb, ETH_HLEN + 6, &nexthdr, 1) < 0 || nexthdr != p->protocol)
		return -DROP_INVALID;
	p->rev_nat = svc->rev_nat_index;
	now = ct_now();
	lifetime = now + (p->protocol == IPPROTO_TCP ? ct_lifetime_tcp : ct_lifetime_any);
	syn = p->protocol == IPPROTO_TCP && (p->tcp_flags & (TCP_SYN | TCP_ACK)) == TCP_SYN;
	/* keyed by the frontend: a NodePort surrogate's connections by the surrogate (its reply finds it) */
	ct_key_fill(&k, FAMILY_IPV6, p->src, key.address, p->ct_sport, p->ct_dport, p->protocol, TUPLE_F_SERVICE);
	e = ct_map_lookup(&k, FAMILY_IPV6);
	if (e && e->lifetime >= now && e->rev_nat_index == svc->rev_nat_index) {
		backend_id = e->rx_bytes;
		be = bpf_map_lookup_elem(&cellium_lb6_backends, &backend_id);
		if (!be || (be->flags != BE_STATE_ACTIVE && syn))
			backend_id = 0;
	}
	if (!backend_id) {
		if (svc->count == 0)
			return (svc->flags2 & SVC_FLAG2_NO_BACKEND_DROP) ? -DROP_NO_BACKEND : -LB_REJECT;
		__builtin_memset(&u, 0, sizeof(u));
		if (svc->flags & SVC_FLAG_AFFINITY) {
			__builtin_memcpy(u.aff.key.client_ip, p->src, 16);
			u.aff.key.rev_nat_id = svc->rev_nat_index;
			backend_id = lb_affinity_backend(bpf_map_lookup_elem(&cellium_lb6_affinity, &u.aff.key), svc, now);
			be = backend_id ? bpf_map_lookup_elem(&cellium_lb6_backends, &backend_id) : 0;
			if (!be || be->flags != BE_STATE_ACTIVE)
				backend_id = 0;
		}
		if (!backend_id) {
			rev_nat = svc->rev_nat_index;
			backend_id = lb_maglev_backend(bpf_map_lookup_elem(&cellium_lb6_maglev, &rev_nat), p);
			be = backend_id ? bpf_map_lookup_elem(&cellium_lb6_backends, &backend_id) : 0;
		}
		if (!be) {
			be = lb6_slot_backend(&key, svc, bpf_get_prandom_u32(), &backend_id);
			if (!be)
				return -DROP_NO_BACKEND;
		}
		if (svc->flags & SVC_FLAG_AFFINITY) {
			u.aff.val.last_used = now;
			u.aff.val.backend_id = backend_id;
			bpf_map_update_elem(&cellium_lb6_affinity, &u.aff.key, &u.aff.val, BPF_ANY);
		}
		__builtin_memset(&u, 0, sizeof(u));
		u.ne.rx_bytes = backend_id;
		u.ne.rev_nat_index = svc->rev_nat_index;
		u.ne.lifetime = lifetime;
		u.ne.tx_packets = 1;
		if (p->nodeport)
			lb_svc_entry_set_addr(&u.ne, FAMILY_IPV6, p->dst);
		if (ct_map_update(&k, FAMILY_IPV6, &u.ne) < 0)
			return -DROP_CT_INSERT_FAILED;
		if (!e)
			ct_count_created(ct_map_index(&k, FAMILY_IPV6));	/* a new key: for the agent's eviction accounting */
	} else if (e->lifetime != lifetime) {
		e->lifetime = lifetime;
	}
	if (!be)
		return -DROP_NO_BACKEND;
	/* hairpin: the backend is the client itself (its source becomes the loopback address: lb_hairpin_snat) */
	if (lb6_addr_eq(be->address, p->src))
		p->hairpin = 1;
	if (lb6_rewrite(skb, p, (const struct lb6_addr *)be->address, be->port, 1) < 0)
		return -DROP_INVALID;
	return 1;
}

/*
 * The source of a hairpin packet (p->hairpin: lb4_egress / lb6_egress translated it to the
 * endpoint's own address) becomes the loopback address (LB_LOOPBACK_*), its port unchanged.
 * Returns < 0 when the packet cannot be rewritten. A global function, called by the program
 * itself after the translation (not by lb4_egress: the stack of that call chain is full).
 */
__attribute__((noinline)) int lb_hairpin_snat(struct __sk_buff *skb, struct pkt *p)
{
	struct lb6_addr lo;

	if (!skb || !p)
		return -1;
	lb_loopback_addr(p->family, (__u32 *)lo.b);
	if (p->family == FAMILY_IPV4)
		return lb4_rewrite(skb, p, *(__u32 *)lo.b, p->ct_sport, 0);
	return lb6_rewrite(skb, p, &lo, p->ct_sport, 0);
}


/*
 * The frontend address a reply of a NodePort-surrogate connection gets as its source (see
 * lb_svc_entry_set_addr): the CT_SERVICE entry of client:cport -> surrogate:fport, `a` holding the
 * client (its family's bytes) on entry and the address on return. Returns < 0 when the entry is
 * gone (the reply cannot be given its source: dropped). A global function: its key is not on its
 * caller's stack.
 */
__attribute__((noinline)) int lb_svc_entry_addr(const struct pkt *p, struct lb6_addr *a, __u32 fport)
{
	union ct_key k = {};
	struct ct_entry *e;
	__u8 any[16] = {};

	if (!p || !a)
		return -1;
	ct_key_fill(&k, p->family, a->b, any, p->ct_dport, (__be16)fport, p->protocol, TUPLE_F_SERVICE);
	e = ct_map_lookup(&k, p->family);
	if (!e)
		return -1;
	if (p->family == FAMILY_IPV4) {
		__u32 v = (__u32)e->tx_bytes;

		__builtin_memcpy(a->b, &v, 4);
		return 0;
	}
	__builtin_memcpy(a->b, &e->rx_packets, 8);
	__builtin_memcpy(a->b + 8, &e->tx_bytes, 8);
	return 0;
}

/*
 * A reply of a connection to a service: its source becomes the frontend again; a NodePort
 * surrogate's frontend is the node address the client connected to (lb_svc_entry_addr). A hairpin
 * reply (loopback: from the endpoint to the loopback address) also gets the endpoint's own address,
 * the client's, as its destination. Returns < 0 when the packet cannot be rewritten.
 */
static __always_inline int lb4_rev_nat(struct __sk_buff *skb, struct pkt *p, __u16 index, __u8 loopback)
{
	struct lb4_reverse_nat *rn;
	struct lb6_addr a = {};
	__u32 addr;

	if (p->family != FAMILY_IPV4 || (p->protocol != IPPROTO_TCP && p->protocol != IPPROTO_UDP))
		return 0;
	rn = bpf_map_lookup_elem(&cellium_lb4_reverse_nat, &index);
	if (!rn)
		return 0;
	addr = rn->address;
	if (!addr) {
		__builtin_memcpy(a.b, loopback ? p->src : p->dst, 4);
		if (lb_svc_entry_addr(p, &a, rn->port) < 0)
			return -1;
		__builtin_memcpy(&addr, a.b, 4);
	}
	if (loopback && lb4_rewrite(skb, p, *(const __u32 *)p->src, p->ct_dport, 1) < 0)
		return -1;
	return lb4_rewrite(skb, p, addr, rn->port, 0);
}

/* An IPv6 reply of a connection to a service: lb4_rev_nat for IPv6. */
static __always_inline int lb6_rev_nat(struct __sk_buff *skb, struct pkt *p, __u16 index, __u8 loopback)
{
	struct lb6_reverse_nat *rn;
	struct lb6_addr a;
	const __u32 *w;
	__u8 nexthdr;

	if (p->family != FAMILY_IPV6 || (p->protocol != IPPROTO_TCP && p->protocol != IPPROTO_UDP))
		return 0;
	rn = bpf_map_lookup_elem(&cellium_lb6_reverse_nat, &index);
	if (!rn)
		return 0;
	if (bpf_skb_load_bytes(skb, ETH_HLEN + 6, &nexthdr, 1) < 0 || nexthdr != p->protocol)
		return -1;
	__builtin_memcpy(a.b, rn->address, 16);
	w = (const __u32 *)a.b;
	if (!(w[0] | w[1] | w[2] | w[3])) {
		__builtin_memcpy(a.b, loopback ? p->src : p->dst, 16);
		if (lb_svc_entry_addr(p, &a, rn->port) < 0)
			return -1;
	}
	if (loopback && lb6_rewrite(skb, p, (const struct lb6_addr *)p->src, p->ct_dport, 1) < 0)
		return -1;
	return lb6_rewrite(skb, p, &a, rn->port, 0);
}

/*
 * lb4_rev_nat or lb6_rev_nat by the packet's family. A global function: its stack (keys and
 * addresses) is not added to its caller's.
 */
__attribute__((noinline)) int lb_rev_nat(struct __sk_buff *skb, struct pkt *p, __u32 index, __u32 loopback)
{
	if (!skb || !p)
		return -1;
	if (p->family == FAMILY_IPV4)
		return lb4_rev_nat(skb, p, index, loopback);
	return lb6_rev_nat(skb, p, index, loopback);
}

#endif
