// jitops' own device memory: a buffer with shape, strides and dtype that
// speaks DLPack both ways. The numpy path copies host arrays into these, and
// results for callers without a framework allocator (JAX, other DLPack
// producers) live in them.
#pragma once
#include <pybind11/pybind11.h>

#include <memory>
#include <vector>

#include "runtime/tensor_desc.h"

namespace jitops {

class DeviceBuffer {
 public:
  DeviceBuffer(int device, size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* data() const { return reinterpret_cast<void*>(ptr_); }
  size_t bytes() const { return bytes_; }
  int device() const { return device_; }

 private:
  int device_;
  size_t bytes_;
  unsigned long long ptr_ = 0;
};

class DeviceArray {
 public:
  DeviceArray(int device, std::vector<int64_t> shape, DType dtype);
  const TensorDesc& desc() const { return desc_; }
  std::vector<int64_t> shape() const { return std::vector<int64_t>(desc_.shape, desc_.shape + desc_.ndim); }
  size_t nbytes() const { return buffer_->bytes(); }
  // The stream whose work last wrote this array; DLPack consumers on another
  // stream wait for it.
  uintptr_t last_stream = 0;
  std::shared_ptr<DeviceBuffer> buffer() const { return buffer_; }

 private:
  std::shared_ptr<DeviceBuffer> buffer_;
  TensorDesc desc_;
};

// A shape and dtype with no memory behind it: what explain() plans for when
// it is given host arrays or asked about an architecture with no GPU.
struct VirtualArray {
  TensorDesc desc;
};

void bind_device_array(pybind11::module_& m);

}  // namespace jitops
