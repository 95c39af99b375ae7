/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Packet parsing for conntrack and the policy decision: address family, addresses, IP protocol,
 * ports (TCP/UDP/SCTP), TCP flags, ICMP type and echo identifier, and for an ICMP error the
 * header of the packet it is about. The IP header and a TCP header are read in place when they
 * are in the skb's linear data (pkt_at: no helper call, the common case), else copied with
 * bpf_skb_load_bytes, as everything else is: any skb layout works. A non-first fragment carries no
 * L4 header: its ports are 0 and it is marked `fragment`.
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

/* TCP flags (byte 13 of the header). */
#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_ACK 0x10

struct pkt {
	__u8 family;
	__u8 protocol;
	__u8 icmp_type;
	__u8 has_l4;
	__be16 dport;		/* the policy's port: TCP/UDP/SCTP destination port, else 0 */
	__be16 ct_sport;	/* conntrack ports: TCP/UDP/SCTP ports, the ICMP echo identifier */
	__be16 ct_dport;	/*   (request: ct_sport, reply: ct_dport), else 0 */
	__u8 tcp_flags;
	__u8 fragment;		/* a non-first fragment: no L4 header */
	__u8 icmp_error;	/* an ICMP(v6) error (destination unreachable, time exceeded, ...) */
	__u8 inner_valid;	/* ... whose inner header parsed: */
	__u8 inner_protocol;
	__u8 hairpin;		/* a hairpin packet (lib/lb.h): from the endpoint back to itself through a service */
	__be16 inner_sport;	/* the inner packet's conntrack ports, as its sender sent it */
	__be16 inner_dport;
	__u16 rev_nat;		/* set by lb4_egress: the service the packet was translated for */
	__u8 nodeport;		/* ... through a NodePort surrogate (its destination was a node address) */
	__u8 pad2;
	__u8 src[16];
	__u8 dst[16];
	__u8 inner_src[16];
	__u8 inner_dst[16];
	/* the endpoint whose interface the packet crosses (rodata, or cellium_endpoints when shared) */
	__u32 ep_identity;
	__u16 ep_id;
	__u8 ct_enabled;
	__u8 ct_accounting;
};

/* The largest offset pkt_at reads at in place (bounds the offset for the verifier). */
#define PKT_AT_MAX_OFF 256

/*
 * The `len` bytes at `off` of the packet: a pointer into the skb's linear data when they are
 * all there (read in place: no copy, no helper call), else into `buf` after copying them there
 * with bpf_skb_load_bytes; NULL when the packet is shorter.
 */
static __always_inline const void *pkt_at(struct __sk_buff *skb, __u32 off, void *buf, __u32 len)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;

	if (off <= PKT_AT_MAX_OFF && data + off + len <= end)
		return data + off;
	if (bpf_skb_load_bytes(skb, off, buf, len) < 0)
		return 0;
	return buf;
}

static __always_inline int is_icmp_error(__u8 protocol, __u8 type)
{
	if (protocol == IPPROTO_ICMP)
		return type == 3 || type == 11 || type == 12;	/* unreachable, time exceeded, parameter problem */
	return type >= 1 && type <= 4;	/* ICMPv6: unreachable, packet too big, time exceeded, parameter problem */
}

/*
 * The conntrack ports of the TCP/UDP/SCTP header or ICMP message at `off` into p->ct_sport and
 * p->ct_dport, or with `inner` into p->inner_sport and p->inner_dport, of the protocol there:
 * ports as sent, the echo identifier as the request's source or the reply's destination port, 0
 * for other ICMP. Returns the ICMP type (0 when not ICMP) or -1 when truncated. A global function:
 * checked once for the packet and the packet an ICMP error quotes.
 */
__attribute__((noinline)) int load_ports(struct __sk_buff *skb, __u32 off, struct pkt *p, __u32 inner)
{
	__u8 protocol, icmp[8];
	__be16 ports[2] = {};

	if (!skb || !p)
		return -1;
	protocol = inner ? p->inner_protocol : p->protocol;
	switch (protocol) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
	case IPPROTO_SCTP:
		if (bpf_skb_load_bytes(skb, off, ports, sizeof(ports)) < 0)
			return -1;
		break;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		if (bpf_skb_load_bytes(skb, off, icmp, sizeof(icmp)) < 0)
			return -1;
		if ((protocol == IPPROTO_ICMP && icmp[0] == 8) || (protocol == IPPROTO_ICMPV6 && icmp[0] == 128))
			ports[0] = *(__be16 *)&icmp[4];
		else if ((protocol == IPPROTO_ICMP && icmp[0] == 0) || (protocol == IPPROTO_ICMPV6 && icmp[0] == 129))
			ports[1] = *(__be16 *)&icmp[4];
		break;
	default:
		return 0;
	}
	if (inner) {
		p->inner_sport = ports[0];
		p->inner_dport = ports[1];
	} else {
		p->ct_sport = ports[0];
		p->ct_dport = ports[1];
	}
	return (protocol == IPPROTO_ICMP || protocol == IPPROTO_ICMPV6) ? icmp[0] : 0;
}

