// Python entry points of the gather family, bound as METH_FASTCALL builtins
// (fastcall.h). The keyword-only _explain=arch (used by jitops.explain)
// describes the launch instead of running it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "jit/compiler.h"
#include "jit/gather_source.h"
#include "python/bindings/array_args.h"
#include "python/bindings/fastcall.h"
#include "python/bindings/op_runner.h"
#include "runtime/arg_error.h"
#include "runtime/launch_shape.h"
#include "runtime/ops/gather_ops.h"
#include "runtime/ops/gather_ragged.h"
#include "runtime/ops/gather_plan.h"

namespace py = pybind11;

namespace jitops {
namespace {

enum Slot : size_t { kSlotX = 0, kSlotIndex = 1, kSlotOut = 2 };

py::object run_gather(CallArrays& call, const GatherProblem& problem, py::handle out, int explain_arch) {
  LaunchPlan plan;
  bool any = plan_gather(problem, planning_device(call, explain_arch), planning_error_slot(call, explain_arch), plan);
  return execute(call, &plan, any ? 1 : 0, py::reinterpret_borrow<py::object>(out), kSlotOut, explain_arch);
}

py::object index_select(py::handle x, int64_t dim, py::handle index, py::handle out, py::handle stream,
                        int explain_arch) {
  CallArrays call({{"x", x}, {"index", index}, {"out", out, true}}, stream);
  enter_call(call);
  std::vector<int64_t> shape = index_select_shape(call[kSlotX], dim, call[kSlotIndex]);
  py::object result = prepare_out(call, kSlotOut, kSlotX, shape, call[kSlotX].dtype, out);
  return run_gather(call, index_select_problem(call[kSlotOut], call[kSlotX], dim, call[kSlotIndex]), result,
                    explain_arch);
}

py::object take(py::handle x, py::handle indices, py::handle axis, py::handle out, py::handle stream,
                int explain_arch) {
  CallArrays call({{"x", x}, {"indices", indices}, {"out", out, true}}, stream);
  enter_call(call);
  std::optional<int64_t> ax;
  if (!axis.is_none()) {
    if (!py::isinstance<py::int_>(axis))
      throw type_error("axis: expected an int or None (got " + std::string(py::str(py::type::handle_of(axis).attr("__name__"))) + ")");
    ax = int_arg(axis.ptr(), "axis");
  }
  std::vector<int64_t> shape = take_shape(call[kSlotX], call[kSlotIndex], ax);
  py::object result = prepare_out(call, kSlotOut, kSlotX, shape, call[kSlotX].dtype, out);
  return run_gather(call, take_problem(call[kSlotOut], call[kSlotX], call[kSlotIndex], ax), result, explain_arch);
}

py::object gather(py::handle x, int64_t dim, py::handle index, py::handle out, py::handle stream, int explain_arch) {
  CallArrays call({{"x", x}, {"index", index}, {"out", out, true}}, stream);
  enter_call(call);
  std::vector<int64_t> shape = gather_shape(call[kSlotX], dim, call[kSlotIndex]);
  py::object result = prepare_out(call, kSlotOut, kSlotX, shape, call[kSlotX].dtype, out);
  return run_gather(call, gather_problem(call[kSlotOut], call[kSlotX], dim, call[kSlotIndex]), result, explain_arch);
}

const char* const kIndexSelectNames[] = {"x", "dim", "index", "out", "stream", "_explain"};
const FastSignature kIndexSelectSig{"index_select", kIndexSelectNames, 6, 4, 3};
py::object index_select_body(PyObject* const* a) {
  return index_select(a[0], int_arg(a[1], "dim"), a[2], or_none(a[3]), or_none(a[4]), explain_arg(a[5]));
}

const char* const kTakeNames[] = {"x", "indices", "axis", "out", "stream", "_explain"};
const FastSignature kTakeSig{"take", kTakeNames, 6, 4, 2};
py::object take_body(PyObject* const* a) {
  return take(a[0], a[1], or_none(a[2]), or_none(a[3]), or_none(a[4]), explain_arg(a[5]));
}

const char* const kGatherNames[] = {"x", "dim", "index", "out", "stream", "_explain"};
const FastSignature kGatherSig{"gather", kGatherNames, 6, 4, 3};
py::object gather_body(PyObject* const* a) {
  return gather(a[0], int_arg(a[1], "dim"), a[2], or_none(a[3]), or_none(a[4]), explain_arg(a[5]));
}

PyMethodDef kIndexSelectDef{
    "index_select", JITOPS_FAST(kIndexSelectSig, index_select_body),
    METH_FASTCALL | METH_KEYWORDS,
    "index_select(x, dim, index, out=None, *, stream=None)\n--\n\n"
    "Select ``index`` entries of ``x`` along ``dim``, like ``torch.index_select``.\n\n"
    "``index`` is a 0-d or 1-d int32/int64 array; indices must lie in ``[0, x.shape[dim])``.\n"
    "The result has ``x``'s shape with ``dim`` resized to ``len(index)``, and the caller's\n"
    "array type (PyTorch, CuPy, JAX, numpy). ``out=`` receives the result instead of a new\n"
    "array; ``stream=`` takes a raw handle, a ``torch.cuda.Stream`` or an object with\n"
    "``__cuda_stream__`` (default: PyTorch's or CuPy's current stream for their arrays,\n"
    "else the default stream)."};

PyMethodDef kTakeDef{
    "take", JITOPS_FAST(kTakeSig, take_body),
    METH_FASTCALL | METH_KEYWORDS,
    "take(x, indices, axis=None, out=None, *, stream=None)\n--\n\n"
    "Take elements of ``x`` at ``indices``, like ``numpy.take`` (mode='raise') and ONNX Gather.\n\n"
    "With ``axis=None`` ``x`` is read as if flattened in C order and the result has\n"
    "``indices``' shape; otherwise the result's shape is\n"
    "``x.shape[:axis] + indices.shape + x.shape[axis+1:]``. Negative indices count from\n"
    "the end; indices outside ``[-n, n)`` raise IndexError."};

PyMethodDef kGatherDef{
    "gather", JITOPS_FAST(kGatherSig, gather_body),
    METH_FASTCALL | METH_KEYWORDS,
    "gather(x, dim, index, out=None, *, stream=None)\n--\n\n"
    "Gather values of ``x`` along ``dim`` at ``index``, like ``torch.gather``.\n\n"
    "Also ``numpy.take_along_axis``, ONNX GatherElements and ``paddle.index_sample`` (2-D):\n"
    "``out[i][j] = x[i][index[i][j]]`` for ``dim=1``. ``index`` has ``x``'s number of\n"
    "dimensions and no size larger than ``x``'s outside ``dim``; the result has\n"
    "``index``'s shape. Indices must lie in ``[0, x.shape[dim])``."};

// One gather specialization described by its fields, for `python -m jitops ptx`.
py::dict explain_gather_spec(int unit_bytes, int index_bytes, int dims, int offset_bits, bool wrap, bool flat,
                             int arch) {
  using F = GatherSpecFields;
  auto check = [](bool ok, const std::string& what) {
    if (!ok) throw value_error(what);
  };
  check(unit_bytes == 1 || unit_bytes == 2 || unit_bytes == 4 || unit_bytes == 8 || unit_bytes == 16,
        "unit_bytes: expected 1, 2, 4, 8 or 16 (got " + std::to_string(unit_bytes) + ")");
  check(index_bytes == 4 || index_bytes == 8, "index_bytes: expected 4 or 8 (got " + std::to_string(index_bytes) + ")");
  check(dims >= 0 && dims <= kSpecializedDims, "dims: expected 1 to " + std::to_string(kSpecializedDims) +
                                                 ", or 0 for generic (got " + std::to_string(dims) + ")");
  check(offset_bits == 32 || offset_bits == 64, "offset_bits: expected 32 or 64 (got " + std::to_string(offset_bits) + ")");
  KernelSpec spec;
  spec.family = KernelFamily::Gather;
  spec.fields[F::kUnitBytes] = unit_bytes;
  spec.fields[F::kIndexBytes] = index_bytes;
  spec.fields[F::kDims] = dims;
  spec.fields[F::kOffsetBits] = offset_bits;
  spec.fields[F::kWrap] = wrap;
  spec.fields[F::kFlat] = flat;
  spec.fields[F::kUnroll] = 4;
  spec.fields[F::kMaxThreads] = 256;
  return describe_prepared(spec, arch);
}

}  // namespace

void bind_gather_ops(py::module_& m) {
  add_fastcall(m, &kIndexSelectDef);
  add_fastcall(m, &kTakeDef);
  add_fastcall(m, &kGatherDef);
  m.def(
      "compile_source",
      [](const std::string& source, int arch) {
        std::vector<std::string> options;
        CompiledKernel k;
        {
          py::gil_scoped_release release;
          CompileTarget target = compile_target_for(arch);
          options = compile_options(target);
          k = compile_source(source, "jitops_kernel", options, target);
        }
        return py::dict(py::arg("ptx") = k.ptx, py::arg("cubin_bytes") = k.cubin.size(), py::arg("log") = k.log,
                        py::arg("options") = k.options, py::arg("compile_ms") = k.compile_ms);
      },
      py::arg("source"), py::arg("arch"),
      "Compiles a source that defines extern \"C\" jitops_kernel (templates may be included by name).");
  m.def("explain_gather_spec", &explain_gather_spec, py::arg("unit_bytes"), py::arg("index_bytes"), py::arg("dims"),
        py::arg("offset_bits"), py::arg("wrap"), py::arg("flat"), py::arg("arch"));
  m.def("_set_gather_waves", &set_gather_waves, py::arg("waves"),
        "Development knob: the grid cap, in waves of resident blocks, of the gathers' heuristic launch (0: "
        "the rule's, uncapped for units of 8 bytes or more); returns the previous value.");
  m.def("_set_gather_ragged", &set_gather_ragged_mode, py::arg("mode"),
        "Development knob: ragged packs in the gathers (out's units aligned in memory, x read through two "
        "aligned packs shifted into place, a row's ends element by element) along rows that no pack size "
        "divides, -1 where the rule takes them, 0 never, 1 wherever the layout allows them; returns the "
        "previous mode.");
}

}  // namespace jitops
