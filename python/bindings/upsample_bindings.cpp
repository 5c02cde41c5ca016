// Python entry points of upsample_nearest2d and its backward, bound as
// METH_FASTCALL builtins like the other families.
#include <pybind11/pybind11.h>

#include <array>
#include <optional>
#include <vector>

#include "python/bindings/array_args.h"
#include "python/bindings/fastcall.h"
#include "python/bindings/op_runner.h"
#include "python/bindings/scalar_arg.h"
#include "runtime/arg_error.h"
#include "runtime/ops/upsample_ops.h"
#include "runtime/ops/upsample_tiles_plan.h"

namespace py = pybind11;

namespace jitops {
namespace {

// An int or a sequence of two ints.
std::optional<std::array<int64_t, 2>> size_arg(PyObject* v) {
  if (!v || v == Py_None) return std::nullopt;
  if (PyIndex_Check(v)) {
    const int64_t s = int_arg(v, "size");
    return std::array<int64_t, 2>{s, s};
  }
  if (!PySequence_Check(v) || PySequence_Size(v) != 2) {
    PyErr_Clear();
    throw type_error(std::string("size: expected an int or a pair of ints (got ") + Py_TYPE(v)->tp_name + ")");
  }
  py::sequence seq = py::reinterpret_borrow<py::sequence>(v);
  return std::array<int64_t, 2>{int_arg(py::object(seq[0]).ptr(), "size"), int_arg(py::object(seq[1]).ptr(), "size")};
}

// A number or a sequence of two numbers.
std::optional<std::array<double, 2>> scale_arg(PyObject* v) {
  if (!v || v == Py_None) return std::nullopt;
  if (is_number(v)) {
    const Scalar s = scalar_arg(v, "scale_factor");
    const double f = s.integral ? double(s.i) : s.f;
    return std::array<double, 2>{f, f};
  }
  if (!PySequence_Check(v) || PySequence_Size(v) != 2) {
    PyErr_Clear();
    throw type_error(std::string("scale_factor: expected a number or a pair of numbers (got ") + Py_TYPE(v)->tp_name +
                     ")");
  }
  py::sequence seq = py::reinterpret_borrow<py::sequence>(v);
  std::array<double, 2> out{};
  for (size_t i = 0; i < 2; ++i) {
    const Scalar s = scalar_arg(py::object(seq[i]).ptr(), "scale_factor");
    out[i] = s.integral ? double(s.i) : s.f;
  }
  return out;
}

const std::vector<int> kChannelsLast = {0, 2, 3, 1};

enum Slot : size_t { kSlotIn = 0, kSlotOut = 1 };

// The caller's out= (checked) or a new output, channels-last when `like` is.
py::object upsample_out(CallArrays& call, PyObject* out, const std::vector<int64_t>& shape) {
  const TensorDesc& like = call[kSlotIn];
  if (call.present(kSlotOut)) {
    call.check_out(kSlotOut, shape, like.dtype);
    return py::reinterpret_borrow<py::object>(out);
  }
  return call.allocate(kSlotOut, kSlotIn, shape, like.dtype, is_channels_last(like) ? kChannelsLast : std::vector<int>());
}

const char* const kForwardNames[] = {"x", "size", "scale_factor", "out", "stream", "_explain"};
const FastSignature kForwardSig{"upsample_nearest2d", kForwardNames, 6, 4, 1};
py::object forward_body(PyObject* const* a) {
  CallArrays call({{"x", a[0]}, {"out", or_none(a[3]), true}}, or_none(a[4]));
  enter_call(call);
  const TensorDesc& x = call[kSlotIn];
  check_upsample_operand(x, "x");
  const UpsampleGeometry g = upsample_geometry(x.shape[2], x.shape[3], size_arg(a[1]), scale_arg(a[2]));
  const std::vector<int64_t> shape = {x.shape[0], x.shape[1], g.out_h, g.out_w};
  py::object out = upsample_out(call, a[3], shape);
  LaunchPlan plan;
  const int explain_arch = explain_arg(a[5]);
  const bool any = plan_upsample_forward(x, call[kSlotOut], g, planning_device(call, explain_arch), plan);
  return execute(call, &plan, any ? 1 : 0, out, kSlotOut, explain_arch);
}

const char* const kBackwardNames[] = {"grad_output", "input_size", "scale_factor", "out", "stream", "_explain"};
const FastSignature kBackwardSig{"upsample_nearest2d_backward", kBackwardNames, 6, 4, 2};
py::object backward_body(PyObject* const* a) {
  CallArrays call({{"grad_output", a[0]}, {"out", or_none(a[3]), true}}, or_none(a[4]));
  enter_call(call);
  const TensorDesc& go = call[kSlotIn];
  check_upsample_operand(go, "grad_output");
  std::vector<int64_t> in_size;
  if (!PySequence_Check(a[1]) || PySequence_Size(a[1]) != 4) {
    PyErr_Clear();
    throw type_error(std::string("input_size: expected a sequence of 4 ints (N, C, H, W) (got ") +
                     Py_TYPE(a[1])->tp_name + ")");
  }
  {
    py::sequence seq = py::reinterpret_borrow<py::sequence>(a[1]);
    for (size_t i = 0; i < 4; ++i) in_size.push_back(int_arg(py::object(seq[i]).ptr(), "input_size"));
  }
  for (int64_t s : in_size)
    if (s < 0) throw value_error("input_size: expected non-negative sizes (got " + shape_str(in_size) + ")");
  std::optional<std::array<double, 2>> scale = scale_arg(a[2]);
  UpsampleGeometry g = upsample_geometry(in_size[2], in_size[3],
                                         scale ? std::nullopt
                                               : std::optional<std::array<int64_t, 2>>({go.shape[2], go.shape[3]}),
                                         scale);
  if (go.shape[0] != in_size[0] || go.shape[1] != in_size[1] || go.shape[2] != g.out_h || go.shape[3] != g.out_w)
    throw value_error("grad_output: expected shape " +
                      shape_str(std::vector<int64_t>{in_size[0], in_size[1], g.out_h, g.out_w}) + " for input_size " +
                      shape_str(in_size) + (scale ? " and scale_factor" : "") + " (got " + shape_str(go) + ")");
  py::object out = upsample_out(call, a[3], in_size);
  LaunchPlan plan;
  const int explain_arch = explain_arg(a[5]);
  const bool any = plan_upsample_backward(go, call[kSlotOut], g, planning_device(call, explain_arch), plan);
  return execute(call, &plan, any ? 1 : 0, out, kSlotOut, explain_arch);
}

PyMethodDef kDefs[] = {
    {"upsample_nearest2d", JITOPS_FAST(kForwardSig, forward_body), METH_FASTCALL | METH_KEYWORDS,
     "upsample_nearest2d(x, size=None, scale_factor=None, out=None, *, stream=None)\n--\n\n"
     "Nearest-neighbour upsampling of a 4-d ``x`` (N, C, H, W), bit for bit like\n"
     "``torch.nn.functional.interpolate(x, size, scale_factor, mode=\"nearest\")``.\n"
     "Give exactly one of ``size`` (int or (h, w)) and ``scale_factor`` (number or pair;\n"
     "the output is floor(H * scale)). Output row h reads input row\n"
     "min(floor(h * scale), H - 1) with scale = H / out_h, or 1 / scale_factor when given.\n"
     "float16, bfloat16, float32, float64, uint8; any strides; a channels-last ``x`` gives\n"
     "a channels-last result. The exact 2x case on dense NCHW runs a packed-pair kernel."},
    {"upsample_nearest2d_backward", JITOPS_FAST(kBackwardSig, backward_body), METH_FASTCALL | METH_KEYWORDS,
     "upsample_nearest2d_backward(grad_output, input_size, scale_factor=None, out=None, *, stream=None)\n--\n\n"
     "The gradient of upsample_nearest2d with respect to its input, of shape ``input_size``\n"
     "(N, C, H, W), bit for bit like PyTorch's: each input element sums the output\n"
     "gradient over the output pixels that read it, row by row, in float32 for 16-bit\n"
     "types (uint8 sums wrap). A gather: no atomics, deterministic. Pass the forward's\n"
     "``scale_factor`` when it was given one."},
};

}  // namespace

void bind_upsample_ops(py::module_& m) {
  for (PyMethodDef& def : kDefs) add_fastcall(m, &def);
  m.def("_set_upsample_tile_min_row_bytes", &set_upsample_tile_min_row_bytes, py::arg("bytes"),
        "Development knob: the narrowest output-gradient row the backward tiles take (default 256 bytes); "
        "returns the previous value.");
  m.def("_set_upsample_tile_min_bytes", &set_upsample_tile_min_bytes, py::arg("bytes"),
        "Development knob: the least shared memory of the heuristic's tile that the backward tiles take "
        "(default 2048 bytes); returns the previous value.");
  m.def("_set_upsample_fitted_rows", &set_upsample_fitted_rows,
        "Development knob: False gives the row kernels' blocks a power of two of lanes a row; returns the "
        "previous setting.");
  m.def("_set_upsample_tiles", &set_upsample_tiles,
        "Development knob: False sends the backward cases of the tile kernel to the row kernels; returns the "
        "previous setting.");
}

}  // namespace jitops
