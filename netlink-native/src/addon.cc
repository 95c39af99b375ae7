// N-API glue: a NetlinkHandle class whose methods run rtnetlink operations on libuv worker threads
// and return promises. A handle opened with a netns path owns a netlink socket created inside that
// namespace by a short-lived thread; no thread of Node's ever changes its namespace. Failures reject
// with an Error carrying errno, code (errno name), op, ifname and detail (the kernel's message).
#include <errno.h>
#include <fcntl.h>
#include <linux/neighbour.h>
#include <sys/socket.h>
#include <string.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <napi.h>

#include "js.h"
#include "rtnl.h"
#include "sysctl.h"

namespace cellium {
namespace {

using Finish = std::function<Napi::Value(Napi::Env)>;
using Work = std::function<Finish(NlSocket &)>;

// Runs one operation on the handle's socket in the libuv pool, holding the socket's mutex.
class OpWorker : public Napi::AsyncWorker {
 public:
  OpWorker(Napi::Env env, std::shared_ptr<NlSocket> sock, Work work)
      : Napi::AsyncWorker(env), sock_(std::move(sock)), work_(std::move(work)), deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise promise() { return deferred_.Promise(); }

 protected:
  void Execute() override {
    std::lock_guard<std::mutex> lock(sock_->mutex());
    try {
      finish_ = work_(*sock_);
    } catch (const NlError &e) {
      failure_ = std::make_unique<NlError>(e);
      SetError(e.what());
    } catch (const std::exception &e) {
      failure_ = std::make_unique<NlError>(EIO, "netlink", "", e.what());
      SetError(e.what());
    }
  }
  void OnOK() override { deferred_.Resolve(finish_(Env())); }
  void OnError(const Napi::Error &) override { deferred_.Reject(errorObject(Env(), *failure_)); }

 private:
  std::shared_ptr<NlSocket> sock_;
  Work work_;
  Finish finish_;
  std::unique_ptr<NlError> failure_;
  Napi::Promise::Deferred deferred_;
};

Napi::Value linkToJs(Napi::Env env, const Link &l) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("index", l.index);
  o.Set("name", l.name);
  o.Set("mac", l.mac);
  o.Set("mtu", l.mtu);
  o.Set("flags", l.flags);
  o.Set("operstate", l.operstate);
  o.Set("kind", l.kind);
  o.Set("parent", l.parent);
  o.Set("master", l.master);
  o.Set("linkNetnsId", l.link_netnsid);
  if (l.gso_max_size >= 0) o.Set("gsoMaxSize", static_cast<double>(l.gso_max_size));
  if (l.gro_max_size >= 0) o.Set("groMaxSize", static_cast<double>(l.gro_max_size));
  if (l.tso_max_size >= 0) o.Set("tsoMaxSize", static_cast<double>(l.tso_max_size));
  if (l.gso_ipv4_max_size >= 0) o.Set("gsoIpv4MaxSize", static_cast<double>(l.gso_ipv4_max_size));
  if (l.gro_ipv4_max_size >= 0) o.Set("groIpv4MaxSize", static_cast<double>(l.gro_ipv4_max_size));
  return o;
}

template <typename T, typename F>
Finish arrayOf(std::vector<T> items, F toJs) {
  return [items = std::move(items), toJs](Napi::Env env) -> Napi::Value {
    Napi::Array a = Napi::Array::New(env, items.size());
    for (size_t i = 0; i < items.size(); i++) a.Set(static_cast<uint32_t>(i), toJs(env, items[i]));
    return a;
  };
}

Napi::Value addressToJs(Napi::Env env, const Address &a) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("family", a.family == AF_INET ? 4 : 6);
  o.Set("index", a.index);
  o.Set("address", a.address);
  o.Set("prefixLength", a.prefix);
  o.Set("scope", a.scope);
  o.Set("flags", a.flags);
  o.Set("label", a.label);
  return o;
}

