#include "runtime/template_call.h"

#include <algorithm>
#include <cstring>

#include "jitops/fast_divmod.h"
#include "runtime/arg_error.h"

namespace jitops {
namespace {

const char* dtype_name(int d) { return dtype_info(DType(d)).name; }

std::string arg_label(const KernelArgSpec& a) { return a.name; }

// Element types: the first array declared with a type parameter sets it (a
// number only where no array does); every other array must agree.
void deduce_elements(const TemplateSignature& sig, const CallArgument* args, TemplateValues& values, int* set_by) {
  for (int pass = 0; pass < 2; ++pass) {  // arrays first, then numbers
    for (size_t i = 0; i < sig.args.size(); ++i) {
      const KernelArgSpec& a = sig.args[i];
      const bool is_array = a.kind != KernelArgKind::Scalar;
      if (pass == 0 && !is_array) continue;
      if (a.element.index_typed()) continue;  // its width comes from the tensors
      const int got = is_array ? int(args[i].array->dtype) : int(args[i].number_type);
      if (!a.element.deduced()) {
        if (is_array && got != a.element.value)
          throw type_error(arg_label(a) + ": expected dtype " + dtype_name(a.element.value) + " (got " +
                           dtype_name(got) + ")");
        continue;
      }
      const int p = a.element.param;
      if (values[size_t(p)] == kNotGiven) {
        values[size_t(p)] = got;
        set_by[size_t(p)] = int(i);
      } else if (is_array && got != values[size_t(p)]) {
        const std::string like = set_by[size_t(p)] >= 0 ? " like " + sig.args[size_t(set_by[size_t(p)])].name : "";
        throw type_error(arg_label(a) + ": expected dtype " + dtype_name(values[size_t(p)]) + " for " +
                         sig.params[size_t(p)].name + like + " (got " + dtype_name(got) + ")");
      }
    }
  }
}

// Tensors sharing a Dims parameter are collapsed together: adjacent dims
// merge where every one of them is contiguous across the pair, which keeps C
// order (linear position k is the same element of each).
void deduce_dims(const TemplateSignature& sig, const CallArgument* args, int p, TemplateValues& values, Deduction& d) {
  int members[kMaxOperands];
  size_t count = 0;
  for (size_t i = 0; i < sig.args.size(); ++i) {
    if (sig.args[i].kind != KernelArgKind::Tensor || sig.args[i].dims.param != p) continue;
    if (count == size_t(kMaxOperands))
      throw value_error(sig.params[size_t(p)].name + ": at most " + std::to_string(kMaxOperands) +
                        " tensors may share one Dims parameter");
    members[count++] = int(i);
  }
  if (count == 0) return;
  const TensorDesc& first = *args[size_t(members[0])].array;
  for (size_t k = 0; k < count; ++k) {
    const int m = members[k];
    const TensorDesc& t = *args[size_t(m)].array;
    if (t.ndim != first.ndim || !std::equal(t.shape, t.shape + t.ndim, first.shape))
      throw value_error(sig.args[size_t(m)].name + ": expected the shape " + shape_str(first) + " of " +
                        sig.args[size_t(members[0])].name + ", which shares " + sig.params[size_t(p)].name +
                        " with it (got " + shape_str(t) + ")");
  }
  if (values[size_t(p)] != kNotGiven) {  // a Dims the caller fixed: each tensor as it is
    for (size_t k = 0; k < count; ++k) {
      const int m = members[k];
      const TensorDesc& t = *args[size_t(m)].array;
      if (t.ndim != values[size_t(p)])
        throw value_error(sig.args[size_t(m)].name + ": expected " + std::to_string(values[size_t(p)]) +
                          " dims for " + sig.params[size_t(p)].name + "=" + std::to_string(values[size_t(p)]) +
                          " (got " + std::to_string(t.ndim) + ")");
      TensorView& v = d.views[size_t(m)];
      v.ndim = t.ndim;
      std::copy(t.shape, t.shape + t.ndim, v.sizes);
      std::copy(t.strides, t.strides + t.ndim, v.strides);
    }
    return;
  }
  IterationSpace s;
  s.ndim = first.ndim;
  s.operands = int(count);
  std::copy(first.shape, first.shape + first.ndim, s.sizes);
  for (size_t k = 0; k < count; ++k) {
    const TensorDesc& t = *args[size_t(members[k])].array;
    std::copy(t.strides, t.strides + t.ndim, s.strides[k]);
  }
  collapse(s);
  if (s.ndim > kMaxDims)
    throw value_error(sig.args[size_t(members[0])].name + ": at most " + std::to_string(kMaxDims) +
                      " dims after collapsing (got " + std::to_string(s.ndim) + ")");
  values[size_t(p)] = s.ndim;
  for (size_t k = 0; k < count; ++k) {
    TensorView& v = d.views[size_t(members[k])];
    v.ndim = s.ndim;
    std::copy(s.sizes, s.sizes + s.ndim, v.sizes);
    std::copy(s.strides[k], s.strides[k] + s.ndim, v.strides);
  }
}

bool offsets_fit_32_bits(const TensorView& v) {
  int64_t numel = 1, reach = 0;
  for (int i = 0; i < v.ndim; ++i) {
    numel *= v.sizes[i];
    reach += (v.sizes[i] > 0 ? v.sizes[i] - 1 : 0) * (v.strides[i] < 0 ? -v.strides[i] : v.strides[i]);
  }
  constexpr int64_t kLimit = (int64_t(1) << 31) - 1;
  return numel <= kLimit && reach <= kLimit;
}

}  // namespace

void deduce_template(const TemplateSignature& sig, const CallArgument* args, const TemplateValues& forced,
                     Deduction& d) {
  d.values = forced;
  int set_by[kMaxTemplateParams];
  std::fill(set_by, set_by + sig.params.size(), -1);
  deduce_elements(sig, args, d.values, set_by);
  for (size_t p = 0; p < sig.params.size(); ++p)
    if (sig.params[p].kind == TemplateParamKind::Int) deduce_dims(sig, args, int(p), d.values, d);
  // Tensors of a fixed rank keep their own dims.
  for (size_t i = 0; i < sig.args.size(); ++i) {
    const KernelArgSpec& a = sig.args[i];
    if (a.kind != KernelArgKind::Tensor || a.dims.deduced()) continue;
    const TensorDesc& t = *args[i].array;
    if (t.ndim != a.dims.value)
      throw value_error(a.name + ": expected an array of " + std::to_string(a.dims.value) + " dims (got " +
                        std::to_string(t.ndim) + ", shape " + shape_str(t) + ")");
    TensorView& v = d.views[i];
    v.ndim = t.ndim;
    std::copy(t.shape, t.shape + t.ndim, v.sizes);
    std::copy(t.strides, t.strides + t.ndim, v.strides);
  }
  // Index types: 32 bits where every offset of every tensor declared with it fits.
  for (size_t i = 0; i < sig.args.size(); ++i) {
    const KernelArgSpec& a = sig.args[i];
    if (a.kind != KernelArgKind::Tensor) continue;
    const bool fits = offsets_fit_32_bits(d.views[i]);
    if (!a.index.deduced()) {
      if (a.index.value == 32 && !fits)
        throw value_error(a.name + ": its offsets pass 2^31 elements, which a 32-bit index cannot reach "
                          "(declare it with an Index template parameter, or int64_t)");
      continue;
    }
    int& bits = d.values[size_t(a.index.param)];
    if (forced[size_t(a.index.param)] == kNotGiven) bits = (bits == 64 || !fits) ? 64 : 32;
  }
  for (size_t i = 0; i < sig.args.size(); ++i) {
    const KernelArgSpec& a = sig.args[i];
    if (a.kind == KernelArgKind::Tensor)
      d.views[i].index_bits = a.index.deduced() ? d.values[size_t(a.index.param)] : a.index.value;
  }
  for (size_t p = 0; p < sig.params.size(); ++p) {
    if (d.values[p] != kNotGiven) continue;
    if (sig.params[p].default_value != kNotGiven) {
      d.values[p] = sig.params[p].default_value;
      continue;
    }
    throw type_error("template parameter " + sig.params[p].name + " of " + sig.kernel +
                     ": the arrays do not give it; pass template_args={'" + sig.params[p].name + "': ...}");
  }
}

std::string element_type_name(DType dtype, const std::string& what) {
  switch (dtype) {
    case DType::Bool: return "bool";
    case DType::Int8: return "int8_t";
    case DType::UInt8: return "uint8_t";
    case DType::Int16: return "int16_t";
    case DType::UInt16: return "uint16_t";
    case DType::Int32: return "int32_t";
    case DType::UInt32: return "uint32_t";
    case DType::Int64: return "int64_t";
    case DType::UInt64: return "uint64_t";
    case DType::Float16: return "__half";
    case DType::BFloat16: return "__nv_bfloat16";
    case DType::Float32: return "float";
    case DType::Float64: return "double";
    case DType::Complex64: return "float2";
    case DType::Complex128: return "double2";
  }
  throw type_error(what + ": no CUDA type for this dtype");
}

std::string spell_template_value(const TemplateSignature& sig, const Deduction& d, int p) {
  const int v = d.values[size_t(p)];
  if (sig.params[size_t(p)].kind == TemplateParamKind::Int) return std::to_string(v);
  for (const KernelArgSpec& a : sig.args)
    if (a.kind == KernelArgKind::Tensor && a.index.param == p) return v == 64 ? "int64_t" : "int32_t";
  return element_type_name(DType(v), sig.params[size_t(p)].name);
}

std::string template_name_expression(const TemplateSignature& sig, const Deduction& d) {
  std::string e = sig.kernel + "<";
  for (size_t p = 0; p < sig.params.size(); ++p) e += (p ? ", " : "") + spell_template_value(sig, d, int(p));
  return e + ">";
}

size_t tensor_param_bytes(int ndim, int index_bits) {
  // pointer, numel, sizes, strides, dividers (FastDivmod: 3 x 4 bytes; WideDivmod: 8), rounded to 8
  const size_t bytes = index_bits == 64 ? 16 + 24 * size_t(ndim) : 12 + 20 * size_t(ndim);
  return (bytes + 7) / 8 * 8;
}

void write_tensor_param(const TensorDesc& array, const TensorView& v, unsigned char* out) {
  std::memset(out, 0, tensor_param_bytes(v.ndim, v.index_bits));
  std::memcpy(out, &array.data, sizeof(void*));
  int64_t numel = 1;
  for (int i = 0; i < v.ndim; ++i) numel *= v.sizes[i];
  if (v.index_bits == 64) {
    auto* words = reinterpret_cast<int64_t*>(out + 8);
    words[0] = numel;
    for (int i = 0; i < v.ndim; ++i) {
      words[1 + i] = v.sizes[i];
      words[1 + v.ndim + i] = v.strides[i];
      const WideDivmod div(uint64_t(std::max<int64_t>(1, v.sizes[i])));
      std::memcpy(&words[1 + 2 * v.ndim + i], &div, sizeof(div));
    }
    return;
  }
  auto* words = reinterpret_cast<int32_t*>(out + 8);
  words[0] = int32_t(numel);
  for (int i = 0; i < v.ndim; ++i) {
    words[1 + i] = int32_t(v.sizes[i]);
    words[1 + v.ndim + i] = int32_t(v.strides[i]);
    const FastDivmod div(uint32_t(std::max<int64_t>(1, v.sizes[i])));
    std::memcpy(&words[1 + 2 * v.ndim + 3 * i], &div, sizeof(div));
  }
}

}  // namespace jitops
