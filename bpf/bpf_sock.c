// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * bpf_sock: socket-level load balancing for the node's own processes (Cilium's bpf_sock.c), cgroup
 * programs attached to the cgroup of --cgroup-root (the agent's sock-lb loader,
 * src/cells/loadbalancer/sock-lb.ts):
 *   cgroup/connect4, connect6 (TCP and UDP connect) and sendmsg4, sendmsg6 (UDP sendto): a
 *     destination that is a service frontend becomes one of its backends before the socket ever
 *     sends a packet (no DNAT, no conntrack entry); the frontend is remembered in
 *     cellium_lb4_reverse_sk / cellium_lb6_reverse_sk under the socket's cookie and the backend;
 *   cgroup/recvmsg4, recvmsg6 (UDP recvfrom) and getpeername4, getpeername6: an address that map
 *     names for this socket is shown as the frontend again, while the service still has that
 *     frontend with the same rev-NAT index (else the stale entry is removed).
 * Lookups are lib/lb_lookup.h's, bpf_lxc's too: the protocol's entry, then protocol 0. A VIP's port
 * that no frontend serves is not translated and not failed: the VIP's wildcard entry is not
 * consulted here (as Cilium's socket LB, whose lookup is east-west and never reads wildcard
 * entries), so the connect goes on as if no service existed (bpf_lxc still drops a pod's packet to
 * it); a wildcard entry never breaks a port no service owns. A service without backends fails the
 * connect or send at once with ECONNREFUSED
 * (--service-no-backend-response=reject) or EHOSTUNREACH (drop). A new TCP connection takes a
 * random backend, a UDP socket the one its cookie picks (its datagrams stay on one backend);
 * ClientIP affinity keys the host's choice by its network namespace cookie (Cilium's
 * netns_cookie form of the affinity key).
 * NodePort (Cilium's sock4_wildcard_lookup): a destination that is no frontend but one of the
 * node's own addresses (a loopback address, or one the ipcache gives the host identity) is looked
 * up again as the NodePort surrogate 0.0.0.0:port ([::]:port); the reverse-socket entry keeps the
 * address connected to, so getpeername and recvmsg show nodeIP:nodePort. Other addresses with a
 * node port are never translated.
 * Only sockets of the initial (host) network namespace are translated: pods keep the per-packet
 * load balancing of bpf_lxc (Maglev, affinity by client IP, conntrack stickiness). IPv4-mapped
 * IPv6 destinations (::ffff:a.b.c.d on an AF_INET6 socket) are translated as IPv4.
 */
#include <linux/bpf.h>
#include <linux/in.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "lib/common.h"
#include "lib/ipcache.h"
#include "lib/lb_maps.h"
#include "lib/lb_lookup.h"

#define SYS_REJECT 0
#define SYS_PROCEED 1

#ifndef ECONNREFUSED
#define ECONNREFUSED 111
#endif
#ifndef EHOSTUNREACH
#define EHOSTUNREACH 113
#endif
#ifndef ENOMEM
#define ENOMEM 12
#endif

/* Entries of the reverse-socket maps; the agent creates them at --bpf-sock-rev-map-max and binds them. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct lb4_reverse_sk_key);
	__type(value, struct lb4_reverse_sk);
	__uint(max_entries, 262144);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cellium_lb4_reverse_sk SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct lb6_reverse_sk_key);
	__type(value, struct lb6_reverse_sk);
	__uint(max_entries, 262144);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} cellium_lb6_reverse_sk SEC(".maps");

/* Whether the socket belongs to the initial network namespace (the host's processes). */
static __always_inline int in_hostns(struct bpf_sock_addr *ctx)
{
	return bpf_get_netns_cookie(ctx) == bpf_get_netns_cookie(0);
}

/* The port of a sockaddr (network order), read as the 32-bit field it is. */
static __always_inline __be16 ctx_port(const struct bpf_sock_addr *ctx)
{
	volatile __u32 port = ctx->user_port;

	return (__be16)port;
}

/* The slot picker of a new translation: random for TCP, the socket's cookie for UDP. */
static __always_inline __u32 sock_pick(struct bpf_sock_addr *ctx, __u32 proto)
{
	return proto == IPPROTO_TCP ? bpf_get_prandom_u32() : (__u32)bpf_get_socket_cookie(ctx);
}

/* Seconds of CLOCK_MONOTONIC (the affinity map's clock, conntrack's too). */
static __always_inline __u32 sock_now(void)
{
	return (__u32)(bpf_ktime_get_ns() / 1000000000ULL);
}

/* Whether an IPv4 address is the node's own: loopback (127.0.0.0/8) or the host identity's. */
static __always_inline int sock4_is_node_addr(__be32 addr)
{
	if ((bpf_ntohl(addr) >> 24) == 127)
		return 1;
	return ipcache_identity(FAMILY_IPV4, &addr) == IDENTITY_HOST;
}

/* Whether an IPv6 address is the node's own: ::1 or the host identity's. */
static __always_inline int sock6_is_node_addr(const __u8 *addr)
{
	const __u32 *a = (const __u32 *)addr;

	if (a[0] == 0 && a[1] == 0 && a[2] == 0 && a[3] == bpf_htonl(1))
		return 1;
	return ipcache_identity(FAMILY_IPV6, addr) == IDENTITY_HOST;
}

/*
 * The master entry of a destination (lb4_lookup_service), else, for one of the node's own
 * addresses, of its NodePort surrogate (the key then holds 0.0.0.0). NULL: no frontend serves
 * the port (whether or not the address has a wildcard entry: socket LB does not read it).
 */
static __always_inline struct lb4_service *sock4_lookup(struct lb4_key *key)
{
	int no_port;
	struct lb4_service *svc = lb4_lookup_service(key, &no_port);

	if (!svc && sock4_is_node_addr(key->address))
		svc = lb4_lookup_nodeport(key);
	return svc;
}

/* sock4_lookup for IPv6 (the surrogate ::). */
static __always_inline struct lb4_service *sock6_lookup(struct lb6_key *key)
{
	int no_port;
	struct lb4_service *svc = lb6_lookup_service(key, &no_port);

	if (!svc && sock6_is_node_addr(key->address))
		svc = lb6_lookup_nodeport(key);
	return svc;
}

/* The failure of a destination that is a service but cannot be translated (see the header). */
static __always_inline int no_backend(const struct lb4_service *svc)
{
	return (svc->flags2 & SVC_FLAG2_NO_BACKEND_DROP) ? -EHOSTUNREACH : -ECONNREFUSED;
}

/*
 * Translates an IPv4 destination *addr:*port of `proto` in place when it is a service frontend.
 * Returns 0 when it is none (nothing changed), 1 when translated, -errno when the connect or send
 * must fail. A global function: checked once by the verifier, called from four programs' paths.
 */
__attribute__((noinline)) int sock4_fwd(struct bpf_sock_addr *ctx, __u32 proto, __be32 *addr, __be16 *port)
{
	struct lb4_key key = {};
	struct lb4_affinity_key aff_key = {};
	struct lb_affinity_val aff = {};
	struct lb4_reverse_sk_key rk = {};
	struct lb4_reverse_sk rv = {}, *old;
	struct lb4_service *svc;
	struct lb4_backend *be = 0;
	__u32 backend_id = 0, now = 0;
	__u64 netns;

	if (!ctx || !addr || !port || (proto != IPPROTO_TCP && proto != IPPROTO_UDP))
		return 0;
	key.address = *addr;
	key.dport = *port;
	key.proto = proto;
	svc = sock4_lookup(&key);
	/* a port no frontend serves (wildcard entry or none): untranslated, as if no service existed */
	if (!svc)
		return 0;
	if (!svc->count)
		return no_backend(svc);
	if (svc->flags & SVC_FLAG_AFFINITY) {
		netns = bpf_get_netns_cookie(ctx);
		__builtin_memcpy(&aff_key.client_ip, &netns, 8);
		aff_key.rev_nat_id = svc->rev_nat_index;
		aff_key.netns_cookie = 1;
		now = sock_now();
		backend_id = lb_affinity_backend(bpf_map_lookup_elem(&cellium_lb4_affinity, &aff_key), svc, now);
		be = backend_id ? bpf_map_lookup_elem(&cellium_lb4_backends, &backend_id) : 0;
		if (be && be->flags != BE_STATE_ACTIVE)
			be = 0;
	}
	if (!be) {
		be = lb4_slot_backend(&key, svc, sock_pick(ctx, proto), &backend_id);
		if (!be)
			return no_backend(svc);
		if (svc->flags & SVC_FLAG_AFFINITY) {
			aff.last_used = now;
			aff.backend_id = backend_id;
			bpf_map_update_elem(&cellium_lb4_affinity, &aff_key, &aff, BPF_ANY);
		}
	}
	rk.cookie = bpf_get_socket_cookie(ctx);
	rk.address = be->address;
	rk.port = be->port;
	rv.address = *addr;
	rv.port = *port;
	rv.rev_nat_index = svc->rev_nat_index;
	old = bpf_map_lookup_elem(&cellium_lb4_reverse_sk, &rk);
	if (!old || old->address != rv.address || old->port != rv.port || old->rev_nat_index != rv.rev_nat_index) {
		if (bpf_map_update_elem(&cellium_lb4_reverse_sk, &rk, &rv, BPF_ANY) < 0)
			return -ENOMEM;
	}
	*addr = be->address;
	*port = be->port;
	return 1;
}

/*
 * The frontend an IPv4 source *addr:*port of this socket was translated from, written in place;
 * 0 when there is none (or the service no longer has it: the entry is removed), 1 when rewritten.
 * A global function.
 */
__attribute__((noinline)) int sock4_rev(struct bpf_sock_addr *ctx, __u32 proto, __be32 *addr, __be16 *port)
{
	struct lb4_reverse_sk_key rk = {};
	struct lb4_reverse_sk *rv;
	struct lb4_key key = {};
	struct lb4_service *svc;

	if (!ctx || !addr || !port)
		return 0;
	rk.cookie = bpf_get_socket_cookie(ctx);
	rk.address = *addr;
	rk.port = *port;
	rv = bpf_map_lookup_elem(&cellium_lb4_reverse_sk, &rk);
	if (!rv)
		return 0;
	key.address = rv->address;
	key.dport = rv->port;
	key.proto = proto;
	svc = sock4_lookup(&key);
	if (!svc || svc->rev_nat_index != rv->rev_nat_index) {
		bpf_map_delete_elem(&cellium_lb4_reverse_sk, &rk);
		return 0;
	}
	*addr = rv->address;
	*port = rv->port;
	return 1;
}

/* Whether two IPv6 addresses are the same. */
static __always_inline int sock6_same_addr(const __u8 *a, const __u8 *b)
{
	__u64 a0, a1, b0, b1;

	__builtin_memcpy(&a0, a, 8);
	__builtin_memcpy(&a1, a + 8, 8);
	__builtin_memcpy(&b0, b, 8);
	__builtin_memcpy(&b1, b + 8, 8);
	return a0 == b0 && a1 == b1;
}

/* IPv6 forward translation, as sock4_fwd. A global function. */
__attribute__((noinline)) int sock6_fwd(struct bpf_sock_addr *ctx, __u32 proto, struct lb6_key *dst)
{
	struct lb6_key key = {};
	struct lb6_affinity_key aff_key = {};
	struct lb_affinity_val aff = {};
	struct lb6_reverse_sk_key rk = {};
	struct lb6_reverse_sk rv = {}, *old;
	struct lb4_service *svc;
	struct lb6_backend *be = 0;
	__u32 backend_id = 0, now = 0;
	__u64 netns;

	if (!ctx || !dst || (proto != IPPROTO_TCP && proto != IPPROTO_UDP))
		return 0;
	__builtin_memcpy(key.address, dst->address, 16);
	key.dport = dst->dport;
	key.proto = proto;
	svc = sock6_lookup(&key);
	if (!svc)
		return 0;
	if (!svc->count)
		return no_backend(svc);
	if (svc->flags & SVC_FLAG_AFFINITY) {
		netns = bpf_get_netns_cookie(ctx);
		__builtin_memcpy(aff_key.client_ip, &netns, 8);
		aff_key.rev_nat_id = svc->rev_nat_index;
		aff_key.netns_cookie = 1;
		now = sock_now();
		backend_id = lb_affinity_backend(bpf_map_lookup_elem(&cellium_lb6_affinity, &aff_key), svc, now);
		be = backend_id ? bpf_map_lookup_elem(&cellium_lb6_backends, &backend_id) : 0;
		if (be && be->flags != BE_STATE_ACTIVE)
			be = 0;
	}
	if (!be) {
		be = lb6_slot_backend(&key, svc, sock_pick(ctx, proto), &backend_id);
		if (!be)
			return no_backend(svc);
		if (svc->flags & SVC_FLAG_AFFINITY) {
			aff.last_used = now;
			aff.backend_id = backend_id;
			bpf_map_update_elem(&cellium_lb6_affinity, &aff_key, &aff, BPF_ANY);
		}
	}
	rk.cookie = bpf_get_socket_cookie(ctx);
	__builtin_memcpy(rk.address, be->address, 16);
	rk.port = be->port;
	__builtin_memcpy(rv.address, dst->address, 16);
	rv.port = dst->dport;
	rv.rev_nat_index = svc->rev_nat_index;
	/* as sock4_fwd: an unchanged entry is not written again (a UDP socket's every send) */
	old = bpf_map_lookup_elem(&cellium_lb6_reverse_sk, &rk);
	if (!old || !sock6_same_addr(old->address, rv.address) || old->port != rv.port || old->rev_nat_index != rv.rev_nat_index) {
		if (bpf_map_update_elem(&cellium_lb6_reverse_sk, &rk, &rv, BPF_ANY) < 0)
			return -ENOMEM;
	}
	__builtin_memcpy(dst->address, be->address, 16);
	dst->dport = be->port;
	return 1;
}

/* IPv6 reverse translation, as sock4_rev. A global function. */
__attribute__((noinline)) int sock6_rev(struct bpf_sock_addr *ctx, __u32 proto, struct lb6_key *src)
{
	struct lb6_reverse_sk_key rk = {};
	struct lb6_reverse_sk *rv;
	struct lb6_key key = {};
	struct lb4_service *svc;

	if (!ctx || !src)
		return 0;
	rk.cookie = bpf_get_socket_cookie(ctx);
	__builtin_memcpy(rk.address, src->address, 16);
	rk.port = src->dport;
	rv = bpf_map_lookup_elem(&cellium_lb6_reverse_sk, &rk);
	if (!rv)
		return 0;
	__builtin_memcpy(key.address, rv->address, 16);
	key.dport = rv->port;
	key.proto = proto;
	svc = sock6_lookup(&key);
	if (!svc || svc->rev_nat_index != rv->rev_nat_index) {
		bpf_map_delete_elem(&cellium_lb6_reverse_sk, &rk);
		return 0;
	}
	__builtin_memcpy(src->address, rv->address, 16);
	src->dport = rv->port;
	return 1;
}

/* The IPv4 hooks: the sockaddr's address and port through sock4_fwd (fwd) or sock4_rev. */
static __always_inline int sock4_xlate(struct bpf_sock_addr *ctx, int fwd)
{
	__be32 addr;
	__be16 port;
	int r;

	if (!in_hostns(ctx))
		return 0;
	addr = ctx->user_ip4;
	port = ctx_port(ctx);
	r = fwd ? sock4_fwd(ctx, ctx->protocol, &addr, &port) : sock4_rev(ctx, ctx->protocol, &addr, &port);
	if (r > 0) {
		ctx->user_ip4 = addr;
		ctx->user_port = (__u32)port;
	}
	return r;
}

/* Whether the IPv6 address is IPv4-mapped (::ffff:a.b.c.d). */
static __always_inline int v4_mapped(const __u32 *a)
{
	return a[0] == 0 && a[1] == 0 && a[2] == bpf_htonl(0xffff);
}

/* The IPv6 hooks: a native address through sock6_fwd/sock6_rev, an IPv4-mapped one as IPv4. */
static __always_inline int sock6_xlate(struct bpf_sock_addr *ctx, int fwd)
{
	struct lb6_key k = {};
	__u32 a[4];
	__be32 addr4;
	__be16 port;
	int r;

	if (!in_hostns(ctx))
		return 0;
	a[0] = ctx->user_ip6[0];
	a[1] = ctx->user_ip6[1];
	a[2] = ctx->user_ip6[2];
	a[3] = ctx->user_ip6[3];
	port = ctx_port(ctx);
	if (v4_mapped(a)) {
		addr4 = a[3];
		r = fwd ? sock4_fwd(ctx, ctx->protocol, &addr4, &port) : sock4_rev(ctx, ctx->protocol, &addr4, &port);
		if (r > 0) {
			ctx->user_ip6[3] = addr4;
			ctx->user_port = (__u32)port;
		}
		return r;
	}
	__builtin_memcpy(k.address, a, 16);
	k.dport = port;
	r = fwd ? sock6_fwd(ctx, ctx->protocol, &k) : sock6_rev(ctx, ctx->protocol, &k);
	if (r > 0) {
		__builtin_memcpy(a, k.address, 16);
		ctx->user_ip6[0] = a[0];
		ctx->user_ip6[1] = a[1];
		ctx->user_ip6[2] = a[2];
		ctx->user_ip6[3] = a[3];
		ctx->user_port = (__u32)k.dport;
	}
	return r;
}

/* A forward hook's verdict: a failed translation fails the call with its errno. */
static __always_inline int fwd_verdict(int r)
{
	if (r < 0) {
		bpf_set_retval(r);
		return SYS_REJECT;
	}
	return SYS_PROCEED;
}

/* A forward hook (connect, sendmsg): translated, or failed with the translation's errno. */
#define SOCK_FWD_PROG(sec, name, xlate)					\
SEC(sec) int name(struct bpf_sock_addr *ctx)				\
{									\
	return fwd_verdict(xlate(ctx, 1));				\
}

/* A reverse hook (recvmsg, getpeername): the frontend shown again where there is one; never fails. */
#define SOCK_REV_PROG(sec, name, xlate)					\
SEC(sec) int name(struct bpf_sock_addr *ctx)				\
{									\
	xlate(ctx, 0);							\
	return SYS_PROCEED;						\
}

SOCK_FWD_PROG("cgroup/connect4", sock4_connect, sock4_xlate)
SOCK_FWD_PROG("cgroup/sendmsg4", sock4_sendmsg, sock4_xlate)
SOCK_REV_PROG("cgroup/recvmsg4", sock4_recvmsg, sock4_xlate)
SOCK_REV_PROG("cgroup/getpeername4", sock4_getpeername, sock4_xlate)
SOCK_FWD_PROG("cgroup/connect6", sock6_connect, sock6_xlate)
SOCK_FWD_PROG("cgroup/sendmsg6", sock6_sendmsg, sock6_xlate)
SOCK_REV_PROG("cgroup/recvmsg6", sock6_recvmsg, sock6_xlate)
SOCK_REV_PROG("cgroup/getpeername6", sock6_getpeername, sock6_xlate)

char _license[] SEC("license") = "Dual BSD/GPL";
