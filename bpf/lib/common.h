/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Shared definitions of the Cellium datapath: the layouts of every map key and value (mirrored
 * byte for byte by the layout.ts of each map under src/maps/; docs/datapath.md draws them), reserved identities, drop
 * reasons and address families. All multi-byte fields are host byte order unless typed __be.
 */
#ifndef CELLIUM_COMMON_H
#define CELLIUM_COMMON_H

#include <linux/types.h>

/* Reserved identities (Cilium's numbers). */
#define IDENTITY_ANY 0
#define IDENTITY_HOST 1
#define IDENTITY_WORLD 2

/* Address families in map keys. */
#define FAMILY_IPV4 4
#define FAMILY_IPV6 6

/* Drop reasons: monitor_event.reason, and (with the direction) the index into cellium_metrics. */
enum drop_reason {
	DROP_NONE = 0,
	DROP_POLICY = 1,	/* no policy entry matched */
	DROP_POLICY_DENY = 2,	/* a deny entry matched */
	DROP_INVALID = 3,	/* truncated or malformed packet */
	DROP_UNSUPPORTED_L3 = 4, /* neither IPv4, IPv6 nor ARP */
	DROP_CT_INSERT_FAILED = 5, /* a new connection's conntrack entry could not be written */
	DROP_NO_SERVICE = 6,	/* a port a service VIP does not have (its wildcard entry) */
	DROP_NO_BACKEND = 7,	/* a service without backends for new flows */
	DROP_INVALID_SOURCE = 8, /* sent by the pod from an address that is not its own (Cilium's DROP_INVALID_SIP) */
	DROP_REASON_MAX = 9,
};

/*
 * cellium_policy_<id> (LPM trie). The data after prefixlen is 8 bytes; the prefix covers, in
 * order: egress (8 bits), identity (32), protocol (8), dport (16, network order) = 64.
 *   L3 only (protocol 0): prefixlen 40; protocol, any port: 48; exact port: 64;
 *   a port range expands to aligned power-of-two blocks: 48 + (16 - log2(block size)).
 * identity is host byte order: it is always fully covered (prefixlen >= 40), so its byte
 * order never meets a prefix boundary.
 */
struct policy_key {
	__u32 prefixlen;
	__u8 egress;		/* 1: egress (from the endpoint), 0: ingress (to the endpoint) */
	__u32 identity;		/* peer identity, 0 = any */
	__u8 protocol;		/* IP protocol, 0 = any */
	__be16 dport;		/* destination port, network order */
} __attribute__((packed));

#define POLICY_PREFIX_FULL 64

struct policy_value {
	__u8 deny;		/* 1: drop on match */
	__u8 pad[3];
};

/*
 * cellium_ipcache (LPM trie): {prefixlen, family, pad[3], addr[16]}. The first 32 data bits
 * (family + pad) are always covered: prefixlen = 32 + the CIDR's prefix length. IPv4 addresses
 * sit in addr[0..3] with addr[4..15] zero.
 */
struct ipcache_key {
	__u32 prefixlen;
	__u8 family;
	__u8 pad[3];
	__u8 addr[16];
};

#define IPCACHE_STATIC_PREFIX 32

struct ipcache_value {
	__u32 identity;
	__u32 flags;
};

/* cellium_lxc (hash): local endpoint address -> endpoint. */
struct lxc_key {
	__u8 addr[16];
	__u8 family;
	__u8 pad[3];
};

struct lxc_value {
	__u32 ifindex;
	__u32 identity;
	__u16 endpoint_id;
	__u8 mac[6];
};

/*
 * cellium_endpoints (hash, shared bpf_lxc only): host-side interface index -> the endpoint's
 * constants, read per packet by the one program every endpoint's interface runs (skb->ifindex is
 * the host veth at both hooks). Host byte order; an all-zero address means no address of that
 * family. flags: ENDPOINT_F_*.
 */
#define ENDPOINT_F_CT_DISABLED 0x1	/* the endpoint's Conntrack option is Disabled */
#define ENDPOINT_F_NO_ACCOUNTING 0x2	/* its ConntrackAccounting option is Disabled */

struct endpoint_info {
	__u32 identity;
	__u16 endpoint_id;
	__u8 flags;
	__u8 pad;
	__u32 ifindex;
	__u8 ipv4[4];
	__u8 ipv6[16];
	__u8 mac[6];
	__u8 host_mac[6];
};

/* Endpoint IDs are 1..4095: cellium_policy_maps has one slot per ID. */
#define ENDPOINT_ID_SLOTS 4096

/*
 * cellium_metrics (per-CPU array): index = direction * METRICS_DIR_STRIDE + drop reason, the
 * direction 0 ingress (to the endpoint), 1 egress (from it); reason DROP_NONE counts the packets
 * forwarded. METRICS_EVENTS_LOST counts monitor events the ring buffer had no room for.
 */
#define METRICS_DIR_STRIDE 16
#define METRICS_EVENTS_LOST 15
#define METRICS_MAX_ENTRIES (2 * METRICS_DIR_STRIDE)

