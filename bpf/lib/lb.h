/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Services: Cilium's load-balancing maps (bpf/lib/lb.h layouts) and the per-packet translation of
 * bpf_lxc. A packet a pod sends to a service frontend (VIP:port/proto, the master entry, slot 0,
 * of cellium_lb{4,6}_services) gets a backend: the one its CT_SERVICE conntrack entry remembers
 * while that backend still exists (so established flows stay on it, a terminating backend
 * included), else a random one of the `count` active slots; the packet's destination is rewritten
 * to the backend (DNAT, checksums fixed) and the connection's conntrack entry carries the service's
 * rev_nat_index, with which the replies' source is rewritten back to the frontend. A known VIP on
 * an unknown port (its wildcard entry: port 0, proto 0) and a service without backends drop with
 * DROP_NO_SERVICE. The agent writes the maps (backends first, then the slots, then reverse NAT,
 * then the master entry), so every slot the master's count covers exists when it is read.
 */
#ifndef CELLIUM_LB_H
#define CELLIUM_LB_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <stddef.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "common.h"
#include "conntrack.h"
#include "parse.h"

#define LB_LOOKUP_SCOPE_EXT 0
#define LB_LOOKUP_SCOPE_INT 1

/* Service frontend key; backend_slot 0 is the master entry. */
struct lb4_key {
	__u8 address[4];	/* frontend address, network order */
	__be16 dport;		/* 0 with proto 0: the VIP's wildcard entry */
	__u16 backend_slot;
	__u8 proto;		/* IP protocol; 0 any */
	__u8 scope;		/* LB_LOOKUP_SCOPE_* */
	__u8 pad[2];
};

struct lb6_key {
	__u8 address[16];
	__be16 dport;
	__u16 backend_slot;
	__u8 proto;
	__u8 scope;
	__u8 pad[2];
};

/* Master entry: count, qcount, rev_nat_index, flags; slot entry: backend_id. */
struct lb_service {
	__u32 backend_id;	/* a slot's backend; the master's affinity timeout */
	__u16 count;		/* master: slots 1..count take new flows */
	__u16 rev_nat_index;
	__u8 flags;
	__u8 flags2;
	__u16 qcount;		/* master: slots after count keep only their flows */
};

struct lb4_backend {
	__u8 address[4];
	__be16 port;
	__u8 proto;
	__u8 flags;		/* BE_STATE_* */
	__u16 cluster_id;
	__u8 zone;
	__u8 pad;
};

struct lb6_backend {
	__u8 address[16];
	__be16 port;
	__u8 proto;
	__u8 flags;
	__u16 cluster_id;
	__u8 zone;
	__u8 pad;
};

struct lb4_reverse_nat {
	__u8 address[4];
	__be16 port;
	__u16 pad;
};

struct lb6_reverse_nat {
	__u8 address[16];
	__be16 port;
	__u16 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct lb4_key);
	__type(value, struct lb_service);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cellium_lb4_services SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct lb6_key);
	__type(value, struct lb_service);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cellium_lb6_services SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct lb4_backend);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cellium_lb4_backends SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct lb6_backend);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cellium_lb6_backends SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u16);
	__type(value, struct lb4_reverse_nat);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cellium_lb4_reverse_nat SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u16);
	__type(value, struct lb6_reverse_nat);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cellium_lb6_reverse_nat SEC(".maps");

/* --service-no-backend-response: 0 reject (an ICMP port unreachable back to the pod), 1 drop. */
const volatile __u8 lb_no_backend_drop = 0;

/* lb_egress: a frontend without backends (answered per lb_no_backend_drop). */
#define LB_NO_BACKEND (-256)

/* Where the L4 checksum is, from the L4 header; 0 when the protocol is not translated. */
static __always_inline __u32 l4_csum_off(__u8 protocol)
{
	if (protocol == IPPROTO_TCP)
		return offsetof(struct tcphdr, check);
	if (protocol == IPPROTO_UDP)
		return offsetof(struct udphdr, check);
	return 0;
}