/*
 * The packet an ICMP error at `off` is about: its addresses, protocol and conntrack ports. Leaves
 * inner_valid 0 when the quoted header is truncated, fragmented or carries IPv6 extension headers.
 */
static __always_inline void parse_inner(struct __sk_buff *skb, __u32 off, struct pkt *p)
{
	off += 8;
	if (p->family == FAMILY_IPV4) {
		struct iphdr ip;

		if (bpf_skb_load_bytes(skb, off, &ip, sizeof(ip)) < 0 || ip.ihl < 5 || (ip.frag_off & bpf_htons(0x1fff)))
			return;
		p->inner_protocol = ip.protocol;
		__builtin_memcpy(p->inner_src, &ip.saddr, 4);
		__builtin_memcpy(p->inner_dst, &ip.daddr, 4);
		off += ip.ihl * 4;
	} else {
		struct ipv6hdr ip;

		if (bpf_skb_load_bytes(skb, off, &ip, sizeof(ip)) < 0)
			return;
		p->inner_protocol = ip.nexthdr;
		__builtin_memcpy(p->inner_src, &ip.saddr, 16);
		__builtin_memcpy(p->inner_dst, &ip.daddr, 16);
		off += sizeof(ip);
	}
	if (load_ports(skb, off, p, 1) < 0)
		return;
	p->inner_valid = 1;
}

/*
 * Reads the L4 fields at off: ports (the policy's dport) and TCP flags for TCP/UDP/SCTP; type,
 * echo identifier and an error's inner header for ICMP/ICMPv6. A global function: the verifier
 * checks it once per program rather than once per address family.
 */
__attribute__((noinline)) int parse_l4(struct __sk_buff *skb, __u32 off, struct pkt *p)
{
	int type;

	if (!skb || !p)
		return -1;
	p->has_l4 = 1;
	if (p->protocol == IPPROTO_TCP) {
		/* ports and flags in one read */
		__u8 buf[14];
		const __u8 *th = pkt_at(skb, off, buf, sizeof(buf));

		if (!th)
			return -1;
		p->ct_sport = *(const __be16 *)&th[0];
		p->ct_dport = *(const __be16 *)&th[2];
		p->tcp_flags = th[13];
		p->dport = p->ct_dport;
		return 0;
	}
	type = load_ports(skb, off, p, 0);
	if (type < 0)
		return -1;
	switch (p->protocol) {
	case IPPROTO_UDP:
	case IPPROTO_SCTP:
		p->dport = p->ct_dport;
		return 0;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		p->icmp_type = type;
		if (is_icmp_error(p->protocol, type)) {
			p->icmp_error = 1;
			parse_inner(skb, off, p);
		}
		return 0;
	default:
		return 0;
	}
}

static __always_inline int parse_ipv4(struct __sk_buff *skb, struct pkt *p)
{
	struct iphdr buf;
	const struct iphdr *ip = pkt_at(skb, ETH_HLEN, &buf, sizeof(buf));

	if (!ip || ip->ihl < 5)
		return -1;
	p->family = FAMILY_IPV4;
	p->protocol = ip->protocol;
	__builtin_memcpy(p->src, &ip->saddr, 4);
	__builtin_memcpy(p->dst, &ip->daddr, 4);
	if (ip->frag_off & bpf_htons(0x1fff)) {
		p->fragment = 1;
		return 0;
	}
	return parse_l4(skb, ETH_HLEN + ip->ihl * 4, p);
}

#define IPV6_MAX_EXT_HEADERS 6

static __always_inline int parse_ipv6(struct __sk_buff *skb, struct pkt *p)
{
	struct ipv6hdr buf;
	const struct ipv6hdr *ip = pkt_at(skb, ETH_HLEN, &buf, sizeof(buf));
	__u32 off = ETH_HLEN + sizeof(buf);
	__u8 nh;
	int i;

	if (!ip)
		return -1;
	p->family = FAMILY_IPV6;
	__builtin_memcpy(p->src, &ip->saddr, 16);
	__builtin_memcpy(p->dst, &ip->daddr, 16);
	nh = ip->nexthdr;
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
				p->fragment = 1;
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