struct metrics_value {
	__u64 packets;
	__u64 bytes;
};

/*
 * Conntrack (Cilium's ipv4_ct_tuple / ipv6_ct_tuple and ct_entry). cellium_ct4_global and
 * cellium_ct6_global (LRU hash) hold TCP connections, cellium_ct_any4_global and
 * cellium_ct_any6_global everything else. A key is stored in reply orientation for the addresses
 * (daddr/saddr name the reply's destination and source, i.e. the connection's source is daddr)
 * and original orientation for the ports (dport is the connection's destination port); flags say
 * which side opened it: TUPLE_F_OUT for a connection the endpoint opened (seen first at egress),
 * TUPLE_F_IN for one opened towards the endpoint (seen first at ingress). ICMP echo uses the
 * echo identifier as the port (request: sport, reply: dport, as the packet carries it).
 */
#define TUPLE_F_OUT 0
#define TUPLE_F_IN 1
#define TUPLE_F_RELATED 2
#define TUPLE_F_SERVICE 4

struct ipv4_ct_tuple {
	__u8 daddr[4];
	__u8 saddr[4];
	__be16 dport;
	__be16 sport;
	__u8 nexthdr;
	__u8 flags;
} __attribute__((packed));

struct ipv6_ct_tuple {
	__u8 daddr[16];
	__u8 saddr[16];
	__be16 dport;
	__be16 sport;
	__u8 nexthdr;
	__u8 flags;
} __attribute__((packed));

/* cellium_ct_stats slots: map index (ct4, ct_any4, ct6, ct_any6) * CT_STATS_SLOTS + CT_STATS_*. */
#define CT_STATS_CREATED 0
#define CT_STATS_USER_DELETED 1
#define CT_STATS_SLOTS 2
#define CT_STATS_MAX_ENTRIES (4 * CT_STATS_SLOTS)

/* ct_entry.flags bits (Cilium's bit positions). */
#define CT_F_RX_CLOSING 0x1
#define CT_F_TX_CLOSING 0x2
#define CT_F_LB_LOOPBACK 0x8	/* a hairpin connection through a service (Cilium's lb_loopback) */
#define CT_F_SEEN_NON_SYN 0x10
#define CT_F_CLOSING (CT_F_RX_CLOSING | CT_F_TX_CLOSING)

/*
 * A connection. rx is towards the endpoint (to_container), tx from it (from_container). lifetime
 * is in seconds of CLOCK_MONOTONIC (bpf_ktime_get_ns() / 1e9): the entry is expired once lifetime
 * < now. src_sec_id is the identity of the side that opened the connection. *_flags_seen are the
 * TCP flags seen per direction, last_*_report when a monitor event last reported the direction.
 */
struct ct_entry {
	__u64 rx_packets;
	__u64 rx_bytes;
	__u64 tx_packets;
	__u64 tx_bytes;
	__u32 lifetime;
	__u16 flags;
	__u16 rev_nat_index;	/* a connection to a service: its frontend in cellium_lb4_reverse_nat */
	__u16 reserved;
	__u8 tx_flags_seen;
	__u8 rx_flags_seen;
	__u32 src_sec_id;
	__u32 last_tx_report;
	__u32 last_rx_report;
};

/*
 * Load balancing (Cilium's bpf/lib/lb.h layouts; src/maps/lb/layout.ts mirrors them). A frontend
 * is a master entry (backend_slot 0: count backends that take new flows, qcount after them that
 * keep only theirs, the affinity timeout in backend_id, the rev-NAT index) and slots 1..count+qcount
 * naming backend IDs; a VIP's wildcard entry (dport 0, proto 0, count 0) drops its other ports.
 */
struct lb4_key {
	__be32 address;
	__be16 dport;
	__u16 backend_slot;
	__u8 proto;
	__u8 scope;
	__u8 pad[2];
};

struct lb4_service {
	__u32 backend_id;	/* slot: backend ID; master: affinity timeout */
	__u16 count;
	__u16 rev_nat_index;
	__u8 flags;
	__u8 flags2;
	__u16 qcount;
};

/* Backend states (lb4_backend.flags). */
#define BE_STATE_ACTIVE 0
#define BE_STATE_TERMINATING 1

struct lb4_backend {
	__be32 address;
	__be16 port;
	__u8 proto;
	__u8 flags;
	__u16 cluster_id;
	__u8 zone;
	__u8 pad;
};

struct lb4_reverse_nat {
	__be32 address;
	__be16 port;
	__u16 pad;
};

