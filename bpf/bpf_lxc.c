// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * bpf_lxc: the endpoint program, attached to the host side of the endpoint's veth.
 *   from_container (tc ingress of the host veth): packets leaving the endpoint, the endpoint's
 *     egress policy against the destination's identity;
 *   to_container (tc egress of the host veth): packets towards the endpoint, its ingress policy
 *     against the source's identity.
 * Two ways to load it (lxc_shared, a .rodata constant: the verifier drops the other way's code):
 *   per endpoint (0): one copy per endpoint, its constants in .rodata set by the loader before load
 *     (no recompile), its policy map bound at load (cellium_policy);
 *   shared (1): one copy per node that every endpoint's interface attaches; the endpoint's constants
 *     are read per packet from cellium_endpoints by skb->ifindex (the host veth at both hooks: no
 *     parsing, one hash lookup of a u32), its policy map from cellium_policy_maps by endpoint ID.
 *     An interface without an entry drops everything (policy).
 * Every IP packet goes through conntrack first (lib/conntrack.h): replies and related ICMP errors
 * of tracked connections pass without policy; new, established and reopened connections are judged
 * by the policy, and a new connection the policy allows gets its conntrack entry (a failed write
 * drops the packet: DROP_CT_INSERT_FAILED).
 * Drops are counted per reason and direction in cellium_metrics, forwarded packets per direction;
 * cellium_events carries drops, policy verdicts of new connections and traces of forwarded packets
 * (only for new flows, new TCP flags, or once per ct_report_interval per flow direction: Cilium's
 * monitor aggregation), read by the agent's monitor.
 * A packet from the endpoint to a service (lib/lb.h) is first translated to a backend (DNAT), and
 * then judged against the backend; replies of such connections get the frontend as source again.
 * A packet to one of the node's addresses at a node port goes through the NodePort surrogate. When
 * the backend is the endpoint itself (hairpin), the source becomes the service loopback address
 * and the packet, once its egress is allowed, is judged as the endpoint's ingress (conntrack only,
 * as Cilium) and redirected into the pod; so is such a connection's reply (see hairpin()).
 * decide(), drop(), emit_event(), parse_l4(), ct_lookup() and ct_create() are global functions:
 * the verifier checks each once per program instead of once per path that reaches it.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "lib/common.h"
#include "lib/conntrack.h"
#include "lib/lb.h"
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
/* 1: the node's one shared program (constants from cellium_endpoints), 0: one endpoint's own. */
const volatile __u8 lxc_shared = 0;
/* The first 8 bytes of the object file's SHA-256, written by the loader: a pinned or attached
 * program of another build (an upgrade) never matches the running agent's, so it is replaced. */
const volatile __u8 lxc_build[8] = {};

/* The shared program's entry for the interface the packet crosses (NULL: none). */
static __always_inline const struct endpoint_info *shared_endpoint(struct __sk_buff *skb)
{
	__u32 ifindex = skb->ifindex;

	return bpf_map_lookup_elem(&cellium_endpoints, &ifindex);
}

/* Adds the packet to a cellium_metrics slot (direction * METRICS_DIR_STRIDE + reason). */
static __always_inline void count(struct __sk_buff *skb, __u32 idx)
{
	struct metrics_value *m = bpf_map_lookup_elem(&cellium_metrics, &idx);

	if (m) {
		m->packets++;
		m->bytes += skb->len;
	}
}

/* What an event says besides the packet. */
struct event_meta {
	__u8 type;		/* EVENT_* */
	__u8 reason;
	__u8 egress;
	__u8 ct_status;
	__u8 match;
	__u8 action;
	__u16 pad;
	__u32 peer_identity;
};

/*
 * Reports an event on cellium_events; a full ring buffer counts it in METRICS_EVENTS_LOST (the
 * agent reports lost events from there). A global function: checked once by the verifier.
 */
