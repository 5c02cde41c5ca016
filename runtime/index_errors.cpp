#include "runtime/index_errors.h"

#include <atomic>
#include <cstring>

#include "runtime/arg_error.h"
#include "runtime/device_context.h"
#include "runtime/ops/gather_ops.h"

namespace jitops {
namespace {
std::atomic<IndexCheckMode> g_mode{IndexCheckMode::Async};
}

void set_index_check_mode(IndexCheckMode mode) { g_mode = mode; }
IndexCheckMode index_check_mode() { return g_mode; }

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

}  // namespace

std::optional<DeviceError> take_device_error(int device) {
  IndexErrorSlot* slot = device_context(device).error_slot_host();
  volatile IndexErrorSlot* s = slot;
  if (s->flag == 0) return std::nullopt;
  const bool histc = s->op_code == kOpHistc;
  std::string msg = histc ? histc_message(s->value, s->bound) : std::string(op_name(s->op_code)) + ": index " + std::to_string(s->value) +
                    " is out of range for a dimension of size " + std::to_string(s->bound) + " (valid: " +
                    (s->op_code == kOpTake ? "[-" + std::to_string(s->bound) + ", " : std::string("[0, ")) +
                    std::to_string(s->bound) + ")); out-of-range elements were not read, and the output holds zeros there";
  s->value = 0;
  s->bound = 0;
  s->op_code = 0;
  s->flag = 0;
  return DeviceError{msg, histc};
}

void raise_pending_index_error(int device) {
  if (auto e = take_device_error(device)) throw e->value_error ? value_error(e->message) : index_error(e->message);
}

}  // namespace jitops