struct lb6_key {
	__u8 address[16];
	__be16 dport;
	__u16 backend_slot;
	__u8 proto;
	__u8 scope;
	__u8 pad[2];
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

struct lb6_reverse_nat {
	__u8 address[16];
	__be16 port;
	__u16 pad;
};

/*
 * The source a pod's connection to a service gets when the backend chosen is the pod itself
 * (hairpin, Cilium's --ipv4-service-loopback-address): the pod would otherwise receive a packet
 * from its own address, which its kernel drops as a martian. IPv4 is Cilium's 169.254.42.1; IPv6
 * is 64:ff9b:1::a9fe:2a01 (RFC 8215's local-use translation prefix embedding 169.254.42.1), not
 * Cilium's fe80::1: a pod answers a link-local source on its link, which needs the neighbour
 * answer Cilium's bpf_lxc gives and Cellium's does not, while a global one goes to the pod's default
 * gateway. src/maps/lb/layout.ts mirrors both.
 */
#define LB_LOOPBACK_IPV4 0xa9fe2a01		/* host order */
#define LB_LOOPBACK_IPV6_W0 0x0064ff9b		/* the four 32-bit words, host order */
#define LB_LOOPBACK_IPV6_W1 0x00010000
#define LB_LOOPBACK_IPV6_W2 0x00000000
#define LB_LOOPBACK_IPV6_W3 0xa9fe2a01

/* SVC_FLAG_NODEPORT in lb4_service.flags of a master entry: a NodePort frontend (Cilium's SVC_FLAG_NODE_PORT). */
#define SVC_FLAG_NODEPORT (1 << 1)
/* SVC_FLAG_AFFINITY in lb4_service.flags of a master entry: ClientIP session affinity. */
#define SVC_FLAG_AFFINITY (1 << 4)

/* ClientIP affinity (LRU): the backend a client last got for a service, and when. */
struct lb4_affinity_key {
	__u32 client_ip;
	__u32 client_pad;	/* the rest of Cilium's client id union (a socket cookie) */
	__u16 rev_nat_id;
	__u8 netns_cookie;
	__u8 pad1;
	__u32 pad2;
} __attribute__((packed));

struct lb6_affinity_key {
	__u8 client_ip[16];
	__u16 rev_nat_id;
	__u8 netns_cookie;
	__u8 pad1;
	__u32 pad2;
} __attribute__((packed));

struct lb_affinity_val {
	__u64 last_used;	/* seconds of CLOCK_MONOTONIC */
	__u32 backend_id;
	__u32 pad;
} __attribute__((packed));

/* cellium_lb_affinity_match: the backends of affinity services (a chosen backend must still be one). */
struct lb_affinity_match {
	__u32 backend_id;
	__u16 rev_nat_id;
	__u16 pad;
} __attribute__((packed));

/*
 * Socket-level load balancing (bpf_sock.c): cellium_lb4_reverse_sk / cellium_lb6_reverse_sk (LRU)
 * remember, per socket (its cookie) and backend address:port, the frontend a connect or sendmsg was
 * translated from, so recvmsg and getpeername show the frontend again (Cilium's
 * ipv4_revnat_tuple / ipv4_revnat_entry).
 */
struct lb4_reverse_sk_key {
	__u64 cookie;
	__be32 address;
	__be16 port;
	__u16 pad;
};

struct lb4_reverse_sk {
	__be32 address;
	__be16 port;
	__u16 rev_nat_index;
};

struct lb6_reverse_sk_key {
	__u64 cookie;
	__u8 address[16];
	__be16 port;
	__u16 pad;
	__u32 pad2;
};

struct lb6_reverse_sk {
	__u8 address[16];
	__be16 port;
	__u16 rev_nat_index;
};

/* cellium_events (ring buffer) record types. */
#define EVENT_DROP 1
#define EVENT_TRACE 2
#define EVENT_POLICY_VERDICT 3

/* Policy verdict match types (Cilium's numbers: which kind of rule decided). */
#define POLICY_MATCH_NONE 0
#define POLICY_MATCH_L3_ONLY 1
#define POLICY_MATCH_L3_L4 2
#define POLICY_MATCH_L4_ONLY 3
#define POLICY_MATCH_ALL 4
#define POLICY_MATCH_L3_PROTO 5
#define POLICY_MATCH_PROTO_ONLY 6

/*
 * One monitor event (64 bytes): a drop (reason), a trace of a forwarded packet (its conntrack
 * status; only for new flows, new TCP flags or once per ct_report_interval per direction) or a
 * policy verdict of a new connection (action, match type). Addresses and ports as on the wire.
 */
struct monitor_event {
	__u8 type;		/* EVENT_* */
	__u8 reason;		/* enum drop_reason (drop; the verdict's reason of a policy verdict) */
	__u8 egress;
	__u8 protocol;
	__u16 endpoint_id;
	__be16 dport;		/* TCP/UDP/SCTP destination port, else 0 */
	__u32 src_identity;
	__u32 dst_identity;
	__u32 ifindex;
	__u8 family;
	__u8 icmp_type;
	__u8 ct_status;		/* CT_* (trace, policy verdict) */
	__u8 match;		/* POLICY_MATCH_* (policy verdict) */
	__u8 src[16];
	__u8 dst[16];
	__be16 sport;		/* TCP/UDP/SCTP source port, else 0 */
	__u8 tcp_flags;
	__u8 action;		/* policy verdict: 1 allow, 0 deny */
	__u32 len;		/* the packet's length */
};

#endif
