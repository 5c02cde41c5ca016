#include "python/bindings/array_args.h"

#include <pybind11/stl.h>

#include <unordered_map>
#include <string>

#include "python/bindings/device_array.h"
#include "python/bindings/dlpack_abi.h"
#include "python/bindings/torch_tensors.h"
#include "runtime/arg_error.h"

namespace py = pybind11;

namespace jitops {
namespace {

std::string type_name(py::handle obj) { return py::str(py::type::handle_of(obj).attr("__qualname__")); }

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Types are kept alive by the map so an address is never reused for another type.
std::unordered_map<PyObject*, std::pair<py::object, ArrayKind>>& kind_cache() {
  static auto* cache = new std::unordered_map<PyObject*, std::pair<py::object, ArrayKind>>();
  return *cache;
}

ArrayKind classify_type(py::handle type) {
  if (type.is(py::type::of<DeviceArray>())) return ArrayKind::DeviceArray;
  if (type.is(py::type::of<VirtualArray>())) return ArrayKind::Virtual;
  std::string module = py::hasattr(type, "__module__") ? py::str(type.attr("__module__")).cast<std::string>() : "";
  if (starts_with(module, "torch") && py::hasattr(type, "data_ptr")) return ArrayKind::Torch;
  if (starts_with(module, "numpy")) return ArrayKind::Host;
  bool dl = py::hasattr(type, "__dlpack__") && py::hasattr(type, "__dlpack_device__");
  if (dl && starts_with(module, "cupy")) return ArrayKind::CuPy;
  if (dl && (starts_with(module, "jax") || starts_with(module, "jaxlib"))) return ArrayKind::Jax;
  return dl ? ArrayKind::DLPack : ArrayKind::Host;
}

py::object& outputs_module() {
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::object> storage;
  return storage.call_once_and_store_result([] { return py::object(py::module_::import("jitops._outputs")); })
      .get_stored();
}

const char* kind_name(ArrayKind k) {
  switch (k) {
    case ArrayKind::Torch: return "torch";
    case ArrayKind::CuPy: return "cupy";
    case ArrayKind::Jax: return "jax";
    case ArrayKind::DeviceArray: return "jitops";
    case ArrayKind::Virtual: return "virtual";
    case ArrayKind::DLPack: return "dlpack";
    case ArrayKind::Host: return "host";
  }
  return "?";
}

CUstream parse_stream(py::handle stream) {
  if (py::isinstance<py::int_>(stream)) return reinterpret_cast<CUstream>(stream.cast<uintptr_t>());
  if (py::hasattr(stream, "__cuda_stream__")) {
    py::tuple t = stream.attr("__cuda_stream__")();
    return reinterpret_cast<CUstream>(t[1].cast<uintptr_t>());
  }
  if (py::hasattr(stream, "cuda_stream")) return reinterpret_cast<CUstream>(stream.attr("cuda_stream").cast<uintptr_t>());
  if (py::hasattr(stream, "ptr")) return reinterpret_cast<CUstream>(stream.attr("ptr").cast<uintptr_t>());
  throw type_error("stream: expected an int handle, a torch.cuda.Stream, a cupy Stream or an object with "
                   "__cuda_stream__ (got " + type_name(stream) + ")");
}

bool ranges_overlap(const TensorDesc& a, const TensorDesc& b) {
  if (a.numel() == 0 || b.numel() == 0) return false;
  auto range = [](const TensorDesc& t, intptr_t& lo, intptr_t& hi) {
    intptr_t base = reinterpret_cast<intptr_t>(t.data);
    int64_t neg = 0, pos = 0;
    for (int i = 0; i < t.ndim; ++i) {
      int64_t ext = (t.shape[i] - 1) * t.strides[i];
      (ext < 0 ? neg : pos) += ext;
    }
    lo = base + intptr_t(neg) * t.element_bytes();
    hi = base + intptr_t(pos + 1) * t.element_bytes();
  };
  intptr_t alo, ahi, blo, bhi;
  range(a, alo, ahi);
  range(b, blo, bhi);
  return alo < bhi && blo < ahi;
}

}  // namespace

ArrayKind classify(py::handle obj) {
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(obj.ptr()));
  auto& cache = kind_cache();
  auto it = cache.find(type);
  if (it != cache.end()) return it->second.second;
  ArrayKind k = classify_type(type);
  cache.emplace(type, std::make_pair(py::reinterpret_borrow<py::object>(type), k));
  return k;
}

