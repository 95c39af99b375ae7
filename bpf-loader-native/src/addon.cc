// Entry point of the cellium_bpf addon: libbpf objects, maps, tc/tcx links, cgroup links, ring
// buffer reading and bpffs helpers.
// Every call is synchronous; failures throw Errors with syscall, errno, code, path and detail.
#include <bpf/libbpf.h>
#include <bpf/libbpf_version.h>
#include <napi.h>

namespace cellium_bpf {
void registerMaps(Napi::Env env, Napi::Object exports);
void registerObject(Napi::Env env, Napi::Object exports);
void registerLinks(Napi::Env env, Napi::Object exports);
void registerCgroup(Napi::Env env, Napi::Object exports);
void registerBpffs(Napi::Env env, Napi::Object exports);
void registerRingbuf(Napi::Env env, Napi::Object exports);
void logCaptureInstall();
}  // namespace cellium_bpf

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  libbpf_set_strict_mode(LIBBPF_STRICT_ALL);
  cellium_bpf::logCaptureInstall();
  cellium_bpf::registerMaps(env, exports);
  cellium_bpf::registerObject(env, exports);
  cellium_bpf::registerLinks(env, exports);
  cellium_bpf::registerCgroup(env, exports);
  cellium_bpf::registerBpffs(env, exports);
  cellium_bpf::registerRingbuf(env, exports);
  exports.Set("libbpfVersion", std::to_string(libbpf_major_version()) + "." + std::to_string(libbpf_minor_version()));
  return exports;
}

NODE_API_MODULE(cellium_bpf, Init)
