// Shared helpers of the addon: errors thrown as JS Errors carrying the syscall, errno and errno
// name (the TypeScript layer adds the hint), argument readers, and the capture of libbpf's log.
#pragma once
#include <napi.h>
#include <stdint.h>

#include <string>

namespace cellium_bpf {

// Throws a JS Error for a failed call: message "<syscall>: <CODE> (<strerror>)[: detail]",
// properties syscall, errno (positive), code, path and detail.
[[noreturn]] void throwSys(Napi::Env env, int err, const std::string &syscall, const std::string &path = "",
                           const std::string &detail = "");

// The Error throwSys throws, for rejecting a promise instead.
Napi::Error sysError(Napi::Env env, int err, const std::string &syscall, const std::string &path = "",
                     const std::string &detail = "");

// Throws a TypeError for a bad argument.
[[noreturn]] void throwArg(Napi::Env env, const std::string &what);

// The errno name of err ("EPERM"), or "E<n>".
std::string errnoName(int err);

// Argument readers: they throw a TypeError naming the argument when it has the wrong type.
int argInt(const Napi::CallbackInfo &info, size_t i, const char *name);
uint32_t argU32(const Napi::CallbackInfo &info, size_t i, const char *name);
std::string argString(const Napi::CallbackInfo &info, size_t i, const char *name);
bool argBool(const Napi::CallbackInfo &info, size_t i, bool dflt);

// A Buffer (or any Uint8Array) argument: data and length, without copying.
struct Bytes {
  uint8_t *data;
  size_t len;
};
Bytes argBytes(const Napi::CallbackInfo &info, size_t i, const char *name);
// Like argBytes but null/undefined gives {nullptr, 0}.
Bytes argBytesOrNull(const Napi::CallbackInfo &info, size_t i, const char *name);
// Like argBytes but also checks the length is exactly `want`.
Bytes argBytesSized(const Napi::CallbackInfo &info, size_t i, const char *name, size_t want);

// Routes libbpf's messages into the capture buffer (and drops them outside a capture: the
// failures they explain reach JS as Errors with the captured text in `detail`). Called once at init.
void logCaptureInstall();
// Starts capturing libbpf's warning log (the verifier log on a failed load) into a buffer.
void logCaptureStart();
// Stops capturing and returns what was logged (the last 8 KiB at most).
std::string logCaptureTake();

}  // namespace cellium_bpf
