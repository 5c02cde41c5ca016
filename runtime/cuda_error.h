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

// The driver or NVRTC library could not be found or lacks a symbol.
class LibraryUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace jitops
