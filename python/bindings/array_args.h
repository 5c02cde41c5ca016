// Turning the arrays a caller passed into descriptors, on the per-call path.
//
// PyTorch tensors are read through their attributes (no DLPack round trip);
// anything else on a CUDA device through the DLPack protocol, with the stream
// handshake. Host arrays (numpy, CPU tensors, lists) are not handled here: the
// call raises HostOperands and the Python layer copies them to the GPU.
#pragma once
#include <pybind11/pybind11.h>

#include <cuda.h>

#include <exception>
#include <optional>
#include <vector>

#include "runtime/tensor_desc.h"

namespace jitops {

enum class ArrayKind : uint8_t { Torch, CuPy, Jax, DeviceArray, Virtual, DLPack, Host };

// Raised (as jitops._core.HostOperands) when an operand lives in host memory.
struct HostOperands : std::exception {
  const char* what() const noexcept override { return "an operand is in host memory"; }
};

// The most arrays one call parses (a user's template may take this many).
constexpr size_t kMaxCallOperands = 16;

struct OperandArg {
  const char* name;
  pybind11::handle object;
  bool optional = false;  // None allowed (out=)
};

class CallArrays {
 public:
  // Parses every operand; `stream` is the caller's stream= argument.
  CallArrays(std::initializer_list<OperandArg> operands, pybind11::handle stream)
      : CallArrays(operands.begin(), operands.size(), stream) {}
  CallArrays(const OperandArg* operands, size_t count, pybind11::handle stream);
  ~CallArrays();
  CallArrays(const CallArrays&) = delete;
  CallArrays& operator=(const CallArrays&) = delete;

  const TensorDesc& operator[](size_t i) const { return entries_[i].desc; }
  bool present(size_t i) const { return entries_[i].present; }
  ArrayKind kind(size_t i) const { return entries_[i].kind; }
  int device() const { return device_; }  // -1: only virtual arrays
  CUstream stream() const { return stream_; }
  bool is_virtual() const { return virtual_; }
  bool any_torch() const { return any_torch_; }

  // A new output shaped like `shape`, of the caller's array type (that of
  // operand `like`); its descriptor lands in slot `slot`.
  // `memory_order` (outermost first, e.g. {0, 2, 3, 1} for channels-last)
  // lays PyTorch and CuPy outputs out in that order; others stay C-ordered.
  pybind11::object allocate(size_t slot, size_t like, const std::vector<int64_t>& shape, DType dtype,
                            const std::vector<int>& memory_order = {});
  // Checks a caller's out= against the expected shape and dtype, and that it
  // does not overlap the inputs (`allow_same_view`: except an input that is
  // the very same view, which elementwise ops may overwrite).
  void check_out(size_t slot, const std::vector<int64_t>& shape, DType dtype, bool allow_same_view = false) const;
  // Hands a finished output to the caller (JAX outputs are wrapped here; a
  // PyTorch tensor of the caller's that was written gets its version bumped).
  pybind11::object finish(pybind11::object out, size_t slot);

 private:
  struct Entry {
    const char* name = "";
    bool present = false;
    pybind11::object object;
    ArrayKind kind = ArrayKind::Host;
    TensorDesc desc;
    void* managed = nullptr;  // a consumed DLPack tensor to release
    bool allocated = false;   // made by allocate(), not the caller's
  };
  void parse(Entry& e, pybind11::handle obj);
  Entry entries_[kMaxCallOperands];  // inline: no allocation on the per-call path
  size_t count_ = 0;
  int device_ = -1;
  CUstream stream_ = nullptr;
  bool virtual_ = false;
  bool any_torch_ = false;
  bool wrap_for_jax_ = false;
};

ArrayKind classify(pybind11::handle obj);

void bind_array_args(pybind11::module_& m);

}  // namespace jitops
