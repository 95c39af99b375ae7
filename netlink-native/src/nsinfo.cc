// nsType(path): the type of a namespace file (CLONE_NEWNET for a network namespace, CLONE_NEWNS
// for a mount namespace, …) with the device and inode of what was opened, found with the
// NS_GET_NSTYPE ioctl (Linux 4.11): no setns, no privilege. The caller stat()s the path first and
// opens only files of the nsfs filesystem (opening a FIFO would block, some devices act on open).
// Failures are not thrown: { errno } says what failed (ENOTTY: not a namespace file, or no ioctl).
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "js.h"

namespace cellium {
namespace {

Napi::Value NsType(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(env, "nsType(path): path must be a string");
  const std::string path = info[0].As<Napi::String>();
  Napi::Object out = Napi::Object::New(env);
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    out.Set("errno", errno);
    return out;
  }
  struct stat st;
  int type = fstat(fd, &st) == 0 ? ioctl(fd, NS_GET_NSTYPE) : -1;
  int err = type < 0 ? errno : 0;
  close(fd);
  out.Set("errno", err);
  if (type >= 0) {
    out.Set("type", type);
    out.Set("dev", static_cast<double>(st.st_dev));
    out.Set("ino", static_cast<double>(st.st_ino));
  }
  return out;
}

}  // namespace

void registerNsInfo(Napi::Env env, Napi::Object exports) {
  exports.Set("nsType", Napi::Function::New(env, NsType, "nsType"));
}

}  // namespace cellium