CallArrays::CallArrays(const OperandArg* operand_list, size_t count, py::handle stream) {
  if (count > kMaxCallOperands) throw std::logic_error("CallArrays: too many operands");
  count_ = count;
  struct Range {
    const OperandArg* b;
    const OperandArg* e;
    const OperandArg* begin() const { return b; }
    const OperandArg* end() const { return e; }
  } operands{operand_list, operand_list + count};
  // Phase 1: kinds and devices, before anything is exported.
  size_t i = 0;
  bool any_torch = false, any_cupy = false, host = false;
  const char* device_from = nullptr;
  for (const OperandArg& op : operands) {
    Entry& e = entries_[i++];
    e.name = op.name;
    if (op.object.is_none()) {
      if (!op.optional) throw type_error(std::string(op.name) + ": expected an array (got None)");
      continue;
    }
    e.present = true;
    e.object = py::reinterpret_borrow<py::object>(op.object);
    e.kind = classify(op.object);
    int dev = -1;
    switch (e.kind) {
      case ArrayKind::Host:
        host = true;  // raised once every PyTorch operand had its say (one may require grad)
        continue;
      case ArrayKind::Torch:
        check_torch_route(op.object.ptr());
        dev = torch_device(op.object.ptr());
        if (dev < 0) {
          host = true;
          continue;
        }
        any_torch = true;
        break;
      case ArrayKind::DeviceArray:
        dev = op.object.cast<const DeviceArray&>().desc().device;
        break;
      case ArrayKind::Virtual:
        virtual_ = true;
        continue;
      default: {
        py::tuple d = op.object.attr("__dlpack_device__")();
        int type = d[0].cast<int>();
        if (type == dlpack::kCPU || type == dlpack::kCUDAHost) {
          host = true;
          continue;
        }
        if (type != dlpack::kCUDA && type != dlpack::kCUDAManaged)
          throw value_error(std::string(op.name) + ": expected a CUDA or host array (got DLPack device type " +
                            std::to_string(type) + ")");
        dev = d[1].cast<int>();
        any_cupy = any_cupy || e.kind == ArrayKind::CuPy;
      }
    }
    if (device_from && dev != device_)
      throw value_error(std::string(op.name) + ": expected an array on cuda:" + std::to_string(device_) + " like " +
                        device_from + " (got cuda:" + std::to_string(dev) + ")");
    if (!device_from) {  // messages name the first array that set the device
      device_ = dev;
      device_from = op.name;
    }
  }
  if (host) throw HostOperands();
  any_torch_ = any_torch;
  // Phase 2: the stream the kernels run on, and the DLPack handshake value.
  if (!stream.is_none()) {
    stream_ = parse_stream(stream);
  } else if (any_torch) {
    stream_ = torch_current_stream(device_);
  } else if (any_cupy) {
    stream_ = reinterpret_cast<CUstream>(
        py::module_::import("cupy").attr("cuda").attr("get_current_stream")().attr("ptr").cast<uintptr_t>());
  }
  uintptr_t handshake = stream_ == nullptr ? 1 : reinterpret_cast<uintptr_t>(stream_);
  // Phase 3: descriptors.
  i = 0;
  for (const OperandArg& op : operands) {
    Entry& e = entries_[i++];
    if (!e.present) continue;
    e.desc.device = device_;
    switch (e.kind) {
      case ArrayKind::Torch:
        torch_describe(op.object.ptr(), op.name, e.desc);
        break;
      case ArrayKind::DeviceArray:
        e.desc = op.object.cast<const DeviceArray&>().desc();
        break;
      case ArrayKind::Virtual:
        e.desc = op.object.cast<const VirtualArray&>().desc;
        break;
      default: {
        py::object cap = op.object.attr("__dlpack__")(py::arg("stream") = handshake);
        auto* m = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
        if (!m) throw py::error_already_set();
        PyCapsule_SetName(cap.ptr(), "used_dltensor");
        e.managed = m;
        const dlpack::Tensor& t = m->dl_tensor;
        if (!dtype_from_dlpack(t.dtype.code, t.dtype.bits, t.dtype.lanes, &e.desc.dtype))
          throw type_error(std::string(op.name) + ": unsupported DLPack dtype (got code " + std::to_string(t.dtype.code) +
                           ", " + std::to_string(t.dtype.bits) + " bits, " + std::to_string(t.dtype.lanes) + " lanes)");
        if (t.ndim > kMaxTensorDims)
          throw value_error(std::string(op.name) + ": at most " + std::to_string(kMaxTensorDims) + " dimensions (got " +
                            std::to_string(t.ndim) + ")");
        e.desc.ndim = t.ndim;
        for (int d = 0; d < t.ndim; ++d) e.desc.shape[d] = t.shape[d];
        if (t.strides)
          for (int d = 0; d < t.ndim; ++d) e.desc.strides[d] = t.strides[d];
        else
          e.desc.set_contiguous_strides();
        e.desc.data = static_cast<char*>(t.data) + t.byte_offset;
      }
    }
  }
}

