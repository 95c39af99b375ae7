// Reading and writing /proc/sys entries in a given network namespace (per-netns ones such as
// net/ipv4/conf/eth0/rp_filter resolve against the namespace of the thread that opens them).
#pragma once

#include <string>

namespace cellium {

// Writes value to /proc/sys/<path> from inside the namespace of netns_fd (-1: the process's own).
void writeSysctl(int netns_fd, const std::string &path, const std::string &value);
// Reads /proc/sys/<path> (without the trailing newline) from inside the namespace of netns_fd.
std::string readSysctl(int netns_fd, const std::string &path);

}  // namespace cellium
