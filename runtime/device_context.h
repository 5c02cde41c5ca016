// One CUDA device as jitops uses it: its primary context (the one PyTorch and
// CuPy share), the facts launch planning needs, and its index-error slot.
#pragma once
#include <cuda.h>

#include <cstdint>
#include <string>

#include "jitops/index_errors.h"

namespace jitops {

// What planning and compiling need to know of a GPU. Filled from the device,
// or from an architecture name alone when explaining with no GPU.
struct DeviceInfo {
  int ordinal = -1;  // -1: no device (explain with an arch only)
  int cc_major = 9;
  int cc_minor = 0;
  int sm_count = 132;
  int max_threads_per_sm = 2048;
  int shared_per_sm = 233472;      // bytes of shared memory on one SM
  int shared_per_block_optin = 232448;  // the most one block may opt in to
  int64_t l2_bytes = int64_t(50) << 20;  // the L2 cache
  std::string name = "no device";
  int driver_version = 0;  // cuDriverGetVersion; 0 with no device
  uint64_t tuning_id = 0;  // names (GPU, arch, driver) in tuning keys: see runtime/tuning.h


  int arch() const { return cc_major * 10 + cc_minor; }
  // Writes spread over more than this leave the L2 before their sectors fill
  // (the scatter walk order, the row sums' choice).
  bool past_half_l2(int64_t bytes) const { return bytes > l2_bytes / 2; }
};

// DeviceInfo for "sm_XY" with no GPU; SM count of a typical part of that arch.
DeviceInfo device_info_for_arch(int arch);

class DeviceContext {
 public:
  explicit DeviceContext(int ordinal);
  ~DeviceContext();
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  // Makes this device's primary context current on the calling thread.
  void make_current() const;
  const DeviceInfo& info() const { return info_; }
  IndexErrorSlot* error_slot_host() const { return error_host_; }
  IndexErrorSlot* error_slot_device() const { return error_device_; }

 private:
  DeviceInfo info_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  IndexErrorSlot* error_host_ = nullptr;
  IndexErrorSlot* error_device_ = nullptr;
};

// The context of device `ordinal`, created on first use; valid until exit.
DeviceContext& device_context(int ordinal);

int device_count();

}  // namespace jitops