/*
 * Rewrites an address (4 or 16 bytes, at `addr_off`) and a port (at `port_off` into the L4 header)
 * of the packet, fixing the IPv4 header checksum and the L4 checksum (its pseudo header included).
 * A UDP datagram without a checksum keeps none (BPF_F_MARK_MANGLED_0). Returns 0 or < 0. Inlined:
 * a global function would see `from`/`to` as one byte each.
 */
static __always_inline int lb_rewrite(struct __sk_buff *skb, const struct pkt *p, __u32 addr_off, const __u8 *from, const __u8 *to,
				      __u32 port_off, __u32 ports)
{
	__u32 csum_off, flags;
	__be16 old_port, new_port;
	__s64 diff;

	if (!skb || !p || !from || !to)
		return -1;
	csum_off = l4_csum_off(p->protocol);
	if (!csum_off)
		return -1;
	csum_off += p->l4_off;
	flags = BPF_F_PSEUDO_HDR | (p->protocol == IPPROTO_UDP ? BPF_F_MARK_MANGLED_0 : 0);
	if (p->family == FAMILY_IPV4) {
		__be32 o = *(const __be32 *)from, n = *(const __be32 *)to;

		if (bpf_l3_csum_replace(skb, ETH_HLEN + offsetof(struct iphdr, check), o, n, 4) < 0)
			return -1;
		if (bpf_l4_csum_replace(skb, csum_off, o, n, flags | 4) < 0)
			return -1;
		if (bpf_skb_store_bytes(skb, addr_off, to, 4, 0) < 0)
			return -1;
	} else {
		diff = bpf_csum_diff((__be32 *)from, 16, (__be32 *)to, 16, 0);
		if (diff < 0 || bpf_l4_csum_replace(skb, csum_off, 0, (__u32)diff, flags) < 0)
			return -1;
		if (bpf_skb_store_bytes(skb, addr_off, to, 16, 0) < 0)
			return -1;
	}
	old_port = (__be16)(ports >> 16);
	new_port = (__be16)(ports & 0xffff);
	if (new_port && new_port != old_port) {
		if (bpf_l4_csum_replace(skb, csum_off, old_port, new_port, (p->protocol == IPPROTO_UDP ? BPF_F_MARK_MANGLED_0 : 0) | 2) < 0)
			return -1;
		if (bpf_skb_store_bytes(skb, p->l4_off + port_off, &new_port, 2, 0) < 0)
			return -1;
	}
	return 0;
}

/* The entry of `slot` (0: the master) of the frontend the packet is sent to, with `proto` and the packet's port (0 and 0: the VIP's wildcard entry). */
static __always_inline const struct lb_service *lb_lookup(const struct pkt *p, __u8 proto, __be16 dport, __u16 slot)
{
	if (p->family == FAMILY_IPV4) {
		struct lb4_key k = {};

		__builtin_memcpy(k.address, p->dst, 4);
		k.dport = dport;
		k.proto = proto;
		k.backend_slot = slot;
		return bpf_map_lookup_elem(&cellium_lb4_services, &k);
	} else {
		struct lb6_key k = {};

		__builtin_memcpy(k.address, p->dst, 16);
		k.dport = dport;
		k.proto = proto;
		k.backend_slot = slot;
		return bpf_map_lookup_elem(&cellium_lb6_services, &k);
	}
}

/* A backend's address (16 bytes, IPv4 in the first 4) and port; 0 when the backend is gone. */
static __always_inline int lb_backend(__u8 family, __u32 id, __u8 *addr, __be16 *port)
{
	if (family == FAMILY_IPV4) {
		const struct lb4_backend *b = bpf_map_lookup_elem(&cellium_lb4_backends, &id);

		if (!b)
			return 0;
		__builtin_memcpy(addr, b->address, 4);
		*port = b->port;
		return 1;
	} else {
		const struct lb6_backend *b = bpf_map_lookup_elem(&cellium_lb6_backends, &id);

		if (!b)
			return 0;
		__builtin_memcpy(addr, b->address, 16);
		*port = b->port;
		return 1;
	}
}

