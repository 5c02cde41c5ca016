// Failures of the CUDA driver, carried as C++ exceptions up to the binding
// layer, which turns them into jitops.CudaError.
#pragma once
#include <stdexcept>
#include <string>

namespace jitops {

class CudaFailure : public std::runtime_error {
 public:
  CudaFailure(std::string call, int code, std::string name, std::string message)
      : std::runtime_error(call + " failed: " + name + " (" + std::to_string(code) + "): " + message),
        call_(std::move(call)), code_(code), name_(std::move(name)), message_(std::move(message)) {}
  const std::string& call() const { return call_; }
  int code() const { return code_; }
  const std::string& name() const { return name_; }
  const std::string& message() const { return message_; }

 private:
  std::string call_;
  int code_;
  std::string name_;
  std::string message_;
};

// Device memory for an output or scratch could not be allocated (raised as
// Python's MemoryError; PyTorch outputs come from PyTorch's allocator, which
// raises its own torch.OutOfMemoryError).
class OutOfDeviceMemory : public std::runtime_error {
 public:
  OutOfDeviceMemory(size_t bytes, int device, const std::string& what)
      : std::runtime_error("jitops: out of memory on cuda:" + std::to_string(device) + " allocating " +
                           std::to_string(bytes) + " bytes for " + what +
                           " (free memory, use smaller inputs, or let PyTorch's caching allocator release some: "
                           "torch.cuda.empty_cache())") {}
};

// Throws OutOfDeviceMemory for CUDA_ERROR_OUT_OF_MEMORY, CudaFailure for any other error.
void check_allocation(int result, size_t bytes, int device, const char* what, const char* call);

// The driver or NVRTC library could not be found or lacks a symbol.
class LibraryUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace jitops
