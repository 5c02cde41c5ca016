#include "jit/disk_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <mutex>
#include <random>

#include "jit/cache_prune.h"
#include "jit/cache_trust.h"
#include "jit/hash.h"

namespace jitops {
namespace {

constexpr char kMagic[8] = {'J', 'I', 'T', 'O', 'P', 'S', 'K', '1'};
constexpr uint32_t kFileFormat = 1;

std::mutex g_config_mutex;
DiskCacheConfig g_config;

struct Header {
  char magic[8];
  uint32_t format;
  uint32_t reserved;
  uint64_t payload_size;
  uint64_t payload_checksum;
};

void put_string(std::string& out, const std::string& s) {
  uint64_t n = s.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof(n));
  out += s;
}

bool get_string(const std::string& in, size_t& pos, std::string& s) {
  uint64_t n = 0;
  if (pos + sizeof(n) > in.size()) return false;
  std::memcpy(&n, in.data() + pos, sizeof(n));
  pos += sizeof(n);
  if (n > in.size() - pos) return false;
  s.assign(in.data() + pos, n);
  pos += n;
  return true;
}

std::string serialize(const CompiledKernel& k) {
  std::string payload;
  put_string(payload, k.key_text);
  put_string(payload, k.source);
  put_string(payload, k.kernel_name);
  std::string opts;
  for (const std::string& o : k.options) opts += o + "\n";
  put_string(payload, opts);
  put_string(payload, k.ptx);
  put_string(payload, k.cubin);
  put_string(payload, k.log);
  put_string(payload, std::to_string(k.compile_ms));
  put_string(payload, std::to_string(k.code_arch));
  std::string lowered;  // last, so files written before it existed still read (with none)
  for (const std::string& l : k.lowered_names) lowered += l + "\n";
  put_string(payload, lowered);
  Header h;
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.format = kFileFormat;
  h.reserved = 0;
  h.payload_size = payload.size();
  h.payload_checksum = fnv1a(payload);
  return std::string(reinterpret_cast<const char*>(&h), sizeof(h)) + payload;
}

std::optional<CompiledKernel> deserialize(const std::string& bytes, const std::string& key_text) {
  Header h;
  if (bytes.size() < sizeof(h)) return std::nullopt;
  std::memcpy(&h, bytes.data(), sizeof(h));
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0 || h.format != kFileFormat) return std::nullopt;
  if (h.payload_size != bytes.size() - sizeof(h)) return std::nullopt;
  std::string payload = bytes.substr(sizeof(h));
  if (fnv1a(payload) != h.payload_checksum) return std::nullopt;
  CompiledKernel k;
  std::string opts, ms, arch;
  size_t pos = 0;
  if (!get_string(payload, pos, k.key_text) || !get_string(payload, pos, k.source) ||
      !get_string(payload, pos, k.kernel_name) || !get_string(payload, pos, opts) ||
      !get_string(payload, pos, k.ptx) || !get_string(payload, pos, k.cubin) || !get_string(payload, pos, k.log) ||
      !get_string(payload, pos, ms) || !get_string(payload, pos, arch))
    return std::nullopt;
  if (k.key_text != key_text) return std::nullopt;
  std::string lowered;
  if (pos < payload.size() && !get_string(payload, pos, lowered)) return std::nullopt;
  for (size_t begin = 0, end; begin < lowered.size(); begin = end + 1) {
    end = lowered.find('\n', begin);
    k.lowered_names.push_back(lowered.substr(begin, end - begin));
  }
  size_t start = 0;
  while (start < opts.size()) {
    size_t end = opts.find('\n', start);
    k.options.push_back(opts.substr(start, end - start));
    start = end + 1;
  }
  k.compile_ms = std::atof(ms.c_str());
  k.code_arch = std::atoi(arch.c_str());
  return k;
}

// Reads a cache file it trusts (jit/cache_trust.h); `untrusted` says one was there but refused.
bool read_trusted(const std::string& path, const std::string& dir, std::string& out, bool* untrusted) {
  std::string why;
  int fd = open_trusted(path, dir, O_RDONLY, untrusted, &why);
  if (*untrusted) warn_untrusted(why);
  if (fd < 0) return false;
  struct stat st;
  bool ok = fstat(fd, &st) == 0;
  if (ok) {
    out.resize(size_t(st.st_size));
    size_t done = 0;
    while (ok && done < out.size()) {
      ssize_t n = ::read(fd, &out[done], out.size() - done);
      if (n <= 0) ok = false;
      else done += size_t(n);
    }
  }
  ::close(fd);
  return ok;
}