/*
 * The service translation of a packet a pod sends (from_container), before conntrack and policy:
 * returns 0 when the destination is no service frontend, the service's rev_nat_index (> 0) once
 * the packet was translated to a backend (`p` then describes the translated packet),
 * LB_NO_BACKEND for a frontend without backends, or -DROP_NO_SERVICE / -DROP_INVALID /
 * -DROP_CT_INSERT_FAILED. Only TCP and UDP are translated (not fragments, not ICMP).
 */
__attribute__((noinline)) int lb_egress(struct __sk_buff *skb, struct pkt *p)
{
	const struct lb_service *svc, *slot;
	union ct_key k = {};
	struct ct_entry *e, fresh = {};
	__u8 addr[16] = {}, proto;
	__be16 port = 0;
	__u32 backend_id = 0, now, lifetime, addr_off;
	__u16 rev_nat;
	int found = 0;

	if (!skb || !p)
		return 0;
	if (p->fragment || !p->has_l4 || (p->protocol != IPPROTO_TCP && p->protocol != IPPROTO_UDP))
		return 0;
	proto = p->protocol;
	svc = lb_lookup(p, proto, p->ct_dport, 0);
	if (!svc)
		/* the wildcard entry (port 0, proto 0) marks a known VIP: its unknown ports drop */
		return lb_lookup(p, 0, 0, 0) ? -DROP_NO_SERVICE : 0;
	rev_nat = svc->rev_nat_index;
	if (!rev_nat)
		return -DROP_NO_SERVICE; /* replies could not be translated back: fail closed */
	now = ct_now();
	lifetime = now + (p->protocol == IPPROTO_TCP ? ct_lifetime_tcp : ct_lifetime_any);
	ct_key_fill(&k, p->family, p->dst, p->src, p->ct_dport, p->ct_sport, p->protocol, TUPLE_F_SERVICE);
	e = ct_map_lookup(&k, p->family);
	if (e && e->lifetime >= now && e->rev_nat_index == rev_nat) {
		backend_id = (__u32)e->backend_id;
		found = lb_backend(p->family, backend_id, addr, &port);
		if (found && e->lifetime != lifetime)
			e->lifetime = lifetime;
	}
	if (!found) {
		if (svc->count == 0)
			return LB_NO_BACKEND;
		slot = lb_lookup(p, proto, p->ct_dport, (bpf_get_prandom_u32() % svc->count) + 1);
		if (!slot)
			return -DROP_NO_SERVICE;
		backend_id = slot->backend_id;
		if (!lb_backend(p->family, backend_id, addr, &port))
			return -DROP_NO_SERVICE;
		fresh.backend_id = backend_id;
		fresh.rev_nat_index = rev_nat;
		fresh.lifetime = lifetime;
		if (ct_map_update(&k, p->family, &fresh) < 0)
			return -DROP_CT_INSERT_FAILED;
	}
	addr_off = ETH_HLEN + (p->family == FAMILY_IPV4 ? offsetof(struct iphdr, daddr) : offsetof(struct ipv6hdr, daddr));
	if (lb_rewrite(skb, p, addr_off, p->dst, addr, offsetof(struct tcphdr, dest), ((__u32)p->ct_dport << 16) | port) < 0)
		return -DROP_INVALID;
	__builtin_memcpy(p->dst, addr, 16); /* IPv4: the rest of addr is zero, like a parsed address's */
	if (port) {
		p->ct_dport = port;
		p->dport = port;
	}
	return rev_nat;
}

/*
 * The reply of a translated connection (its conntrack entry carries `rev_nat`) towards the pod
 * that opened it (to_container): the source is rewritten back to the service frontend. Returns 0,
 * or < 0 when the packet could not be rewritten (the entry's service is gone: left as it is).
 */
