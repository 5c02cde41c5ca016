// Out-of-range indices found by kernels, raised on the host as IndexError.
//
// Kernels write one offending value into the device's IndexErrorSlot (mapped
// host memory). In "sync" mode the op waits for its stream and raises at
// once; in "async" mode (the default) the slot is read, without waiting, at
// the start of the next jitops call on that device and by synchronize().
#pragma once
#include <optional>
#include <string>

namespace jitops {

enum class IndexCheckMode { Async, Sync };

void set_index_check_mode(IndexCheckMode mode);
IndexCheckMode index_check_mode();

// The message of a recorded bad index on `device`, clearing the slot; or nothing.
std::optional<std::string> take_index_error(int device);

// Throws ArgError(Index) when the slot of `device` holds an error.
void raise_pending_index_error(int device);

}  // namespace jitops
