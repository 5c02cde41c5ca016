// Keeping the disk cache under a size: least recently used kernels go first.
// A disk hit refreshes its file's modification time, so mtime orders the
// files by last use; eviction needs nothing but stat and unlink, and a
// process that still maps an evicted kernel keeps its loaded module.
#pragma once
#include <cstdint>
#include <string>

namespace jitops {

struct PruneResult {
  int64_t removed = 0;      // files deleted
  int64_t freed_bytes = 0;
  int64_t kept_bytes = 0;   // kernel bytes left
  int64_t kept_files = 0;
};

// Deletes the least recently used kernel files of `directory` until their
// total is at most `max_bytes`.
PruneResult prune_cache_directory(const std::string& directory, int64_t max_bytes);

// JITOPS_CACHE_MAX_BYTES (plain bytes, or with a K/M/G suffix), or -1 when unset.
int64_t cache_max_bytes_from_env();

// Marks a kernel file as just used (its mtime), for least-recently-used eviction.
void touch_cache_file(const std::string& path);

}  // namespace jitops
