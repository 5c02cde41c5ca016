#include "runtime/index_errors.h"

#include <atomic>
#include <cstring>
#include <thread>

#include "runtime/arg_error.h"
#include "runtime/device_context.h"
#include "runtime/op_codes.h"

namespace jitops {
namespace {
std::atomic<IndexCheckMode> g_mode{IndexCheckMode::Async};
}

void set_index_check_mode(IndexCheckMode mode) { g_mode = mode; }
IndexCheckMode index_check_mode() { return g_mode; }

IndexCheckMode parse_index_check_mode(const std::string& mode) {
  if (mode == "async") return IndexCheckMode::Async;
  if (mode == "sync") return IndexCheckMode::Sync;
  if (mode == "off") return IndexCheckMode::Off;
  throw value_error("mode: expected 'async', 'sync' or 'off' (got '" + mode + "')");
}

const char* index_check_mode_name(IndexCheckMode mode) {
  switch (mode) {
    case IndexCheckMode::Sync: return "sync";
    case IndexCheckMode::Off: return "off";
    default: return "async";
  }
}

namespace {

// histc records its automatic range (as double bits) when it is not finite.
std::string histc_message(int64_t lo_bits, int64_t hi_bits) {
  double lo, hi;
  std::memcpy(&lo, &lo_bits, sizeof lo);
  std::memcpy(&hi, &hi_bits, sizeof hi);
  if (lo_bits == 0 && hi_bits == 0)
    return "histc: the range found in the data is not finite (every value is NaN); the output holds zeros";
  return "histc: the range [" + std::to_string(lo) + ", " + std::to_string(hi) +
         "] found in the data is not finite; the output holds zeros";
}

std::string index_message(int op_code, int64_t position, int64_t value, int64_t bound) {
  if (op_code >= kOpUserBase)
    return std::string(op_name(op_code)) + ": jitops::check_index found " + std::to_string(value) + " at position " +
           std::to_string(position) + " (the lowest position reported), out of range for a bound of " +
           std::to_string(bound) + " (valid: [0, " + std::to_string(bound) + "))";
  const bool wraps = op_code == kOpTake;
  const char* arg = wraps ? "indices" : "index";
  const std::string lo = wraps ? "-" + std::to_string(bound) : "0";
  return std::string(op_name(op_code)) + ": " + arg + " holds " + std::to_string(value) + " at position " +
         std::to_string(position) + " (the first bad one, counting in C order), out of range for a dimension of "
         "size " + std::to_string(bound) + " (valid: [" + lo + ", " + std::to_string(bound) + ")); out-of-range " +
         "elements were neither read nor written" + (op_code <= kOpGather ? ", and the output holds zeros there" : "");
}

struct SlotCopy {
  int32_t op_code;
  int64_t position, value, bound;
};

// A consistent copy of a report (a kernel may be writing it: seq is odd then,
// or changes under the read), or nothing when the slot is clean or stays busy.
std::optional<SlotCopy> read_slot(volatile IndexErrorSlot* s) {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const uint32_t seq = s->seq;
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s->flag == 0 && (seq & 1) == 0) return std::nullopt;
    if ((seq & 1) == 0) {
      SlotCopy c{s->op_code, s->position, s->value, s->bound};
      std::atomic_thread_fence(std::memory_order_acquire);
      if (s->seq == seq) return c;
    }
    std::this_thread::yield();
  }
  return std::nullopt;  // still being written: the next check sees it
}

}  // namespace

std::optional<DeviceError> take_device_error(int device) {
  volatile IndexErrorSlot* s = device_context(device).error_slot_host();
  if (s->flag == 0) return std::nullopt;
  std::optional<SlotCopy> c = read_slot(s);
  if (!c) return std::nullopt;
  s->epoch = s->epoch + 1;  // kernels' position hints from before no longer apply
  s->flag = 0;
  const bool histc = c->op_code == kOpHistc;
  return DeviceError{histc ? histc_message(c->value, c->bound) : index_message(c->op_code, c->position, c->value, c->bound),
                     histc};
}

void raise_pending_index_error(int device) {
  if (auto e = take_device_error(device)) throw e->value_error ? value_error(e->message) : index_error(e->message);
}

}  // namespace jitops
