// Errors, argument readers and libbpf log capture (see util.h).
#include "util.h"

#include <bpf/libbpf.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

namespace cellium_bpf {

std::string errnoName(int err) {
  const char *name = strerrorname_np(err);
  return name ? name : "E" + std::to_string(err);
}

void throwSys(Napi::Env env, int err, const std::string &syscall, const std::string &path, const std::string &detail) {
  throw sysError(env, err, syscall, path, detail);
}

Napi::Error sysError(Napi::Env env, int err, const std::string &syscall, const std::string &path, const std::string &detail) {
  if (err < 0) err = -err;
  std::string msg = syscall + ": " + errnoName(err) + " (" + strerror(err) + ")";
  if (!path.empty()) msg += ": " + path;
  if (!detail.empty()) msg += ": " + detail;
  Napi::Error e = Napi::Error::New(env, msg);
  Napi::Object o = e.Value();
  o.Set("syscall", syscall);
  o.Set("errno", err);
  o.Set("code", errnoName(err));
  o.Set("path", path);
  o.Set("detail", detail);
  return e;
}

void throwArg(Napi::Env env, const std::string &what) { throw Napi::TypeError::New(env, what); }

// The hot paths (map lookup/update/delete) read their arguments with one N-API call each.
int argInt(const Napi::CallbackInfo &info, size_t i, const char *name) {
  int32_t v = 0;
  if (i >= info.Length() || napi_get_value_int32(info.Env(), info[i], &v) != napi_ok) throwArg(info.Env(), std::string(name) + " must be a number");
  return v;
}

uint32_t argU32(const Napi::CallbackInfo &info, size_t i, const char *name) {
  uint32_t v = 0;
  if (i >= info.Length() || napi_get_value_uint32(info.Env(), info[i], &v) != napi_ok) throwArg(info.Env(), std::string(name) + " must be a number");
  return v;
}

std::string argString(const Napi::CallbackInfo &info, size_t i, const char *name) {
  if (i >= info.Length() || !info[i].IsString()) throwArg(info.Env(), std::string(name) + " must be a string");
  return info[i].As<Napi::String>().Utf8Value();
}

bool argBool(const Napi::CallbackInfo &info, size_t i, bool dflt) {
  if (i >= info.Length() || info[i].IsUndefined() || info[i].IsNull()) return dflt;
  return info[i].ToBoolean().Value();
}

Bytes argBytes(const Napi::CallbackInfo &info, size_t i, const char *name) {
  napi_typedarray_type type;
  size_t len = 0;
  void *data = nullptr;
  if (i >= info.Length() || napi_get_typedarray_info(info.Env(), info[i], &type, &len, &data, nullptr, nullptr) != napi_ok ||
      type != napi_uint8_array) {
    throwArg(info.Env(), std::string(name) + " must be a Buffer");
  }
  return Bytes{static_cast<uint8_t *>(data), len};
}

Bytes argBytesOrNull(const Napi::CallbackInfo &info, size_t i, const char *name) {
  if (i >= info.Length() || info[i].IsNull() || info[i].IsUndefined()) return Bytes{nullptr, 0};
  return argBytes(info, i, name);
}

Bytes argBytesSized(const Napi::CallbackInfo &info, size_t i, const char *name, size_t want) {
  Bytes b = argBytes(info, i, name);
  if (b.len != want) {
    throwArg(info.Env(), std::string(name) + " must be " + std::to_string(want) + " bytes, got " + std::to_string(b.len));
  }
  return b;
}

namespace {
thread_local bool capturing = false;
thread_local std::string captured;

int printFn(enum libbpf_print_level level, const char *fmt, va_list args) {
  if (!capturing || level == LIBBPF_DEBUG) return 0;
  char buf[4096];
  int n = vsnprintf(buf, sizeof buf, fmt, args);
  if (n > 0) captured.append(buf, n < (int)sizeof buf ? n : (int)sizeof buf - 1);
  if (captured.size() > 16384) captured.erase(0, captured.size() - 8192);
  return n;
}
}  // namespace

void logCaptureInstall() {
  libbpf_set_print(printFn);
}

void logCaptureStart() {
  captured.clear();
  capturing = true;
}

std::string logCaptureTake() {
  capturing = false;
  std::string out;
  out.swap(captured);
  if (out.size() > 8192) out.erase(0, out.size() - 8192);
  return out;
}

}  // namespace cellium_bpf
