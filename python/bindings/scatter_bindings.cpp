// Python entry points of the accumulate family (in place on self), bound as
// METH_FASTCALL builtins like the gather family.
#include <pybind11/pybind11.h>

#include <memory>
#include <vector>
#include <string>

#include "jit/scatter_source.h"
#include "jitops/scatter_params.h"
#include "python/bindings/array_args.h"
#include "python/bindings/fastcall.h"
#include "python/bindings/op_runner.h"
#include "python/bindings/scalar_arg.h"
#include "python/bindings/stream_scratch.h"
#include "python/bindings/torch_tensors.h"
#include "runtime/arg_error.h"
#include "runtime/driver_api.h"
#include "runtime/ops/fill_marked_plan.h"
#include "runtime/ops/row_sum_plan.h"
#include "runtime/ops/scatter_ops.h"
#include "runtime/ops/scatter_owned_rows.h"
#include "runtime/ops/scatter_tile_plan.h"
#include "runtime/ops/scatter_fitted_lanes.h"
#include "runtime/ops/scatter_index_inner.h"
#include "runtime/ops/scatter_mean.h"
#include "runtime/ops/scatter_private_plan.h"
#include "runtime/ops/scatter_ragged.h"

namespace py = pybind11;

namespace jitops {
namespace {

enum Slot : size_t { kSlotSelf = 0, kSlotIndex = 1, kSlotSource = 2 };

// torch.use_deterministic_algorithms(True) sends PyTorch tensors' floating sums
// down the deterministic path, as PyTorch's index_add_ and scatter_add_ go.
bool torch_asks_determinism(const CallArrays& call) {
  return call.any_torch() && is_floating(call[kSlotSelf].dtype) && torch_deterministic_mode() != 0;
}

void check_writable_self(const CallArrays& call) {
  if (call.kind(kSlotSelf) == ArrayKind::Jax)
    throw type_error("self: JAX arrays are immutable and cannot be modified in place; use a PyTorch or CuPy array, "
                     "or jax's .at[] updates");
}

// Up to four passes: scatter_reduce_'s mean with include_self=False counts, resets, adds and divides.
py::object run_plans(CallArrays& call, ScatterProblem* problems, int count, py::handle self, int explain_arch) {
  LaunchPlan plans[4];
  if (count > 4) throw std::logic_error("run_plans: more than four passes");
  int planned = 0;
  const DeviceInfo device = planning_device(call, explain_arch);
  IndexErrorSlot* slot = planning_error_slot(call, explain_arch);
  for (int i = 0; i < count; ++i)
    if (plan_scatter(problems[i], device, slot, plans[planned])) ++planned;
  return execute(call, plans, planned, py::reinterpret_borrow<py::object>(self), kSlotSelf, explain_arch);
}

// A bool argument: Python's or numpy's bool, as PyTorch insists (a string or
// a tensor here is a mistake, not a truth value).
bool flag_arg(PyObject* v, const char* name, bool absent = false) {
  if (!v) return absent;
  if (!PyBool_Check(v) && std::string(Py_TYPE(v)->tp_name).rfind("numpy.bool", 0) != 0)
    throw type_error(std::string(name) + ": expected a bool (got " + Py_TYPE(v)->tp_name + ")");
  return PyObject_IsTrue(v) != 0;
}

// deterministic=True for a floating sum: keys, sort, one ordered sum per destination.
py::object run_deterministic(CallArrays& call, ScatterProblem p, bool mean, py::handle self, int explain_arch) {
  const TensorDesc& s = call[kSlotSelf];
  if (p.space.numel() >= (int64_t(1) << 32) || s.numel() >= (int64_t(1) << 31))
    throw value_error("deterministic: supported up to 2^32 source elements into up to 2^31 elements of self (got " +
                      std::to_string(p.space.numel()) + " into " + std::to_string(s.numel()) + ")");
  const size_t n = sort_length(p.space.numel());
  std::unique_ptr<StreamScratch> keys;
  unsigned long long* key_ptr = reinterpret_cast<unsigned long long*>(uintptr_t(256));  // planned, never launched
  if (explain_arch < 0 && p.space.numel() > 0) {
    keys = std::make_unique<StreamScratch>(call, n * 2, 0xFFFFFFFFu);
    key_ptr = keys->keys();
  }
  std::vector<LaunchPlan> plans;
  plan_deterministic_sum(p, mean, key_ptr, planning_device(call, explain_arch), planning_error_slot(call, explain_arch),
                         plans);
  return execute(call, plans.data(), int(plans.size()), py::reinterpret_borrow<py::object>(self), kSlotSelf,
                 explain_arch);
}

// Whole rows added (see runtime/ops/row_sum_plan.h): sort them by destination,
// then sum; scratch for the sort (nothing in it needs zeroing).
py::object run_row_sum(CallArrays& call, const ScatterProblem& p, const RowSumLayout& layout, py::handle self,
                       int explain_arch) {
  std::unique_ptr<StreamScratch> scratch;
  int* words = reinterpret_cast<int*>(uintptr_t(256));  // planned, never launched
  if (explain_arch < 0 && layout.scratch_words() > 0) {
    scratch = std::make_unique<StreamScratch>(call, layout.scratch_words(), 0u, 0);
    words = scratch->data();
  }
  std::vector<LaunchPlan> plans;
  plan_row_sum(p, layout, words, planning_device(call, explain_arch), planning_error_slot(call, explain_arch), plans);
  return execute(call, plans.data(), int(plans.size()), py::reinterpret_borrow<py::object>(self), kSlotSelf,
                 explain_arch);
}

py::object index_add_like(PyObject* const* a, int op, int op_code, PyObject* alpha, bool deterministic = false) {
  CallArrays call({{"self", a[0]}, {"index", a[2]}, {"source", a[3]}}, or_none(a[5]));
  enter_call(call);
  check_writable_self(call);
  if (!deterministic && op == kScatterAdd) deterministic = torch_asks_determinism(call);
  const int64_t dim = int_arg(a[1], "dim");
  ScatterProblem p = index_add_problem(call[kSlotSelf], dim, call[kSlotIndex], call[kSlotSource], op, op_code);
  if (alpha) {
    Scalar s = scalar_arg(alpha, "alpha");
    if (!is_floating(call[kSlotSelf].dtype) && !s.integral)
      throw type_error("alpha: expected an integer for an integer self, as PyTorch (got " + std::to_string(s.f) + ")");
    p.has_alpha = s.integral ? s.i != 1 : s.f != 1.0;
    p.alpha = s.integral ? double(s.i) : s.f;
    p.alpha_int = s.integral ? s.i : int64_t(s.f);
  }
  if (deterministic && op == kScatterAdd && is_floating(call[kSlotSelf].dtype))
    return run_deterministic(call, p, false, a[0], explain_arg(a[6]));
  if (row_sums_considered(p)) {  // before the device: small adds skip both
    const RowSumLayout layout = row_sum_layout(p, planning_device(call, explain_arg(a[6])));
    if (layout.applies) return run_row_sum(call, p, layout, a[0], explain_arg(a[6]));
  }
  return run_plans(call, &p, 1, a[0], explain_arg(a[6]));
}

const char* const kIndexAddNames[] = {"self", "dim", "index", "source", "alpha", "deterministic", "stream",
                                      "_explain"};
const FastSignature kIndexAddSig{"index_add_", kIndexAddNames, 8, 5, 4};
py::object index_add_body(PyObject* const* a) {
  // index_add_like reads the stream at [5] and explain at [6].
  PyObject* args[7] = {a[0], a[1], a[2], a[3], a[4], a[6], a[7]};
  return index_add_like(args, kScatterAdd, kOpIndexAdd, a[4], flag_arg(a[5], "deterministic"));
}

const char* const kIndexCopyNames[] = {"self", "dim", "index", "source", "stream", "_explain"};
const FastSignature kIndexCopySig{"index_copy_", kIndexCopyNames, 6, 4, 4};
py::object index_copy_body(PyObject* const* a) {
  PyObject* args[7] = {a[0], a[1], a[2], a[3], nullptr, a[4], a[5]};
  return index_add_like(args, kScatterCopy, kOpIndexCopy, nullptr);
}

const char* const kIndexFillNames[] = {"self", "dim", "index", "value", "stream", "_explain"};
const FastSignature kIndexFillSig{"index_fill_", kIndexFillNames, 6, 4, 4};
py::object index_fill_body(PyObject* const* a) {
  CallArrays call({{"self", a[0]}, {"index", a[2]}}, or_none(a[4]));
  enter_call(call);
  check_writable_self(call);
  ScatterProblem p = index_fill_problem(call[kSlotSelf], int_arg(a[1], "dim"), call[kSlotIndex], scalar_arg(a[3], "value"));
  return run_plans(call, &p, 1, a[0], explain_arg(a[5]));
}

// Whether include_self=True's mean counts in its adds' pass (`adds`, planned here without counts where the rule
// asks whether they go in packs).
bool counts_in_adds(CallArrays& call, const ScatterProblem& adds, int explain_arch) {
  const DeviceInfo device = planning_device(call, explain_arch);
  const TensorDesc& self = call[kSlotSelf];
  if (!mean_counts_with_adds(self, device)) return false;
  if (self.element_bytes() != 2 || adds.space.numel() < kMeanPackedUnits) return true;
  LaunchPlan plan;
  return !plan_scatter(adds, device, planning_error_slot(call, explain_arch), plan) ||
         plan.spec.fields[ScatterSpecFields::kVec] == 1;
}

py::object scatter_like(PyObject* const* a, const std::string& reduce, bool include_self, PyObject* stream,
                        PyObject* explain, int op_code, bool deterministic) {
  CallArrays call({{"self", a[0]}, {"index", a[2]}, {"src", a[3]}}, or_none(stream));
  enter_call(call);
  check_writable_self(call);
  const int64_t dim = int_arg(a[1], "dim");
  const int op = reduce_op(reduce);
  const int explain_arch = explain_arg(explain);
  const TensorDesc& self = call[kSlotSelf];
  ScatterProblem passes[4];
  int count = 0;
  std::unique_ptr<StreamScratch> counts;
  const bool mean = reduce == "mean";
  if (!deterministic && (op == kScatterAdd || (reduce == "prod" && is_floating(self.dtype))) &&
      torch_asks_determinism(call)) {
    if (reduce != "prod") {
      deterministic = true;
    } else if (torch_deterministic_mode() == 1) {
      throw std::runtime_error("scatter_reduce_: reduce='prod' of floating values has no deterministic "
                               "implementation, and torch.use_deterministic_algorithms(True) asks for one "
                               "(PyTorch's scatter_reduce_ raises the same)");
    } else if (PyErr_WarnEx(PyExc_UserWarning, "scatter_reduce_: reduce='prod' of floating values is not "
                                               "deterministic (torch.use_deterministic_algorithms warn_only)", 1) < 0) {
      throw py::error_already_set();
    }
  }
  if (deterministic && reduce == "prod" && is_floating(self.dtype))
    throw value_error("deterministic: supported for reduce='sum' and 'mean' (amax and amin are deterministic "
                      "already; got 'prod')");
  if (deterministic && op == kScatterAdd && is_floating(self.dtype)) {
    ScatterProblem p = scatter_problem(self, dim, call[kSlotIndex], call[kSlotSource], kScatterAdd, op_code);
    p.include_self = include_self;
    return run_deterministic(call, p, mean, a[0], explain_arch);
  }
  // include_self=False's mean: count only, then zero the counted elements in one pass over self.
  const bool reset_by_counts = mean && !include_self && self.numel() > 0 &&
                               mean_reset_by_counts(call[kSlotIndex].numel());
  int* counts_at = nullptr;
  if (mean && self.numel() > 0) {
    if (explain_arch < 0) {
      counts = std::make_unique<StreamScratch>(call, size_t(self.numel()), 0u);
      counts_at = counts->data();
    } else {
      counts_at = reinterpret_cast<int*>(uintptr_t(256));  // planned, never launched
    }
  }
  ScatterProblem adds = scatter_problem(self, dim, call[kSlotIndex], call[kSlotSource], op, op_code);
  // include_self=True's mean counts in the adds' pass where it pays: nothing reads the counts before the division.
  const bool counts_with_adds = mean && include_self && self.numel() > 0 && counts_in_adds(call, adds, explain_arch);
  if (!include_self || (mean && !counts_with_adds)) {
    ScatterProblem prepare = scatter_problem(self, dim, call[kSlotIndex], call[kSlotSource], kScatterPrepare, op_code);
    prepare.include_self = include_self || reset_by_counts;
    encode_scalar(self.dtype, reduction_identity(self.dtype, op), prepare.value);
    prepare.counts = counts_at;
    passes[count++] = prepare;
    if (reset_by_counts) passes[count++] = mean_pass_problem(self, prepare.counts, kScatterMeanReset, false);
  }
  if (counts_with_adds) adds.counts = counts_at;
  passes[count++] = adds;
  if (count == 1 && !mean && row_sums_considered(passes[0])) {
    const RowSumLayout layout = row_sum_layout(passes[0], planning_device(call, explain_arch));
    if (layout.applies) return run_row_sum(call, passes[0], layout, a[0], explain_arch);
  }
  if (mean) passes[count++] = mean_pass_problem(self, counts_at, kScatterMeanFinish, include_self);
  return run_plans(call, passes, count, a[0], explain_arch);
}

const char* const kScatterAddNames[] = {"self", "dim", "index", "src", "deterministic", "stream", "_explain"};
const FastSignature kScatterAddSig{"scatter_add_", kScatterAddNames, 7, 4, 4};
py::object scatter_add_body(PyObject* const* a) {
  return scatter_like(a, "sum", true, a[5], a[6], kOpScatterAdd, flag_arg(a[4], "deterministic"));
}

const char* const kScatterReduceNames[] = {"self", "dim", "index", "src", "reduce", "include_self", "deterministic",
                                           "stream", "_explain"};
const FastSignature kScatterReduceSig{"scatter_reduce_", kScatterReduceNames, 9, 6, 5};
py::object scatter_reduce_body(PyObject* const* a) {
  if (!PyUnicode_Check(a[4]))
    throw type_error(std::string("reduce: expected a str (got ") + Py_TYPE(a[4])->tp_name + ")");
  return scatter_like(a, py::str(a[4]).cast<std::string>(), flag_arg(a[5], "include_self", true), a[7], a[8],
                      kOpScatterReduce, flag_arg(a[6], "deterministic"));
}

PyMethodDef kDefs[] = {
    {"index_add_", JITOPS_FAST(kIndexAddSig, index_add_body), METH_FASTCALL | METH_KEYWORDS,
     "index_add_(self, dim, index, source, alpha=1, *, deterministic=False, stream=None)\n--\n\n"
     "Add ``alpha * source`` into ``self`` at ``index`` along ``dim``, in place, like\n"
     "``torch.Tensor.index_add_``; returns ``self``. Repeated indices accumulate.\n"
     "``source`` has ``self``'s shape with ``dim`` of size ``len(index)``.\n"
     "``deterministic=True`` (floating types): the same bits on every run; the terms of each\n"
     "element are summed in source order after a sort, slower than the atomic default."},
    {"index_copy_", JITOPS_FAST(kIndexCopySig, index_copy_body), METH_FASTCALL | METH_KEYWORDS,
     "index_copy_(self, dim, index, source, *, stream=None)\n--\n\n"
     "Copy ``source`` into ``self`` at ``index`` along ``dim``, in place, like\n"
     "``torch.Tensor.index_copy_``; returns ``self``. With repeated indices one of the\n"
     "copies wins, unspecified which (as in PyTorch)."},
    {"index_fill_", JITOPS_FAST(kIndexFillSig, index_fill_body), METH_FASTCALL | METH_KEYWORDS,
     "index_fill_(self, dim, index, value, *, stream=None)\n--\n\n"
     "Fill ``self`` with ``value`` at ``index`` along ``dim``, in place, like\n"
     "``torch.Tensor.index_fill_``; returns ``self``."},
    {"scatter_add_", JITOPS_FAST(kScatterAddSig, scatter_add_body), METH_FASTCALL | METH_KEYWORDS,
     "scatter_add_(self, dim, index, src, *, deterministic=False, stream=None)\n--\n\n"
     "``self[index[i][j]][j] += src[i][j]`` (for ``dim=0``), in place, like\n"
     "``torch.Tensor.scatter_add_`` (numpy: ``np.add.at``); returns ``self``.\n"
     "``deterministic=True``: bitwise-reproducible floating sums (see index_add_)."},
    {"scatter_reduce_", JITOPS_FAST(kScatterReduceSig, scatter_reduce_body), METH_FASTCALL | METH_KEYWORDS,
     "scatter_reduce_(self, dim, index, src, reduce, include_self=True, *, deterministic=False, stream=None)\n--\n\n"
     "Reduce ``src`` into ``self`` at ``index`` along ``dim`` with ``reduce`` in 'sum',\n"
     "'prod', 'mean', 'amax', 'amin', in place, like ``torch.Tensor.scatter_reduce_``;\n"
     "returns ``self``. With ``include_self=False`` the elements of ``self`` that receive\n"
     "values are reduced over those values only. Integer means round down.\n"
     "``deterministic=True``: bitwise-reproducible 'sum' and 'mean' for floating types."},
};

}  // namespace

void bind_scatter_ops(py::module_& m) {
  for (PyMethodDef& def : kDefs) add_fastcall(m, &def);
  m.def("_set_small_index_threshold", &set_small_index_threshold,
        "Development knob: the most indices that use the small-index regime.");
  m.def("_small_index_threshold", &small_index_threshold);
  m.def("_set_owned_walk", &set_owned_walk_mode,
        "Development knob: the owned walk (a thread takes every term of its destinations) -1 where it pays, "
        "0 never, 1 wherever it applies.");
  m.def("_owned_walk", &owned_walk_mode);
  m.def("_set_scatter_tiles", &set_scatter_tiles, py::arg("mode"),
        "Development knob: index_copy_ and index_add_ from a src dense along another dim than self through "
        "shared-memory tiles, 1 where the planner says (the default), 0 never; returns the previous mode.");
  m.def("_set_owned_rows", &set_owned_rows_mode, py::arg("mode"),
        "Development knob: index_add_ along a dim self stores densely through self's rows in shared memory, "
        "-1 where the planner says (the default), 0 never, 1 wherever it fits; returns the previous mode.");
  m.def("_set_scatter_waves", &set_scatter_waves, py::arg("waves"),
        "Development knob: the grid cap, in waves of resident blocks, of the scatter walks' heuristic launch "
        "(0: the rule's); returns the previous value.");
  m.def("_set_cas_unroll", &set_cas_unroll,
        "Development knob: units a thread for compare-and-swap updates with many terms a destination (-1: the "
        "rule's).");
  m.def("_set_rows_always_meet", &set_rows_always_meet,
        "Development knob: products of the 2-D walk whose warps span rows match a warp's peers at every unit "
        "(1, the rule) or only where two threads' units met (0); returns the previous mode.");
  m.def("_set_ragged_packs", &set_ragged_packs_mode,
        "Development knob: ragged packs (units aligned in memory, a row's ends partly filled) for stores and "
        "vector adds along rows that no pack size divides, -1 where the rule takes them, 0 never, 1 wherever the "
        "layout allows them; returns the previous mode.");
  m.def("_set_prepare_order", &set_prepare_order,
        "Development knob: the identity stores and counts before a reduction, where the indexed dim is self's "
        "innermost, ordered by self then src as the reduction is (0), by self then the index, src ignored (1), "
        "the indexed dim innermost (2), or by the rule (3, the default: the indexed dim innermost for counts "
        "alone, or where the other dims hold 16 units or more); returns the previous mode.");
  m.def("_set_mean_counts_with_adds", &set_mean_counts_with_adds,
        "Development knob: include_self=True's mean counts in the adds' pass (1) or in a pass of their own (0).");
  m.def("_set_mean_memory_order", &set_mean_memory_order,
        "Development knob: the mean's counts in self's memory order and its passes over self walked that way "
        "(1), or in C order (0).");
  m.def("_set_mean_finish_unroll", &set_mean_finish_unroll, py::arg("unroll"),
        "Development knob: elements a thread of the mean's passes over self takes at once (1, 2 or 4, a value "
        "between taken down to the one below; default 4); returns the previous value.");
  m.def("_set_mean_reset", &set_mean_reset_mode,
        "Development knob: include_self=False's mean zeroes self in a pass over its counts -1 where it pays, 0 "
        "never, 1 always.");
  m.def("_set_index_inner", &set_index_inner_mode,
        "Development knob: the index innermost in the 2-D walk of a transposed self -1 where it pays, 0 never, 1 "
        "wherever the layout allows.");
  m.def("_index_inner", &index_inner_mode);
  m.def("_set_fitted_lanes", &set_fitted_lanes_mode,
        "Development knob: the 2-D walk's block fitted to its columns -1 where powers of two leave over a "
        "quarter idle, 0 never.");
  m.def("_set_private_products_mode", &set_private_products_mode,
        "Development knob: products into private copies of a small self, -1 where they pay, 0 never, 1 "
        "wherever they fit; returns the previous mode.");
  m.def("_set_private_add_mode", &set_private_add_mode,
        "Development knob: adds into private copies of a small self -1 where they pay, 0 never, 1 wherever "
        "they fit.");
  m.def("_set_fill_marked_mode", &set_fill_marked_mode,
        "Development knob: index_fill_'s marked pass over self -1 where it pays, 0 never, 1 wherever it applies.");
  m.def("_set_row_sum_mode", &set_row_sum_mode,
        "Development knob: row sums 0 off, 1 where they pay, 2 sorted wherever they apply, 3 private copies "
        "wherever they fit.");
  m.def("_set_row_private_shape", &set_row_private_shape,
        "Development knob: private copies' shared memory per SM (bytes), rows a warp loads at a time, warps a "
        "block aims for.");
  m.def("_set_row_sum_shape", &set_row_sum_shape,
        "Development knob: sorted rows' sums, rows a group of lanes loads at a time and warps a block (float64: "
        "half of them).");
}

}  // namespace jitops
