// Attaching sched_cls programs to an interface: tcx links (BPF_LINK_CREATE with BPF_TCX_INGRESS /
// BPF_TCX_EGRESS, kernel >= 6.6) that can be pinned and updated atomically (bpf_link_update), and
// the legacy clsact qdisc + direct-action filter (bpf_tc_attach, BPF_TC_F_REPLACE for an atomic
// replace). Plus program/link info and tcx queries, for checks and inspection.
// The attach/detach/query calls take an optional network namespace path (last argument): they then
// run on a short-lived thread that entered that namespace (ifindexes are per namespace); no Node
// thread ever changes namespace. The attaches return promises and run on a libuv worker thread:
// they can wait for an RCU grace period, which must not stall the event loop.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <functional>
#include <thread>
#include <vector>

#include "util.h"

namespace cellium_bpf {
namespace {

// Attach types of tcx (linux/bpf.h since 6.6; the build headers may be older).
constexpr uint32_t kTcxIngress = 46;
constexpr uint32_t kTcxEgress = 47;

uint32_t tcxType(bool ingress) { return ingress ? kTcxIngress : kTcxEgress; }

// The netns path argument at index i ("" when absent).
std::string argNetns(const Napi::CallbackInfo &info, size_t i) {
  return i < info.Length() && info[i].IsString() ? info[i].As<Napi::String>().Utf8Value() : "";
}

// Runs fn (returning a result >= 0 or a negative errno) in the network namespace at path ("" =
// the current one) on a short-lived thread that entered it. Entering failed: returns -errno and
// names the failed call ("open" or "setns") in *nsFailed; otherwise *nsFailed is left alone.
template <typename F>
int64_t runInNetns(const std::string &path, F fn, const char **nsFailed) {
  if (path.empty()) return fn();
  int nsfd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (nsfd < 0) {
    *nsFailed = "open";
    return -errno;
  }
  int64_t rc = 0;
  std::thread t([&] {
    if (setns(nsfd, CLONE_NEWNET) < 0) {
      *nsFailed = "setns";
      rc = -errno;
      return;
    }
    rc = fn();
  });
  t.join();
  close(nsfd);
  return rc;
}

// runInNetns on the JS thread: throws when the namespace cannot be entered, else returns fn's result.
template <typename F>
int inNetns(Napi::Env env, const std::string &path, F fn) {
  const char *nsFailed = nullptr;
  int64_t rc = runInNetns(path, fn, &nsFailed);
  if (nsFailed) throwSys(env, (int)-rc, nsFailed, path, "network namespace");
  return (int)rc;
}

// One kernel call on a libuv worker thread (inside the namespace at netns when set), settling a
// promise: resolved with the call's result (>= 0), rejected with the syscall it names and -result.
class KernelCall : public Napi::AsyncWorker {
 public:
  using Fn = std::function<int64_t(std::string &failed)>;

  static Napi::Value Start(Napi::Env env, std::string netns, std::string detail, Fn fn) {
    auto *w = new KernelCall(env, std::move(netns), std::move(detail), std::move(fn));
    Napi::Promise p = w->deferred_.Promise();
    w->Queue();
    return p;
  }

 protected:
  void Execute() override {
    const char *nsFailed = nullptr;
    result_ = runInNetns(netns_, [this] { return fn_(failed_); }, &nsFailed);
    if (nsFailed) {
      failed_ = nsFailed;
      nsError_ = true;
    }
  }
  void OnOK() override {
    Napi::Env env = Env();
    if (result_ >= 0) return deferred_.Resolve(Napi::Number::New(env, (double)result_));
    deferred_.Reject(sysError(env, (int)-result_, failed_, nsError_ ? netns_ : "", nsError_ ? "network namespace" : detail_).Value());
  }

