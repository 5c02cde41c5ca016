// Whom the disk cache trusts. It holds device code jitops loads and runs, so
// a file anyone else could have written is never loaded: anyone able to
// write into a cache directory (a /tmp or group-shared one, a wrong
// JITOPS_CACHE_DIR) could otherwise plant a kernel (PyCUDA #54; cuda.core's
// program cache stages owner-only for the same reason).
//
// Trusted: the directory and each entry (kernel, lock, tuning file) owned by
// this user or root and writable by no one else. JITOPS_CACHE_SHARED=group
// also trusts group-writable ones of the directory's group, when this user is
// in it. Nothing in the cache is reached through a symbolic link.
#pragma once
#include <sys/stat.h>

#include <string>

namespace jitops {

struct Trust {
  bool ok = true;
  std::string why;  // what is wrong, for the warning (empty when ok)
};

// JITOPS_CACHE_SHARED=group: a cache shared by a group.
bool cache_shared_by_group();
// Modes for what jitops creates: 0600 files and 0700 directories (0660 / 0770 shared).
mode_t cache_file_mode();
mode_t cache_dir_mode();

// The cache directory (stat of it; a missing one is trusted, it will be made
// ours). `inside` for a directory within the cache (tuning/): a symbolic link
// there is refused, as for any entry.
Trust directory_trust(const std::string& dir, bool inside = false);
// An entry's status beside its directory's.
Trust entry_trust(const struct stat& entry, const struct stat& dir);

// Opens `path` (in directory `dir`) with no symbolic link followed, when both
// are trusted: the descriptor, or -1 with *untrusted saying whether a file was
// there but refused (and `why`).
int open_trusted(const std::string& path, const std::string& dir, int flags, bool* untrusted, std::string* why,
                 bool dir_inside = false);

// Creates the missing directories of `dir` with cache_dir_mode(); false on failure.
bool make_cache_dirs(const std::string& dir);

// One warning a process for refused cache files, naming the first and the fix.
void warn_untrusted(const std::string& why);

}  // namespace jitops
