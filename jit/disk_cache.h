// Compiled kernels on disk, shared by every process of the machine.
//
// One file per key: <hash>.sm<arch>.jitops. Writers compile under an advisory
// lock (flock) on <file>.lock, so N processes missing the same key compile it
// once; the file is written to a temporary name and renamed into place, so a
// reader never sees half of it, and readers take no lock. A file whose magic,
// version, checksum or stored key text does not match is a miss and is
// rewritten. Only atomic rename and flock are relied on.
#pragma once
#include <atomic>
#include <functional>
#include <optional>
#include <string>

#include "jit/compiler.h"

namespace jitops {

struct DiskCacheConfig {
  bool enabled = true;
  std::string directory;  // resolved by the Python layer from JITOPS_CACHE_DIR / XDG_CACHE_HOME / ~/.cache
};

void set_disk_cache_config(DiskCacheConfig config);
DiskCacheConfig disk_cache_config();

struct DiskCacheCounters {
  std::atomic<long> hits{0};
  std::atomic<long> misses{0};
  std::atomic<long> writes{0};
  std::atomic<long> rejected{0};  // files present but corrupt, truncated or from another version
};
DiskCacheCounters& disk_cache_counters();

// The file a key is stored in.
std::string cache_file_path(const std::string& key_text, int arch);

// Reads the kernel for `key_text`, or nothing (missing, disabled or invalid).
std::optional<CompiledKernel> read_cached(const std::string& key_text, int arch);

// Returns the cached kernel for `key_text`, or runs `compile` under the key's
// lock and stores its result. `from_disk` says which happened.
CompiledKernel load_or_compile(const std::string& key_text, int arch, const std::function<CompiledKernel()>& compile,
                               bool* from_disk);

}  // namespace jitops
