// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * bpf_lxc: the per-endpoint program, attached to the host side of the endpoint's veth.
 *   from_container (tc ingress of the host veth): packets leaving the endpoint, the endpoint's
 *     egress policy against the destination's identity;
 *   to_container (tc egress of the host veth): packets towards the endpoint, its ingress policy
 *     against the source's identity.
 * Per-endpoint constants live in .rodata and are set by the loader before load (no recompile).
 * Every IP packet goes through conntrack first (lib/conntrack.h): replies and related ICMP errors
 * of tracked connections pass without policy; new, established and reopened connections are judged
 * by the policy, and a new connection the policy allows gets its conntrack entry (a failed write
 * drops the packet: DROP_CT_INSERT_FAILED).
 * Drops are counted per reason in cellium_metrics and reported on cellium_events.
 * decide(), drop(), parse_l4(), ct_lookup() and ct_create() are global functions: the verifier
 * checks each once per program instead of once per path that reaches it.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "lib/common.h"
#include "lib/conntrack.h"
#include "lib/maps.h"
#include "lib/parse.h"
#include "lib/policy.h"

/* Endpoint constants (Cilium's ep_config.h values); written by the loader, frozen at load. */
const volatile __u16 endpoint_id = 0;
const volatile __u32 endpoint_identity = 0;
const volatile __u8 endpoint_ipv4[4] = {};
const volatile __u8 endpoint_ipv6[16] = {};
const volatile __u32 endpoint_ifindex = 0;
const volatile __u8 endpoint_mac[6] = {};
const volatile __u8 host_mac[6] = {};

static __always_inline void count_drop(struct __sk_buff *skb, __u32 reason)
{
	__u32 idx = reason;
	struct metrics_value *m = bpf_map_lookup_elem(&cellium_metrics, &idx);

	if (m) {
		m->packets++;
		m->bytes += skb->len;
	}
}

/*
 * Counts the drop and reports it on cellium_events; returns TC_ACT_SHOT. A global function: the
 * verifier checks it once per program instead of once per call site.
 */
__attribute__((noinline)) int drop(struct __sk_buff *skb, __u32 reason, __u32 egress, const struct pkt *p,
				   __u32 peer_identity)
{
	struct drop_event *ev;

	if (!skb)
		return TC_ACT_SHOT;
	count_drop(skb, reason);
	ev = bpf_ringbuf_reserve(&cellium_events, sizeof(*ev), 0);
	if (!ev)
		return TC_ACT_SHOT;
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->type = EVENT_DROP;
	ev->reason = reason;
	ev->egress = egress;
	ev->endpoint_id = endpoint_id;
	ev->ifindex = endpoint_ifindex ? endpoint_ifindex : skb->ifindex;
	ev->src_identity = egress ? endpoint_identity : peer_identity;
	ev->dst_identity = egress ? peer_identity : endpoint_identity;
	if (p) {
		ev->protocol = p->protocol;
		ev->dport = p->dport;
		ev->family = p->family;
		ev->icmp_type = p->icmp_type;
		__builtin_memcpy(ev->src, p->src, 16);
		__builtin_memcpy(ev->dst, p->dst, 16);
	}
	bpf_ringbuf_submit(ev, 0);
	return TC_ACT_SHOT;
}

/*
 * The decision for a parsed IP packet: conntrack, then (unless it is a reply or related) the
 * peer's identity and the policy verdict, the drop, and the conntrack entry of a new connection. A
 * global function, so the verifier checks it once rather than once per parsing path. `ct` holds
 * what conntrack found when the verdict is reached (for trace and policy-verdict events).
 */
__attribute__((noinline)) int decide(struct __sk_buff *skb, __u32 egress, struct pkt *p)
{
	struct ct_result ct = {};
	enum drop_reason reason;
	__u32 identity;

	if (!skb || !p)
		return TC_ACT_SHOT;
	if (is_neighbour_discovery(p))
		return TC_ACT_OK;
	ct_lookup(skb, p, egress, &ct);
	if (ct.status == CT_REPLY || ct.status == CT_RELATED)
		return TC_ACT_OK;
	identity = resolve_identity(p->family, egress ? p->dst : p->src);
	reason = policy_verdict(egress, identity, p);
	if (reason != DROP_NONE)
		return drop(skb, reason, egress, p, identity);
	if (ct.track && ct_create(skb, p, egress, egress ? endpoint_identity : identity) < 0)
		return drop(skb, DROP_CT_INSERT_FAILED, egress, p, identity);
	return TC_ACT_OK;
}

static __always_inline int handle(struct __sk_buff *skb, __u8 egress)
{
	struct pkt p = {};
	int err;

	switch (skb->protocol) {
	case bpf_htons(ETH_P_ARP):
		return TC_ACT_OK;
	case bpf_htons(ETH_P_IP):
		err = parse_ipv4(skb, &p);
		break;
	case bpf_htons(ETH_P_IPV6):
		err = parse_ipv6(skb, &p);
		break;
	default:
		return drop(skb, DROP_UNSUPPORTED_L3, egress, 0, 0);
	}
	if (err < 0)
		return drop(skb, DROP_INVALID, egress, 0, 0);
	return decide(skb, egress, &p);
}

SEC("tc")
int from_container(struct __sk_buff *skb)
{
	return handle(skb, 1);
}

SEC("tc")
int to_container(struct __sk_buff *skb)
{
	return handle(skb, 0);
}

char _license[] SEC("license") = "Dual BSD/GPL";