void warn_once(const std::string& message) {
  static std::once_flag once;
  std::call_once(once, [&] {
    std::fprintf(stderr, "jitops: warning: %s; compiled kernels are kept in memory only\n", message.c_str());
  });
}

bool write_atomically(const std::string& path, const std::string& bytes) {
  std::random_device rd;
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + hex64((uint64_t(rd()) << 32) | rd());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, cache_file_mode());
  if (fd < 0) return false;
  size_t done = 0;
  bool ok = true;
  while (ok && done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) ok = false;
    else done += size_t(n);
  }
  ok = (::close(fd) == 0) && ok;
  if (ok) ok = ::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) ::unlink(tmp.c_str());
  return ok;
}

// An exclusive flock on a lock file beside the cache file; released on scope exit.
class FileLock {
 public:
  explicit FileLock(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, cache_file_mode());
    if (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~FileLock() {
    if (fd_ >= 0) {
      ::flock(fd_, LOCK_UN);
      ::close(fd_);
    }
  }
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace

void set_disk_cache_config(DiskCacheConfig config) {
  std::lock_guard<std::mutex> lock(g_config_mutex);
  g_config = std::move(config);
}

DiskCacheConfig disk_cache_config() {
  std::lock_guard<std::mutex> lock(g_config_mutex);
  return g_config;
}

DiskCacheCounters& disk_cache_counters() {
  static DiskCacheCounters counters;
  return counters;
}

std::string cache_file_path(const std::string& key_text, int arch) {
  return disk_cache_config().directory + "/" + hex64(fnv1a(key_text)) + ".sm" + std::to_string(arch) + ".jitops";
}

namespace {
// Reads and validates; `rejected` says a file was there but unusable or untrusted.
std::optional<CompiledKernel> read_validated(const std::string& key_text, int arch, bool* rejected) {
  *rejected = false;
  DiskCacheConfig config = disk_cache_config();
  if (!config.enabled || config.directory.empty()) return std::nullopt;
  std::string bytes;
  if (!read_trusted(cache_file_path(key_text, arch), config.directory, bytes, rejected)) return std::nullopt;
  auto k = deserialize(bytes, key_text);
  *rejected = !k;
  return k;
}
}  // namespace

std::optional<CompiledKernel> read_cached(const std::string& key_text, int arch) {
  bool rejected;
  return read_validated(key_text, arch, &rejected);
}

CompiledKernel load_or_compile(const std::string& key_text, int arch, const std::function<CompiledKernel()>& compile,
                               bool* from_disk) {
  DiskCacheCounters& counters = disk_cache_counters();
  DiskCacheConfig config = disk_cache_config();
  *from_disk = false;
  if (!config.enabled || config.directory.empty()) return compile();
  bool rejected = false;
  if (auto hit = read_validated(key_text, arch, &rejected)) {
    counters.hits++;
    touch_cache_file(cache_file_path(key_text, arch));
    *from_disk = true;
    return *hit;
  }
  if (rejected) counters.rejected++;  // counted once, though the file is read again under the lock
  const Trust trust = directory_trust(config.directory);
  if (!trust.ok) {  // nothing is read from it (above) nor written to it
    warn_untrusted("the directory " + config.directory + " " + trust.why);
    counters.misses++;
    return compile();
  }
  if (!make_cache_dirs(config.directory)) {
    warn_once("cannot create the cache directory " + config.directory + " (" + std::strerror(errno) + ")");
    counters.misses++;
    return compile();
  }
  std::string path = cache_file_path(key_text, arch);
  FileLock lock(path + ".lock");
  if (lock.held()) {
    // Another process may have compiled it while this one waited.
    if (auto hit = read_cached(key_text, arch)) {
      counters.hits++;
      *from_disk = true;
      return *hit;
    }
  }
  counters.misses++;
  CompiledKernel k = compile();
  if (write_atomically(path, serialize(k))) {
    counters.writes++;
    const int64_t cap = cache_max_bytes_from_env();
    if (cap >= 0) prune_cache_directory(config.directory, cap);
  } else
    warn_once("cannot write to the cache directory " + config.directory + " (" + std::strerror(errno) + ")");
  return k;
}

}  // namespace jitops
