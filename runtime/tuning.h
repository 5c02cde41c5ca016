// Launch configurations per (kernel traits, shape bucket, GPU). A planner
// describes what its launch depends on as a TuningPoint and passes its
// heuristic default; resolve_tuning() returns that default unless tuning
// measured a better configuration for the point, or a tuning run forces one.
//
// Measured results live in memory (a hash table read under a shared lock)
// and, per GPU, in one text file of the cache directory that jitops.tune()
// writes (python/jitops/tuning.py) and this file reads the first time a
// device is planned for.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "jit/kernel_spec.h"
#include "runtime/device_context.h"
#include "runtime/launch_shape.h"

namespace jitops {

enum class ConfigOrigin : uint8_t { Heuristic, Tuned, Forced };
const char* config_origin_name(ConfigOrigin origin);

struct TuningPoint {
  KernelFamily family = KernelFamily::Gather;
  std::array<int32_t, 6> traits{};  // what selects the code before launch choices (element size, op, ...)
  std::array<int8_t, 3> bucket{};   // ceil(log2) of the sizes the launch depends on
};

// ceil(log2(n)) (0 for n <= 1): nearby shapes share a bucket and its result.
int8_t size_bucket(int64_t n);

// Stable across processes: the point's hash, written to the tuning file.
uint64_t point_hash(const TuningPoint& point);
std::string describe_point(const TuningPoint& point);
// A point hash as the tuning file and explain() spell it: 16 hex digits.
std::string point_hex(uint64_t point);

struct ResolvedTuning {
  LaunchTuning config;
  ConfigOrigin origin = ConfigOrigin::Heuristic;
  uint64_t point = 0;  // point_hash
};

ResolvedTuning resolve_tuning(const TuningPoint& point, const DeviceInfo& device, const LaunchTuning& heuristic);

// The configurations tuning times for a family (the heuristic default is
// timed too). Planners accept every one of them.
std::vector<LaunchTuning> tuning_candidates(KernelFamily family);
// "threads=256 unroll=4 waves=16 vector=16", and back (false: malformed or out
// of range). "heuristic" (threads 0) records that the planner's default won.
std::string config_id(const LaunchTuning& config);
bool parse_config_id(const std::string& text, LaunchTuning& config);

// The in-memory table: point hash + device -> best configuration.
void set_tuned(const DeviceInfo& device, uint64_t point, const LaunchTuning& config);
void clear_tuned();  // forgets every result and every loaded file (tests, reload)
size_t tuned_count();

// Tuning runs force one configuration on the calling thread and record the
// points the planners resolved (ForcedTuning with no config records only).
struct RecordedPoint {
  uint64_t point;
  std::string description;
  LaunchTuning heuristic;
  LaunchTuning used;
  ConfigOrigin origin;
};
class TuningRun {
 public:
  explicit TuningRun(const LaunchTuning* forced);
  ~TuningRun();
  std::vector<RecordedPoint> take_recorded();

 private:
  const void* saved_;
};

// Autotuning: when on, a call that resolves a point with no result (and not
// tried before in this process) leaves a request on its thread, which the
// Python entry point takes after the call and answers by tuning it.
void set_autotune(bool on);
bool autotune_enabled();
bool take_autotune_request();
// Points a tuning run covered, or failed on, are not requested again.
void mark_attempted(const DeviceInfo& device, uint64_t point);
bool inside_tuning_run();

// Persistence: the file of `device`'s results under the cache directory
// ("" when the disk cache is off), and the jitops version it is keyed by.
void set_tuning_version(const std::string& version);
std::string tuning_file_path(const DeviceInfo& device);
// A hash of (GPU name, architecture, driver version) for DeviceInfo::tuning_id.
uint64_t device_tuning_id(const DeviceInfo& device);

}  // namespace jitops
