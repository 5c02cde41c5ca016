#include "python/torch_autograd/node_support.h"

#include <ATen/ExpandUtils.h>
#include <ATen/core/grad_mode.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/utils/pybind.h>

#include <stdexcept>

#include "python/bindings/core_native.h"

namespace jitops_autograd {

bool all_absent(PyObject* const* p, int from, int to) {
  for (int i = from; i < to; ++i)
    if (!absent(p[i])) return false;
  return true;
}

bool exact_int(PyObject* p, int64_t& out) {
  if (p == nullptr || !PyLong_CheckExact(p)) return false;
  out = PyLong_AsLongLong(p);
  if (out == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  return true;
}

bool number_value(PyObject* p, at::IValue& out) {
  if (p == nullptr) return false;
  if (PyBool_Check(p)) {
    out = at::IValue(p == Py_True);
  } else if (PyLong_CheckExact(p)) {
    int64_t v = 0;
    if (!exact_int(p, v)) return false;
    out = at::IValue(v);
  } else if (PyFloat_CheckExact(p)) {
    out = at::IValue(PyFloat_AS_DOUBLE(p));
  } else {
    return false;
  }
  return true;
}

PyRef py_number(const at::IValue& v) {
  PyObject* p = v.isBool() ? PyBool_FromLong(v.toBool()) : v.isInt() ? PyLong_FromLongLong(v.toInt())
                                                                      : PyFloat_FromDouble(v.toDouble());
  if (!p) throw_python_error();
  return PyRef(p);
}

bool scale_value(PyObject* p, std::vector<double>& out) {
  auto one = [](PyObject* v, double& d) {
    if (PyBool_Check(v) || !(PyLong_CheckExact(v) || PyFloat_CheckExact(v))) return false;
    d = PyFloat_AsDouble(v);
    return !(d == -1.0 && PyErr_Occurred());
  };
  out.clear();
  if (absent(p)) return true;
  double a = 0, b = 0;
  if (PyTuple_Check(p) || PyList_Check(p)) {
    if (PySequence_Fast_GET_SIZE(p) != 2) return false;
    PyObject** items = PySequence_Fast_ITEMS(p);
    if (!one(items[0], a) || !one(items[1], b)) return false;
  } else {
    if (!one(p, a)) return false;
    b = a;
  }
  out = {a, b};
  return true;
}

PyRef py_scale(const std::vector<double>& scale) {
  if (scale.empty()) return PyRef(new_ref(Py_None));
  PyRef t(Py_BuildValue("(dd)", scale[0], scale[1]));
  if (!t.get()) throw_python_error();
  return t;
}

void attach(const std::shared_ptr<torch::autograd::Node>& node, const at::Tensor& out) {
  if (torch::autograd::isDifferentiableType(out.scalar_type())) torch::autograd::set_history(out, node);
}

void rebase(const std::shared_ptr<torch::autograd::Node>& node, const at::Tensor& self) {
  const uint32_t output_nr = node->add_input_metadata(self);
  torch::autograd::impl::rebase_history(self, {node, output_nr});
}

bool deterministic() { return at::globalContext().deterministicAlgorithms(); }

at::Tensor to_input(at::Tensor g, at::IntArrayRef shape, at::ScalarType dtype) {
  if (g.sizes() != shape) g = at::sum_to(g, shape);
  return g.scalar_type() == dtype ? g : g.to(dtype);
}

namespace {

// PyTorch's ScalarType -> jitops' DType: the floating dtypes a backward computes natively, and (`index`)
// the integer dtypes of an index.
bool native_dtype(at::ScalarType t, jitops::DType& out, bool index = false) {
  switch (t) {
    case at::kHalf: out = jitops::DType::Float16; return !index;
    case at::kBFloat16: out = jitops::DType::BFloat16; return !index;
    case at::kFloat: out = jitops::DType::Float32; return !index;
    case at::kDouble: out = jitops::DType::Float64; return !index;
    case at::kInt: out = jitops::DType::Int32; return index;
    case at::kLong: out = jitops::DType::Int64; return index;
    default: return false;
  }
}

bool describe(const at::Tensor& t, jitops::TensorDesc& d, bool index = false) {
  if (!t.defined() || !t.is_cuda() || t.dim() > jitops::kMaxTensorDims || !native_dtype(t.scalar_type(), d.dtype, index))
    return false;
  d.data = t.data_ptr();
  d.device = t.get_device();
  d.ndim = int(t.dim());
  for (int i = 0; i < d.ndim; ++i) {
    d.shape[i] = t.size(i);
    d.strides[i] = t.stride(i);
  }
  return true;
}

// _core's native entries, when no graph is being recorded (under create_graph the Python ops record it).
const jitops::CoreNativeApi* core_entries() { return at::GradMode::is_enabled() ? nullptr : core().native; }

void* current_stream(int device) { return c10::cuda::getCurrentCUDAStream(c10::DeviceIndex(device)).stream(); }

// An entry's answer: true when it ran; false for the Python path; its error raised.
bool ran(int rc, const char* error) {
  if (rc < 0) throw std::runtime_error(std::string("jitops: ") + error);
  return rc == 0;
}

// A Python number as the native entries take it: its value as a double, whether it is integral (int or
// bool), and an integral one exactly.
struct NumberParts {
  double value;
  bool integral;
  int64_t exact;
};
NumberParts number_parts(const at::IValue& n) {
  return {n.isDouble() ? n.toDouble() : n.isInt() ? double(n.toInt()) : double(n.isBool() && n.toBool()),
          !n.isDouble(), n.isInt() ? n.toInt() : n.isBool() ? int64_t(n.toBool()) : 0};
}

// The layout TensorIterator gives a @ b's result of `shape`: channels-last when an operand of that shape is.
at::MemoryFormat product_format(const at::Tensor& a, const at::Tensor& b, at::IntArrayRef shape) {
  at::MemoryFormat format = at::MemoryFormat::Contiguous;
  for (const at::Tensor* t : {&a, &b})
    if (t->defined() && t->sizes() == shape && t->suggest_memory_format() != format)
      format = t->suggest_memory_format();
  return format;
}

// a op b (`op` a jitops::CoreNativeBinary; b a tensor, or the number `number` when b is undefined) through
// _core's native entry: the result laid out as TensorIterator lays it (channels-last when an operand of the
// result's shape is), on PyTorch's current stream. Undefined when the call must take the Python path: a graph
// is being recorded (create_graph), a dtype or device jitops does not compute natively, or an error a kernel
// recorded is pending.
at::Tensor native_binary(int op, const at::Tensor& a, const at::Tensor& b, const at::IValue& number) {
  const jitops::CoreNativeApi* api = core_entries();
  if (!api) return {};
  jitops::TensorDesc da, db, dout;
  if (!describe(a, da) || (b.defined() && (!describe(b, db) || db.device != da.device))) return {};
  if (!b.defined() && !(number.isDouble() || number.isInt() || number.isBool())) return {};
  const at::ScalarType result = b.defined() ? at::result_type(a, b) : at::result_type(a, number.toScalar());
  const std::vector<int64_t> shape = b.defined() ? at::infer_size(a.sizes(), b.sizes()) : a.sizes().vec();
  at::Tensor out = at::empty(shape, a.options().dtype(result).memory_format(product_format(a, b, shape)));
  if (!describe(out, dout)) return {};
  const NumberParts num = number_parts(number);
  char error[512] = "";
  return ran(api->binary(op, &da, b.defined() ? &db : nullptr, num.value, num.integral, num.exact, &dout,
                         current_stream(da.device), error, sizeof(error)), error)
             ? out
             : at::Tensor();
}

at::Tensor python_binary(PyObject* fn, const at::Tensor& a, const at::Tensor& b, const at::IValue& number) {
  pybind11::gil_scoped_acquire gil;
  PyRef pa = wrap(a), pb = b.defined() ? wrap(b) : py_number(number);
  return call_op(fn, {pa.get(), pb.get()});
}

at::Tensor binary(int op, const at::Tensor& a, const at::Tensor& b, const at::IValue& number) {
  at::Tensor out = native_binary(op, a, b, number);
  if (out.defined()) return out;
  return python_binary(op == jitops::kCoreNativeDiv ? core().div : core().mul, a, b, number);
}

// Descriptions of an operand and an index on one device, for the indexed entries.
bool describe_indexed(const at::Tensor& t, const at::Tensor& index, jitops::TensorDesc& dt, jitops::TensorDesc& di) {
  return describe(t, dt) && describe(index, di, /*index=*/true) && di.device == dt.device;
}

// index_select (gather: gather) of `x` along `dim` at `index` through _core's native entry; undefined where
// it does not take the call (Python's then does: it raises the op's errors).
at::Tensor native_selected(const jitops::CoreNativeApi* api, bool gather, const at::Tensor& x, int64_t dim,
                           const at::Tensor& index) {
  jitops::TensorDesc dx, di, dout;
  if (!describe_indexed(x, index, dx, di) || dim < 0 || dim >= std::max<int64_t>(1, x.dim())) return {};
  std::vector<int64_t> shape = gather ? index.sizes().vec() : x.sizes().vec();
  if (!gather && x.dim() > 0) shape[size_t(dim)] = index.numel();
  at::Tensor out = at::empty(shape, x.options());
  char error[512] = "";
  const int kind = gather ? jitops::kCoreNativeElementwise : jitops::kCoreNativeAlongDim;
  if (describe(out, dout) &&
      ran(api->select(kind, &dx, dim, &di, &dout, current_stream(dx.device), error, sizeof(error)), error))
    return out;
  return {};
}

// upsample_nearest2d (backward: its backward) of `in` through _core's native entry, as upsampled() takes it;
// undefined where the entry does not take the call.
at::Tensor native_upsampled(const jitops::CoreNativeApi* api, bool backward, const at::Tensor& in,
                            at::IntArrayRef size, const std::vector<double>& scale) {
  jitops::TensorDesc din, dout;
  if (in.dim() != 4 || !describe(in, din) || (backward ? size.size() != 4 : scale.empty() && size.size() != 2))
    return {};
  // `size`: the result's (N, C, H, W) for the backward; for the forward its (H, W), or, with a scale, unused.
  std::vector<int64_t> shape = backward ? size.vec() : std::vector<int64_t>{in.size(0), in.size(1), 0, 0};
  if (!backward) {
    for (int d = 0; d < 2; ++d)  // as upsample_geometry sizes it: floor(in * scale), in float64
      shape[size_t(2 + d)] = scale.empty() ? size[size_t(d)] : int64_t(double(in.size(2 + d)) * scale[size_t(d)]);
  }
  for (int64_t extent : shape)
    if (extent < 0) return {};
  // channels-last in, channels-last out (the ops' is_channels_last: dense that way, not NCHW-dense)
  const bool channels_last = !in.is_contiguous() && in.is_contiguous(at::MemoryFormat::ChannelsLast);
  at::Tensor out = at::empty(shape, in.options().memory_format(channels_last ? at::MemoryFormat::ChannelsLast
                                                                              : at::MemoryFormat::Contiguous));
  char error[512] = "";
  if (describe(out, dout) &&
      ran(api->upsample(backward, &din, &dout, scale.empty() ? nullptr : scale.data(), current_stream(din.device),
                        error, sizeof(error)),
          error))
    return out;
  return {};
}

// Whether a forward under a node may take _core's native entries: they answer as the plain call would, except
// while autotuning is on (the Python call tunes the point it resolves).
const jitops::CoreNativeApi* forward_entries() {
  const jitops::CoreNativeApi* api = core().native;
  return api && !api->autotune_enabled() ? api : nullptr;
}

// base.index_add_ / scatter_add_ (by `kind`) through _core's native entry `api`; false where it cannot take the
// call (no entry, the determinism switch, a tensor it cannot describe, devices that differ) and the caller falls
// back to the Python op. A flat_extent of 0 or more describes a contiguous base as its flat view of that many.
bool native_added(const jitops::CoreNativeApi* api, int kind, const at::Tensor& base, int64_t dim,
                  const at::Tensor& index, const at::Tensor& src, int64_t flat_extent = -1) {
  jitops::TensorDesc db, di, ds;
  if (!api || deterministic() || !describe_indexed(base, index, db, di) || !describe(src, ds) ||
      ds.device != db.device)
    return false;
  if (flat_extent >= 0) {
    db.ndim = 1;
    db.shape[0] = flat_extent;
    db.strides[0] = 1;
  }
  char error[512] = "";
  return ran(api->add(kind, &db, dim, &di, &ds, current_stream(db.device), error, sizeof(error)), error);
}

}  // namespace

at::Tensor added_into_zeros(bool scatter, at::IntArrayRef shape, int64_t dim, const at::Tensor& index,
                            const at::Tensor& src) {
  return added_into(at::zeros(shape, src.options()), scatter, dim, index, src);
}

at::Tensor added_into(at::Tensor zeros, bool scatter, int64_t dim, const at::Tensor& index, const at::Tensor& src) {
  const int kind = scatter ? jitops::kCoreNativeElementwise : jitops::kCoreNativeAlongDim;
  if (native_added(core_entries(), kind, zeros, dim, index, src)) return zeros;
  pybind11::gil_scoped_acquire gil;
  PyRef z = wrap(zeros), d = py_int(dim), i = wrap(index), s = wrap(src);
  PyObject* det = deterministic() ? Py_True : Py_False;
  if (scatter) return call_op(core().scatter_add_, {z.get(), d.get(), i.get(), s.get(), det}, core().kw_deterministic);
  PyRef one = py_int(1);
  return call_op(core().index_add_, {z.get(), d.get(), i.get(), s.get(), one.get(), det}, core().kw_deterministic);
}

at::Tensor take_gradient(at::IntArrayRef shape, std::optional<int64_t> axis, const at::Tensor& index,
                         const at::Tensor& g) {
  const int64_t extent = axis ? shape[size_t(*axis)] : std::max<int64_t>(1, c10::multiply_integers(shape));
  // The add's index is one row and its source x's shape with the axis's extent the index's; each reshape is a
  // dispatch, so only where the shapes differ.
  const at::Tensor flat_index = index.dim() == 1 ? index : index.reshape(-1);
  at::Tensor src;
  if (axis) {
    std::vector<int64_t> rows = shape.vec();
    rows[size_t(*axis)] = flat_index.numel();
    src = g.sizes() == at::IntArrayRef(rows) ? g : g.reshape(rows);
  } else {
    src = g.dim() == 1 ? g : g.reshape(-1);
  }
  at::Tensor zeros = at::zeros(shape, g.options());
  const int64_t flat_extent = axis ? -1 : extent;  // a flat take adds into zeros' flat view
  if (native_added(core_entries(), jitops::kCoreNativeTake, zeros, axis.value_or(0), flat_index, src, flat_extent))
    return zeros;
  // The Python ops read no wrap: a floored remainder counts the negative indices from the end (they are in
  // [-extent, extent): the forward checked them).
  const at::Tensor wrapped = flat_index.remainder(extent);
  added_into(axis ? zeros : zeros.view({extent}), false, axis.value_or(0), wrapped, src);
  return zeros;
}

namespace {

// self.index_copy_ / index_fill_ through _core's native entry (the number `value` where `source` is undefined).
bool native_index_written(const jitops::CoreNativeApi* api, const at::Tensor& self, int64_t dim,
                          const at::Tensor& index, const at::Tensor& source, const at::IValue& value) {
  jitops::TensorDesc ds, di, dsrc;
  if (!describe_indexed(self, index, ds, di)) return false;
  if (source.defined() && (!describe(source, dsrc) || dsrc.device != ds.device)) return false;
  if (!source.defined() && !(value.isDouble() || value.isInt() || value.isBool())) return false;
  const NumberParts num = number_parts(value);
  char error[512] = "";
  return ran(api->index_write(&ds, dim, &di, source.defined() ? &dsrc : nullptr, num.value, num.integral, num.exact,
                              current_stream(ds.device), error, sizeof(error)),
             error);
}

}  // namespace

at::Tensor zeroed_at(const at::Tensor& g, int64_t dim, const at::Tensor& index) {
  at::Tensor out = g.clone();  // as PyTorch's index_fill: the layout preserved where g is dense
  const jitops::CoreNativeApi* api = core_entries();
  if (api && native_index_written(api, out, dim, index, at::Tensor(), at::IValue(int64_t(0)))) return out;
  pybind11::gil_scoped_acquire gil;
  PyRef o = wrap(out), d = py_int(dim), i = wrap(index), zero = py_int(0);
  return call_op(core().index_fill_, {o.get(), d.get(), i.get(), zero.get()});
}

at::Tensor selected(bool gather, const at::Tensor& x, int64_t dim, const at::Tensor& index) {
  if (const jitops::CoreNativeApi* api = core_entries()) {
    at::Tensor out = native_selected(api, gather, x, dim, index);
    if (out.defined()) return out;
  }
  pybind11::gil_scoped_acquire gil;
  PyRef px = wrap(x), d = py_int(dim), i = wrap(index);
  return call_op(gather ? core().gather : core().index_select, {px.get(), d.get(), i.get()});
}

at::Tensor upsampled(bool backward, const at::Tensor& in, at::IntArrayRef size, const std::vector<double>& scale) {
  if (const jitops::CoreNativeApi* api = core_entries()) {
    at::Tensor out = native_upsampled(api, backward, in, size, scale);
    if (out.defined()) return out;
  }
  pybind11::gil_scoped_acquire gil;
  PyRef g = wrap(in), s = py_scale(scale);
  PyRef sz = !backward && !scale.empty() ? PyRef(new_ref(Py_None)) : py_ints(size);
  return call_op(backward ? core().upsample_nearest2d_backward : core().upsample_nearest2d, {g.get(), sz.get(), s.get()});
}

at::Tensor padded_to(const at::Tensor& t, at::IntArrayRef shape) {
  if (t.sizes() == shape) return t;
  at::Tensor out = at::zeros(shape, t.options());
  at::Tensor window = out;
  for (int64_t d = 0; d < t.dim(); ++d) window = window.narrow(d, 0, t.size(d));
  window.copy_(t);
  return out;
}

at::Tensor jit_mul(const at::Tensor& a, const at::Tensor& b) { return binary(jitops::kCoreNativeMul, a, b, {}); }
at::Tensor jit_mul(const at::Tensor& a, const at::IValue& number) {
  return binary(jitops::kCoreNativeMul, a, at::Tensor(), number);
}
at::Tensor jit_div(const at::Tensor& a, const at::Tensor& b) { return binary(jitops::kCoreNativeDiv, a, b, {}); }
at::Tensor jit_div(const at::Tensor& a, const at::IValue& number) {
  return binary(jitops::kCoreNativeDiv, a, at::Tensor(), number);
}
at::Tensor jit_neg(const at::Tensor& a) { return jit_mul(a, at::IValue(int64_t(-1))); }

bool jit_binary_gradients(bool divide, const at::Tensor& g, const at::Tensor& x, const at::Tensor& y,
                          at::Tensor& gx, at::Tensor& gy) {
  const jitops::CoreNativeApi* api = core_entries();
  jitops::TensorDesc dg, dx, dy, dgx, dgy;
  if (!api || !describe(g, dg) || !describe(x, dx) || !describe(y, dy) || dx.device != dg.device ||
      dy.device != dg.device || x.scalar_type() != g.scalar_type() || y.scalar_type() != g.scalar_type())
    return false;
  // Each gradient laid out as its own call would make it (g * y, g * x; g / y, g * x), in g's shape: the
  // forward's result's.
  const at::IntArrayRef shape = g.sizes();
  if (at::infer_size(x.sizes(), y.sizes()) != shape.vec()) return false;
  at::Tensor ox = at::empty(shape, g.options().memory_format(product_format(g, y, shape)));
  at::Tensor oy = at::empty(shape, g.options().memory_format(product_format(g, x, shape)));
  if (!describe(ox, dgx) || !describe(oy, dgy)) return false;
  char error[512] = "";
  const int op = divide ? jitops::kCoreNativeDiv : jitops::kCoreNativeMul;
  if (!ran(api->binary_gradients(op, &dg, &dx, &dy, &dgx, &dgy, current_stream(dg.device), error, sizeof(error)),
           error))
    return false;
  gx = std::move(ox);
  gy = std::move(oy);
  return true;
}

at::Tensor forward_binary(int op, const at::Tensor& a, const at::Tensor& b, const at::IValue& number) {
  const jitops::CoreNativeApi* api = core().native;
  if (!api || api->autotune_enabled()) return {};
  // Contiguous operands only: the Python call lays its result out in its inputs' stride order (as
  // TensorIterator does), native_binary as contiguous or channels-last; for these the two agree.
  if (!a.is_contiguous() || (b.defined() && !b.is_contiguous())) return {};
  at::AutoGradMode no_grad(false);
  try {
    return native_binary(op, a, b, number);
  } catch (const std::exception&) {  // shapes that do not broadcast, a plan that fails
    return {};
  }
}

at::Tensor forward_selected(bool gather, const at::Tensor& x, int64_t dim, const at::Tensor& index) {
  const jitops::CoreNativeApi* api = forward_entries();
  // Contiguous operands only: the Python call lays its result out after x's or the index's strides.
  if (!api || !x.is_contiguous() || !index.is_contiguous()) return {};
  at::AutoGradMode no_grad(false);
  try {
    return native_selected(api, gather, x, wrapped_dim(dim, x.dim()), index);
  } catch (const std::exception&) {  // a plan that fails: the Python call raises its message
    return {};
  }
}

at::Tensor forward_taken(const at::Tensor& x, const at::Tensor& indices, std::optional<int64_t> axis) {
  const jitops::CoreNativeApi* api = forward_entries();
  jitops::TensorDesc dx, di, dout;
  // Contiguous operands only, as forward_selected; an axis out of range: the Python call raises.
  if (!api || !x.is_contiguous() || !indices.is_contiguous() || !describe_indexed(x, indices, dx, di)) return {};
  std::vector<int64_t> shape = indices.sizes().vec();
  if (axis) {
    if (x.dim() == 0 || *axis < -x.dim() || *axis >= x.dim()) return {};
    const int64_t a = wrapped_dim(*axis, x.dim());
    shape.insert(shape.begin(), x.sizes().begin(), x.sizes().begin() + a);
    shape.insert(shape.end(), x.sizes().begin() + a + 1, x.sizes().end());
  }
  at::AutoGradMode no_grad(false);
  at::Tensor out = at::empty(shape, x.options());
  char error[512] = "";
  try {
    if (describe(out, dout) && ran(api->select(jitops::kCoreNativeTake, &dx, axis ? *axis : jitops::kCoreNativeFlat,
                                               &di, &dout, current_stream(dx.device), error, sizeof(error)),
                                   error))
      return out;
  } catch (const std::exception&) {  // the Python call raises the op's message
  }
  return {};
}

at::Tensor forward_upsampled(const at::Tensor& x, const std::vector<double>& scale) {
  const jitops::CoreNativeApi* api = forward_entries();
  if (!api || scale.empty() ||
      !(x.is_contiguous() || (x.dim() == 4 && x.is_contiguous(at::MemoryFormat::ChannelsLast))))
    return {};
  at::AutoGradMode no_grad(false);
  try {
    return native_upsampled(api, /*backward=*/false, x, {}, scale);
  } catch (const std::exception&) {
    return {};
  }
}

bool forward_added(bool scatter, const at::Tensor& self, int64_t dim, const at::Tensor& index,
                   const at::Tensor& source) {
  const jitops::CoreNativeApi* api = forward_entries();
  if (!api) return false;
  at::AutoGradMode no_grad(false);
  try {
    const int kind = scatter ? jitops::kCoreNativeElementwise : jitops::kCoreNativeAlongDim;
    if (!native_added(api, kind, self, dim, index, source)) return false;
  } catch (const std::exception&) {
    return false;
  }
  self.unsafeGetTensorImpl()->bump_version();  // as the Python call's in-place write does
  return true;
}

bool forward_index_written(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                           const at::IValue& value) {
  const jitops::CoreNativeApi* api = forward_entries();
  if (!api) return false;
  at::AutoGradMode no_grad(false);
  try {
    if (!native_index_written(api, self, dim, index, source, value)) return false;
  } catch (const std::exception&) {  // the Python call raises the op's own message
    return false;
  }
  self.unsafeGetTensorImpl()->bump_version();
  return true;
}

}  // namespace jitops_autograd