 private:
  KernelCall(Napi::Env env, std::string netns, std::string detail, Fn fn)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), netns_(std::move(netns)),
        detail_(std::move(detail)), fn_(std::move(fn)) {}
  Napi::Promise::Deferred deferred_;
  std::string netns_, detail_;
  Fn fn_;
  std::string failed_;
  bool nsError_ = false;  // the namespace could not be entered (failed_ is open or setns)
  int64_t result_ = 0;
};

// tcxAttach(progFd, ifindex, ingress, netns?) -> Promise<link fd> (appended after existing tcx
// programs). On a worker thread: a tcx attach waits for an RCU grace period.
Napi::Value TcxAttach(const Napi::CallbackInfo &info) {
  int prog = argInt(info, 0, "progFd");
  uint32_t ifindex = argU32(info, 1, "ifindex");
  bool ingress = argBool(info, 2, true);
  std::string detail = std::string("tcx ") + (ingress ? "ingress" : "egress") + " ifindex " + std::to_string(ifindex);
  return KernelCall::Start(info.Env(), argNetns(info, 3), detail, [prog, ifindex, ingress](std::string &failed) -> int64_t {
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.link_create.prog_fd = prog;
    attr.link_create.target_ifindex = ifindex;
    attr.link_create.attach_type = tcxType(ingress);
    failed = "bpf_link_create";
    int r = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof attr);
    return r < 0 ? -errno : r;
  });
}

// tcxQuery(ifindex, ingress, netns?) -> program ids attached with tcx, in order.
Napi::Value TcxQuery(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  uint32_t ifindex = argU32(info, 0, "ifindex");
  bool ingress = argBool(info, 1, true);
  __u32 ids[64];
  __u32 cnt = 64;
  __u32 attachFlags = 0;
  int err = inNetns(env, argNetns(info, 2), [&] {
    return bpf_prog_query((int)ifindex, (enum bpf_attach_type)tcxType(ingress), 0, &attachFlags, ids, &cnt) < 0 ? -errno : 0;
  });
  if (err) throwSys(env, err, "bpf_prog_query", "", "tcx ifindex " + std::to_string(ifindex));
  Napi::Array out = Napi::Array::New(env, cnt);
  for (__u32 i = 0; i < cnt; i++) out.Set(i, ids[i]);
  return out;
}

// linkUpdate(linkFd, progFd): atomically swaps the link's program.
Napi::Value LinkUpdate(const Napi::CallbackInfo &info) {
  int link = argInt(info, 0, "linkFd");
  int prog = argInt(info, 1, "progFd");
  if (bpf_link_update(link, prog, nullptr) < 0) throwSys(info.Env(), errno, "bpf_link_update");
  return info.Env().Undefined();
}

// linkDetach(linkFd): detaches the link's program (the link object lives on until closed).
Napi::Value LinkDetach(const Napi::CallbackInfo &info) {
  int link = argInt(info, 0, "linkFd");
  if (bpf_link_detach(link) < 0) throwSys(info.Env(), errno, "bpf_link_detach");
  return info.Env().Undefined();
}

Napi::Value LinkInfo(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  int fd = argInt(info, 0, "fd");
  struct bpf_link_info li;
  memset(&li, 0, sizeof li);
  __u32 len = sizeof li;
  if (bpf_obj_get_info_by_fd(fd, &li, &len) < 0) throwSys(env, errno, "bpf_obj_get_info_by_fd");
  Napi::Object o = Napi::Object::New(env);
  o.Set("id", li.id);
  o.Set("type", li.type);
  o.Set("progId", li.prog_id);
  if (li.type == BPF_LINK_TYPE_CGROUP) {
    // cgroup links: {cgroup_id (the cgroup v2 directory's inode number), attach_type}
    o.Set("ifindex", 0);
    o.Set("cgroupId", (double)li.cgroup.cgroup_id);
    o.Set("attachType", li.cgroup.attach_type);
    return o;
  }
  // tcx links report {ifindex, attach_type} where xdp links report {ifindex}.
  const __u32 *u = reinterpret_cast<const __u32 *>(&li.xdp);
  o.Set("ifindex", u[0]);
  o.Set("attachType", u[1]);
  return o;
}

