// rtnetlink requests and answers for links, addresses, routes and neighbours.
#include "rtnl.h"

#include <arpa/inet.h>
#include <algorithm>
#include <errno.h>
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <string.h>

#include <cstdio>

namespace cellium {

namespace {

// An IP address in network order with its family.
struct Ip {
  int family = 0;
  unsigned char bytes[16] = {};
  size_t size() const { return family == AF_INET ? 4 : 16; }
};

Ip parseIp(const std::string &text, const std::string &op, const std::string &ifname) {
  Ip ip;
  if (inet_pton(AF_INET, text.c_str(), ip.bytes) == 1) {
    ip.family = AF_INET;
  } else if (inet_pton(AF_INET6, text.c_str(), ip.bytes) == 1) {
    ip.family = AF_INET6;
  } else {
    throw NlError(EINVAL, op, ifname, "\"" + text + "\" is not an IP address");
  }
  return ip;
}

// Parses "addr/len" (a bare address means a host prefix).
Ip parseCidr(const std::string &text, int *prefix, const std::string &op, const std::string &ifname) {
  size_t slash = text.find('/');
  Ip ip = parseIp(text.substr(0, slash), op, ifname);
  int max = ip.family == AF_INET ? 32 : 128;
  *prefix = max;
  if (slash != std::string::npos) {
    char *end;
    long p = strtol(text.c_str() + slash + 1, &end, 10);
    if (*end || end == text.c_str() + slash + 1 || p < 0 || p > max)
      throw NlError(EINVAL, op, ifname, "\"" + text + "\" has a bad prefix length");
    *prefix = static_cast<int>(p);
  }
  return ip;
}

std::string formatIp(int family, const void *bytes) {
  char out[INET6_ADDRSTRLEN] = "";
  inet_ntop(family, bytes, out, sizeof out);
  return out;
}

std::vector<unsigned char> parseMac(const std::string &text, const std::string &op, const std::string &ifname) {
  std::vector<unsigned char> mac;
  size_t i = 0;
  while (i < text.size()) {
    unsigned v;
    int used = 0;
    if (sscanf(text.c_str() + i, "%2x%n", &v, &used) != 1 || used != 2) break;
    mac.push_back(static_cast<unsigned char>(v));
    i += 2;
    if (i == text.size()) return mac;
    if (text[i] != ':') break;
    i++;
  }
  throw NlError(EINVAL, op, ifname, "\"" + text + "\" is not a MAC address");
}

std::string formatMac(const void *p, size_t len) {
  std::string out;
  const auto *b = static_cast<const unsigned char *>(p);
  char part[4];
  for (size_t i = 0; i < len; i++) {
    snprintf(part, sizeof part, i ? ":%02x" : "%02x", b[i]);
    out += part;
  }
  return out;
}

Link parseLink(const nlmsghdr *h) {
  const auto *ifi = static_cast<const ifinfomsg *>(NLMSG_DATA(h));
  Attrs a(IFLA_RTA(ifi), IFLA_PAYLOAD(h), std::max<size_t>(IFLA_MAX, kIflaGroIpv4MaxSize));
  Link l;
  l.index = ifi->ifi_index;
  l.flags = ifi->ifi_flags;
  l.name = a.str(IFLA_IFNAME);
  l.mtu = a.u32(IFLA_MTU);
  l.parent = static_cast<int>(a.u32(IFLA_LINK));
  l.master = static_cast<int>(a.u32(IFLA_MASTER));
  l.link_netnsid = a.has(IFLA_LINK_NETNSID) ? static_cast<int>(a.u32(IFLA_LINK_NETNSID)) : -1;
  size_t len;
  if (const void *op = a.get(IFLA_OPERSTATE, &len); op && len >= 1) l.operstate = *static_cast<const uint8_t *>(op);
  if (const void *mac = a.get(IFLA_ADDRESS, &len)) l.mac = formatMac(mac, len);
  if (const void *li = a.get(IFLA_LINKINFO, &len)) l.kind = Attrs(li, len, IFLA_INFO_MAX).str(IFLA_INFO_KIND);
  auto size = [&a](int type) -> int64_t { return a.has(type) ? static_cast<int64_t>(a.u32(type)) : -1; };
  l.gso_max_size = size(kIflaGsoMaxSize);
  l.gro_max_size = size(kIflaGroMaxSize);
  l.tso_max_size = size(kIflaTsoMaxSize);
  l.gso_ipv4_max_size = size(kIflaGsoIpv4MaxSize);
  l.gro_ipv4_max_size = size(kIflaGroIpv4MaxSize);
  return l;
}

int indexOf(NlSocket &s, const std::string &dev, const std::string &op) {
  auto l = getLink(s, dev);
  if (!l) throw NlError(ENODEV, op, dev, "no such interface");
  return l->index;
}

ifinfomsg linkHeader(int index = 0) {
  ifinfomsg ifi{};
  ifi.ifi_family = AF_UNSPEC;
  ifi.ifi_index = index;
  return ifi;
}

}  // namespace

std::optional<Link> createVeth(NlSocket &s, const std::string &name, const std::string &peer, uint32_t mtu,
                               int peer_netns_fd, const std::string &mac, const std::string &peer_mac) {
  const std::string op = "createVeth";
  ifinfomsg ifi = linkHeader();
  // NLM_F_ECHO: kernels >= 6.3 send the new link back with the answer (no getLink round trip)
  NlMsg m(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL | NLM_F_ECHO, &ifi, sizeof ifi);
  m.putStr(IFLA_IFNAME, name);
  if (mtu) m.putU32(IFLA_MTU, mtu);
  if (!mac.empty()) {
    auto b = parseMac(mac, op, name);
    m.put(IFLA_ADDRESS, b.data(), b.size());
  }
  size_t info = m.beginNest(IFLA_LINKINFO);
  m.putStr(IFLA_INFO_KIND, "veth");
  size_t data = m.beginNest(IFLA_INFO_DATA);
  size_t peer_at = m.beginNest(VETH_INFO_PEER);
  ifinfomsg pifi = linkHeader();
  m.putRaw(&pifi, sizeof pifi);
  m.putStr(IFLA_IFNAME, peer);
  if (mtu) m.putU32(IFLA_MTU, mtu);
  if (!peer_mac.empty()) {
    auto b = parseMac(peer_mac, op, peer);
    m.put(IFLA_ADDRESS, b.data(), b.size());
  }
  if (peer_netns_fd >= 0) m.putU32(IFLA_NET_NS_FD, static_cast<uint32_t>(peer_netns_fd));
  m.endNest(peer_at);
  m.endNest(data);
  m.endNest(info);
  std::optional<Link> echoed;
  s.transact(m, op, name, [&](const nlmsghdr *h) {
    if (h->nlmsg_type != RTM_NEWLINK) return;
    Link l = parseLink(h);
    if (l.name == name) echoed = l;
  });
  return echoed;
}

void setLink(NlSocket &s, const std::string &name, const LinkChange &c) {
  const std::string op = "setLink";
  ifinfomsg ifi = linkHeader(c.new_name ? indexOf(s, name, op) : 0);
  if (c.up) {
    ifi.ifi_change = IFF_UP;
    ifi.ifi_flags = *c.up ? IFF_UP : 0;
  }
  NlMsg m(RTM_NEWLINK, 0, &ifi, sizeof ifi);
  m.putStr(IFLA_IFNAME, c.new_name ? *c.new_name : name);
  if (c.mtu) m.putU32(IFLA_MTU, *c.mtu);
  if (c.mac) {
    auto b = parseMac(*c.mac, op, name);
    m.put(IFLA_ADDRESS, b.data(), b.size());
  }
  if (c.netns_fd >= 0) m.putU32(IFLA_NET_NS_FD, static_cast<uint32_t>(c.netns_fd));
  if (c.gso_max_size) m.putU32(kIflaGsoMaxSize, *c.gso_max_size);
  if (c.gro_max_size) m.putU32(kIflaGroMaxSize, *c.gro_max_size);
  if (c.gso_ipv4_max_size) m.putU32(kIflaGsoIpv4MaxSize, *c.gso_ipv4_max_size);
  if (c.gro_ipv4_max_size) m.putU32(kIflaGroIpv4MaxSize, *c.gro_ipv4_max_size);
  s.transact(m, op, name);
}

std::optional<Link> getLink(NlSocket &s, const std::string &name) {
  ifinfomsg ifi = linkHeader();
  NlMsg m(RTM_GETLINK, 0, &ifi, sizeof ifi);
  m.putStr(IFLA_IFNAME, name);
  m.putU32(IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
  std::optional<Link> out;
  try {
    s.transact(m, "getLink", name, [&](const nlmsghdr *h) {
      if (h->nlmsg_type == RTM_NEWLINK) out = parseLink(h);
    });
  } catch (const NlError &e) {
    if (e.err == ENODEV) return std::nullopt;
    throw;
  }
  return out;
}

std::vector<Link> listLinks(NlSocket &s) {
  ifinfomsg ifi = linkHeader();
  NlMsg m(RTM_GETLINK, 0, &ifi, sizeof ifi);
  m.putU32(IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
  std::vector<Link> out;
  s.dump(m, "listLinks", [&](const nlmsghdr *h) {
    if (h->nlmsg_type == RTM_NEWLINK) out.push_back(parseLink(h));
  });
  return out;
}

bool deleteLink(NlSocket &s, const std::string &name) {
  ifinfomsg ifi = linkHeader();
  NlMsg m(RTM_DELLINK, 0, &ifi, sizeof ifi);
  m.putStr(IFLA_IFNAME, name);
  try {
    s.transact(m, "deleteLink", name);
  } catch (const NlError &e) {
    if (e.err == ENODEV) return false;
    throw;
  }
  return true;
}

static NlMsg addressMsg(NlSocket &s, uint16_t type, uint16_t flags, const std::string &dev,
                        const std::string &cidr, bool nodad, const std::string &op) {
  int prefix;
  Ip ip = parseCidr(cidr, &prefix, op, dev);
  ifaddrmsg ifa{};
  ifa.ifa_family = static_cast<uint8_t>(ip.family);
  ifa.ifa_prefixlen = static_cast<uint8_t>(prefix);
  ifa.ifa_index = static_cast<uint32_t>(indexOf(s, dev, op));
  if (nodad && ip.family == AF_INET6) ifa.ifa_flags = IFA_F_NODAD;
  NlMsg m(type, flags, &ifa, sizeof ifa);
  m.put(IFA_LOCAL, ip.bytes, ip.size());
  m.put(IFA_ADDRESS, ip.bytes, ip.size());
  return m;
}

void addAddress(NlSocket &s, const std::string &dev, const std::string &cidr, bool nodad) {
  NlMsg m = addressMsg(s, RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE, dev, cidr, nodad, "addAddress");
  s.transact(m, "addAddress", dev);
}

bool deleteAddress(NlSocket &s, const std::string &dev, const std::string &cidr) {
  NlMsg m = addressMsg(s, RTM_DELADDR, 0, dev, cidr, false, "deleteAddress");
  try {
    s.transact(m, "deleteAddress", dev);
  } catch (const NlError &e) {
    if (e.err == EADDRNOTAVAIL) return false;
    throw;
  }
  return true;
}

std::vector<Address> listAddresses(NlSocket &s, const std::string &dev) {
  int index = dev.empty() ? 0 : indexOf(s, dev, "listAddresses");
  ifaddrmsg ifa{};
  ifa.ifa_index = static_cast<uint32_t>(index);
  NlMsg m(RTM_GETADDR, 0, &ifa, sizeof ifa);
  std::vector<Address> out;
  s.dump(m, "listAddresses", [&](const nlmsghdr *h) {
    if (h->nlmsg_type != RTM_NEWADDR) return;
    const auto *a = static_cast<const ifaddrmsg *>(NLMSG_DATA(h));
    if (index && static_cast<int>(a->ifa_index) != index) return;
    Attrs at(IFA_RTA(a), IFA_PAYLOAD(h), IFA_MAX);
    const void *addr = at.get(IFA_LOCAL);
    if (!addr) addr = at.get(IFA_ADDRESS);
    if (!addr) return;
    Address out_a;
    out_a.family = a->ifa_family;
    out_a.index = static_cast<int>(a->ifa_index);
    out_a.address = formatIp(a->ifa_family, addr);
    out_a.prefix = a->ifa_prefixlen;
    out_a.scope = a->ifa_scope;
    out_a.flags = at.u32(IFA_FLAGS, a->ifa_flags);
    out_a.label = at.str(IFA_LABEL);
    out.push_back(out_a);
  });
  return out;
}

static NlMsg routeMsg(NlSocket &s, uint16_t type, uint16_t flags, const RouteSpec &r, const std::string &op) {
  int prefix;
  Ip dst = parseCidr(r.dst, &prefix, op, r.dev);
  rtmsg rt{};
  rt.rtm_family = static_cast<uint8_t>(dst.family);
  rt.rtm_dst_len = static_cast<uint8_t>(prefix);
  rt.rtm_table = static_cast<uint8_t>(r.table < 256 ? r.table : uint32_t{RT_TABLE_UNSPEC});
  rt.rtm_protocol = type == RTM_DELROUTE ? RTPROT_UNSPEC : RTPROT_BOOT;
  rt.rtm_type = RTN_UNICAST;
  if (type == RTM_DELROUTE)
    rt.rtm_scope = RT_SCOPE_NOWHERE;
  else
    rt.rtm_scope = static_cast<uint8_t>(r.scope >= 0 ? r.scope : (r.gateway.empty() ? int{RT_SCOPE_LINK} : int{RT_SCOPE_UNIVERSE}));
  if (r.onlink) rt.rtm_flags |= RTNH_F_ONLINK;
  NlMsg m(type, flags, &rt, sizeof rt);
  m.putU32(RTA_TABLE, r.table);
  if (prefix) m.put(RTA_DST, dst.bytes, dst.size());
  if (!r.gateway.empty()) {
    Ip gw = parseIp(r.gateway, op, r.dev);
    if (gw.family != dst.family) throw NlError(EINVAL, op, r.dev, "gateway and destination families differ");
    m.put(RTA_GATEWAY, gw.bytes, gw.size());
  }
  if (!r.src.empty()) {
    Ip src = parseIp(r.src, op, r.dev);
    m.put(RTA_PREFSRC, src.bytes, src.size());
  }
  if (!r.dev.empty()) m.putU32(RTA_OIF, static_cast<uint32_t>(indexOf(s, r.dev, op)));
  if (r.priority) m.putU32(RTA_PRIORITY, r.priority);
  if (r.mtu) {
    size_t metrics = m.beginNest(RTA_METRICS);
    m.putU32(RTAX_MTU, r.mtu);
    m.endNest(metrics);
  }
  return m;
}

void addRoute(NlSocket &s, const RouteSpec &r) {
  NlMsg m = routeMsg(s, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE, r, "addRoute");
  s.transact(m, "addRoute", r.dev);
}

bool deleteRoute(NlSocket &s, const RouteSpec &r) {
  NlMsg m = routeMsg(s, RTM_DELROUTE, 0, r, "deleteRoute");
  try {
    s.transact(m, "deleteRoute", r.dev);
  } catch (const NlError &e) {
    if (e.err == ESRCH) return false;
    throw;
  }
  return true;
}

std::vector<Route> listRoutes(NlSocket &s, int family, uint32_t table) {
  rtmsg rt{};
  rt.rtm_family = static_cast<uint8_t>(family);
  NlMsg m(RTM_GETROUTE, 0, &rt, sizeof rt);
  std::vector<Route> out;
  s.dump(m, "listRoutes", [&](const nlmsghdr *h) {
    if (h->nlmsg_type != RTM_NEWROUTE) return;
    const auto *r = static_cast<const rtmsg *>(NLMSG_DATA(h));
    if (r->rtm_flags & RTM_F_CLONED) return;
    Attrs a(RTM_RTA(r), RTM_PAYLOAD(h), RTA_MAX);
    Route route;
    route.table = a.u32(RTA_TABLE, r->rtm_table);
    if (table && route.table != table) return;
    route.family = r->rtm_family;
    const unsigned char zero[16] = {};
    const void *dst = a.get(RTA_DST);
    route.dst = formatIp(r->rtm_family, dst ? dst : zero) + "/" + std::to_string(r->rtm_dst_len);
    if (const void *gw = a.get(RTA_GATEWAY)) route.gateway = formatIp(r->rtm_family, gw);
    if (const void *src = a.get(RTA_PREFSRC)) route.src = formatIp(r->rtm_family, src);
    route.oif = static_cast<int>(a.u32(RTA_OIF));
    route.scope = r->rtm_scope;
    route.protocol = r->rtm_protocol;
    route.type = r->rtm_type;
    route.flags = r->rtm_flags;
    route.priority = a.u32(RTA_PRIORITY);
    out.push_back(route);
  });
  return out;
}

int routeType(NlSocket &s, const std::string &ip) {
  Ip addr = parseIp(ip, "routeType", "");
  rtmsg rt{};
  rt.rtm_family = static_cast<uint8_t>(addr.family);
  rt.rtm_dst_len = static_cast<uint8_t>(addr.size() * 8);
  NlMsg m(RTM_GETROUTE, 0, &rt, sizeof rt);
  m.put(RTA_DST, addr.bytes, addr.size());
  int type = 0;
  try {
    s.transact(m, "routeType", "", [&](const nlmsghdr *h) {
      if (h->nlmsg_type == RTM_NEWROUTE) type = static_cast<const rtmsg *>(NLMSG_DATA(h))->rtm_type;
    });
  } catch (const NlError &e) {
    if (e.err == ENETUNREACH || e.err == EHOSTUNREACH || e.err == ESRCH) return 0;
    throw;
  }
  return type;
}

void addNeighbor(NlSocket &s, const std::string &dev, const std::string &ip, const std::string &mac,
                 uint16_t state) {
  const std::string op = "addNeighbor";
  Ip addr = parseIp(ip, op, dev);
  auto lladdr = parseMac(mac, op, dev);
  ndmsg nd{};
  nd.ndm_family = static_cast<uint8_t>(addr.family);
  nd.ndm_ifindex = indexOf(s, dev, op);
  nd.ndm_state = state;
  NlMsg m(RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE, &nd, sizeof nd);
  m.put(NDA_DST, addr.bytes, addr.size());
  m.put(NDA_LLADDR, lladdr.data(), lladdr.size());
  s.transact(m, op, dev);
}

std::vector<Neighbor> listNeighbors(NlSocket &s, const std::string &dev) {
  int index = dev.empty() ? 0 : indexOf(s, dev, "listNeighbors");
  ndmsg nd{};  // filtered below: a strict dump rejects an ifindex in the header
  NlMsg m(RTM_GETNEIGH, 0, &nd, sizeof nd);
  std::vector<Neighbor> out;
  s.dump(m, "listNeighbors", [&](const nlmsghdr *h) {
    if (h->nlmsg_type != RTM_NEWNEIGH) return;
    const auto *n = static_cast<const ndmsg *>(NLMSG_DATA(h));
    if (index && n->ndm_ifindex != index) return;
    Attrs a(reinterpret_cast<const char *>(n) + NLMSG_ALIGN(sizeof(ndmsg)), h->nlmsg_len - NLMSG_LENGTH(sizeof(ndmsg)),
            NDA_MAX);
    const void *dst = a.get(NDA_DST);
    if (!dst) return;
    Neighbor nb;
    nb.family = n->ndm_family;
    nb.index = n->ndm_ifindex;
    nb.address = formatIp(n->ndm_family, dst);
    size_t len;
    if (const void *ll = a.get(NDA_LLADDR, &len)) nb.mac = formatMac(ll, len);
    nb.state = n->ndm_state;
    out.push_back(nb);
  });
  return out;
}

}  // namespace cellium
