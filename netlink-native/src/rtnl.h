// rtnetlink operations for the CNI: links (veth, netns moves, up/down, MTU, MAC, rename), addresses,
// routes and neighbours. Each function runs on the caller's thread against an NlSocket whose mutex
// the caller holds; it throws NlError naming the operation and the interface.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nlsock.h"

namespace cellium {

struct Link {
  int index = 0;
  std::string name;
  std::string mac;  // "aa:bb:cc:dd:ee:ff", "" when the link has none
  uint32_t mtu = 0;
  uint32_t flags = 0;  // IFF_* bits
  uint8_t operstate = 0;  // IF_OPER_*
  std::string kind;  // IFLA_INFO_KIND: "veth", "bridge", ... ("" for physical/loopback)
  int parent = 0;  // IFLA_LINK: for a veth, the peer's ifindex (in the peer's namespace)
  int master = 0;
  int link_netnsid = -1;  // IFLA_LINK_NETNSID: namespace id of the peer, -1 when the same
  // GSO/GRO maximums (BIG TCP); -1 when the kernel does not report the attribute
  int64_t gso_max_size = -1, gro_max_size = -1, tso_max_size = -1;
  int64_t gso_ipv4_max_size = -1, gro_ipv4_max_size = -1;  // kernels >= 6.3
};

// IFLA_* numbers of the offload sizes, spelled out: the build host's headers may predate them
// (a kernel that does not know one ignores it in a change and never reports it).
constexpr int kIflaGsoMaxSize = 41, kIflaGroMaxSize = 58, kIflaTsoMaxSize = 59;
constexpr int kIflaGsoIpv4MaxSize = 63, kIflaGroIpv4MaxSize = 64;

struct Address {
  int family = 0;  // AF_INET or AF_INET6
  int index = 0;
  std::string address;
  int prefix = 0;
  int scope = 0;
  uint32_t flags = 0;
  std::string label;
};

struct Route {
  int family = 0;
  std::string dst;  // "a.b.c.d/len" or "::/0"
  std::string gateway;  // "" when none
  std::string src;
  int oif = 0;
  int scope = 0;
  int protocol = 0;
  int type = 0;
  uint32_t table = 0;
  uint32_t flags = 0;  // RTNH_F_ONLINK etc.
  uint32_t priority = 0;
};

struct Neighbor {
  int family = 0;
  int index = 0;
  std::string address;
  std::string mac;
  uint16_t state = 0;  // NUD_*
};

// What setLink changes; unset fields stay as they are.
struct LinkChange {
  std::optional<bool> up;
  std::optional<uint32_t> mtu;
  std::optional<std::string> mac;
  std::optional<std::string> new_name;
  int netns_fd = -1;  // move the link into this namespace (the fd stays owned by the caller)
  std::optional<uint32_t> gso_max_size, gro_max_size, gso_ipv4_max_size, gro_ipv4_max_size;
};

// A route to add or delete. dst is "cidr" (0.0.0.0/0 or ::/0 for the default route).
struct RouteSpec {
  std::string dst;
  std::string gateway;
  std::string dev;
  std::string src;
  int scope = -1;  // -1: link when there is no gateway, else universe (as `ip route` does)
  bool onlink = false;
  uint32_t table = 254;
  uint32_t priority = 0;
  uint32_t mtu = 0;
};

// Returns the new local side when the kernel echoes it (>= 6.3), else nullopt (ask getLink).
std::optional<Link> createVeth(NlSocket &s, const std::string &name, const std::string &peer, uint32_t mtu,
                               int peer_netns_fd, const std::string &mac, const std::string &peer_mac);
void setLink(NlSocket &s, const std::string &name, const LinkChange &change);
std::optional<Link> getLink(NlSocket &s, const std::string &name);
std::vector<Link> listLinks(NlSocket &s);
bool deleteLink(NlSocket &s, const std::string &name);
void addAddress(NlSocket &s, const std::string &dev, const std::string &cidr, bool nodad);
bool deleteAddress(NlSocket &s, const std::string &dev, const std::string &cidr);
std::vector<Address> listAddresses(NlSocket &s, const std::string &dev);
void addRoute(NlSocket &s, const RouteSpec &r);
bool deleteRoute(NlSocket &s, const RouteSpec &r);
std::vector<Route> listRoutes(NlSocket &s, int family, uint32_t table);
// The type of the route the kernel picks to reach ip (RTM_GETROUTE, no dump: one lookup; RTN_LOCAL
// for an address of this host); 0 when it has none.
int routeType(NlSocket &s, const std::string &ip);
void addNeighbor(NlSocket &s, const std::string &dev, const std::string &ip, const std::string &mac,
                 uint16_t state);
std::vector<Neighbor> listNeighbors(NlSocket &s, const std::string &dev);

}  // namespace cellium