Napi::Value routeToJs(Napi::Env env, const Route &r) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("family", r.family == AF_INET ? 4 : 6);
  o.Set("dst", r.dst);
  o.Set("gateway", r.gateway);
  o.Set("src", r.src);
  o.Set("oif", r.oif);
  o.Set("scope", r.scope);
  o.Set("protocol", r.protocol);
  o.Set("type", r.type);
  o.Set("table", r.table);
  o.Set("flags", r.flags);
  o.Set("priority", r.priority);
  return o;
}

Napi::Value neighborToJs(Napi::Env env, const Neighbor &n) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("family", n.family == AF_INET ? 4 : 6);
  o.Set("index", n.index);
  o.Set("address", n.address);
  o.Set("mac", n.mac);
  o.Set("state", n.state);
  return o;
}

Finish undefinedResult() {
  return [](Napi::Env env) { return env.Undefined(); };
}
Finish boolResult(bool v) {
  return [v](Napi::Env env) { return Napi::Boolean::New(env, v); };
}

std::string strArg(const Napi::CallbackInfo &info, size_t i) {
  if (info.Length() <= i || !info[i].IsString())
    throw Napi::TypeError::New(info.Env(), "argument " + std::to_string(i) + " must be a string");
  return info[i].As<Napi::String>().Utf8Value();
}

uint32_t u32Arg(const Napi::CallbackInfo &info, size_t i) {
  if (info.Length() <= i || !info[i].IsNumber())
    throw Napi::TypeError::New(info.Env(), "argument " + std::to_string(i) + " must be a number");
  return info[i].As<Napi::Number>().Uint32Value();
}

RouteSpec routeArg(const Napi::CallbackInfo &info) {
  if (info.Length() < 1 || !info[0].IsObject()) throw Napi::TypeError::New(info.Env(), "route must be an object");
  return routeFromObject(info[0].As<Napi::Object>());
}

