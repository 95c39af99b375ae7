// Attaching cgroup programs (socket-level load balancing: cgroup/connect4 and its kin) to a cgroup
// v2 directory through bpf_link (BPF_LINK_CREATE with the cgroup's fd): the link can be pinned, so
// the program stays attached while the agent is down, and updated atomically (linkUpdate) on the
// next start. Plus the query of what is attached at a cgroup hook, for checks and inspection.
// Both are quick (no RCU wait on attach): they run on the JS thread.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

namespace cellium_bpf {
namespace {

// An fd of the cgroup directory at path; throws (naming the path) when it cannot be opened.
int openCgroup(Napi::Env env, const std::string &path) {
  int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throwSys(env, errno, "open", path, "cgroup directory");
  return fd;
}

// cgroupAttach(progFd, cgroupPath, attachType) -> link fd: the program attached to the cgroup
// (BPF_F_ALLOW_MULTI semantics: other programs at the hook stay) until the link is released.
Napi::Value CgroupAttach(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  int prog = argInt(info, 0, "progFd");
  std::string path = argString(info, 1, "cgroupPath");
  uint32_t type = argU32(info, 2, "attachType");
  int cg = openCgroup(env, path);
  int link = bpf_link_create(prog, cg, (enum bpf_attach_type)type, nullptr);
  int err = link < 0 ? errno : 0;
  close(cg);
  if (link < 0) throwSys(env, err, "bpf_link_create", path, "cgroup attach type " + std::to_string(type));
  return Napi::Number::New(env, link);
}

// cgroupQuery(cgroupPath, attachType) -> ids of the programs attached at that hook of the cgroup
// itself (not the ones it inherits).
Napi::Value CgroupQuery(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  std::string path = argString(info, 0, "cgroupPath");
  uint32_t type = argU32(info, 1, "attachType");
  int cg = openCgroup(env, path);
  __u32 ids[64];
  __u32 cnt = 64;
  __u32 flags = 0;
  int r = bpf_prog_query(cg, (enum bpf_attach_type)type, 0, &flags, ids, &cnt);
  int err = r < 0 ? errno : 0;
  close(cg);
  if (r < 0) throwSys(env, err, "bpf_prog_query", path, "cgroup attach type " + std::to_string(type));
  Napi::Array out = Napi::Array::New(env, cnt);
  for (__u32 i = 0; i < cnt; i++) out.Set(i, ids[i]);
  return out;
}

}  // namespace

void registerCgroup(Napi::Env env, Napi::Object exports) {
  exports.Set("cgroupAttach", Napi::Function::New(env, CgroupAttach, "cgroupAttach"));
  exports.Set("cgroupQuery", Napi::Function::New(env, CgroupQuery, "cgroupQuery"));
}

}  // namespace cellium_bpf
