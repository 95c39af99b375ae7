// A NETLINK_ROUTE socket (optionally created inside another network namespace), a message builder
// with nested attributes, and request/acknowledge and dump exchanges. No N-API in here.
#pragma once

#include <linux/netlink.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace cellium {

// A failed operation: errno plus what was being done and on which interface.
struct NlError : std::runtime_error {
  NlError(int err, std::string op, std::string ifname, std::string detail = "");
  int err;
  std::string op;
  std::string ifname;
  std::string detail;  // the kernel's extended ack message, when it sent one
};

// Builds one netlink message: header, fixed family header, then attributes.
class NlMsg {
 public:
  NlMsg(uint16_t type, uint16_t flags, const void *family_hdr, size_t hdr_len);
  void put(uint16_t type, const void *data, size_t len);
  void putU32(uint16_t type, uint32_t v) { put(type, &v, sizeof v); }
  void putStr(uint16_t type, const std::string &s) { put(type, s.c_str(), s.size() + 1); }
  // Opens a nested attribute; pass the returned offset to endNest.
  size_t beginNest(uint16_t type);
  void endNest(size_t offset);
  // Appends raw bytes (e.g. a family header inside a nested attribute), 4-byte aligned.
  void putRaw(const void *data, size_t len);
  nlmsghdr *hdr() { return reinterpret_cast<nlmsghdr *>(buf_.data()); }
  std::vector<char> &bytes() { return buf_; }

 private:
  void align();
  std::vector<char> buf_;
};

// Attributes of one message (or nested attribute) indexed by type; absent ones are null.
class Attrs {
 public:
  Attrs(const void *data, size_t len, size_t max_type);
  const void *get(size_t type, size_t *len = nullptr) const;
  bool has(size_t type) const { return get(type) != nullptr; }
  uint32_t u32(size_t type, uint32_t def = 0) const;
  std::string str(size_t type) const;

 private:
  std::vector<std::pair<const void *, size_t>> at_;
};

// A NETLINK_ROUTE socket, created in the process's network namespace or in the one of netns_fd
// (which it then owns). Worker threads sharing it hold mutex() for a whole operation.
class NlSocket {
 public:
  explicit NlSocket(int netns_fd = -1);
  ~NlSocket();
  NlSocket(const NlSocket &) = delete;
  NlSocket &operator=(const NlSocket &) = delete;

  // Sends msg with NLM_F_ACK and waits for the kernel's answer; replies other than the ack are
  // passed to on_reply (e.g. the RTM_NEWLINK answering an RTM_GETLINK). Throws NlError.
  void transact(NlMsg &msg, const std::string &op, const std::string &ifname,
                const std::function<void(const nlmsghdr *)> &on_reply = nullptr);
  // Sends a dump request (NLM_F_DUMP) and passes every answer message to on_reply.
  void dump(NlMsg &msg, const std::string &op, const std::function<void(const nlmsghdr *)> &on_reply);
  // Closes the socket; later calls fail with EBADF.
  void close();
  // The namespace fd this socket lives in (-1: the namespace of the process), owned by the socket.
  int netnsFd() const { return netns_fd_; }
  std::mutex &mutex() { return mu_; }

 private:
  void send(NlMsg &msg, const std::string &op, const std::string &ifname);
  void receive(uint32_t seq, bool is_dump, const std::string &op, const std::string &ifname,
               const std::function<void(const nlmsghdr *)> &on_reply);
  int fd_ = -1;
  int netns_fd_ = -1;
  uint32_t seq_ = 0;
  std::mutex mu_;
};

// Runs fn on a short-lived thread that first joins the network namespace of netns_fd (or stays in
// the process's namespace when netns_fd is -1). The calling thread's namespace never changes.
void runInNetns(int netns_fd, const std::string &op, const std::function<void()> &fn);

}  // namespace cellium
