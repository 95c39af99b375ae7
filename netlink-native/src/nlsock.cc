// NETLINK_ROUTE socket plumbing: message building, attribute parsing, ack and dump exchanges.
#include "nlsock.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <thread>

#ifndef NETLINK_EXT_ACK
#define NETLINK_EXT_ACK 11
#endif
#ifndef NETLINK_CAP_ACK
#define NETLINK_CAP_ACK 10
#endif
#ifndef NETLINK_GET_STRICT_CHK
#define NETLINK_GET_STRICT_CHK 12
#endif

namespace cellium {

static std::string errname(int err) {
  const char *name = strerrorname_np(err);
  return name ? name : "E" + std::to_string(err);
}

NlError::NlError(int e, std::string o, std::string i, std::string d)
    : std::runtime_error(o + (i.empty() ? "" : " " + i) + ": " + errname(e) + " (" + strerror(e) + ")" +
                         (d.empty() ? "" : ": " + d)),
      err(e), op(std::move(o)), ifname(std::move(i)), detail(std::move(d)) {}

NlMsg::NlMsg(uint16_t type, uint16_t flags, const void *family_hdr, size_t hdr_len) {
  buf_.resize(NLMSG_HDRLEN);
  auto *h = hdr();
  h->nlmsg_type = type;
  h->nlmsg_flags = flags;
  putRaw(family_hdr, hdr_len);
}

void NlMsg::align() { buf_.resize(NLMSG_ALIGN(buf_.size()), 0); }

void NlMsg::putRaw(const void *data, size_t len) {
  size_t at = buf_.size();
  buf_.resize(at + len);
  if (len) memcpy(buf_.data() + at, data, len);
  align();
  hdr()->nlmsg_len = static_cast<uint32_t>(buf_.size());
}

void NlMsg::put(uint16_t type, const void *data, size_t len) {
  nlattr a{};
  a.nla_len = static_cast<uint16_t>(NLA_HDRLEN + len);
  a.nla_type = type;
  size_t at = buf_.size();
  buf_.resize(at + NLA_HDRLEN + len);
  memcpy(buf_.data() + at, &a, sizeof a);
  if (len) memcpy(buf_.data() + at + NLA_HDRLEN, data, len);
  align();
  hdr()->nlmsg_len = static_cast<uint32_t>(buf_.size());
}

size_t NlMsg::beginNest(uint16_t type) {
  size_t at = buf_.size();
  put(type, nullptr, 0);  // no NLA_F_NESTED, as iproute2 sends these legacy nests
  return at;
}

void NlMsg::endNest(size_t offset) {
  auto *a = reinterpret_cast<nlattr *>(buf_.data() + offset);
  a->nla_len = static_cast<uint16_t>(buf_.size() - offset);
}

Attrs::Attrs(const void *data, size_t len, size_t max_type) : at_(max_type + 1, {nullptr, 0}) {
  const char *p = static_cast<const char *>(data);
  while (len >= NLA_HDRLEN) {
    const auto *a = reinterpret_cast<const nlattr *>(p);
    if (a->nla_len < NLA_HDRLEN || a->nla_len > len) break;
    size_t type = a->nla_type & NLA_TYPE_MASK;
    if (type <= max_type) at_[type] = {p + NLA_HDRLEN, a->nla_len - NLA_HDRLEN};
    size_t step = NLA_ALIGN(a->nla_len);
    if (step >= len) break;
    p += step;
    len -= step;
  }
}

const void *Attrs::get(size_t type, size_t *len) const {
  if (type >= at_.size()) return nullptr;
  if (len) *len = at_[type].second;
  return at_[type].first;
}

uint32_t Attrs::u32(size_t type, uint32_t def) const {
  size_t len;
  const void *p = get(type, &len);
  if (!p || len < 4) return def;
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

std::string Attrs::str(size_t type) const {
  size_t len;
  const char *p = static_cast<const char *>(get(type, &len));
  if (!p) return "";
  return std::string(p, strnlen(p, len));
}

void runInNetns(int netns_fd, const std::string &op, const std::function<void()> &fn) {
  if (netns_fd < 0) {
    fn();
    return;
  }
  int err = 0;
  std::exception_ptr failure;
  std::thread t([&] {
    if (setns(netns_fd, CLONE_NEWNET) != 0) {
      err = errno;
      return;
    }
    try {
      fn();
    } catch (...) {
      failure = std::current_exception();
    }
  });
  t.join();
  if (err) throw NlError(err, op, "", "setns into the target network namespace");
  if (failure) std::rethrow_exception(failure);
}

NlSocket::NlSocket(int netns_fd) : netns_fd_(netns_fd) {
  int fd = -1, err = 0;
  try {
    runInNetns(netns_fd, "open", [&] {
      fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
      if (fd < 0) err = errno;
    });
  } catch (...) {
    if (netns_fd_ >= 0) ::close(netns_fd_);
    throw;
  }
  if (fd < 0) {
    if (netns_fd_ >= 0) ::close(netns_fd_);
    throw NlError(err, "open", "", "netlink socket");
  }
  int one = 1;
  setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof one);
  setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof one);
  setsockopt(fd, SOL_NETLINK, NETLINK_GET_STRICT_CHK, &one, sizeof one);
  int rcvbuf = 1 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  timeval tv{10, 0};  // a kernel answer never takes this long; bounded so nothing can hang
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_nl sa{};
  sa.nl_family = AF_NETLINK;
  if (bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0) {
    err = errno;
    ::close(fd);
    if (netns_fd_ >= 0) ::close(netns_fd_);
    throw NlError(err, "open", "", "bind netlink socket");
  }
  fd_ = fd;
}