class NetlinkHandle : public Napi::ObjectWrap<NetlinkHandle> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "NetlinkHandle",
                       {
                           InstanceMethod<&NetlinkHandle::CreateVeth>("createVeth"),
                           InstanceMethod<&NetlinkHandle::SetLink>("setLink"),
                           InstanceMethod<&NetlinkHandle::GetLink>("getLink"),
                           InstanceMethod<&NetlinkHandle::ListLinks>("listLinks"),
                           InstanceMethod<&NetlinkHandle::DeleteLink>("deleteLink"),
                           InstanceMethod<&NetlinkHandle::AddAddress>("addAddress"),
                           InstanceMethod<&NetlinkHandle::DeleteAddress>("deleteAddress"),
                           InstanceMethod<&NetlinkHandle::ListAddresses>("listAddresses"),
                           InstanceMethod<&NetlinkHandle::AddRoute>("addRoute"),
                           InstanceMethod<&NetlinkHandle::DeleteRoute>("deleteRoute"),
                           InstanceMethod<&NetlinkHandle::ListRoutes>("listRoutes"),
                           InstanceMethod<&NetlinkHandle::RouteType>("routeType"),
                           InstanceMethod<&NetlinkHandle::RouteTypeSync>("routeTypeSync"),
                           InstanceMethod<&NetlinkHandle::AddNeighbor>("addNeighbor"),
                           InstanceMethod<&NetlinkHandle::ListNeighbors>("listNeighbors"),
                           InstanceMethod<&NetlinkHandle::WriteSysctl>("writeSysctl"),
                           InstanceMethod<&NetlinkHandle::ReadSysctl>("readSysctl"),
                           InstanceMethod<&NetlinkHandle::Close>("close"),
                       });
  }

  // new NetlinkHandle(netnsPath?: string): a socket in the process's namespace or in netnsPath's.
  explicit NetlinkHandle(const Napi::CallbackInfo &info) : Napi::ObjectWrap<NetlinkHandle>(info) {
    try {
      int nsfd = -1;
      if (info.Length() > 0 && info[0].IsString()) nsfd = openNetns(info[0].As<Napi::String>().Utf8Value(), "open");
      sock_ = std::make_shared<NlSocket>(nsfd);
    } catch (const NlError &e) {
      throw Napi::Error(info.Env(), errorObject(info.Env(), e));
    }
  }

 private:
  Napi::Value run(const Napi::CallbackInfo &info, Work work) {
    auto *w = new OpWorker(info.Env(), sock_, std::move(work));
    Napi::Promise p = w->promise();
    w->Queue();
    return p;
  }

  // createVeth(name, peer, mtu, peerNetnsPath | "", mac | "", peerMac | "") -> the local side, or null
  // when the kernel did not echo it
  Napi::Value CreateVeth(const Napi::CallbackInfo &info) {
    std::string name = strArg(info, 0), peer = strArg(info, 1), ns = strArg(info, 3);
    std::string mac = strArg(info, 4), peer_mac = strArg(info, 5);
    uint32_t mtu = u32Arg(info, 2);
    return run(info, [=](NlSocket &s) -> Finish {
      int nsfd = ns.empty() ? -1 : openNetns(ns, "createVeth");
      std::optional<Link> created;
      try {
        created = createVeth(s, name, peer, mtu, nsfd, mac, peer_mac);
      } catch (...) {
        if (nsfd >= 0) close(nsfd);
        throw;
      }
      if (nsfd >= 0) close(nsfd);
      return [created](Napi::Env env) { return created ? linkToJs(env, *created) : env.Null(); };
    });
  }

  // setLink(name, { up?, mtu?, mac?, name?, netns? })
  Napi::Value SetLink(const Napi::CallbackInfo &info) {
    std::string name = strArg(info, 0);
    if (info.Length() < 2 || !info[1].IsObject()) throw Napi::TypeError::New(info.Env(), "change must be an object");
    Napi::Object o = info[1].As<Napi::Object>();
    LinkChange c = linkChangeFromObject(o);
    std::string ns = optStr(o, "netns");
    return run(info, [=](NlSocket &s) mutable {
      c.netns_fd = ns.empty() ? -1 : openNetns(ns, "setLink");
      try {
        setLink(s, name, c);
      } catch (...) {
        if (c.netns_fd >= 0) close(c.netns_fd);
        throw;
      }
      if (c.netns_fd >= 0) close(c.netns_fd);
      return undefinedResult();
    });
  }

  Napi::Value GetLink(const Napi::CallbackInfo &info) {
    std::string name = strArg(info, 0);
    return run(info, [=](NlSocket &s) -> Finish {
      auto l = getLink(s, name);
      return [l](Napi::Env env) { return l ? linkToJs(env, *l) : env.Null(); };
    });
  }

  Napi::Value ListLinks(const Napi::CallbackInfo &info) {
    return run(info, [](NlSocket &s) { return arrayOf(listLinks(s), linkToJs); });
  }

  Napi::Value DeleteLink(const Napi::CallbackInfo &info) {
    std::string name = strArg(info, 0);
    return run(info, [=](NlSocket &s) { return boolResult(deleteLink(s, name)); });
  }

  // addAddress(dev, cidr, nodad)
  Napi::Value AddAddress(const Napi::CallbackInfo &info) {
    std::string dev = strArg(info, 0), cidr = strArg(info, 1);
    bool nodad = info.Length() > 2 && info[2].ToBoolean();
    return run(info, [=](NlSocket &s) {
      addAddress(s, dev, cidr, nodad);
      return undefinedResult();
    });
  }

  Napi::Value DeleteAddress(const Napi::CallbackInfo &info) {
    std::string dev = strArg(info, 0), cidr = strArg(info, 1);
    return run(info, [=](NlSocket &s) { return boolResult(deleteAddress(s, dev, cidr)); });
  }

  Napi::Value ListAddresses(const Napi::CallbackInfo &info) {
    std::string dev = strArg(info, 0);
    return run(info, [=](NlSocket &s) { return arrayOf(listAddresses(s, dev), addressToJs); });
  }

  Napi::Value AddRoute(const Napi::CallbackInfo &info) {
    RouteSpec r = routeArg(info);
    return run(info, [=](NlSocket &s) {
      addRoute(s, r);
      return undefinedResult();
    });
  }

  Napi::Value DeleteRoute(const Napi::CallbackInfo &info) {
    RouteSpec r = routeArg(info);
    return run(info, [=](NlSocket &s) { return boolResult(deleteRoute(s, r)); });
  }

  // listRoutes(family: 0 | 4 | 6, table: number, 0 for all)
  Napi::Value ListRoutes(const Napi::CallbackInfo &info) {
    uint32_t fam = u32Arg(info, 0), table = u32Arg(info, 1);
    int family = fam == 4 ? AF_INET : fam == 6 ? AF_INET6 : AF_UNSPEC;
    return run(info, [=](NlSocket &s) { return arrayOf(listRoutes(s, family, table), routeToJs); });
  }

  // routeType(ip) -> the type of the route the kernel picks for ip (2: local), 0 when none
  Napi::Value RouteType(const Napi::CallbackInfo &info) {
    std::string ip = strArg(info, 0);
    return run(info, [=](NlSocket &s) -> Finish {
      int type = routeType(s, ip);
      return [type](Napi::Env env) { return Napi::Number::New(env, type); };
    });
  }

  // routeTypeSync(ip) -> the same on the calling thread: RTM_GETROUTE of one address is answered
  // without the kernel's rtnl lock, within the send (a few µs), less than a worker round trip costs
  // the event loop (the wake-up of a pool thread, the completion, the promise).
  Napi::Value RouteTypeSync(const Napi::CallbackInfo &info) {
    std::string ip = strArg(info, 0);
    try {
      std::lock_guard<std::mutex> lock(sock_->mutex());
      return Napi::Number::New(info.Env(), routeType(*sock_, ip));
    } catch (const NlError &e) {
      throw Napi::Error(info.Env(), errorObject(info.Env(), e));
    }
  }

  // addNeighbor(dev, ip, mac, state)
  Napi::Value AddNeighbor(const Napi::CallbackInfo &info) {
    std::string dev = strArg(info, 0), ip = strArg(info, 1), mac = strArg(info, 2);
    uint16_t state = static_cast<uint16_t>(u32Arg(info, 3));
    return run(info, [=](NlSocket &s) {
      addNeighbor(s, dev, ip, mac, state);
      return undefinedResult();
    });
  }

  Napi::Value ListNeighbors(const Napi::CallbackInfo &info) {
    std::string dev = strArg(info, 0);
    return run(info, [=](NlSocket &s) { return arrayOf(listNeighbors(s, dev), neighborToJs); });
  }

  Napi::Value WriteSysctl(const Napi::CallbackInfo &info) {
    std::string path = strArg(info, 0), value = strArg(info, 1);
    return run(info, [=](NlSocket &s) {
      writeSysctl(s.netnsFd(), path, value);
      return undefinedResult();
    });
  }

  Napi::Value ReadSysctl(const Napi::CallbackInfo &info) {
    std::string path = strArg(info, 0);
    return run(info, [=](NlSocket &s) -> Finish {
      std::string v = readSysctl(s.netnsFd(), path);
      return [v](Napi::Env env) { return Napi::String::New(env, v); };
    });
  }

  Napi::Value Close(const Napi::CallbackInfo &info) {
    return run(info, [](NlSocket &s) {
      s.close();
      return undefinedResult();
    });
  }

  std::shared_ptr<NlSocket> sock_;
};

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("NetlinkHandle", NetlinkHandle::Define(env));
  registerBatch(env, exports);
  registerNsInfo(env, exports);
  registerWatch(env, exports);
  Napi::Object nud = Napi::Object::New(env);
  nud.Set("permanent", NUD_PERMANENT);
  nud.Set("reachable", NUD_REACHABLE);
  nud.Set("noarp", NUD_NOARP);
  exports.Set("nud", nud);
  return exports;
}

}  // namespace
}  // namespace cellium

static Napi::Object InitModule(Napi::Env env, Napi::Object exports) { return cellium::Init(env, exports); }

NODE_API_MODULE(cellium_netlink, InitModule)
