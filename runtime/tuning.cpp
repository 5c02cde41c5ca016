#include "runtime/tuning.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <climits>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "jit/cache_trust.h"
#include "jit/disk_cache.h"

namespace jitops {
namespace {

constexpr uint64_t kFnvOffset = 1469598103934665603ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

uint64_t fnv(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xFF)) * kFnvPrime;
  return h;
}

uint64_t table_key(const DeviceInfo& device, uint64_t point) { return fnv(fnv(kFnvOffset, device.tuning_id), point); }

struct Table {
  std::shared_mutex mutex;
  std::unordered_map<uint64_t, LaunchTuning> best;
  std::unordered_set<uint64_t> attempted;   // autotuning asked once per point and device
  std::unordered_set<uint64_t> loaded;      // devices (tuning_id) whose file was read
  std::atomic<size_t> size{0};
  std::string version = "0";
};
Table& table() {
  static Table* t = new Table();  // never destroyed: planners may run during interpreter exit
  return *t;
}

std::atomic<bool> g_autotune{false};

struct RunState {
  const LaunchTuning* forced = nullptr;
  std::vector<RecordedPoint> recorded;
};
thread_local RunState* t_run = nullptr;
thread_local bool t_autotune_request = false;

// Reads `device`'s file: lines "point-hex<TAB>config<TAB>median-us<TAB>description";
// the fastest valid configuration of each point wins.
void load_file(const DeviceInfo& device, Table& t) {
  const std::string path = tuning_file_path(device);
  if (path.empty()) return;
  // Only a file the cache trusts (jit/cache_trust.h): a planted one could pick launches that misbehave.
  bool untrusted = false;
  std::string why;
  const int fd = open_trusted(path, path.substr(0, path.rfind('/')), O_RDONLY, &untrusted, &why, true);
  if (untrusted) {
    disk_cache_counters().rejected++;
    warn_untrusted(why);
  }
  if (fd < 0) return;
  std::string text;
  char buffer[65536];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof(buffer))) > 0;) text.append(buffer, size_t(n));
  ::close(fd);
  std::istringstream in(text);
  std::unordered_map<uint64_t, std::pair<double, LaunchTuning>> fastest;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string hex, config_text, us_text;
    if (!std::getline(fields, hex, '\t') || !std::getline(fields, config_text, '\t') ||
        !std::getline(fields, us_text, '\t'))
      continue;
    LaunchTuning config;
    char* end = nullptr;
    const uint64_t point = std::strtoull(hex.c_str(), &end, 16);
    if (end == hex.c_str() || *end) continue;
    const double us = std::strtod(us_text.c_str(), &end);
    if (end == us_text.c_str() || !(us > 0) || !parse_config_id(config_text, config)) continue;
    auto it = fastest.find(point);
    if (it == fastest.end() || us < it->second.first) fastest[point] = {us, config};
  }
  for (const auto& [point, entry] : fastest) t.best[table_key(device, point)] = entry.second;
}

// Devices whose file was read, for the per-call check without a lock.
constexpr int kFastLoaded = 8;
std::atomic<uint64_t> g_loaded_fast[kFastLoaded];

void ensure_loaded(const DeviceInfo& device) {
  for (auto& slot : g_loaded_fast)
    if (slot.load(std::memory_order_acquire) == device.tuning_id) return;
  Table& t = table();
  std::unique_lock<std::shared_mutex> lock(t.mutex);
  if (t.loaded.insert(device.tuning_id).second) {
    load_file(device, t);
    t.size = t.best.size();
  }
  for (auto& slot : g_loaded_fast) {
    uint64_t empty = 0;
    if (slot.load() == device.tuning_id || slot.compare_exchange_strong(empty, device.tuning_id)) break;
  }
}

std::string slug(const std::string& text) {
  std::string s;
  for (char c : text) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '.') ? c : '-';
  return s;
}

bool in_range(int v, int lo, int hi) { return v >= lo && v <= hi; }

// A fixed configuration: tuned and forced ones never adapt unroll to the grid.
LaunchTuning fixed_config(int threads, int unroll, int waves, int vector) {
  LaunchTuning c;
  c.threads = threads;
  c.unroll = unroll;
  c.waves = waves;
  c.vector_bytes = vector;
  c.adapt_unroll = false;
  return c;
}

}  // namespace

