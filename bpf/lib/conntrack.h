/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Connection tracking, Cilium's semantics (src/datapath/model/conntrack.ts computes the same
 * in TypeScript):
 *   - a packet is looked up as a reply (the key built from the packet, flags naming the other
 *     side as the opener): a hit is CT_REPLY, or CT_RELATED for an ICMP error whose inner header
 *     is a tracked connection's packet. A pure SYN is never a reply;
 *   - and as the forward direction (addresses and ports swapped): a hit is CT_ESTABLISHED, or
 *     CT_REOPENED for a pure SYN on a closing entry (a new connection on the same tuple); the
 *     forward key goes first when the sender's port is the higher one (ct_forward_first);
 *   - otherwise CT_NEW. An expired entry (lifetime < now) counts as absent.
 * A hit refreshes the entry: TCP stays on the SYN lifetime until a packet without SYN is seen, then
 * the TCP lifetime; FIN marks its direction closing, RST both; once both directions are closing
 * the close lifetime applies and later packets no longer extend it. Other protocols get the
 * non-TCP lifetime. Lifetimes and switches are .rodata constants set by the loader.
 * ct_lookup_first(), ct_lookup(), ct_match() and ct_create() are global functions: the verifier
 * checks each once per program, whichever map an entry comes from.
 */
#ifndef CELLIUM_CONNTRACK_H
#define CELLIUM_CONNTRACK_H

#include "maps.h"
#include "parse.h"

/* Conntrack settings (Cilium's --bpf-ct-timeout-* and the endpoint's Conntrack options). */
const volatile __u32 ct_lifetime_tcp = 8000;
const volatile __u32 ct_lifetime_any = 60;
const volatile __u32 ct_lifetime_syn = 60;
const volatile __u32 ct_lifetime_close = 10;
const volatile __u32 ct_report_interval = 5;
const volatile __u8 ct_enabled = 1;
const volatile __u8 ct_accounting = 1;

/* What a lookup found (Cilium's numbers). */
#define CT_NEW 0
#define CT_ESTABLISHED 1
#define CT_REPLY 2
#define CT_RELATED 3
#define CT_REOPENED 4

/* The outcome of ct_lookup, for the decision and for monitor events. */
struct ct_result {
	__u8 status;		/* CT_* */
	__u8 track;		/* CT_NEW/CT_REOPENED: write an entry once the packet is allowed */
	__u8 report;		/* a monitor would report this packet: new flow, new TCP flags, or the interval passed */
	__u8 egress;		/* the packet's direction (set by ct_lookup) */
	__u32 src_sec_id;	/* the matched entry's source identity */
	__u32 now;		/* the lookup's second (CLOCK_MONOTONIC) */
	__u16 rev_nat;		/* the matched entry's rev-NAT index (a connection to a service) */
	__u8 loopback;		/* the matched entry is a hairpin connection's (CT_F_LB_LOOPBACK) */
	__u8 probe;		/* CT_PROBE_*: what ct_lookup_first did (ct_lookup goes on from there) */
};

/* What ct_lookup_first did with a packet. */
#define CT_PROBE_NONE 0		/* nothing: ct_lookup looks the packet up whole */
#define CT_PROBE_MISSED 1	/* its first key missed: ct_lookup tries only the other (unless the tuple changed) */
#define CT_PROBE_HIT 2		/* its first key hit: `res` is the lookup's result, ct_lookup keeps it */

/*
 * The current second of CLOCK_MONOTONIC, from the coarse clock (the last tick's time, a memory
 * read, where bpf_ktime_get_ns() reads the clocksource): at most one tick behind, which a lifetime
 * in seconds does not notice.
 */
static __always_inline __u32 ct_now(void)
{
	return bpf_ktime_get_coarse_ns() / 1000000000ULL;
}

/* A key of either family: an IPv4 key is the first 14 bytes. */
union ct_key {
	struct ipv4_ct_tuple v4;
	struct ipv6_ct_tuple v6;
};

/*
 * The key as a packet from `src` to `dst` with these conntrack ports looks it up as a reply:
 * addresses as they are, ports swapped (dport holds the packet's source port), `flags` naming the
 * side that would have opened the connection.
 */