__attribute__((noinline)) int emit_event(struct __sk_buff *skb, const struct pkt *p, const struct event_meta *m)
{
	struct monitor_event *ev;

	if (!skb || !m)
		return 0;
	ev = bpf_ringbuf_reserve(&cellium_events, sizeof(*ev), 0);
	if (!ev) {
		count(skb, METRICS_EVENTS_LOST);
		return 0;
	}
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->type = m->type;
	ev->reason = m->reason;
	ev->egress = m->egress;
	ev->ct_status = m->ct_status;
	ev->match = m->match;
	ev->action = m->action;
	if (lxc_shared) {
		/* a parsed packet carries its endpoint's entry's fields: no second lookup */
		const struct endpoint_info *ep = p ? 0 : shared_endpoint(skb);
		__u32 identity = p ? p->ep_identity : ep ? ep->identity : 0;

		ev->endpoint_id = p ? p->ep_id : ep ? ep->endpoint_id : 0;
		ev->ifindex = skb->ifindex;
		ev->src_identity = m->egress ? identity : m->peer_identity;
		ev->dst_identity = m->egress ? m->peer_identity : identity;
	} else {
		ev->endpoint_id = endpoint_id;
		ev->ifindex = endpoint_ifindex ? endpoint_ifindex : skb->ifindex;
		ev->src_identity = m->egress ? endpoint_identity : m->peer_identity;
		ev->dst_identity = m->egress ? m->peer_identity : endpoint_identity;
	}
	ev->len = skb->len;
	if (p) {
		ev->protocol = p->protocol;
		ev->dport = p->dport;
		ev->family = p->family;
		ev->icmp_type = p->icmp_type;
		ev->tcp_flags = p->tcp_flags;
		if (p->dport || p->protocol == IPPROTO_TCP || p->protocol == IPPROTO_UDP)
			ev->sport = p->ct_sport;
		__builtin_memcpy(ev->src, p->src, 16);
		__builtin_memcpy(ev->dst, p->dst, 16);
	}
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

/*
 * Counts the drop and reports it on cellium_events; returns TC_ACT_SHOT. A global function: the
 * verifier checks it once per program instead of once per call site.
 */
__attribute__((noinline)) int drop(struct __sk_buff *skb, __u32 reason, __u32 egress, const struct pkt *p,
				   __u32 peer_identity)
{
	struct event_meta m = {};

	if (!skb)
		return TC_ACT_SHOT;
	count(skb, (egress ? METRICS_DIR_STRIDE : 0) + (reason < DROP_REASON_MAX ? reason : DROP_REASON_MAX - 1));
	m.type = EVENT_DROP;
	m.reason = reason;
	m.egress = egress;
	m.peer_identity = peer_identity;
	emit_event(skb, p, &m);
	return TC_ACT_SHOT;
}

/* Counts a forwarded packet and, when conntrack says a monitor should see it, traces it. */
static __always_inline int forward(struct __sk_buff *skb, const struct pkt *p, __u32 egress, const struct ct_result *ct,
				   __u32 peer_identity)
{
	struct event_meta m = {};

	count(skb, egress ? METRICS_DIR_STRIDE : 0);
	if (!ct->report)
		return TC_ACT_OK;
	m.type = EVENT_TRACE;
	m.egress = egress;
	m.ct_status = ct->status;
	m.peer_identity = peer_identity;
	emit_event(skb, p, &m);
	return TC_ACT_OK;
}

/*
 * The decision for a parsed IP packet: conntrack (`ct`: what ct_lookup_first found, or nothing
 * yet), then (unless it is a reply or related) the peer's identity and the policy verdict
 * (reported for new connections), the drop, and the conntrack entry of a new connection; forwarded
 * packets are counted and traced. A global function, so the verifier checks it once rather than
 * once per parsing path.
 */
__attribute__((noinline)) int decide(struct __sk_buff *skb, __u32 egress, struct pkt *p, struct ct_result *ct)
{
	struct event_meta m = {};
	enum drop_reason reason;
	__u32 identity, ep_id;
	int verdict_event;
	void *policy;

	if (!skb || !p || !ct)
		return TC_ACT_SHOT;
	if (is_neighbour_discovery(p))
		return TC_ACT_OK;
	if (ct->probe != CT_PROBE_HIT)	/* else ct_lookup_first found it already */
		ct_lookup(skb, p, egress, ct);
	if (ct->status == CT_REPLY || ct->status == CT_RELATED) {
		/* a hairpin connection's reply from the endpoint goes back into it (see handle) */
		if (egress && ct->status == CT_REPLY && ct->loopback)
			p->hairpin = 1;
		if (!egress && ct->status == CT_REPLY && ct->rev_nat && lb_rev_nat(skb, p, ct->rev_nat, ct->loopback) < 0)
			return drop(skb, DROP_INVALID, egress, p, 0);
		return forward(skb, p, egress, ct, ct->report ? ipcache_identity(p->family, egress ? p->dst : p->src) : 0);
	}
	/*
	 * The hairpin packet at the endpoint's own ingress: its source is the loopback address, its
	 * sender the endpoint itself, whose egress policy allowed it. As in Cilium (bpf_lxc's
	 * ipv4_policy, ct_state->loopback), the ingress policy is not consulted: a pod reaches itself
	 * through a service without a rule allowing itself; conntrack still runs for the replies.
	 * Only the forward direction, from the loopback address: a hairpin reply is a conntrack
	 * reply (above), and one whose connection is gone is judged like any other packet.
	 */
	if (!egress && p->hairpin && lb_from_loopback(p)) {
		identity = p->ep_identity;
		reason = DROP_NONE;
		goto allowed;
	}
	identity = ipcache_identity(p->family, egress ? p->dst : p->src);
	verdict_event = ct->status == CT_NEW || ct->status == CT_REOPENED;
	ep_id = p->ep_id;
	policy = lxc_shared ? bpf_map_lookup_elem(&cellium_policy_maps, &ep_id) : (void *)&cellium_policy;
	reason = policy_verdict(policy, egress, identity, p, verdict_event ? &m.match : 0);
	if (verdict_event) {
		m.type = EVENT_POLICY_VERDICT;
		m.reason = reason;
		m.egress = egress;
		m.ct_status = ct->status;
		m.action = reason == DROP_NONE;
		m.peer_identity = identity;
		emit_event(skb, p, &m);
	}
	if (reason != DROP_NONE)
		return drop(skb, reason, egress, p, identity);
allowed:
	if (ct->track && ct_create(skb, p, egress, egress ? p->ep_identity : identity) < 0)
		return drop(skb, DROP_CT_INSERT_FAILED, egress, p, identity);
	if (ct->track && p->rev_nat)
		lb4_ct_set_rev_nat(p, egress, p->rev_nat);
	return forward(skb, p, egress, ct, identity);
}

/*
 * Whether a packet the pod sends comes from the pod's own address of its family (an endpoint
 * without an address of that family owns none): `ep`'s addresses (shared program) or .rodata's. A packet's peer identity on the other side is
 * read from its source address, and a forged source would also let it pass as a reply of another
 * pod's tracked connection: what the pod sends from any other address is dropped.
 */
static __always_inline int from_own_address(const struct pkt *p, const struct endpoint_info *ep)
{
	__u8 any = 0, diff = 0;
	int i;

	if (ep) {
		if (p->family == FAMILY_IPV4) {
#pragma unroll
			for (i = 0; i < 4; i++) {
				any |= ep->ipv4[i];
				diff |= ep->ipv4[i] ^ p->src[i];
			}
		} else {
#pragma unroll
			for (i = 0; i < 16; i++) {
				any |= ep->ipv6[i];
				diff |= ep->ipv6[i] ^ p->src[i];
			}
		}
		return any && !diff;
	}
	if (p->family == FAMILY_IPV4) {
#pragma unroll
		for (i = 0; i < 4; i++) {
			any |= endpoint_ipv4[i];
			diff |= endpoint_ipv4[i] ^ p->src[i];
		}
	} else {
#pragma unroll
		for (i = 0; i < 16; i++) {
			any |= endpoint_ipv6[i];
			diff |= endpoint_ipv6[i] ^ p->src[i];
		}
	}
	return any && !diff;
}

/*
 * Multicast Listener Discovery (RFC 3810: query 130, report 131, done 132, v2 report 143) that a
 * pod's kernel sends from its link-local or the unspecified address (the only sources RFC 3810
 * allows) to a link-scope group (ff02::/16): link-scoped, never routed, and sent by every pod
 * whose eth0 has IPv6 on, with or without an IPv6 address of its own. Passed before the source
 * check, as Cilium's bpf_lxc passes MLD and router solicitation from link-local sources
 * (cilium/cilium#47645), so the invalid-source counter counts forged sources only.
 */
static __always_inline int is_link_local_mld(const struct pkt *p)
{
	__u8 any = 0;
	int i;

	if (p->family != FAMILY_IPV6 || p->protocol != IPPROTO_ICMPV6 || !p->has_l4)
		return 0;
	if ((p->icmp_type < 130 || p->icmp_type > 132) && p->icmp_type != 143)
		return 0;
	if (p->dst[0] != 0xff || p->dst[1] != 0x02)
		return 0;
	if (p->src[0] == 0xfe && (p->src[1] & 0xc0) == 0x80)
		return 1;
#pragma unroll
	for (i = 0; i < 16; i++)
		any |= p->src[i];
	return !any;
}

/*
 * A hairpin packet the endpoint's egress allowed (lib/lb.h): a connection through a service whose
 * backend is the endpoint itself (its source now the loopback address), or such a connection's
 * reply (back to the loopback address). It goes straight back into the endpoint, as Cilium's local
 * delivery does: judged as the endpoint's ingress here (conntrack, and a reply gets the frontend
 * as its source and the endpoint's address as its destination), then handed to the pod's interface
 * (bpf_redirect_peer, MAC addresses swapped) instead of the host stack, which would route the
 * loopback address elsewhere. to_container does not see it.
 */
static __always_inline int hairpin(struct __sk_buff *skb, struct pkt *p, struct ct_result *ct)
{
	__u8 eth[12], tmp[6];
	int ret;

	__builtin_memset(ct, 0, sizeof(*ct));	/* the ingress side is looked up afresh */
	ret = decide(skb, 0, p, ct);
	if (ret != TC_ACT_OK)
		return ret;
	if (bpf_skb_load_bytes(skb, 0, eth, 12) < 0)
		return drop(skb, DROP_INVALID, 0, p, 0);
	__builtin_memcpy(tmp, eth, 6);
	__builtin_memcpy(eth, eth + 6, 6);
	__builtin_memcpy(eth + 6, tmp, 6);
	if (bpf_skb_store_bytes(skb, 0, eth, 12, 0) < 0)
		return drop(skb, DROP_INVALID, 0, p, 0);
	return bpf_redirect_peer(skb->ifindex, 0);
}

static __always_inline int handle(struct __sk_buff *skb, __u8 egress)
{
	const struct endpoint_info *ep = 0;
	struct ct_result ct = {};
	struct pkt p = {};
	int err;

	if (lxc_shared) {
		ep = shared_endpoint(skb);
		if (!ep)	/* not an endpoint's interface (or not yet / no longer): nothing passes */
			return drop(skb, DROP_POLICY, egress, 0, 0);
	}
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
	if (ep) {
		p.ep_identity = ep->identity;
		p.ep_id = ep->endpoint_id;
		p.ct_enabled = !(ep->flags & ENDPOINT_F_CT_DISABLED);
		p.ct_accounting = !(ep->flags & ENDPOINT_F_NO_ACCOUNTING);
	} else {
		p.ep_identity = endpoint_identity;
		p.ep_id = endpoint_id;
		p.ct_enabled = ct_enabled;
		p.ct_accounting = ct_accounting;
	}
	/* link-scoped MLD of the pod's kernel: passed and counted as forwarded, never a forged source */
	if (egress && is_link_local_mld(&p)) {
		count(skb, METRICS_DIR_STRIDE);
		return TC_ACT_OK;
	}
	/* anti-spoofing, before a service or conntrack sees the packet (neighbour discovery may use link-local or unspecified sources) */
	if (egress && !is_neighbour_discovery(&p) && !from_own_address(&p, ep))
		return drop(skb, DROP_INVALID_SOURCE, egress, &p, 0);
	/*
	 * A packet to a service goes to a backend first (its own call chain: the stack stays small).
	 * Not one that conntrack already finds under the packet's own tuple (the first key of its
	 * lookup order): a reply of a connection the peer opened (what a server pod sends back,
	 * to a client whose address and port may even look like a frontend: it goes back to it), or
	 * a connection that was not translated when it was opened (a translated one's entry is under
	 * the backend's tuple). As conntrack NAT does (kube-proxy's too): the translation is chosen
	 * when a connection starts and kept for its life. Such a packet pays one hash lookup instead
	 * of the five of a destination that is no service; one whose first key misses pays it once
	 * more (the lookup goes on with the other key, or afresh when the packet was translated).
	 */
	if (egress && (is_neighbour_discovery(&p) || ct_lookup_first(skb, &p, egress, &ct) == CT_NEW)) {
		err = p.family == FAMILY_IPV4 ? lb4_egress(skb, &p) : lb6_egress(skb, &p);
		if (err == -LB_REJECT) {
			/* counted and reported as a no-backend drop; the sender gets an ICMP port unreachable */
			drop(skb, DROP_NO_BACKEND, egress, &p, 0);
			return p.family == FAMILY_IPV4 ? lb4_reject(skb) : lb6_reject(skb);
		}
		if (err < 0)
			return drop(skb, -err, egress, &p, 0);
		if (err > 0)
			ct.probe = CT_PROBE_NONE;	/* translated: the tuple the probe missed is gone */
		if (p.hairpin && lb_hairpin_snat(skb, &p) < 0)
			return drop(skb, DROP_INVALID, egress, &p, 0);
	}
	err = decide(skb, egress, &p, &ct);
	if (!egress || !p.hairpin || err != TC_ACT_OK)
		return err;
	return hairpin(skb, &p, &ct);
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
