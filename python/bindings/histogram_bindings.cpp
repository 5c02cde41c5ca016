// Python entry point of histc, bound as a METH_FASTCALL builtin.
#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "python/bindings/array_args.h"
#include "python/bindings/fastcall.h"
#include "python/bindings/op_runner.h"
#include "python/bindings/scalar_arg.h"
#include "python/bindings/stream_scratch.h"
#include "runtime/arg_error.h"
#include "runtime/ops/histogram_ops.h"

namespace py = pybind11;

namespace jitops {
namespace {

double number_arg(PyObject* v, const char* name) {
  const Scalar s = scalar_arg(v, name);
  return s.integral ? double(s.i) : s.f;
}

// "int32", torch.int32, numpy.int32 or numpy.dtype("int32").
DType dtype_object(PyObject* v, const char* name) {
  std::string text = py::str(v).cast<std::string>();
  if (!PyUnicode_Check(v)) {
    if (text.rfind("torch.", 0) == 0) {
      text = text.substr(6);
    } else {
      try {
        text = py::module_::import("numpy").attr("dtype")(py::handle(v)).attr("name").cast<std::string>();
      } catch (const py::error_already_set&) {
      }
    }
  }
  DType d;
  if (!dtype_from_name(text, &d))
    throw type_error(std::string(name) + ": expected a dtype name or object (got " + text + ")");
  return d;
}

enum Slot : size_t { kSlotX = 0, kSlotOut = 1 };

const char* const kHistcNames[] = {"x", "bins", "min", "max", "out", "counts_dtype", "stream", "_explain"};
const FastSignature kHistcSig{"histc", kHistcNames, 8, 5, 1, false};  // no gradient, as torch.histc
py::object histc_body(PyObject* const* a) {
  CallArrays call({{"x", a[0]}, {"out", or_none(a[4]), true}}, or_none(a[6]));
  enter_call(call);
  const TensorDesc& x = call[kSlotX];
  HistcRequest r;
  if (a[1]) {
    if (PyFloat_Check(a[1])) throw type_error("bins: expected an int (got float)");
    r.bins = int_arg(a[1], "bins");
  }
  r.min = a[2] ? number_arg(a[2], "min") : 0.0;
  r.max = a[3] ? number_arg(a[3], "max") : 0.0;
  r.counts = a[5] && a[5] != Py_None ? dtype_object(a[5], "counts_dtype") : x.dtype;
  check_histc(x, r);
  const DTypeKind ck = dtype_info(r.counts).kind;
  if (ck != DTypeKind::Float && ck != DTypeKind::Signed && ck != DTypeKind::Unsigned)
    throw type_error(std::string("counts_dtype: expected an integer or floating dtype (got ") +
                     dtype_info(r.counts).name + ")");
  const std::vector<int64_t> shape = {r.bins};
  py::object out;
  if (call.present(kSlotOut)) {
    call.check_out(kSlotOut, shape, r.counts);
    out = py::reinterpret_borrow<py::object>(a[4]);
  } else {
    out = call.allocate(kSlotOut, kSlotX, shape, r.counts);
  }
  const int explain_arch = explain_arg(a[7]);
  const DeviceInfo device = planning_device(call, explain_arch);
  std::unique_ptr<StreamScratch> scratch;
  // Explained, launched in one (single block or cluster), or counted straight into an output that a
  // memset zeroes: no scratch to read, a placeholder.
  unsigned long long* words = reinterpret_cast<unsigned long long*>(uintptr_t(256));
  const bool automatic = histc_range_is_automatic(x, r);
  if (explain_arch >= 0) {
    // planned only
  } else if (!automatic && histc_counts_into_out(x, call[kSlotOut], r, device)) {
    zero_on_stream(call, call[kSlotOut].data, size_t(r.bins) * call[kSlotOut].element_bytes());
  } else if (!histc_in_one_launch(x, call[kSlotOut], r, device)) {
    // 32-bit words; with an automatic range nothing is zeroed here (no memset launch).
    scratch = std::make_unique<StreamScratch>(call, histc_scratch_words(r.bins) * 2, 0u,
                                              histc_zeroed_words(r.bins, automatic) * 2);
    words = scratch->keys();
  }
  std::vector<LaunchPlan> plans;
  plan_histc(x, call[kSlotOut], r, words, device, planning_error_slot(call, explain_arch, false), plans);
  return execute(call, plans.data(), int(plans.size()), out, kSlotOut, explain_arch);
}

PyMethodDef kHistcDef{
    "histc", JITOPS_FAST(kHistcSig, histc_body),
    METH_FASTCALL | METH_KEYWORDS,
    "histc(x, bins=100, min=0, max=0, out=None, *, counts_dtype=None, stream=None)\n--\n\n"
    "Histogram of ``x`` like ``torch.histc``: ``bins`` equally wide bins over [min, max];\n"
    "a value equal to max goes to the last bin; values outside the range and NaN are\n"
    "ignored. ``min == max`` (the default 0, 0) uses the data's own min and max, found on\n"
    "the device with no host synchronization; if those are equal too the range becomes\n"
    "[min - 1, max + 1]. A range that is not finite raises ValueError: at once for an\n"
    "explicit one; for one found in the data (infinite values, or only NaN) at the next\n"
    "jitops call or jitops.synchronize() (at once with set_index_checks('sync')), with\n"
    "the output left at zeros.\n\n"
    "Any strides; floating and integer dtypes. The counts have x's dtype (as PyTorch)\n"
    "unless ``counts_dtype`` (e.g. 'int32', 'int64') says otherwise. Counts are exact\n"
    "integers converted once to that dtype: float32 counts are exact up to 2^24 per bin,\n"
    "float16 up to 2048, bfloat16 up to 256; beyond that they round (PyTorch's float\n"
    "atomics stop growing instead); integer counts narrower than the total wrap."};

}  // namespace

void bind_histogram_ops(py::module_& m) {
  add_fastcall(m, &kHistcDef);
  m.def("_set_histogram_strategy", &set_histogram_strategy,
        "Development knob: 0 heuristic, 1 shared-memory sub-histograms, 2 global atomics.");
  m.def("_set_histc_cluster_limits", &set_histc_cluster_limits, py::arg("dense_bytes"), py::arg("strided_values"),
        py::arg("values_per_bin") = 256,
        "Development knob: the most one sm_90 cluster counts (default 1 MiB dense, 131072 strided values; one of 8 "
        "bytes counts as two), and the values a bin from which the count kernel adding into out is taken instead.");
  m.def("_set_histc_single_block_values", &set_histc_single_block_values, py::arg("values"),
        "Development knob: the most values one block counts straight into the output (default 12288).");
}

}  // namespace jitops