const char* config_origin_name(ConfigOrigin origin) {
  switch (origin) {
    case ConfigOrigin::Tuned: return "tuned";
    case ConfigOrigin::Forced: return "forced";
    default: return "heuristic";
  }
}

int8_t size_bucket(int64_t n) {
  int8_t b = 0;
  while (b < 62 && (int64_t(1) << b) < n) ++b;
  return b;
}

uint64_t point_hash(const TuningPoint& p) {
  uint64_t h = fnv(kFnvOffset, uint64_t(p.family));
  for (int32_t v : p.traits) h = fnv(h, uint32_t(v));
  for (int8_t v : p.bucket) h = fnv(h, uint8_t(v));
  return h;
}

std::string describe_point(const TuningPoint& p) {
  std::string s = family_info(p.family).name;
  s += " traits=";
  for (size_t i = 0; i < p.traits.size(); ++i) s += (i ? "," : "") + std::to_string(p.traits[i]);
  s += " sizes~2^";
  for (size_t i = 0; i < p.bucket.size(); ++i) s += (i ? ",2^" : "") + std::to_string(int(p.bucket[i]));
  return s;
}

std::string point_hex(uint64_t point) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(point));
  return text;
}

ResolvedTuning resolve_tuning(const TuningPoint& point, const DeviceInfo& device, const LaunchTuning& heuristic) {
  ensure_loaded(device);
  ResolvedTuning r;
  r.point = point_hash(point);
  r.config = heuristic;
  Table& t = table();
  if (t_run && t_run->forced) {
    r.config = *t_run->forced;
    r.config.adapt_unroll = false;
    r.origin = ConfigOrigin::Forced;
  } else {
    bool found = false;
    const bool any_tuned = t.size.load(std::memory_order_relaxed) != 0;
    const bool autotune = g_autotune.load(std::memory_order_relaxed) && !t_run;
    const uint64_t key = any_tuned || autotune ? table_key(device, r.point) : 0;  // the common case skips it
    if (any_tuned) {
      std::shared_lock<std::shared_mutex> lock(t.mutex);
      auto it = t.best.find(key);
      if ((found = it != t.best.end()) && it->second.threads) r.config = it->second;
    }
    if (found) {
      r.origin = ConfigOrigin::Tuned;  // stored configurations are fixed (adapt_unroll off); "heuristic" stays as planned
    } else if (autotune) {
      std::shared_lock<std::shared_mutex> lock(t.mutex);
      if (!t.attempted.count(key)) t_autotune_request = true;
    }
  }
  if (t_run) t_run->recorded.push_back({r.point, describe_point(point), heuristic, r.config, r.origin});
  return r;
}

std::vector<LaunchTuning> tuning_candidates(KernelFamily family) {
  std::vector<LaunchTuning> out;
  auto add = [&](int threads, int unroll, int waves, int vector) {
    out.push_back(fixed_config(threads, unroll, waves, vector));
  };
  switch (family) {
    case KernelFamily::Gather:
    case KernelFamily::Scatter:
      for (int threads : {128, 256, 512})
        for (int unroll : {1, 2, 4, 8})
          for (int waves : {4, 16}) add(threads, unroll, waves, 16);
      add(256, 4, 16, 8);
      add(256, 4, 16, 4);
      break;
    // unroll: items (dense layouts: packs) in flight a thread; tiled layouts take a tile of
    // 4 elements a thread, so threads choose the tile (256: 32 x 32, 1024: 64 x 64), unroll and vector unused
    case KernelFamily::Elementwise:
      for (int threads : {128, 256, 512, 1024})
        for (int waves : {4, 8, 32})
          for (int vector : {16, 8})
            for (int unroll : {1, 2, 4}) add(threads, unroll, waves, vector);
      break;
    case KernelFamily::Upsample:
      for (int threads : {128, 256, 512})
        for (int unroll : {1, 2, 4})
          for (int waves : {4, 16}) add(threads, unroll, waves, 16);
      break;
    case KernelFamily::Reduction:  // unroll: steps in flight; waves: how far few outputs split the reduced dims
      for (int threads : {128, 256, 512})
        for (int unroll : {1, 2, 4, 8})
          for (int waves : {1, 2, 4}) add(threads, unroll, waves, 16);
      break;
    case KernelFamily::Histogram:
      // the count kernel's shared sub-histograms are laid out for 256 threads;
      // what varies is how many blocks stay resident per SM
      for (int waves : {1, 2, 4, 8}) add(256, 1, waves, 16);
      break;
    default:
      break;
  }
  return out;
}