Napi::Value ProgInfo(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  int fd = argInt(info, 0, "fd");
  struct bpf_prog_info pi;
  memset(&pi, 0, sizeof pi);
  __u32 len = sizeof pi;
  if (bpf_obj_get_info_by_fd(fd, &pi, &len) < 0) throwSys(env, errno, "bpf_obj_get_info_by_fd");
  char tag[2 * BPF_TAG_SIZE + 1];
  for (int i = 0; i < BPF_TAG_SIZE; i++) snprintf(tag + 2 * i, 3, "%02x", pi.tag[i]);
  // A second call fills the ids of the maps the program uses.
  __u32 nmaps = pi.nr_map_ids;
  std::vector<__u32> mapIds(nmaps);
  if (nmaps > 0) {
    struct bpf_prog_info again;
    memset(&again, 0, sizeof again);
    again.nr_map_ids = nmaps;
    again.map_ids = (__u64)(uintptr_t)mapIds.data();
    len = sizeof again;
    if (bpf_obj_get_info_by_fd(fd, &again, &len) < 0) throwSys(env, errno, "bpf_obj_get_info_by_fd");
    if (again.nr_map_ids < nmaps) nmaps = again.nr_map_ids;
  }
  Napi::Object o = Napi::Object::New(env);
  o.Set("id", pi.id);
  o.Set("type", pi.type);
  o.Set("name", std::string(pi.name, strnlen(pi.name, sizeof pi.name)));
  o.Set("tag", std::string(tag));
  o.Set("verifiedInsns", pi.verified_insns);
  Napi::Array ids = Napi::Array::New(env, nmaps);
  for (__u32 i = 0; i < nmaps; i++) ids.Set(i, mapIds[i]);
  o.Set("mapIds", ids);
  return o;
}

// progTestRun(fd, data, repeat) -> {retval, durationNs}: BPF_PROG_TEST_RUN of a loaded program on
// one packet (for sched_cls: an Ethernet frame), `repeat` times (duration is the mean per run).
Napi::Value ProgTestRun(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  int fd = argInt(info, 0, "fd");
  Bytes data = argBytes(info, 1, "data");
  uint32_t repeat = info.Length() > 2 ? argU32(info, 2, "repeat") : 1;
  LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = data.data, .data_size_in = (__u32)data.len, .repeat = (int)repeat);
  if (bpf_prog_test_run_opts(fd, &opts) < 0) throwSys(env, errno, "bpf_prog_test_run");
  Napi::Object o = Napi::Object::New(env);
  o.Set("retval", opts.retval);
  o.Set("durationNs", opts.duration);
  return o;
}

// progGetFdById(id) -> fd of the loaded program with that id.
Napi::Value ProgGetFdById(const Napi::CallbackInfo &info) {
  uint32_t id = argU32(info, 0, "id");
  int fd = bpf_prog_get_fd_by_id(id);
  if (fd < 0) throwSys(info.Env(), errno, "bpf_prog_get_fd_by_id", "", "id " + std::to_string(id));
  return Napi::Number::New(info.Env(), fd);
}

// mapGetFdById(id) -> fd of the map with that id.
Napi::Value MapGetFdById(const Napi::CallbackInfo &info) {
  uint32_t id = argU32(info, 0, "id");
  int fd = bpf_map_get_fd_by_id(id);
  if (fd < 0) throwSys(info.Env(), errno, "bpf_map_get_fd_by_id", "", "id " + std::to_string(id));
  return Napi::Number::New(info.Env(), fd);
}

struct bpf_tc_hook hookFor(uint32_t ifindex, bool ingress) {
  struct bpf_tc_hook h;
  memset(&h, 0, sizeof h);
  h.sz = sizeof h;
  h.ifindex = (int)ifindex;
  h.attach_point = ingress ? BPF_TC_INGRESS : BPF_TC_EGRESS;
  return h;
}

