// Python entry points of the elementwise family: the built-in binary ops
// (add, sub, mul, div, maximum, minimum) as METH_FASTCALL builtins, and the
// generic entry behind jitops.ElementwiseKernel.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "jit/elementwise_source.h"
#include "python/bindings/array_args.h"
#include "python/bindings/fastcall.h"
#include "python/bindings/op_runner.h"
#include "python/bindings/scalar_arg.h"
#include "runtime/arg_error.h"
#include "runtime/ops/elementwise_plan.h"
#include "runtime/ops/elementwise_tile_plan.h"
#include "runtime/promotion.h"

namespace py = pybind11;

namespace jitops {
namespace {

// The operands of one call: arrays parsed by CallArrays, numbers kept aside.
struct Operands {
  std::vector<OperandArg> args;      // the arrays and outputs, in CallArrays slots
  int slot[kMaxElementwiseOperands];  // operand -> CallArrays slot, or -1 for a number
  Scalar number[kMaxElementwiseOperands];
};

Operands split_operands(PyObject* const* objects, const char* const* names, int inputs, int outputs) {
  Operands o;
  for (int k = 0; k < inputs + outputs; ++k) {
    PyObject* v = objects[k];
    if (k < inputs && is_number(v)) {
      o.slot[k] = -1;
      o.number[k] = scalar_arg(v, names[k]);
      continue;
    }
    o.slot[k] = int(o.args.size());
    o.args.push_back(OperandArg{names[k], v ? py::handle(v) : py::none(), k >= inputs});
  }
  return o;
}

// Broadcast shape of the array inputs, or of the first given output.
std::vector<int64_t> result_shape(const CallArrays& call, const Operands& o, int inputs, int outputs,
                                  const char* const* names) {
  int ndim = 0;
  int64_t shape[kMaxTensorDims];
  bool any = false;
  for (int k = 0; k < inputs; ++k) {
    if (o.slot[k] < 0) continue;
    broadcast_into(call[size_t(o.slot[k])], names[k], ndim, shape);
    any = true;
  }
  if (!any) {
    for (int k = inputs; k < inputs + outputs && !any; ++k)
      if (call.present(size_t(o.slot[k]))) {
        const TensorDesc& t = call[size_t(o.slot[k])];
        ndim = t.ndim;
        std::copy(t.shape, t.shape + t.ndim, shape);
        any = true;
      }
    if (!any) throw type_error(std::string(names[0]) + ": expected at least one array among the inputs, or out=");
  }
  return std::vector<int64_t>(shape, shape + ndim);
}

// A built-in's operand dtypes into `dtypes`; returns the rules it followed.
PromotionRules resolve_builtin(const CallArrays& call, const Operands& o, int operation, PromotionRules rules,
                               DType* dtypes);

// Built-ins (operation < kFirstUserOperation) resolve `dtypes` here, from the arrays.
py::object run_elementwise(int operation, PyObject* const* objects, const char* const* names, int inputs, int outputs,
                           DType* dtypes, bool load_outputs, py::handle stream, int explain_arch,
                           PromotionRules rules = PromotionRules::NumPy) {
  Operands o = split_operands(objects, names, inputs, outputs);
  CallArrays call(o.args.data(), o.args.size(), stream);
  enter_call(call);
  if (operation < kFirstUserOperation) rules = resolve_builtin(call, o, operation, rules, dtypes);
  if (operation == kEwDiv && rules == PromotionRules::Torch && o.slot[1] < 0) {  // PyTorch's bits: x * (1 / y)
    operation = kEwMul;
    o.number[1] = torch_reciprocal(dtypes[1], o.number[1]);
  }
  ElementwiseProblem p;
  p.operation = operation;
  p.inputs = inputs;
  p.outputs = outputs;
  p.load_outputs = load_outputs;
  for (int k = 0; k < inputs; ++k) {
    p.dtypes[k] = dtypes[k];
    if (o.slot[k] < 0) {
      p.scalar[k] = true;
      p.scalar_bits[k] = scalar_bits(dtypes[k], o.number[k]);
    } else if (call[size_t(o.slot[k])].dtype != dtypes[k]) {
      throw type_error(std::string(names[k]) + ": expected dtype " + dtype_info(dtypes[k]).name + " (got " +
                       dtype_info(call[size_t(o.slot[k])].dtype).name + ")");
    }
  }
  const std::vector<int64_t> shape = result_shape(call, o, inputs, outputs, names);
  p.ndim = int(shape.size());
  std::copy(shape.begin(), shape.end(), p.shape);
  size_t like = 0;
  for (int k = 0; k < inputs + outputs; ++k)
    if (o.slot[k] >= 0 && call.present(size_t(o.slot[k]))) {
      like = size_t(o.slot[k]);
      break;
    }
  std::vector<py::object> results;
  std::vector<int> order;  // new outputs follow the inputs' layout
  bool ordered = false;
  for (int k = inputs; k < inputs + outputs; ++k) {
    p.dtypes[k] = dtypes[k];
    const size_t slot = size_t(o.slot[k]);
    if (call.present(slot)) {
      call.check_out(slot, shape, dtypes[k], true);
      results.push_back(py::reinterpret_borrow<py::object>(objects[k]));
      continue;
    }
    if (!ordered) {
      const TensorDesc* arrays[kMaxElementwiseOperands];
      int count = 0;
      for (int i = 0; i < inputs; ++i)
        if (o.slot[i] >= 0) arrays[count++] = &call[size_t(o.slot[i])];
      order = inputs_memory_order(arrays, count, int(shape.size()), shape.data());
      ordered = true;
    }
    results.push_back(call.allocate(slot, like, shape, dtypes[k], order));
  }
  for (int k = 0; k < inputs + outputs; ++k)
    if (o.slot[k] >= 0) p.arrays[k] = &call[size_t(o.slot[k])];
  LaunchPlan plan;
  const bool any = plan_elementwise(p, planning_device(call, explain_arch), plan);
  const size_t first_out = size_t(o.slot[inputs]);
  py::object first = execute(call, &plan, any ? 1 : 0, results[0], first_out, explain_arch);
  if (explain_arch >= 0 || outputs == 1) return first;
  py::tuple all(outputs);
  all[0] = first;
  for (int k = 1; k < outputs; ++k) all[size_t(k)] = call.finish(results[size_t(k)], size_t(o.slot[inputs + k]));
  return std::move(all);
}

// A built-in's dtypes: the result type by PyTorch's promotion rules when a
// PyTorch tensor takes part (or the host path says its caller passed them),
// NumPy's otherwise; true division of integers gives the default float. Arrays
// are read as they are and converted in the kernel; a number takes the compute
// type (float32 for 16-bit floats, as PyTorch's opmath does).
PromotionRules resolve_builtin(const CallArrays& call, const Operands& o, int operation, PromotionRules rules,
                               DType* dtypes) {
  const bool x_number = o.slot[0] < 0, y_number = o.slot[1] < 0;
  if (x_number && y_number) throw type_error("x: expected an array for x or y (got two numbers)");
  PromotionInput in[2];
  for (int k = 0; k < 2; ++k) {
    if (o.slot[k] < 0) {
      in[k].number = true;
      in[k].dtype = o.number[k].boolean ? DType::Bool : o.number[k].integral ? DType::Int64 : DType::Float64;
      continue;
    }
    const TensorDesc& t = call[size_t(o.slot[k])];
    if (call.kind(size_t(o.slot[k])) == ArrayKind::Torch) rules = PromotionRules::Torch;
    if (!is_integer(t.dtype) && !is_floating(t.dtype) && t.dtype != DType::Bool)
      throw type_error(std::string(k == 0 ? "x" : "y") + ": expected an integer, floating or bool dtype (got " +
                       dtype_info(t.dtype).name + ")");
    in[k].dtype = t.dtype;
    in[k].zero_dim = t.ndim == 0;
  }
  DType result = promote_inputs(in, 2, rules);
  if (operation == kEwDiv) result = true_division_type(result, rules);
  if (result == DType::Bool)
    throw type_error(std::string("x: expected an integer or floating dtype (got bool") +
                     (x_number || y_number ? "" : " and bool") + "); convert one of them first");
  const DType compute = number_compute_type(result);
  dtypes[0] = x_number ? compute : in[0].dtype;
  dtypes[1] = y_number ? compute : in[1].dtype;
  dtypes[2] = result;
  return rules;
}

PromotionRules rules_arg(PyObject* p) {
  if (!p) return PromotionRules::NumPy;
  const std::string name = py::str(p).cast<std::string>();
  if (name == "torch") return PromotionRules::Torch;
  if (name == "numpy") return PromotionRules::NumPy;
  throw value_error("_promotion: expected 'torch' or 'numpy' (got '" + name + "')");
}

py::object run_builtin(int operation, PyObject* const* a) {
  static const char* const kNames[] = {"x", "y", "out"};
  PyObject* objects[3] = {a[0], a[1], a[2]};
  DType dtypes[3] = {};
  return run_elementwise(operation, objects, kNames, 2, 1, dtypes, false, or_none(a[3]), explain_arg(a[4]),
                         rules_arg(a[5]));
}

// _promotion: the host path's word on whose rules the caller expects ('torch' for CPU tensors).
const char* const kBinaryNames[] = {"x", "y", "out", "stream", "_explain", "_promotion"};

#define JITOPS_BINARY(op_name, code)                                                          \
  const FastSignature k_##op_name##_sig{#op_name, kBinaryNames, 6, 3, 2};                     \
  py::object op_name##_body(PyObject* const* a) { return run_builtin(code, a); }

JITOPS_BINARY(add, kEwAdd)
JITOPS_BINARY(sub, kEwSub)
JITOPS_BINARY(mul, kEwMul)
JITOPS_BINARY(div, kEwDiv)
JITOPS_BINARY(maximum, kEwMaximum)
JITOPS_BINARY(minimum, kEwMinimum)

#define JITOPS_BINARY_DOC(name, what)                                                                \
  name "(x, y, out=None, *, stream=None)\n--\n\n" what "\n\n"                                        \
  "``x`` and ``y`` are arrays that broadcast together (numpy rules), or one of them is\n"           \
  "a Python number. Mixed dtypes promote as PyTorch does when a PyTorch tensor takes part\n"         \
  "(``torch.result_type``), as NumPy does otherwise (``numpy.result_type``, NEP 50): a number\n"    \
  "is weak in both. float16 and bfloat16 compute in float32 and round once. ``out=`` may\n"          \
  "be one of the inputs (the same view) to work in place."

PyMethodDef kDefs[] = {
    {"add", JITOPS_FAST(k_add_sig, add_body), METH_FASTCALL | METH_KEYWORDS,
     JITOPS_BINARY_DOC("add", "``x + y`` elementwise, like ``torch.add`` and ``numpy.add``.")},
    {"sub", JITOPS_FAST(k_sub_sig, sub_body), METH_FASTCALL | METH_KEYWORDS,
     JITOPS_BINARY_DOC("sub", "``x - y`` elementwise, like ``torch.sub`` and ``numpy.subtract``.")},
    {"mul", JITOPS_FAST(k_mul_sig, mul_body), METH_FASTCALL | METH_KEYWORDS,
     JITOPS_BINARY_DOC("mul", "``x * y`` elementwise, like ``torch.mul`` and ``numpy.multiply``.")},
    {"div", JITOPS_FAST(k_div_sig, div_body), METH_FASTCALL | METH_KEYWORDS,
     JITOPS_BINARY_DOC("div", "``x / y`` elementwise (true division), like ``torch.div``; integers give the "
                              "default float (float32 by PyTorch's rules, float64 by NumPy's). A PyTorch tensor divided "
                              "by a Python number is ``x * (1 / y)``, as PyTorch computes it (its bits).")},
    {"maximum", JITOPS_FAST(k_maximum_sig, maximum_body), METH_FASTCALL | METH_KEYWORDS,
     JITOPS_BINARY_DOC("maximum", "The larger of ``x`` and ``y``, NaN if either is NaN, like ``torch.maximum``.")},
    {"minimum", JITOPS_FAST(k_minimum_sig, minimum_body), METH_FASTCALL | METH_KEYWORDS,
     JITOPS_BINARY_DOC("minimum", "The smaller of ``x`` and ``y``, NaN if either is NaN, like ``torch.minimum``.")},
};

DType dtype_arg(const std::string& name, const std::string& what) {
  DType d;
  if (!dtype_from_name(name, &d) || !cuda_type_name(int(d)))
    throw type_error(what + ": unsupported dtype '" + name + "'");
  return d;
}

}  // namespace

void bind_elementwise_ops(py::module_& m) {
  for (PyMethodDef& def : kDefs) add_fastcall(m, &def);
  m.def("_set_elementwise_tile_fitted", &set_elementwise_tile_fitted, py::arg("fitted"),
        "Development knob: the elementwise tile's edges fitted to short dims of a and b where powers of two "
        "leave over a quarter idle (the default), else powers of two throughout.");
  m.def(
      "result_dtype",
      [](const std::string& x, const std::string& y, const std::string& rules, bool division, bool zero_dim_y) {
        // Each side a dtype name, or "number:int" / "number:float" / "number:bool" for a Python number.
        PromotionInput in[2];
        const std::string sides[2] = {x, y};
        for (int k = 0; k < 2; ++k) {
          const std::string& v = sides[k];
          in[k].number = v.rfind("number:", 0) == 0;
          in[k].dtype = v == "number:int"     ? DType::Int64
                        : v == "number:float" ? DType::Float64
                        : v == "number:bool"  ? DType::Bool
                                              : dtype_arg(v, k ? "y" : "x");
        }
        in[1].zero_dim = zero_dim_y;
        const PromotionRules r = rules_arg(py::str(rules).ptr());
        DType d = promote_inputs(in, 2, r);
        if (division) d = true_division_type(d, r);
        return std::string(dtype_info(d).name);
      },
      py::arg("x"), py::arg("y"), py::arg("rules"), py::arg("division") = false, py::arg("zero_dim_y") = false,
      "The result dtype of a built-in elementwise op (tests compare it with PyTorch and NumPy).");
  m.def(
      "register_elementwise",
      [](const std::string& name, const std::vector<std::string>& param_names,
         const std::vector<std::string>& param_types, int inputs, const std::string& operation,
         const std::string& preamble) {
        ElementwiseOperation op{name, param_names, param_types, inputs, operation, preamble};
        return register_elementwise_operation(op);
      },
      py::arg("name"), py::arg("param_names"), py::arg("param_types"), py::arg("inputs"), py::arg("operation"),
      py::arg("preamble") = "", "Registers a user operation (jitops.ElementwiseKernel); returns its id.");
  m.def(
      "elementwise_call",
      [](int operation, py::sequence operands, const std::vector<std::string>& names,
         const std::vector<std::string>& dtype_names, int inputs, bool load_outputs, py::handle stream,
         int explain_arch) {
        const int count = int(py::len(operands));
        if (count > kMaxElementwiseOperands || count != int(names.size()) || count != int(dtype_names.size()) ||
            inputs < 0 || inputs >= count)
          throw value_error("operands: at most " + std::to_string(kMaxElementwiseOperands) +
                            " inputs and outputs together, with at least one output");
        std::vector<py::object> held(static_cast<size_t>(count));
        PyObject* objects[kMaxElementwiseOperands];
        const char* cnames[kMaxElementwiseOperands];
        DType dtypes[kMaxElementwiseOperands];
        for (int k = 0; k < count; ++k) {
          held[size_t(k)] = operands[size_t(k)];
          objects[k] = held[size_t(k)].is_none() ? nullptr : held[size_t(k)].ptr();
          cnames[k] = names[size_t(k)].c_str();
          dtypes[k] = dtype_arg(dtype_names[size_t(k)], names[size_t(k)]);
        }
        return run_elementwise(operation, objects, cnames, inputs, count - inputs, dtypes, load_outputs, stream,
                               explain_arch);
      },
      py::arg("operation"), py::arg("operands"), py::arg("names"), py::arg("dtypes"), py::arg("inputs"),
      py::arg("load_outputs"), py::arg("stream") = py::none(), py::arg("explain_arch") = -1,
      "Runs a registered operation on operands (inputs, then outputs or None) of resolved dtypes.");
}

}  // namespace jitops
