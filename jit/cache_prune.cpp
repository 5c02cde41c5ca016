#include "jit/cache_prune.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace jitops {
namespace {

bool is_kernel_file(const std::string& name) {
  const std::string suffix = ".jitops";
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0 &&
         name[0] != '.';
}

struct Entry {
  std::string path;
  int64_t bytes;
  struct timespec mtime;
};

}  // namespace

PruneResult prune_cache_directory(const std::string& directory, int64_t max_bytes) {
  PruneResult result;
  DIR* dir = ::opendir(directory.c_str());
  if (!dir) return result;
  std::vector<Entry> entries;
  while (struct dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (!is_kernel_file(name)) continue;
    struct stat st;
    const std::string path = directory + "/" + name;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;  // a symbolic link is not followed
    entries.push_back({path, int64_t(st.st_size), st.st_mtim});
    result.kept_bytes += st.st_size;
  }
  ::closedir(dir);
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.mtime.tv_sec != b.mtime.tv_sec ? a.mtime.tv_sec < b.mtime.tv_sec : a.mtime.tv_nsec < b.mtime.tv_nsec;
  });
  result.kept_files = int64_t(entries.size());
  for (const Entry& e : entries) {
    if (result.kept_bytes <= max_bytes) break;
    if (::unlink(e.path.c_str()) != 0) continue;  // another process got there first
    result.removed++;
    result.freed_bytes += e.bytes;
    result.kept_bytes -= e.bytes;
    result.kept_files--;
  }
  return result;
}

int64_t cache_max_bytes_from_env() {
  const char* text = std::getenv("JITOPS_CACHE_MAX_BYTES");
  if (!text || !*text) return -1;
  char* end = nullptr;
  double v = std::strtod(text, &end);
  if (end == text || v < 0) return -1;
  switch (*end) {
    case 'k': case 'K': v *= 1024; break;
    case 'm': case 'M': v *= 1024.0 * 1024; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
    default: break;
  }
  return int64_t(v);
}

void touch_cache_file(const std::string& path) { ::utimensat(AT_FDCWD, path.c_str(), nullptr, AT_SYMLINK_NOFOLLOW); }

}  // namespace jitops