__attribute__((noinline)) int lb_rev_nat(struct __sk_buff *skb, struct pkt *p, __u32 rev_nat)
{
	__u8 addr[16] = {};
	__be16 port;
	__u16 idx = rev_nat;
	__u32 addr_off;

	if (!skb || !p || !rev_nat || p->fragment || !p->has_l4 || (p->protocol != IPPROTO_TCP && p->protocol != IPPROTO_UDP))
		return 0;
	if (p->family == FAMILY_IPV4) {
		const struct lb4_reverse_nat *r = bpf_map_lookup_elem(&cellium_lb4_reverse_nat, &idx);

		if (!r)
			return -1;
		__builtin_memcpy(addr, r->address, 4);
		port = r->port;
	} else {
		const struct lb6_reverse_nat *r = bpf_map_lookup_elem(&cellium_lb6_reverse_nat, &idx);

		if (!r)
			return -1;
		__builtin_memcpy(addr, r->address, 16);
		port = r->port;
	}
	addr_off = ETH_HLEN + (p->family == FAMILY_IPV4 ? offsetof(struct iphdr, saddr) : offsetof(struct ipv6hdr, saddr));
	if (lb_rewrite(skb, p, addr_off, p->src, addr, offsetof(struct tcphdr, source), ((__u32)p->ct_sport << 16) | port) < 0)
		return -1;
	__builtin_memcpy(p->src, addr, 16);
	if (port)
		p->ct_sport = port;
	return 0;
}

/* The one's complement sum folded to 16 bits, complemented: a checksum field. */
static __always_inline __u16 csum_fold32(__s64 sum)
{
	__u32 c = (__u32)sum;

	c = (c & 0xffff) + (c >> 16);
	c = (c & 0xffff) + (c >> 16);
	return (__u16)~c;
}

/* ICMP and ICMPv6 headers as far as a destination unreachable needs them (linux/icmp.h would pull in libc headers). */
struct lb_icmphdr {
	__u8 type;
	__u8 code;
	__u16 checksum;
	__u32 unused;
};

#define LB_ICMP_DEST_UNREACH 3
#define LB_ICMP_PORT_UNREACH 3
#define LB_ICMPV6_DEST_UNREACH 1
#define LB_ICMPV6_PORT_UNREACH 4

/* The reply on the stack; `align` puts the IP header on a 4-byte boundary (it is not sent). */
struct lb_icmp4_reply {
	__u16 align;
	struct ethhdr eth;
	struct iphdr ip;
	struct lb_icmphdr icmp;
	__u8 quote[28];		/* the packet's IP header and its first 8 L4 bytes */
};

struct lb_icmp6_reply {
	__u16 align;
	struct ethhdr eth;
	struct ipv6hdr ip;
	struct lb_icmphdr icmp;
	__u8 quote[48];		/* the packet's IPv6 header and its first 8 L4 bytes */
};

struct lb_icmp6_pseudo {
	__u8 saddr[16];
	__u8 daddr[16];
	__be32 len;
	__be32 nexthdr;
};

/*
 * The reject of a packet to a frontend without backends (--service-no-backend-response=reject):
 * the packet becomes an ICMP destination unreachable / port unreachable (ICMPv6: type 1 code 4)
 * from the frontend, quoting its headers, and goes straight back into the pod (bpf_redirect_peer
 * from the host veth's ingress to the pod's), so the client's connect fails at once instead of
 * timing out. A packet it cannot turn (IPv4 options, an IPv6 extension header) is dropped.
 */