static __always_inline void ct_key_fill(union ct_key *k, __u8 family, const __u8 *src, const __u8 *dst, __be16 sport, __be16 dport,
					__u8 nexthdr, __u8 flags)
{
	if (family == FAMILY_IPV4) {
		__builtin_memcpy(k->v4.daddr, dst, 4);
		__builtin_memcpy(k->v4.saddr, src, 4);
		k->v4.dport = sport;
		k->v4.sport = dport;
		k->v4.nexthdr = nexthdr;
		k->v4.flags = flags;
	} else {
		__builtin_memcpy(k->v6.daddr, dst, 16);
		__builtin_memcpy(k->v6.saddr, src, 16);
		k->v6.dport = sport;
		k->v6.sport = dport;
		k->v6.nexthdr = nexthdr;
		k->v6.flags = flags;
	}
}

/* The other direction's key: addresses and ports swapped, TUPLE_F_IN flipped. */
static __always_inline void ct_key_reverse(union ct_key *k, __u8 family)
{
	if (family == FAMILY_IPV4) {
		__u8 tmp[4];
		__be16 port = k->v4.dport;

		__builtin_memcpy(tmp, k->v4.daddr, 4);
		__builtin_memcpy(k->v4.daddr, k->v4.saddr, 4);
		__builtin_memcpy(k->v4.saddr, tmp, 4);
		k->v4.dport = k->v4.sport;
		k->v4.sport = port;
		k->v4.flags ^= TUPLE_F_IN;
	} else {
		__u8 tmp[16];
		__be16 port = k->v6.dport;

		__builtin_memcpy(tmp, k->v6.daddr, 16);
		__builtin_memcpy(k->v6.daddr, k->v6.saddr, 16);
		__builtin_memcpy(k->v6.saddr, tmp, 16);
		k->v6.dport = k->v6.sport;
		k->v6.sport = port;
		k->v6.flags ^= TUPLE_F_IN;
	}
}

/* The entry of `k` in the family's TCP or non-TCP map. */
static __always_inline struct ct_entry *ct_map_lookup(const union ct_key *k, __u8 family)
{
	if (family == FAMILY_IPV4) {
		if (k->v4.nexthdr == IPPROTO_TCP)
			return bpf_map_lookup_elem(&cellium_ct4_global, &k->v4);
		return bpf_map_lookup_elem(&cellium_ct_any4_global, &k->v4);
	}
	if (k->v6.nexthdr == IPPROTO_TCP)
		return bpf_map_lookup_elem(&cellium_ct6_global, &k->v6);
	return bpf_map_lookup_elem(&cellium_ct_any6_global, &k->v6);
}

/* The index of the map `k` belongs in (cellium_ct_stats order: ct4, ct_any4, ct6, ct_any6). */
static __always_inline __u32 ct_map_index(const union ct_key *k, __u8 family)
{
	if (family == FAMILY_IPV4)
		return k->v4.nexthdr == IPPROTO_TCP ? 0 : 1;
	return k->v6.nexthdr == IPPROTO_TCP ? 2 : 3;
}

/* Counts an entry the datapath added to a conntrack map (cellium_ct_stats). */
static __always_inline void ct_count_created(__u32 map_index)
{
	__u32 slot = map_index * CT_STATS_SLOTS + CT_STATS_CREATED;
	__u64 *n = bpf_map_lookup_elem(&cellium_ct_stats, &slot);

	if (n)
		*n += 1;
}

/* Writes the entry of `k`; the map's error (< 0) when it cannot. */
static __always_inline long ct_map_update(const union ct_key *k, __u8 family, const struct ct_entry *e)
{
	if (family == FAMILY_IPV4) {
		if (k->v4.nexthdr == IPPROTO_TCP)
			return bpf_map_update_elem(&cellium_ct4_global, &k->v4, e, BPF_ANY);
		return bpf_map_update_elem(&cellium_ct_any4_global, &k->v4, e, BPF_ANY);
	}
	if (k->v6.nexthdr == IPPROTO_TCP)
		return bpf_map_update_elem(&cellium_ct6_global, &k->v6, e, BPF_ANY);
	return bpf_map_update_elem(&cellium_ct_any6_global, &k->v6, e, BPF_ANY);
}

/* Records the TCP flags seen in a direction; 1 when a monitor should report the packet. */
static __always_inline __u8 ct_note_flags(struct ct_entry *e, __u32 egress, __u8 flags, __u32 now)
{
	__u8 seen = egress ? e->tx_flags_seen : e->rx_flags_seen;
	__u32 last = egress ? e->last_tx_report : e->last_rx_report;

	if ((seen | flags) == seen && last + ct_report_interval >= now)
		return 0;
	if (egress) {
		e->tx_flags_seen = seen | flags;
		e->last_tx_report = now;
	} else {
		e->rx_flags_seen = seen | flags;
		e->last_rx_report = now;
	}
	return 1;
}