// tcAttach(progFd, ifindex, ingress, handle, priority, replace, netns?) -> Promise<program id>.
// Creates the clsact qdisc when missing; with replace, swaps the program of an existing filter
// atomically. On a worker thread: the first filter of a hook waits for an RCU grace period.
Napi::Value TcAttach(const Napi::CallbackInfo &info) {
  int prog = argInt(info, 0, "progFd");
  uint32_t ifindex = argU32(info, 1, "ifindex");
  bool ingress = argBool(info, 2, true);
  uint32_t handle = argU32(info, 3, "handle"), priority = argU32(info, 4, "priority");
  bool replace = argBool(info, 5, false);
  std::string detail = std::string(ingress ? "ingress" : "egress") + " ifindex " + std::to_string(ifindex);
  return KernelCall::Start(info.Env(), argNetns(info, 6), detail, [=](std::string &failed) -> int64_t {
    struct bpf_tc_hook hook = hookFor(ifindex, ingress);
    struct bpf_tc_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.sz = sizeof opts;
    opts.prog_fd = prog;
    opts.handle = handle;
    opts.priority = priority;
    opts.flags = replace ? BPF_TC_F_REPLACE : 0;
    int e = bpf_tc_hook_create(&hook);
    if (e && e != -EEXIST) {
      failed = "bpf_tc_hook_create";
      return e;
    }
    failed = "bpf_tc_attach";
    e = bpf_tc_attach(&hook, &opts);
    return e ? e : (int64_t)opts.prog_id;
  });
}

// tcQuery(ifindex, ingress, handle, priority, netns?) -> program id of that filter, 0 when absent.
Napi::Value TcQuery(const Napi::CallbackInfo &info) {
  struct bpf_tc_hook hook = hookFor(argU32(info, 0, "ifindex"), argBool(info, 1, true));
  struct bpf_tc_opts opts;
  memset(&opts, 0, sizeof opts);
  opts.sz = sizeof opts;
  opts.handle = argU32(info, 2, "handle");
  opts.priority = argU32(info, 3, "priority");
  int err = inNetns(info.Env(), argNetns(info, 4), [&] { return bpf_tc_query(&hook, &opts); });
  if (err == -ENOENT || err == -EINVAL) return Napi::Number::New(info.Env(), 0);
  if (err) throwSys(info.Env(), err, "bpf_tc_query");
  return Napi::Number::New(info.Env(), opts.prog_id);
}

// tcDetach(ifindex, ingress, handle, priority, netns?) -> true when a filter was removed.
Napi::Value TcDetach(const Napi::CallbackInfo &info) {
  struct bpf_tc_hook hook = hookFor(argU32(info, 0, "ifindex"), argBool(info, 1, true));
  struct bpf_tc_opts opts;
  memset(&opts, 0, sizeof opts);
  opts.sz = sizeof opts;
  opts.handle = argU32(info, 2, "handle");
  opts.priority = argU32(info, 3, "priority");
  int err = inNetns(info.Env(), argNetns(info, 4), [&] { return bpf_tc_detach(&hook, &opts); });
  if (err == -ENOENT || err == -EINVAL) return Napi::Boolean::New(info.Env(), false);
  if (err) throwSys(info.Env(), err, "bpf_tc_detach");
  return Napi::Boolean::New(info.Env(), true);
}

}  // namespace

void registerLinks(Napi::Env env, Napi::Object exports) {
  exports.Set("tcxAttach", Napi::Function::New(env, TcxAttach, "tcxAttach"));
  exports.Set("tcxQuery", Napi::Function::New(env, TcxQuery, "tcxQuery"));
  exports.Set("linkUpdate", Napi::Function::New(env, LinkUpdate, "linkUpdate"));
  exports.Set("linkDetach", Napi::Function::New(env, LinkDetach, "linkDetach"));
  exports.Set("linkInfo", Napi::Function::New(env, LinkInfo, "linkInfo"));
  exports.Set("progInfo", Napi::Function::New(env, ProgInfo, "progInfo"));
  exports.Set("progTestRun", Napi::Function::New(env, ProgTestRun, "progTestRun"));
  exports.Set("progGetFdById", Napi::Function::New(env, ProgGetFdById, "progGetFdById"));
  exports.Set("mapGetFdById", Napi::Function::New(env, MapGetFdById, "mapGetFdById"));
  exports.Set("tcAttach", Napi::Function::New(env, TcAttach, "tcAttach"));
  exports.Set("tcQuery", Napi::Function::New(env, TcQuery, "tcQuery"));
  exports.Set("tcDetach", Napi::Function::New(env, TcDetach, "tcDetach"));
}

}  // namespace cellium_bpf
