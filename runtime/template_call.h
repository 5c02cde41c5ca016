// jitops.Template on the host: the template arguments a call's arrays give
// (deduction), and the parameter bytes of the jitops::Tensor views they are
// passed as (templates/jitops/tensor.cuh). No Python here: the binding layer
// parses the kernel's signature once and the arrays on every call.
#pragma once
#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/collapse.h"
#include "runtime/tensor_desc.h"

namespace jitops {

constexpr int kNotGiven = INT_MIN;  // a template argument nobody forced
constexpr int kMaxTemplateParams = 16;  // a template's parameters
constexpr int kMaxTemplateArgs = 64;    // a kernel's parameters (LaunchPlan::kMaxKernelParams)

// Template arguments, one per parameter, held inline: a call deduces them
// with no allocation, and they key the template's instances.
struct TemplateValues {
  int count = 0;
  int v[kMaxTemplateParams];

  // `n` parameters, none given.
  static TemplateValues not_given(size_t n) {
    TemplateValues t;
    t.count = int(n);
    std::fill(t.v, t.v + n, kNotGiven);
    return t;
  }
  size_t size() const { return size_t(count); }
  int& operator[](size_t p) { return v[p]; }
  int operator[](size_t p) const { return v[p]; }
  bool operator==(const TemplateValues& o) const { return count == o.count && std::equal(v, v + count, o.v); }
  bool operator<(const TemplateValues& o) const {
    return std::lexicographical_compare(v, v + count, o.v, o.v + o.count);
  }
};

enum class TemplateParamKind : uint8_t {
  Type,   // typename T: an element type, or (used as a Tensor's third argument) an index type
  Int,    // int N: a tensor's Dims, or a value given by the caller or by tuning
};

struct TemplateParamSpec {
  std::string name;
  TemplateParamKind kind = TemplateParamKind::Type;
  int default_value = kNotGiven;  // a DType (types) or an int, from "= ..." in the source
};

// What one of the kernel's parameters refers to: a template parameter, or a
// fixed value (a DType for element types, a rank for dims, 32 or 64 for index).
// A number typed by an index type parameter has value kIndexTyped.
struct TemplateRef {
  static constexpr int kIndexTyped = 1;
  int param = -1;
  int value = 0;
  bool deduced() const { return param >= 0; }
  bool index_typed() const { return param >= 0 && value == kIndexTyped; }
};

// The dtype a scalar argument is passed as, once `values` are deduced.
inline DType scalar_type(const TemplateRef& element, const TemplateValues& values) {
  if (!element.deduced()) return DType(element.value);
  const int v = values[size_t(element.param)];
  if (element.index_typed()) return v == 64 ? DType::Int64 : DType::Int32;
  return DType(v);
}

enum class KernelArgKind : uint8_t { Tensor, Pointer, Scalar };

struct KernelArgSpec {
  std::string name;
  KernelArgKind kind = KernelArgKind::Scalar;
  bool is_const = false;  // a Tensor<const T, ...> or const T*: the kernel does not write it
  TemplateRef element;
  TemplateRef dims;   // tensors
  TemplateRef index;  // tensors
};

struct TemplateSignature {
  std::string kernel;
  std::vector<TemplateParamSpec> params;
  std::vector<KernelArgSpec> args;
};

// One call's argument: an array (tensors, pointers) or a number (scalars).
struct CallArgument {
  const TensorDesc* array = nullptr;
  DType number_type = DType::Int64;  // the type a number has by itself (CuPy's typing)
};

// A tensor argument as the kernel sees it.
struct TensorView {
  int ndim = 1;
  int index_bits = 32;
  int64_t sizes[kMaxDims];
  int64_t strides[kMaxDims];
};

struct Deduction {
  TemplateValues values;              // per template parameter: a DType, an int, or 32 / 64 for an index type
  TensorView views[kMaxTemplateArgs];  // per kernel argument (meaningful for tensors)
};

// Fills every template parameter from `args` (sig.args.size() of them, one per signature argument)
// and `forced` (one per template parameter, kNotGiven where not forced):
// element types from the arrays; a Dims parameter is the dimension count left
// after collapsing every tensor declared with it together (they must share a
// shape); an Index type is int32_t when every offset of its tensors fits in
// 31 bits. Throws ArgError naming the argument or template parameter.
void deduce_template(const TemplateSignature& sig, const CallArgument* args, const TemplateValues& forced,
                     Deduction& d);

// "float", "3", "int32_t": template parameter `p` as the name expression spells it.
std::string spell_template_value(const TemplateSignature& sig, const Deduction& d, int p);
// "scale_gather<float, 1, int32_t>"
std::string template_name_expression(const TemplateSignature& sig, const Deduction& d);
// The CUDA spelling of an element type; ArgError naming `what` for one a kernel cannot take.
std::string element_type_name(DType dtype, const std::string& what);

// Bytes of a jitops::Tensor parameter of `ndim` dims and `index_bits` offsets.
size_t tensor_param_bytes(int ndim, int index_bits);
// Writes the jitops::Tensor of `array` seen through `view` into out[0, tensor_param_bytes).
void write_tensor_param(const TensorDesc& array, const TensorView& view, unsigned char* out);

}  // namespace jitops