/*
 * Refreshes a matched entry with a packet: counters, TCP state, lifetime, flags seen; returns
 * whether a monitor should report the packet. Inlined into ct_match, its one caller (a global
 * function: checked once whichever map the entry comes from), which saves a call per packet.
 */
static __always_inline int ct_refresh(struct ct_entry *e, struct __sk_buff *skb, const struct pkt *p, __u32 egress, __u32 now)
{
	__u32 lifetime;
	__u16 flags;

	if (!e || !skb || !p)
		return 0;
	flags = e->flags;
	if (p->ct_accounting) {
		if (egress) {
			__sync_fetch_and_add(&e->tx_packets, 1);
			__sync_fetch_and_add(&e->tx_bytes, skb->len);
		} else {
			__sync_fetch_and_add(&e->rx_packets, 1);
			__sync_fetch_and_add(&e->rx_bytes, skb->len);
		}
	}
	/* Stores only what changed: most packets of a flow leave the entry's cache line clean. */
	if (p->protocol != IPPROTO_TCP) {
		lifetime = now + ct_lifetime_any;
	} else if ((flags & CT_F_CLOSING) != CT_F_CLOSING) {
		if (!(p->tcp_flags & TCP_SYN))
			flags |= CT_F_SEEN_NON_SYN;
		if (p->tcp_flags & TCP_RST)
			flags |= CT_F_CLOSING;
		else if (p->tcp_flags & TCP_FIN)
			flags |= egress ? CT_F_TX_CLOSING : CT_F_RX_CLOSING;
		if ((flags & CT_F_CLOSING) == CT_F_CLOSING)
			lifetime = now + ct_lifetime_close;
		else
			lifetime = now + ((flags & CT_F_SEEN_NON_SYN) ? ct_lifetime_tcp : ct_lifetime_syn);
		if (flags != e->flags)
			e->flags = flags;
	} else {
		lifetime = e->lifetime;
	}
	if (lifetime != e->lifetime)
		e->lifetime = lifetime;
	return ct_note_flags(e, egress, p->tcp_flags, now);
}

/* How ct_match treats a live entry. */
#define CT_MATCH_PEEK 0		/* leave it as it is */
#define CT_MATCH_REFRESH 1	/* refresh it with the packet */
#define CT_MATCH_REOPEN 2	/* refresh it, unless it is closing (a pure SYN reopens it) */

/* What ct_match found. */
#define CT_MATCH_NONE 0
#define CT_MATCH_LIVE 1
#define CT_MATCH_CLOSING 2

/*
 * Looks `k` up: CT_MATCH_NONE when there is no entry or it expired (lifetime < now), else the entry
 * is treated as `how` says and its source identity and report bit go to `res`. A global function:
 * checked once, whichever of the four maps the key belongs in.
 */
__attribute__((noinline)) int ct_match(const union ct_key *k, struct __sk_buff *skb, const struct pkt *p, __u32 how,
				       struct ct_result *res)
{
	struct ct_entry *e;

	if (!k || !p || !res)
		return CT_MATCH_NONE;
	e = ct_map_lookup(k, p->family);
	if (!e || e->lifetime < res->now)
		return CT_MATCH_NONE;
	res->src_sec_id = e->src_sec_id;
	res->rev_nat = e->rev_nat_index;
	res->loopback = (e->flags & CT_F_LB_LOOPBACK) != 0;
	if (how == CT_MATCH_REOPEN && (e->flags & CT_F_CLOSING))
		return CT_MATCH_CLOSING;
	if (how != CT_MATCH_PEEK)
		res->report = ct_refresh(e, skb, p, res->egress, res->now);
	return CT_MATCH_LIVE;
}

/*
 * Whether the packet an ICMP error quotes belongs to a tracked connection. That packet travelled
 * the other way (the error goes back to its sender), so it is looked up as a packet of the
 * opposite direction, as a reply and as the forward direction. The error must go to the quoted
 * packet's sender. `k` is the caller's key (one key on ct_lookup's stack).
 */
