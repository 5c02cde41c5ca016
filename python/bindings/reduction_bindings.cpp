// The entry behind jitops.ReductionKernel: a registered user reduction run
// over the inputs' broadcast shape, reducing `axis` (runtime/ops/reduction_plan.h).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "jit/reduction_source.h"
#include "python/bindings/array_args.h"
#include "python/bindings/op_runner.h"
#include "python/bindings/stream_scratch.h"
#include "runtime/arg_error.h"
#include "runtime/ops/elementwise_plan.h"
#include "runtime/ops/reduction_plan.h"

namespace py = pybind11;

namespace jitops {
namespace {

DType dtype_named(const std::string& name, const std::string& what) {
  DType d;
  if (!dtype_from_name(name, &d) || d == DType::Complex64 || d == DType::Complex128)
    throw type_error(what + ": unsupported dtype '" + name + "'");
  return d;
}

// The reduced dims of a shape of `ndim` dims: all (axis None), or the listed
// ones (negative from the end), each once.
std::vector<bool> reduced_axes(py::handle axis, int ndim) {
  std::vector<bool> reduced(size_t(ndim), axis.is_none());
  if (axis.is_none()) return reduced;
  for (py::handle a : axis) {
    int64_t d = a.cast<int64_t>();
    if (d < -ndim || d >= ndim)
      throw index_error("axis: " + std::to_string(d) + " is out of range for " + std::to_string(ndim) +
                        " dims (valid: [" + std::to_string(-ndim) + ", " + std::to_string(ndim) + "))");
    if (d < 0) d += ndim;
    if (reduced[size_t(d)]) throw value_error("axis: dim " + std::to_string(d) + " is listed twice");
    reduced[size_t(d)] = true;
  }
  return reduced;
}

py::object reduction_call(int operation, py::sequence operands, const std::vector<std::string>& names,
                          const std::vector<std::string>& dtype_names, int inputs, py::handle axis, bool keepdims,
                          py::handle stream, int explain_arch) {
  const int count = int(py::len(operands));
  if (inputs < 1 || inputs > kMaxReductionInputs || count != inputs + 1 || int(names.size()) != count ||
      int(dtype_names.size()) != count + 1)
    throw value_error("in_params: a reduction takes 1 to 4 input arrays and one output");
  std::vector<py::object> held(static_cast<size_t>(count));
  OperandArg args[kMaxReductionOperands];
  for (int k = 0; k < count; ++k) {
    held[size_t(k)] = operands[size_t(k)];
    args[k] = OperandArg{names[size_t(k)].c_str(), held[size_t(k)], k == inputs};
  }
  CallArrays call(args, size_t(count), stream);
  enter_call(call);
  ReductionProblem p;
  p.operation = operation;
  p.inputs = inputs;
  for (int k = 0; k <= count; ++k) p.dtypes[k] = dtype_named(dtype_names[size_t(k)], k < count ? names[size_t(k)] : "reduce_type");
  for (int k = 0; k < inputs; ++k) {
    if (call[size_t(k)].dtype != p.dtypes[k])
      throw type_error(names[size_t(k)] + ": expected dtype " + dtype_names[size_t(k)] + " (got " +
                       dtype_info(call[size_t(k)].dtype).name + ")");
    p.in[k] = &call[size_t(k)];
    broadcast_into(call[size_t(k)], names[size_t(k)].c_str(), p.ndim, p.shape);
  }
  const std::vector<bool> reduced = reduced_axes(axis, p.ndim);
  std::vector<int64_t> out_shape;
  for (int d = 0; d < p.ndim; ++d) {
    p.reduced[d] = reduced[size_t(d)];
    if (!reduced[size_t(d)]) out_shape.push_back(p.shape[d]);
    else if (keepdims) out_shape.push_back(1);
  }
  const size_t out_slot = size_t(inputs);
  py::object out = prepare_out(call, out_slot, 0, out_shape, p.dtypes[inputs], held[out_slot]);
  const TensorDesc& o = call[out_slot];
  p.out = &o;
  for (int d = 0, kept = 0, od = 0; d < p.ndim; ++d) {
    if (!reduced[size_t(d)]) p.out_strides[kept++] = o.strides[od];
    if (!reduced[size_t(d)] || keepdims) ++od;
  }
  LaunchPlan plans[2];
  int planned = 0;
  size_t scratch_bytes = 0;
  plan_reduction(p, planning_device(call, explain_arch), plans, planned, scratch_bytes);
  if (scratch_bytes > 0 && explain_arch < 0 && !call.is_virtual()) {
    StreamScratch scratch(call, (scratch_bytes + 3) / 4, 0, 0);
    set_reduction_scratch(plans, planned, scratch.data());
    return execute(call, plans, planned, out, out_slot, explain_arch);
  }
  return execute(call, plans, planned, out, out_slot, explain_arch);
}

}  // namespace

void bind_reductions(py::module_& m) {
  m.def(
      "register_reduction",
      [](const std::string& name, const std::vector<std::string>& param_names,
         const std::vector<std::string>& param_types, int inputs, const std::string& map_expr,
         const std::string& reduce_expr, const std::string& post_map_expr, const std::string& identity,
         const std::string& reduce_type, const std::string& preamble) {
        ReductionOperation op{name, param_names, param_types, inputs, map_expr, reduce_expr, post_map_expr,
                              identity, reduce_type, preamble};
        return register_reduction_operation(op);
      },
      py::arg("name"), py::arg("param_names"), py::arg("param_types"), py::arg("inputs"), py::arg("map_expr"),
      py::arg("reduce_expr"), py::arg("post_map_expr"), py::arg("identity"), py::arg("reduce_type"),
      py::arg("preamble") = "", "Registers a user reduction (jitops.ReductionKernel); returns its id.");
  m.def("reduction_call", &reduction_call, py::arg("operation"), py::arg("operands"), py::arg("names"),
        py::arg("dtypes"), py::arg("inputs"), py::arg("axis"), py::arg("keepdims"), py::arg("stream") = py::none(),
        py::arg("explain_arch") = -1,
        "Runs a registered reduction: operands are the inputs then the output (or None); dtypes the inputs', "
        "the output's and the reduce type's.");
}

}  // namespace jitops