CallArrays::~CallArrays() {
  for (size_t i = 0; i < count_; ++i) {
    Entry& e = entries_[i];
    auto* m = static_cast<dlpack::ManagedTensor*>(e.managed);
    if (m && m->deleter) m->deleter(m);
  }
}

py::object CallArrays::allocate(size_t slot, size_t like, const std::vector<int64_t>& shape, DType dtype,
                                const std::vector<int>& memory_order) {
  const Entry& l = entries_[like];
  // Virtual arrays (explain) are laid out as the PyTorch or CuPy result they stand for would be.
  const bool reorder = !memory_order.empty() &&
                       (l.kind == ArrayKind::Torch || l.kind == ArrayKind::CuPy || l.kind == ArrayKind::Virtual);
  if (reorder) {
    // Allocate in physical order, then view it in logical order.
    std::vector<int64_t> physical;
    std::vector<int> position(shape.size());
    for (size_t pos = 0; pos < memory_order.size(); ++pos) {
      physical.push_back(shape[size_t(memory_order[pos])]);
      position[size_t(memory_order[pos])] = int(pos);
    }
    allocate(slot, like, physical, dtype);
    Entry& e = entries_[slot];
    py::tuple axes = py::cast(position);
    if (l.kind != ArrayKind::Virtual) e.object = e.object.attr(l.kind == ArrayKind::Torch ? "permute" : "transpose")(*axes);
    int64_t physical_strides[kMaxTensorDims];
    std::copy(e.desc.strides, e.desc.strides + e.desc.ndim, physical_strides);
    for (size_t d = 0; d < shape.size(); ++d) {
      e.desc.shape[d] = shape[d];
      e.desc.strides[d] = physical_strides[position[d]];
    }
    return e.object;
  }
  Entry& e = entries_[slot];
  e.allocated = true;
  py::object out;
  wrap_for_jax_ = l.kind == ArrayKind::Jax;
  if (l.kind == ArrayKind::Torch) {
    // new_empty keeps the caller's device and uses PyTorch's caching allocator.
    out = torch_empty(shape, dtype, device_);
    e.kind = ArrayKind::Torch;
    e.desc.data = torch_data_ptr(out.ptr());
  } else {
    out = outputs_module().attr("allocate")(kind_name(l.kind), l.object, py::tuple(py::cast(shape)),
                                            dtype_info(dtype).name, device_);
    e.kind = classify(out);
    if (e.kind == ArrayKind::DeviceArray) {
      e.desc.data = out.cast<const DeviceArray&>().desc().data;
    } else if (e.kind == ArrayKind::Virtual) {
      e.desc.data = nullptr;
    } else {
      // A framework array (CuPy): its pointer through DLPack, released at once.
      py::object cap = out.attr("__dlpack__")(py::arg("stream") = py::none());
      auto* m = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
      if (!m) throw py::error_already_set();
      PyCapsule_SetName(cap.ptr(), "used_dltensor");
      e.desc.data = static_cast<char*>(m->dl_tensor.data) + m->dl_tensor.byte_offset;
      e.managed = m;
    }
  }
  e.present = true;
  e.object = out;
  e.desc.dtype = dtype;
  e.desc.device = device_;
  e.desc.ndim = int(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) e.desc.shape[d] = shape[d];
  e.desc.set_contiguous_strides();
  return out;
}

