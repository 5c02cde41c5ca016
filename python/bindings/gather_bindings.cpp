// Python entry points of the gather family. Arguments arrive positionally from
// jitops/ops.py; explain_arch < 0 runs the op, otherwise describes it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "jit/compiler.h"
#include "jit/gather_source.h"
#include "python/bindings/array_args.h"
#include "python/bindings/op_runner.h"
#include "runtime/arg_error.h"
#include "runtime/ops/gather_ops.h"

namespace py = pybind11;

namespace jitops {
namespace {

enum Slot : size_t { kSlotX = 0, kSlotIndex = 1, kSlotOut = 2 };

py::object run_gather(CallArrays& call, const GatherProblem& problem, py::object out, int explain_arch) {
  LaunchPlan plan;
  bool any = plan_gather(problem, planning_device(call, explain_arch), planning_error_slot(call, explain_arch), plan);
  return execute(call, &plan, any ? 1 : 0, std::move(out), kSlotOut, explain_arch);
}

py::object index_select(py::object x, int64_t dim, py::object index, py::object out, py::object stream,
                        int explain_arch) {
  CallArrays call({{"x", x}, {"index", index}, {"out", out, true}}, stream);
  enter_call(call);
  std::vector<int64_t> shape = index_select_shape(call[kSlotX], dim, call[kSlotIndex]);
  py::object result = prepare_out(call, kSlotOut, kSlotX, shape, call[kSlotX].dtype, out);
  return run_gather(call, index_select_problem(call[kSlotOut], call[kSlotX], dim, call[kSlotIndex]), result,
                    explain_arch);
}

py::object take(py::object x, py::object indices, py::object axis, py::object out, py::object stream,
                int explain_arch) {
  CallArrays call({{"x", x}, {"indices", indices}, {"out", out, true}}, stream);
  enter_call(call);
  std::optional<int64_t> ax;
  if (!axis.is_none()) {
    if (!py::isinstance<py::int_>(axis))
      throw type_error("axis: expected an int or None (got " + std::string(py::str(py::type::handle_of(axis).attr("__name__"))) + ")");
    ax = axis.cast<int64_t>();
  }
  std::vector<int64_t> shape = take_shape(call[kSlotX], call[kSlotIndex], ax);
  py::object result = prepare_out(call, kSlotOut, kSlotX, shape, call[kSlotX].dtype, out);
  return run_gather(call, take_problem(call[kSlotOut], call[kSlotX], call[kSlotIndex], ax), result, explain_arch);
}

py::object gather(py::object x, int64_t dim, py::object index, py::object out, py::object stream, int explain_arch) {
  CallArrays call({{"x", x}, {"index", index}, {"out", out, true}}, stream);
  enter_call(call);
  std::vector<int64_t> shape = gather_shape(call[kSlotX], dim, call[kSlotIndex]);
  py::object result = prepare_out(call, kSlotOut, kSlotX, shape, call[kSlotX].dtype, out);
  return run_gather(call, gather_problem(call[kSlotOut], call[kSlotX], dim, call[kSlotIndex]), result, explain_arch);
}

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
  check(dims >= 0 && dims <= 3, "dims: expected 1, 2, 3 or 0 for generic (got " + std::to_string(dims) + ")");
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
  m.def("index_select", &index_select);
  m.def("take", &take);
  m.def("gather", &gather);
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
}

}  // namespace jitops
