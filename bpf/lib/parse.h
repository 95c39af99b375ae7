/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Packet parsing for the policy decision: address family, addresses, IP protocol, destination
 * port (TCP/UDP/SCTP) and ICMP type. Reads with bpf_skb_load_bytes, so any skb layout works.
 * A non-first fragment carries no L4 header: its dport is 0.
 */
#ifndef CELLIUM_PARSE_H
#define CELLIUM_PARSE_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "common.h"

#ifndef IPPROTO_ICMPV6
#define IPPROTO_ICMPV6 58
#endif

struct pkt {
	__u8 family;
	__u8 protocol;
	__u8 icmp_type;
	__u8 has_l4;
	__be16 dport;
	__u8 src[16];
	__u8 dst[16];
};

/* Reads the L4 fields at off: dport for TCP/UDP/SCTP, the type for ICMP/ICMPv6. */
static __always_inline int parse_l4(struct __sk_buff *skb, __u32 off, struct pkt *p)
{
	__be16 ports[2];

	p->has_l4 = 1;
	switch (p->protocol) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
	case IPPROTO_SCTP:
		if (bpf_skb_load_bytes(skb, off, ports, sizeof(ports)) < 0)
			return -1;
		p->dport = ports[1];
		return 0;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		if (bpf_skb_load_bytes(skb, off, &p->icmp_type, 1) < 0)
			return -1;
		return 0;
	default:
		return 0;
	}
}

static __always_inline int parse_ipv4(struct __sk_buff *skb, struct pkt *p)
{
	struct iphdr ip;

	if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip, sizeof(ip)) < 0 || ip.ihl < 5)
		return -1;
	p->family = FAMILY_IPV4;
	p->protocol = ip.protocol;
	__builtin_memcpy(p->src, &ip.saddr, 4);
	__builtin_memcpy(p->dst, &ip.daddr, 4);
	if (ip.frag_off & bpf_htons(0x1fff))
		return 0;
	return parse_l4(skb, ETH_HLEN + ip.ihl * 4, p);
}

#define IPV6_MAX_EXT_HEADERS 6

static __always_inline int parse_ipv6(struct __sk_buff *skb, struct pkt *p)
{
	struct ipv6hdr ip;
	__u32 off = ETH_HLEN + sizeof(ip);
	__u8 nh;
	int i;

	if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip, sizeof(ip)) < 0)
		return -1;
	p->family = FAMILY_IPV6;
	__builtin_memcpy(p->src, &ip.saddr, 16);
	__builtin_memcpy(p->dst, &ip.daddr, 16);
	nh = ip.nexthdr;
#pragma unroll
	for (i = 0; i < IPV6_MAX_EXT_HEADERS; i++) {
		__u8 hdr[8];

		if (nh != 0 && nh != 43 && nh != 44 && nh != 51 && nh != 60)
			break;
		if (bpf_skb_load_bytes(skb, off, hdr, sizeof(hdr)) < 0)
			return -1;
		if (nh == 44) {
			/* Fragment header: a non-first fragment has no L4 header. */
			if ((hdr[2] << 8 | hdr[3]) & 0xfff8) {
				p->protocol = hdr[0];
				return 0;
			}
			off += 8;
		} else if (nh == 51) {
			off += (hdr[1] + 2) * 4;
		} else {
			off += (hdr[1] + 1) * 8;
		}
		nh = hdr[0];
	}
	p->protocol = nh;
	return parse_l4(skb, off, p);
}

#endif
