#include "jit/cache_trust.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace jitops {
namespace {

bool in_my_groups(gid_t gid) {
  if (gid == getegid()) return true;
  const int n = getgroups(0, nullptr);
  if (n <= 0) return false;
  std::vector<gid_t> groups(static_cast<size_t>(n));
  const int got = getgroups(n, groups.data());
  for (int i = 0; i < got; ++i)
    if (groups[size_t(i)] == gid) return true;
  return false;
}

bool mine_or_root(uid_t uid) { return uid == geteuid() || uid == 0; }

std::string octal(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", unsigned(mode & 07777));
  return text;
}

Trust refuse(std::string why) { return Trust{false, std::move(why)}; }

}  // namespace

bool cache_shared_by_group() {
  const char* v = std::getenv("JITOPS_CACHE_SHARED");
  return v && std::strcmp(v, "group") == 0;
}

mode_t cache_file_mode() { return cache_shared_by_group() ? 0660 : 0600; }
mode_t cache_dir_mode() { return cache_shared_by_group() ? 0770 : 0700; }

Trust directory_trust(const std::string& dir, bool inside) {
  struct stat st;
  if ((inside ? ::lstat(dir.c_str(), &st) : ::stat(dir.c_str(), &st)) != 0) return Trust{};  // made ours later
  if (S_ISLNK(st.st_mode)) return refuse("is a symbolic link");
  if (!S_ISDIR(st.st_mode)) return refuse("is not a directory");
  if (st.st_mode & S_IWOTH) return refuse("is writable by every user (mode " + octal(st.st_mode) + ")");
  const bool shared = cache_shared_by_group() && in_my_groups(st.st_gid);
  if (!mine_or_root(st.st_uid) && !shared)
    return refuse("is owned by another user (uid " + std::to_string(st.st_uid) + ")");
  if ((st.st_mode & S_IWGRP) && !shared)
    return refuse("is writable by its group (mode " + octal(st.st_mode) + ") and JITOPS_CACHE_SHARED is not 'group'");
  return Trust{};
}

Trust entry_trust(const struct stat& st, const struct stat& dir) {
  if (!S_ISREG(st.st_mode)) return refuse("is not a regular file");
  if (st.st_mode & S_IWOTH) return refuse("is writable by every user (mode " + octal(st.st_mode) + ")");
  const bool group_entry = cache_shared_by_group() && st.st_gid == dir.st_gid && in_my_groups(st.st_gid);
  if (!mine_or_root(st.st_uid) && !group_entry)
    return refuse("is owned by another user (uid " + std::to_string(st.st_uid) + ")");
  if ((st.st_mode & S_IWGRP) && !group_entry)
    return refuse("is writable by its group (mode " + octal(st.st_mode) + ")");
  return Trust{};
}

int open_trusted(const std::string& path, const std::string& dir, int flags, bool* untrusted, std::string* why,
                 bool dir_inside) {
  *untrusted = false;
  const Trust d = directory_trust(dir, dir_inside);
  if (!d.ok) {
    *untrusted = true;
    *why = "the directory " + dir + " " + d.why;
    return -1;
  }
  const int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, cache_file_mode());
  if (fd < 0) {
    if (errno == ELOOP) {
      *untrusted = true;
      *why = path + " is a symbolic link";
    }
    return -1;
  }
  struct stat st, dst;
  Trust t;
  if (::fstat(fd, &st) != 0 || ::stat(dir.c_str(), &dst) != 0)
    t = refuse("cannot be examined");
  else
    t = entry_trust(st, dst);
  if (!t.ok) {
    ::close(fd);
    *untrusted = true;
    *why = path + " " + t.why;
    return -1;
  }
  return fd;
}

bool make_cache_dirs(const std::string& dir) {
  std::string partial;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      // Only directories made here get the cache's mode; existing ones stay as the user made them.
      if (!partial.empty() && ::mkdir(partial.c_str(), cache_dir_mode()) != 0 && errno != EEXIST) return false;
    }
    if (i < dir.size()) partial += dir[i];
  }
  return true;
}

void warn_untrusted(const std::string& why) {
  static std::once_flag once;
  std::call_once(once, [&] {
    std::fprintf(stderr,
                 "jitops: warning: refusing to load from the disk cache: %s. Kernels are compiled and kept in "
                 "memory instead. Fix: remove what you did not write (python -m jitops cache clear), make the "
                 "directory yours alone (chmod 700), or point JITOPS_CACHE_DIR at a directory only you can write "
                 "(JITOPS_CACHE_SHARED=group trusts a cache shared by your group).\n",
                 why.c_str());
  });
}

}  // namespace jitops