__attribute__((noinline)) int lb_reject(struct __sk_buff *skb, const struct pkt *p)
{
	struct ethhdr eth;
	__s64 sum;

	if (!skb || !p)
		return TC_ACT_SHOT;
	if (bpf_skb_load_bytes(skb, 0, &eth, sizeof(eth)) < 0)
		return TC_ACT_SHOT;
	if (p->family == FAMILY_IPV4) {
		struct lb_icmp4_reply r = {};

		if (p->l4_off != ETH_HLEN + sizeof(struct iphdr) || bpf_skb_load_bytes(skb, ETH_HLEN, r.quote, sizeof(r.quote)) < 0)
			return TC_ACT_SHOT;
		__builtin_memcpy(r.eth.h_dest, eth.h_source, ETH_ALEN);
		__builtin_memcpy(r.eth.h_source, eth.h_dest, ETH_ALEN);
		r.eth.h_proto = bpf_htons(ETH_P_IP);
		r.ip.version = 4;
		r.ip.ihl = 5;
		r.ip.ttl = 64;
		r.ip.protocol = IPPROTO_ICMP;
		r.ip.tot_len = bpf_htons(sizeof(r.ip) + sizeof(r.icmp) + sizeof(r.quote));
		__builtin_memcpy(&r.ip.saddr, p->dst, 4);
		__builtin_memcpy(&r.ip.daddr, p->src, 4);
		sum = bpf_csum_diff(0, 0, (__be32 *)&r.ip, sizeof(r.ip), 0);
		if (sum < 0)
			return TC_ACT_SHOT;
		r.ip.check = csum_fold32(sum);
		r.icmp.type = LB_ICMP_DEST_UNREACH;
		r.icmp.code = LB_ICMP_PORT_UNREACH;
		sum = bpf_csum_diff(0, 0, (__be32 *)&r.icmp, sizeof(r.icmp) + sizeof(r.quote), 0);
		if (sum < 0)
			return TC_ACT_SHOT;
		r.icmp.checksum = csum_fold32(sum);
		if (bpf_skb_change_tail(skb, sizeof(r) - 2, 0) < 0 || bpf_skb_store_bytes(skb, 0, &r.eth, sizeof(r) - 2, 0) < 0)
			return TC_ACT_SHOT;
	} else {
		struct lb_icmp6_reply r = {};
		struct lb_icmp6_pseudo ph = {};

		if (p->l4_off != ETH_HLEN + sizeof(struct ipv6hdr) || bpf_skb_load_bytes(skb, ETH_HLEN, r.quote, sizeof(r.quote)) < 0)
			return TC_ACT_SHOT;
		__builtin_memcpy(r.eth.h_dest, eth.h_source, ETH_ALEN);
		__builtin_memcpy(r.eth.h_source, eth.h_dest, ETH_ALEN);
		r.eth.h_proto = bpf_htons(ETH_P_IPV6);
		r.ip.version = 6;
		r.ip.hop_limit = 64;
		r.ip.nexthdr = IPPROTO_ICMPV6;
		r.ip.payload_len = bpf_htons(sizeof(r.icmp) + sizeof(r.quote));
		__builtin_memcpy(&r.ip.saddr, p->dst, 16);
		__builtin_memcpy(&r.ip.daddr, p->src, 16);
		r.icmp.type = LB_ICMPV6_DEST_UNREACH;
		r.icmp.code = LB_ICMPV6_PORT_UNREACH;
		__builtin_memcpy(ph.saddr, p->dst, 16);
		__builtin_memcpy(ph.daddr, p->src, 16);
		ph.len = bpf_htonl(sizeof(r.icmp) + sizeof(r.quote));
		ph.nexthdr = bpf_htonl(IPPROTO_ICMPV6);
		sum = bpf_csum_diff(0, 0, (__be32 *)&ph, sizeof(ph), 0);
		if (sum < 0)
			return TC_ACT_SHOT;
		sum = bpf_csum_diff(0, 0, (__be32 *)&r.icmp, sizeof(r.icmp) + sizeof(r.quote), (__u32)sum);
		if (sum < 0)
			return TC_ACT_SHOT;
		r.icmp.checksum = csum_fold32(sum);
		if (bpf_skb_change_tail(skb, sizeof(r) - 2, 0) < 0 || bpf_skb_store_bytes(skb, 0, &r.eth, sizeof(r) - 2, 0) < 0)
			return TC_ACT_SHOT;
	}
	return bpf_redirect_peer(skb->ifindex, 0);
}

#endif