static bool same_view(const TensorDesc& a, const TensorDesc& b) {
  if (a.data != b.data || a.dtype != b.dtype || a.ndim != b.ndim) return false;
  for (int d = 0; d < a.ndim; ++d)
    if (a.shape[d] != b.shape[d] || (a.shape[d] > 1 && a.strides[d] != b.strides[d])) return false;
  return true;
}

void CallArrays::check_out(size_t slot, const std::vector<int64_t>& shape, DType dtype, bool allow_same_view) const {
  const Entry& e = entries_[slot];
  std::vector<int64_t> got(e.desc.shape, e.desc.shape + e.desc.ndim);
  if (got != shape)
    throw value_error(std::string(e.name) + ": expected shape " + shape_str(shape) + " (got " + shape_str(got) + ")");
  if (e.desc.dtype != dtype)
    throw type_error(std::string(e.name) + ": expected dtype " + dtype_info(dtype).name + " (got " +
                     dtype_info(e.desc.dtype).name + ")");
  for (int d = 0; d < e.desc.ndim && e.desc.numel() > 0; ++d)
    if (e.desc.strides[d] == 0 && e.desc.shape[d] > 1)
      throw value_error(std::string(e.name) + ": expected an array whose elements do not overlap (got a zero stride "
                        "on dimension " + std::to_string(d) + ")");
  if (is_virtual()) return;
  for (size_t i = 0; i < count_; ++i) {
    if (i == slot || !entries_[i].present) continue;
    if (allow_same_view && same_view(e.desc, entries_[i].desc)) continue;
    if (ranges_overlap(e.desc, entries_[i].desc))
      throw value_error(std::string(e.name) + ": must not overlap the input " + entries_[i].name);
  }
}

py::object CallArrays::finish(py::object out, size_t slot) {
  const Entry& e = entries_[slot];
  if (e.kind == ArrayKind::DeviceArray) out.cast<DeviceArray&>().last_stream = reinterpret_cast<uintptr_t>(stream_);
  // A tensor of the caller's written in place (self, out=): autograd must see the write.
  if (e.kind == ArrayKind::Torch && !e.allocated) torch_bump_version(out.ptr());
  // JAX arrays are immutable: the result is computed into jitops memory and
  // handed to JAX through DLPack once the kernels are queued.
  if (wrap_for_jax_) return outputs_module().attr("to_jax")(out);
  return out;
}

void bind_array_args(py::module_& m) {
  py::register_exception<HostOperands>(m, "HostOperands");
  m.def("_parse_only", [](py::handle a, py::handle b, py::handle c) { CallArrays call({{"a", a}, {"b", b}, {"c", c}}, py::none()); },
        "Diagnostic: parses three operands as an op would, and nothing else (per-call cost studies).");
  m.def("array_kind", [](py::handle obj) { return kind_name(classify(obj)); },
        "How jitops reads an array: torch, cupy, jax, jitops, dlpack or host.");
}

}  // namespace jitops