std::string config_id(const LaunchTuning& c) {
  if (c.threads == 0) return "heuristic";
  std::string id = "threads=" + std::to_string(c.threads) + " unroll=" + std::to_string(c.unroll) +
                   " waves=" + std::to_string(c.waves) + " vector=" + std::to_string(c.vector_bytes);
  for (int i = 0; i < c.template_count; ++i) id += (i ? "," : " template=") + std::to_string(c.template_values[i]);
  return id;
}

bool parse_config_id(const std::string& text, LaunchTuning& c) {
  if (text == "heuristic") {  // tuning found the planner's own default fastest
    c = LaunchTuning();
    c.threads = 0;
    return true;
  }
  int threads = 0, unroll = 0, waves = 0, vector = 0, used = 0;
  if (std::sscanf(text.c_str(), "threads=%d unroll=%d waves=%d vector=%d%n", &threads, &unroll, &waves, &vector,
                  &used) != 4)
    return false;
  if (!in_range(threads, 32, 1024) || threads % 32 || !in_range(unroll, 1, 16) || !in_range(waves, 1, kUncappedWaves) ||
      (vector != 1 && vector != 2 && vector != 4 && vector != 8 && vector != 16))
    return false;
  LaunchTuning parsed = fixed_config(threads, unroll, waves, vector);
  // " template=4,1": the tunable template arguments of a user's kernel.
  const char* rest = text.c_str() + used;
  if (*rest) {
    if (std::strncmp(rest, " template=", 10) != 0) return false;
    rest += 10;
    for (;;) {
      char* end = nullptr;
      const long v = std::strtol(rest, &end, 10);
      if (end == rest || parsed.template_count == 4 || v < INT32_MIN || v > INT32_MAX) return false;
      parsed.template_values[parsed.template_count++] = int(v);
      if (*end == 0) break;
      if (*end != ',') return false;
      rest = end + 1;
    }
  }
  c = parsed;
  return true;
}

void set_tuned(const DeviceInfo& device, uint64_t point, const LaunchTuning& config) {
  ensure_loaded(device);
  Table& t = table();
  std::unique_lock<std::shared_mutex> lock(t.mutex);
  t.best[table_key(device, point)] = config;
  t.attempted.insert(table_key(device, point));
  t.size = t.best.size();
}

void clear_tuned() {
  Table& t = table();
  std::unique_lock<std::shared_mutex> lock(t.mutex);
  t.best.clear();
  t.attempted.clear();
  t.loaded.clear();
  for (auto& slot : g_loaded_fast) slot = 0;
  t.size = 0;
}

size_t tuned_count() { return table().size.load(); }

TuningRun::TuningRun(const LaunchTuning* forced) : saved_(t_run) {
  t_run = new RunState();
  t_run->forced = forced;
}

TuningRun::~TuningRun() {
  delete t_run;
  t_run = static_cast<RunState*>(const_cast<void*>(saved_));
}

std::vector<RecordedPoint> TuningRun::take_recorded() { return std::move(t_run->recorded); }

void set_autotune(bool on) { g_autotune = on; }
bool autotune_enabled() { return g_autotune.load(); }
bool inside_tuning_run() { return t_run != nullptr; }

bool take_autotune_request() {
  const bool r = t_autotune_request;
  t_autotune_request = false;
  return r;
}

void mark_attempted(const DeviceInfo& device, uint64_t point) {
  Table& t = table();
  std::unique_lock<std::shared_mutex> lock(t.mutex);
  t.attempted.insert(table_key(device, point));
}

void set_tuning_version(const std::string& version) {
  Table& t = table();
  std::unique_lock<std::shared_mutex> lock(t.mutex);
  t.version = version;
}

std::string tuning_file_path(const DeviceInfo& device) {
  const DiskCacheConfig cache = disk_cache_config();
  if (!cache.enabled || cache.directory.empty()) return "";
  return cache.directory + "/tuning/" + slug(device.name) + "-sm" + std::to_string(device.arch()) + "-driver" +
         std::to_string(device.driver_version) + "-jitops" + slug(table().version) + ".tsv";
}

uint64_t device_tuning_id(const DeviceInfo& device) {
  uint64_t h = kFnvOffset;
  for (char c : device.name) h = fnv(h, uint8_t(c));
  return fnv(fnv(h, uint64_t(device.arch())), uint64_t(device.driver_version));
}

}  // namespace jitops
