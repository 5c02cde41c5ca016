#include "runtime/index_errors.h"

#include <atomic>

#include "runtime/arg_error.h"
#include "runtime/device_context.h"
#include "runtime/ops/gather_ops.h"

namespace jitops {
namespace {
std::atomic<IndexCheckMode> g_mode{IndexCheckMode::Async};
}

void set_index_check_mode(IndexCheckMode mode) { g_mode = mode; }
IndexCheckMode index_check_mode() { return g_mode; }

std::optional<std::string> take_index_error(int device) {
  IndexErrorSlot* slot = device_context(device).error_slot_host();
  volatile IndexErrorSlot* s = slot;
  if (s->flag == 0) return std::nullopt;
  std::string msg = std::string(op_name(s->op_code)) + ": index " + std::to_string(s->value) +
                    " is out of range for a dimension of size " + std::to_string(s->bound) + " (valid: " +
                    (s->op_code == kOpTake ? "[-" + std::to_string(s->bound) + ", " : std::string("[0, ")) +
                    std::to_string(s->bound) + ")); out-of-range elements were not read, and the output holds zeros there";
  s->value = 0;
  s->bound = 0;
  s->op_code = 0;
  s->flag = 0;
  return msg;
}

void raise_pending_index_error(int device) {
  if (auto msg = take_index_error(device)) throw index_error(*msg);
}

}  // namespace jitops
