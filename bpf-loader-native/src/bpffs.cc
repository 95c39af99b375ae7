// bpffs: whether a path is on a BPF filesystem (statfs magic) and mounting one (mount(2)).
#include <errno.h>
#include <sys/mount.h>
#include <sys/vfs.h>

#include "util.h"

namespace cellium_bpf {
namespace {

constexpr unsigned long kBpfFsMagic = 0xcafe4a11;

// isBpffs(path) -> true when path is on a bpffs, false otherwise (also when it does not exist).
Napi::Value IsBpffs(const Napi::CallbackInfo &info) {
  std::string path = argString(info, 0, "path");
  struct statfs st;
  if (statfs(path.c_str(), &st) < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return Napi::Boolean::New(info.Env(), false);
    throwSys(info.Env(), errno, "statfs", path);
  }
  return Napi::Boolean::New(info.Env(), (unsigned long)st.f_type == kBpfFsMagic);
}

// mountBpffs(path): mount -t bpf bpf <path> (mode 0700, like Cilium).
Napi::Value MountBpffs(const Napi::CallbackInfo &info) {
  std::string path = argString(info, 0, "path");
  if (mount("bpf", path.c_str(), "bpf", 0, "mode=0700") < 0) throwSys(info.Env(), errno, "mount", path);
  return info.Env().Undefined();
}

}  // namespace

void registerBpffs(Napi::Env env, Napi::Object exports) {
  exports.Set("isBpffs", Napi::Function::New(env, IsBpffs, "isBpffs"));
  exports.Set("mountBpffs", Napi::Function::New(env, MountBpffs, "mountBpffs"));
}

}  // namespace cellium_bpf