static __always_inline int ct_related(struct __sk_buff *skb, const struct pkt *p, __u32 egress, struct ct_result *res, union ct_key *k)
{
	const __u32 *dst = (const __u32 *)p->dst;
	const __u32 *isrc = (const __u32 *)p->inner_src;

	if (dst[0] != isrc[0] || dst[1] != isrc[1] || dst[2] != isrc[2] || dst[3] != isrc[3])
		return 0;
	ct_key_fill(k, p->family, p->inner_src, p->inner_dst, p->inner_sport, p->inner_dport, p->inner_protocol, egress ? TUPLE_F_OUT : TUPLE_F_IN);
	if (ct_match(k, skb, p, CT_MATCH_PEEK, res))
		return 1;
	ct_key_reverse(k, p->family);
	return ct_match(k, skb, p, CT_MATCH_PEEK, res) != CT_MATCH_NONE;
}

/*
 * Which key a packet that is not a pure SYN tries first: the forward direction when the sender's
 * port is above the other's (a client's ephemeral port: the sender most likely opened the
 * connection), else the reply. A request/response flow then finds its entry with one hash lookup
 * both ways, where the reply key first cost the requests a miss (a cold bucket: ~25 ns of
 * BPF_PROG_TEST_RUN, more on a busy CPU). A packet whose first key misses tries the other, so
 * only the order changes, and it only matters when both keys of one tuple are live: rare (a pure
 * SYN, which never tries the reply key, towards a tuple the endpoint opened itself; first packets
 * racing on two CPUs). Then the forward entry wins when it goes first, and the policy judges the
 * packet where the reply would have passed without: never more allowed than before.
 */
static __always_inline int ct_forward_first(const struct pkt *p)
{
	return bpf_ntohs(p->ct_sport) > bpf_ntohs(p->ct_dport);
}

/* Whether a packet is looked up at all: conntrack on, not a non-first fragment. */
static __always_inline int ct_tracks(const struct pkt *p)
{
	return p->ct_enabled && !p->fragment;
}

/* A TCP packet with SYN and without ACK: never a reply (looked up as the forward direction only). */
static __always_inline int ct_pure_syn(const struct pkt *p)
{
	return p->protocol == IPPROTO_TCP && (p->tcp_flags & (TCP_SYN | TCP_ACK)) == TCP_SYN;
}

/* `res` as a lookup starts it: CT_NEW, nothing to track, reported. */
static __always_inline void ct_result_init(struct ct_result *res, __u32 egress)
{
	res->status = CT_NEW;
	res->track = 0;
	res->report = 1;
	res->egress = egress;
	res->probe = CT_PROBE_NONE;
}

/*
 * The first key of ct_lookup's order alone, before anything changes the packet (bpf_lxc asks it
 * before the service lookup): when it hits, `res` is what ct_lookup would have found (the entry is
 * refreshed, res->probe CT_PROBE_HIT) and the status is returned; else CT_NEW, with res->probe
 * CT_PROBE_MISSED when the key was tried (ct_lookup then tries only the other key, as long as the
 * packet's tuple stays the same: the caller resets res->probe to CT_PROBE_NONE when it translates
 * the packet). Pure SYNs, ICMP errors, fragments and untracked packets are not probed. A global
 * function.
 */
__attribute__((noinline)) int ct_lookup_first(struct __sk_buff *skb, const struct pkt *p, __u32 egress, struct ct_result *res)
{
	union ct_key k = {};
	int fwd_first;

	if (!skb || !p || !res)
		return CT_NEW;
	ct_result_init(res, egress);
	if (!ct_tracks(p) || p->icmp_error || ct_pure_syn(p))
		return CT_NEW;
	res->now = ct_now();
	fwd_first = ct_forward_first(p);
	ct_key_fill(&k, p->family, p->src, p->dst, p->ct_sport, p->ct_dport, p->protocol, egress ? TUPLE_F_IN : TUPLE_F_OUT);
	if (fwd_first)
		ct_key_reverse(&k, p->family);
	if (ct_match(&k, skb, p, CT_MATCH_REFRESH, res)) {
		res->status = fwd_first ? CT_ESTABLISHED : CT_REPLY;
		res->probe = CT_PROBE_HIT;
		return res->status;
	}
	res->probe = CT_PROBE_MISSED;
	return CT_NEW;
}

