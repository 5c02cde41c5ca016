// Out-of-range indices found by kernels, raised on the host as IndexError.
//
// Kernels write the bad index with the lowest position into the device's
// IndexErrorSlot (mapped host memory). In "sync" mode the op waits for its
// stream and raises at once; in "async" mode (the default) the slot is read,
// without waiting, at the start of the next jitops call on that device and by
// synchronize(). In "off" mode kernels get no slot: a bad index is still
// neither read nor written, but nothing is recorded or raised.
#pragma once
#include <optional>
#include <string>

namespace jitops {

enum class IndexCheckMode { Async, Sync, Off };

void set_index_check_mode(IndexCheckMode mode);
IndexCheckMode index_check_mode();
// "async" / "sync" / "off", and back; ValueError naming `mode` otherwise.
IndexCheckMode parse_index_check_mode(const std::string& mode);
const char* index_check_mode_name(IndexCheckMode mode);

// An error a kernel recorded: a bad index (IndexError), or a histc range
// found in the data that is not finite (ValueError).
struct DeviceError {
  std::string message;
  bool value_error = false;
};

// The error recorded on `device`, clearing the slot; or nothing.
std::optional<DeviceError> take_device_error(int device);

// Throws ArgError (Index or Value) when the slot of `device` holds an error.
void raise_pending_index_error(int device);

}  // namespace jitops
