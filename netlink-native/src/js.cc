// N-API helpers shared by the handle class and the step batches (see js.h).
#include "js.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

namespace cellium {

Napi::Object errorObject(Napi::Env env, const NlError &e) {
  Napi::Error err = Napi::Error::New(env, e.what());
  Napi::Object o = err.Value();
  const char *name = strerrorname_np(e.err);
  o.Set("errno", e.err);
  o.Set("code", name ? name : ("E" + std::to_string(e.err)));
  o.Set("op", e.op);
  o.Set("ifname", e.ifname);
  o.Set("detail", e.detail);
  return o;
}

int openNetns(const std::string &path, const std::string &op) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw NlError(errno, op, "", "opening network namespace " + path);
  return fd;
}

std::string optStr(const Napi::Object &o, const char *key) {
  Napi::Value v = o.Get(key);
  return v.IsString() ? v.As<Napi::String>().Utf8Value() : "";
}

uint32_t optU32(const Napi::Object &o, const char *key, uint32_t def) {
  Napi::Value v = o.Get(key);
  return v.IsNumber() ? v.As<Napi::Number>().Uint32Value() : def;
}

RouteSpec routeFromObject(const Napi::Object &o) {
  RouteSpec r;
  r.dst = optStr(o, "dst");
  r.gateway = optStr(o, "gateway");
  r.dev = optStr(o, "dev");
  r.src = optStr(o, "src");
  Napi::Value scope = o.Get("scope");
  r.scope = scope.IsNumber() ? scope.As<Napi::Number>().Int32Value() : -1;
  r.onlink = o.Get("onlink").ToBoolean();
  r.table = optU32(o, "table", 254);
  r.priority = optU32(o, "priority", 0);
  r.mtu = optU32(o, "mtu", 0);
  return r;
}

LinkChange linkChangeFromObject(const Napi::Object &o) {
  LinkChange c;
  if (o.Get("up").IsBoolean()) c.up = o.Get("up").As<Napi::Boolean>().Value();
  if (o.Get("mtu").IsNumber()) c.mtu = o.Get("mtu").As<Napi::Number>().Uint32Value();
  if (o.Get("mac").IsString()) c.mac = optStr(o, "mac");
  if (o.Get("name").IsString()) c.new_name = optStr(o, "name");
  auto size = [&o](const char *key, std::optional<uint32_t> &out) {
    if (o.Get(key).IsNumber()) out = o.Get(key).As<Napi::Number>().Uint32Value();
  };
  size("gsoMaxSize", c.gso_max_size);
  size("groMaxSize", c.gro_max_size);
  size("gsoIpv4MaxSize", c.gso_ipv4_max_size);
  size("groIpv4MaxSize", c.gro_ipv4_max_size);
  return c;
}

}  // namespace cellium