/*
 * Looks the packet up (see the top of this file) and refreshes what it matched; fills `res` and
 * returns its status. Untracked packets (conntrack off, non-first fragments, ICMP errors about
 * nothing tracked) are CT_NEW with res->track 0. A pure SYN is looked up as the forward direction
 * only; any other packet tries both keys, in ct_forward_first's order. After ct_lookup_first
 * (res->probe): a hit is kept as it is, a missed first key is not tried again.
 */
__attribute__((noinline)) int ct_lookup(struct __sk_buff *skb, const struct pkt *p, __u32 egress, struct ct_result *res)
{
	union ct_key k = {};
	int pure_syn, fwd_first, m;
	__u8 probe;

	if (!skb || !p || !res)
		return CT_NEW;
	probe = res->probe;
	if (probe == CT_PROBE_HIT)
		return res->status;
	ct_result_init(res, egress);
	if (!ct_tracks(p))
		return CT_NEW;
	res->now = ct_now();
	if (p->icmp_error) {
		if (p->inner_valid && ct_related(skb, p, egress, res, &k))
			res->status = CT_RELATED;
		return res->status;
	}
	pure_syn = ct_pure_syn(p);
	fwd_first = !pure_syn && ct_forward_first(p);
	ct_key_fill(&k, p->family, p->src, p->dst, p->ct_sport, p->ct_dport, p->protocol, egress ? TUPLE_F_IN : TUPLE_F_OUT);
	if (fwd_first)
		ct_key_reverse(&k, p->family);
	/* the first key (never for a pure SYN: it is never a reply; not again when the probe missed it) */
	if (!pure_syn && probe != CT_PROBE_MISSED && ct_match(&k, skb, p, CT_MATCH_REFRESH, res)) {
		res->status = fwd_first ? CT_ESTABLISHED : CT_REPLY;
		return res->status;
	}
	/* the other key */
	ct_key_reverse(&k, p->family);
	m = ct_match(&k, skb, p, pure_syn ? CT_MATCH_REOPEN : CT_MATCH_REFRESH, res);
	if (m == CT_MATCH_LIVE) {
		res->status = fwd_first ? CT_REPLY : CT_ESTABLISHED;
		return res->status;
	}
	res->report = 1;
	res->track = 1;
	res->status = m == CT_MATCH_CLOSING ? CT_REOPENED : CT_NEW;
	return res->status;
}

/*
 * Writes the entry of a new (or reopened) connection the policy allowed: the key in the forward
 * direction, the packet counted, `src_identity` the identity of the side that opened it; a key
 * that was not in the map yet is counted in cellium_ct_stats. Returns the map's error (< 0) when
 * the entry could not be written.
 */
__attribute__((noinline)) int ct_create(struct __sk_buff *skb, const struct pkt *p, __u32 egress, __u32 src_identity)
{
	union ct_key k = {};
	struct ct_entry e = {};
	__u32 now;
	int fresh;

	if (!skb || !p)
		return -1;
	now = ct_now();
	ct_key_fill(&k, p->family, p->dst, p->src, p->ct_dport, p->ct_sport, p->protocol, egress ? TUPLE_F_OUT : TUPLE_F_IN);
	e.src_sec_id = src_identity;
	if (p->protocol != IPPROTO_TCP) {
		e.lifetime = now + ct_lifetime_any;
	} else {
		if (p->tcp_flags & TCP_RST)
			e.flags = CT_F_CLOSING;
		else if (p->tcp_flags & TCP_FIN)
			e.flags = egress ? CT_F_TX_CLOSING : CT_F_RX_CLOSING;
		e.lifetime = now + ((e.flags & CT_F_CLOSING) == CT_F_CLOSING ? ct_lifetime_close : ct_lifetime_syn);
	}
	if (egress) {
		e.tx_flags_seen = p->tcp_flags;
		e.last_tx_report = now;
	} else {
		e.rx_flags_seen = p->tcp_flags;
		e.last_rx_report = now;
	}
	if (p->ct_accounting) {
		if (egress) {
			e.tx_packets = 1;
			e.tx_bytes = skb->len;
		} else {
			e.rx_packets = 1;
			e.rx_bytes = skb->len;
		}
	}
	/* a key not there yet is a new entry of the table (counted for the agent's eviction accounting) */
	fresh = !ct_map_lookup(&k, p->family);
	if (ct_map_update(&k, p->family, &e) < 0)
		return -1;
	if (fresh)
		ct_count_created(ct_map_index(&k, p->family));
	return 0;
}

#endif