NlSocket::~NlSocket() { close(); }

void NlSocket::close() {
  if (fd_ >= 0) ::close(fd_);
  if (netns_fd_ >= 0) ::close(netns_fd_);
  fd_ = netns_fd_ = -1;
}

void NlSocket::send(NlMsg &msg, const std::string &op, const std::string &ifname) {
  if (fd_ < 0) throw NlError(EBADF, op, ifname, "the netlink handle is closed");
  msg.hdr()->nlmsg_seq = ++seq_;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  auto &b = msg.bytes();
  for (;;) {
    ssize_t n = sendto(fd_, b.data(), b.size(), 0, reinterpret_cast<sockaddr *>(&kernel), sizeof kernel);
    if (n >= 0) return;
    if (errno != EINTR) throw NlError(errno, op, ifname, "sending the netlink request");
  }
}

void NlSocket::receive(uint32_t seq, bool is_dump, const std::string &op, const std::string &ifname,
                       const std::function<void(const nlmsghdr *)> &on_reply) {
  std::vector<char> buf(64 * 1024);
  for (;;) {
    ssize_t n = recv(fd_, buf.data(), buf.size(), MSG_TRUNC);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw NlError(errno, op, ifname, errno == EAGAIN ? "no netlink answer within 10 s" : "receiving");
    }
    if (static_cast<size_t>(n) > buf.size()) {
      buf.resize(static_cast<size_t>(n));  // truncated: the message is lost, ask again bigger
      throw NlError(EMSGSIZE, op, ifname, "netlink answer larger than the receive buffer");
    }
    size_t len = static_cast<size_t>(n);
    for (auto *h = reinterpret_cast<const nlmsghdr *>(buf.data()); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
      if (h->nlmsg_seq != seq) continue;  // a stale answer to an abandoned request
      if (h->nlmsg_type == NLMSG_DONE) return;
      if (h->nlmsg_type == NLMSG_ERROR) {
        const auto *e = static_cast<const nlmsgerr *>(NLMSG_DATA(h));
        if (e->error == 0) {
          if (!is_dump) return;
          continue;
        }
        std::string detail;
        if (h->nlmsg_flags & NLM_F_ACK_TLVS) {
          size_t off = NLMSG_HDRLEN + sizeof(nlmsgerr);
          if (!(h->nlmsg_flags & NLM_F_CAPPED)) off += e->msg.nlmsg_len - NLMSG_HDRLEN;
          if (off < h->nlmsg_len) {
            Attrs tlv(reinterpret_cast<const char *>(h) + off, h->nlmsg_len - off, NLMSGERR_ATTR_MAX);
            detail = tlv.str(NLMSGERR_ATTR_MSG);
          }
        }
        throw NlError(-e->error, op, ifname, detail);
      }
      if (on_reply) on_reply(h);
    }
  }
}

void NlSocket::transact(NlMsg &msg, const std::string &op, const std::string &ifname,
                        const std::function<void(const nlmsghdr *)> &on_reply) {
  msg.hdr()->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
  send(msg, op, ifname);
  receive(seq_, false, op, ifname, on_reply);
}

void NlSocket::dump(NlMsg &msg, const std::string &op, const std::function<void(const nlmsghdr *)> &on_reply) {
  msg.hdr()->nlmsg_flags |= NLM_F_REQUEST | NLM_F_DUMP;
  send(msg, op, "");
  receive(seq_, true, op, "", on_reply);
}

}  // namespace cellium
