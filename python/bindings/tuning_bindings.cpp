// The C++ side of jitops.tuning: candidate configurations, tuning runs that
// force one configuration and record the points planned, the table of
// results, event timing with the L2 flushed, and snapshots of arrays that
// an in-place op modifies.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>

#include "python/bindings/array_args.h"
#include "python/bindings/device_array.h"
#include "runtime/arg_error.h"
#include "runtime/driver_api.h"
#include "runtime/tuning.h"

namespace py = pybind11;

namespace jitops {
namespace {

KernelFamily family_named(const std::string& name) {
  for (KernelFamily f : {KernelFamily::Gather, KernelFamily::Scatter, KernelFamily::Sort, KernelFamily::Elementwise,
                         KernelFamily::Upsample, KernelFamily::Histogram, KernelFamily::User, KernelFamily::Reduction})
    if (name == family_info(f).name) return f;
  throw value_error("family: expected gather, scatter, sort, elementwise, upsample, histogram, user or reduction "
                    "(got '" + name + "')");
}

// A device by ordinal, or (ordinal < 0) the GPU-less description of `arch`.
DeviceInfo device_for(int device, int arch) {
  if (device >= 0) return device_context(device).info();
  if (arch <= 0) throw value_error("device: expected a CUDA ordinal, or arch for a GPU-less description");
  return device_info_for_arch(arch);
}

LaunchTuning config_arg(const std::string& text) {
  LaunchTuning c;
  if (!parse_config_id(text, c))
    throw value_error("config: expected 'threads=T unroll=U waves=W vector=V' with T a multiple of 32 in [32, 1024], "
                      "U in [1, 16], W in [1, 1024], V in {1, 2, 4, 8, 16} (got '" + text + "')");
  return c;
}

py::tuple tuning_run(py::object fn, py::object config) {
  LaunchTuning forced;
  const bool force = !config.is_none() && config.cast<std::string>() != "heuristic";
  if (force) forced = config_arg(config.cast<std::string>());
  TuningRun run(force ? &forced : nullptr);
  py::object result = fn();
  py::list points;
  for (const RecordedPoint& r : run.take_recorded()) {
    py::dict d;
    d["point"] = point_hex(r.point);
    d["description"] = r.description;
    d["heuristic"] = config_id(r.heuristic);
    d["config"] = config_id(r.used);
    d["origin"] = config_origin_name(r.origin);
    points.append(d);
  }
  return py::make_tuple(result, points);
}

uint64_t point_arg(const std::string& text) {
  char* end = nullptr;
  const uint64_t v = std::strtoull(text.c_str(), &end, 16);
  if (text.empty() || *end) throw value_error("point: expected a hexadecimal point hash (got '" + text + "')");
  return v;
}

struct Event {
  CUevent e = nullptr;
  Event() { JITOPS_CU(driver().cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate"); }
  ~Event() {
    if (e) driver().cuEventDestroy(e);
  }
};

// GPU time of `fn` per run (microseconds): `before` (restoring inputs) and an
// L2 flush (a memset of `flush_bytes`) precede each timed run, on `stream`.
std::vector<double> time_call(py::object fn, py::object before, int device, uintptr_t stream_handle, int reps,
                              int warmup, size_t flush_bytes) {
  if (reps < 1) throw value_error("reps: expected at least 1 (got " + std::to_string(reps) + ")");
  const DriverApi& api = driver();
  device_context(device).make_current();
  CUstream stream = reinterpret_cast<CUstream>(stream_handle);
  DeviceBuffer flush(device, std::max<size_t>(flush_bytes, 4));
  for (int i = 0; i < warmup; ++i) {
    if (!before.is_none()) before();
    fn();
  }
  std::vector<std::unique_ptr<Event>> starts, ends;
  for (int i = 0; i < reps; ++i) {
    starts.push_back(std::make_unique<Event>());
    ends.push_back(std::make_unique<Event>());
  }
  for (int i = 0; i < reps; ++i) {
    if (!before.is_none()) before();
    JITOPS_CU(api.cuMemsetD8Async(CUdeviceptr(flush.data()), 0, flush.bytes(), stream), "cuMemsetD8Async");
    JITOPS_CU(api.cuEventRecord(starts[i]->e, stream), "cuEventRecord");
    fn();
    JITOPS_CU(api.cuEventRecord(ends[i]->e, stream), "cuEventRecord");
  }
  std::vector<double> us(reps);
  py::gil_scoped_release release;
  JITOPS_CU(api.cuEventSynchronize(ends[reps - 1]->e), "cuEventSynchronize");
  for (int i = 0; i < reps; ++i) {
    float ms = 0;
    JITOPS_CU(api.cuEventElapsedTime(&ms, starts[i]->e, ends[i]->e), "cuEventElapsedTime");
    us[i] = double(ms) * 1000.0;
  }
  return us;
}

// The bytes `desc` spans, from its lowest to its highest element.
std::pair<char*, size_t> span_of(const TensorDesc& desc) {
  int64_t lo = 0, hi = 0;
  for (int d = 0; d < desc.ndim; ++d) {
    if (desc.shape[d] == 0) return {static_cast<char*>(desc.data), 0};
    const int64_t reach = (desc.shape[d] - 1) * desc.strides[d];
    (reach < 0 ? lo : hi) += reach;
  }
  const int64_t bytes = desc.element_bytes();
  return {static_cast<char*>(desc.data) + lo * bytes, size_t((hi - lo + 1) * bytes)};
}

// A copy of the memory `array` spans (an in-place op's self), and its restore.
DeviceArray snapshot(py::handle array) {
  CallArrays call({{"array", array}}, py::none());
  if (call.device() < 0) throw type_error("array: expected a CUDA array to snapshot");
  auto [data, bytes] = span_of(call[0]);
  DeviceArray copy(call.device(), {int64_t(bytes)}, DType::UInt8);
  if (bytes)
    JITOPS_CU(driver().cuMemcpyDtoDAsync(CUdeviceptr(copy.desc().data), CUdeviceptr(data), bytes, call.stream()),
              "cuMemcpyDtoDAsync");
  return copy;
}

void restore(py::handle array, const DeviceArray& copy) {
  CallArrays call({{"array", array}}, py::none());
  auto [data, bytes] = span_of(call[0]);
  if (bytes != copy.nbytes()) throw value_error("snapshot: taken of another array");
  if (bytes)
    JITOPS_CU(driver().cuMemcpyDtoDAsync(CUdeviceptr(data), CUdeviceptr(copy.desc().data), bytes, call.stream()),
              "cuMemcpyDtoDAsync");
}

}  // namespace

void bind_tuning(py::module_& m) {
  m.def(
      "tuning_candidates",
      [](const std::string& family) {
        std::vector<std::string> out;
        for (const LaunchTuning& c : tuning_candidates(family_named(family))) out.push_back(config_id(c));
        return out;
      },
      py::arg("family"), "The configurations tuning times for a kernel family.");
  m.def("check_config", [](const std::string& text) { return config_id(config_arg(text)); }, py::arg("config"));
  m.def("_tuning_run", &tuning_run, py::arg("fn"), py::arg("config") = py::none(),
        "Calls fn() with `config` forced on every tunable launch (None: as planned) and returns "
        "(result, points planned).");
  m.def(
      "set_tuned",
      [](int device, int arch, const std::string& point, const std::string& config) {
        set_tuned(device_for(device, arch), point_arg(point), config_arg(config));
      },
      py::arg("device"), py::arg("arch"), py::arg("point"), py::arg("config"));
  m.def(
      "mark_attempted", [](int device, int arch, const std::string& point) {
        mark_attempted(device_for(device, arch), point_arg(point));
      },
      py::arg("device"), py::arg("arch"), py::arg("point"));
  m.def("clear_tuned", &clear_tuned, "Forgets tuning results in memory; files are read again on next use.");
  m.def("tuned_count", &tuned_count);
  m.def("set_autotune", &set_autotune, py::arg("on"));
  m.def("autotune_enabled", &autotune_enabled);
  m.def("take_autotune_request", &take_autotune_request,
        "True once after a call on this thread planned a point with no tuning result while autotuning is on.");
  m.def("set_tuning_version", &set_tuning_version, py::arg("version"));
  m.def(
      "tuning_device",
      [](int device, int arch) {
        DeviceInfo info = device_for(device, arch);
        return py::dict(py::arg("name") = info.name, py::arg("arch") = "sm_" + std::to_string(info.arch()),
                        py::arg("driver") = info.driver_version, py::arg("file") = tuning_file_path(info));
      },
      py::arg("device"), py::arg("arch") = 0);
  m.def("time_call", &time_call, py::arg("fn"), py::arg("before"), py::arg("device"), py::arg("stream"),
        py::arg("reps"), py::arg("warmup"), py::arg("flush_bytes"));
  m.def(
      "call_stream",
      [](py::handle array) {
        CallArrays call({{"array", array}}, py::none());
        return py::make_tuple(call.device(), reinterpret_cast<uintptr_t>(call.stream()));
      },
      py::arg("array"), "(device, stream handle) a call with this array runs on.");
  m.def("snapshot", &snapshot, py::arg("array"));
  m.def("restore", &restore, py::arg("array"), py::arg("snapshot"));
}

}  // namespace jitops
