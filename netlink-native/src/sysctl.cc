// /proc/sys access on a thread that joined the target network namespace (see runInNetns).
#include "sysctl.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "nlsock.h"

namespace cellium {

static std::string fullPath(const std::string &path, const std::string &op) {
  if (path.empty() || path[0] == '/' || path.find("..") != std::string::npos)
    throw NlError(EINVAL, op, "", "\"" + path + "\" is not a path below /proc/sys");
  return "/proc/sys/" + path;
}

void writeSysctl(int netns_fd, const std::string &path, const std::string &value) {
  const std::string op = "writeSysctl", full = fullPath(path, op);
  int err = 0;
  runInNetns(netns_fd, op, [&] {
    int fd = open(full.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      err = errno;
      return;
    }
    ssize_t n = write(fd, value.data(), value.size());
    if (n < 0) err = errno;
    else if (static_cast<size_t>(n) != value.size()) err = EIO;
    close(fd);
  });
  if (err) throw NlError(err, op, "", full);
}

std::string readSysctl(int netns_fd, const std::string &path) {
  const std::string op = "readSysctl", full = fullPath(path, op);
  int err = 0;
  std::string out;
  runInNetns(netns_fd, op, [&] {
    int fd = open(full.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      err = errno;
      return;
    }
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    if (n < 0) err = errno;
    close(fd);
  });
  if (err) throw NlError(err, op, "", full);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace cellium
