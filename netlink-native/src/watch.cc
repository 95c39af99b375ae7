// AddressWatch(onChange): change notifications of the process's network namespace. A NETLINK_ROUTE
// socket bound to the link, IPv4/IPv6 address and IPv4/IPv6 route multicast groups, polled by libuv on Node's own
// loop (no worker thread, and unreferenced: it never keeps the process alive); each readable burst
// is drained and reported as one onChange() call. Messages are not parsed: the listener lists what
// it needs again. A receive buffer overflow (ENOBUFS: notifications were lost) is reported as a
// change too. close() stops it; no onChange() comes after.
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <memory>

#include "js.h"

namespace cellium {
namespace {

// The libuv handle and its socket; freed by the handle's close callback.
struct Poll {
  uv_poll_t handle;
  int fd;
};

class AddressWatch : public Napi::ObjectWrap<AddressWatch> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "AddressWatch", {InstanceMethod<&AddressWatch::Close>("close")});
  }

  explicit AddressWatch(const Napi::CallbackInfo &info) : Napi::ObjectWrap<AddressWatch>(info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsFunction()) throw Napi::TypeError::New(env, "AddressWatch(onChange): onChange must be a function");
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
    if (fd < 0) throw Napi::Error(env, errorObject(env, NlError(errno, "watchAddresses", "")));
    sockaddr_nl sa{};
    sa.nl_family = AF_NETLINK;
    sa.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE;
    if (bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) < 0) {
      int err = errno;
      ::close(fd);
      throw Napi::Error(env, errorObject(env, NlError(err, "watchAddresses", "")));
    }
    uv_loop_t *loop = nullptr;
    if (napi_get_uv_event_loop(env, &loop) != napi_ok || !loop) {
      ::close(fd);
      throw Napi::Error::New(env, "watchAddresses: no event loop");
    }
    auto *p = new Poll{};
    p->fd = fd;
    int r = uv_poll_init(loop, &p->handle, fd);
    if (r != 0) {
      ::close(fd);
      delete p;
      throw Napi::Error::New(env, std::string("watchAddresses: uv_poll_init: ") + uv_strerror(r));
    }
    p->handle.data = this;
    poll_ = p;
    on_change_ = Napi::Persistent(info[0].As<Napi::Function>());
    context_ = std::make_unique<Napi::AsyncContext>(env, "cellium:AddressWatch");
    uv_poll_start(&p->handle, UV_READABLE, OnReadable);
    uv_unref(reinterpret_cast<uv_handle_t *>(&p->handle));
  }

  ~AddressWatch() override { Stop(); }

 private:
  static void OnReadable(uv_poll_t *h, int status, int /*events*/) {
    auto *self = static_cast<AddressWatch *>(h->data);
    if (self) self->Drain(status);
  }

  // Reads every pending message (bounded) and reports one change when there was any.
  void Drain(int status) {
    if (!poll_) return;
    char buf[16384];
    bool changed = status < 0;
    for (int i = 0; i < 4096; i++) {
      ssize_t n = recv(poll_->fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        changed = true;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == ENOBUFS) {  // notifications were lost: a change the listener must relist for
        changed = true;
        continue;
      }
      break;
    }
    if (!changed || on_change_.IsEmpty()) return;
    Napi::Env env = on_change_.Env();
    Napi::HandleScope scope(env);
    try {
      on_change_.MakeCallback(env.Global(), {}, *context_);
    } catch (const Napi::Error &e) {
      napi_fatal_exception(env, e.Value());  // as an exception of any other callback: uncaughtException
    }
  }

  void Stop() {
    if (!poll_) return;
    Poll *p = poll_;
    poll_ = nullptr;
    p->handle.data = nullptr;
    uv_poll_stop(&p->handle);
    uv_close(reinterpret_cast<uv_handle_t *>(&p->handle), [](uv_handle_t *h) {
      Poll *q = reinterpret_cast<Poll *>(h);
      ::close(q->fd);
      delete q;
    });
  }

  Napi::Value Close(const Napi::CallbackInfo &info) {
    Stop();
    on_change_.Reset();
    return info.Env().Undefined();
  }

  Poll *poll_ = nullptr;
  Napi::FunctionReference on_change_;
  std::unique_ptr<Napi::AsyncContext> context_;
};

}  // namespace

void registerWatch(Napi::Env env, Napi::Object exports) {
  exports.Set("AddressWatch", AddressWatch::Define(env));
}

}  // namespace cellium
