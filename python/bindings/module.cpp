// jitops._core: the pybind11 module. Ops live in *_bindings.cpp; this file
// holds configuration, counters, devices and the dtype table.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <fcntl.h>
#include <unistd.h>

#include "jit/cache_prune.h"
#include "jit/cache_trust.h"
#include "jit/disk_cache.h"
#include "jit/nvrtc_library.h"
#include "jit/templates.h"
#include "python/bindings/array_args.h"
#include "python/bindings/device_array.h"
#include "python/bindings/errors.h"
#include "python/bindings/fastcall.h"
#include "runtime/arg_error.h"
#include "runtime/collapse.h"
#include "runtime/device_context.h"
#include "runtime/driver_api.h"
#include "runtime/index_errors.h"
#include "runtime/kernel_registry.h"

namespace py = pybind11;

namespace jitops {
void bind_gather_ops(py::module_& m);
void bind_scatter_ops(py::module_& m);
void bind_elementwise_ops(py::module_& m);
void bind_upsample_ops(py::module_& m);
void bind_histogram_ops(py::module_& m);
void bind_tuning(py::module_& m);
void bind_raw_kernels(py::module_& m);
void bind_templates(py::module_& m);
void bind_reductions(py::module_& m);
void bind_core_native(py::module_& m);
}

using namespace jitops;

PYBIND11_MODULE(_core, m) {
  m.doc() = "jitops C++ core: NVRTC specialization, disk cache and Driver API launches.";
  register_error_translators();
  bind_device_array(m);
  bind_array_args(m);
  bind_gather_ops(m);
  bind_scatter_ops(m);
  bind_elementwise_ops(m);
  bind_upsample_ops(m);
  bind_histogram_ops(m);
  bind_tuning(m);
  bind_raw_kernels(m);
  bind_templates(m);
  bind_reductions(m);
  bind_core_native(m);

  m.def(
      "cache_directory_trust",
      [](const std::string& dir) {
        const Trust t = directory_trust(dir);
        return py::make_tuple(t.ok, t.why);
      },
      py::arg("directory"), "(trusted, why not) of a cache directory (jit/cache_trust.h).");
  m.def(
      "cache_file_trust",
      [](const std::string& path, const std::string& dir) {
        bool untrusted = false;
        std::string why;
        const int fd = open_trusted(path, dir, O_RDONLY, &untrusted, &why, true);
        if (fd >= 0) ::close(fd);
        if (untrusted) {
          disk_cache_counters().rejected++;
          warn_untrusted(why);
        }
        return py::make_tuple(!untrusted, fd >= 0, why);
      },
      py::arg("path"), py::arg("directory"),
      "(trusted, exists, why not) of a file in a directory inside the cache; an untrusted one counts as rejected.");
  m.def("cache_modes", [] { return py::make_tuple(int(cache_file_mode()), int(cache_dir_mode())); },
        "(file mode, directory mode) of what jitops creates in its cache.");
  m.def(
      "_torch_routing",
      [](bool enabled) {
        const bool previous = torch_routing_enabled();
        torch_routing_enabled() = enabled;
        return previous;
      },
      py::arg("enabled"),
      "Whether this thread's calls hand PyTorch tensors that need autograd or tracing to jitops._torch "
      "(off while its custom ops run their kernels); returns the previous setting.");
  m.def("_set_cpp_autograd", &set_cpp_autograd, py::arg("enabled"),
        "Whether calls that need autograd may take the C++ nodes of jitops._torch_autograd (where it was built); "
        "returns the previous setting.");
  m.def("_cpp_autograd_active", &cpp_autograd_active,
        "Whether calls that need autograd take the C++ nodes of jitops._torch_autograd (loads it if need be).");
  m.def("configure",
        [](std::vector<std::string> nvrtc_dirs, std::vector<std::string> include_dirs, std::string cache_dir,
           bool cache_enabled, bool nvrtc_loader_fallback) {
          set_nvrtc_search_paths(std::move(nvrtc_dirs), std::move(include_dirs), nvrtc_loader_fallback);
          set_disk_cache_config(DiskCacheConfig{cache_enabled, std::move(cache_dir)});
        },
        py::arg("nvrtc_dirs"), py::arg("include_dirs"), py::arg("cache_dir"), py::arg("cache_enabled"),
        py::arg("nvrtc_loader_fallback") = true);
  m.def(
      "collapse",
      [](std::vector<int64_t> sizes, std::vector<std::vector<int64_t>> strides) {
        IterationSpace s;
        if (sizes.size() > size_t(kMaxDims + 16) || strides.empty() || strides.size() > size_t(kMaxOperands))
          throw value_error("collapse: too many dims or operands");
        s.ndim = int(sizes.size());
        s.operands = int(strides.size());
        for (size_t d = 0; d < sizes.size(); ++d) s.sizes[d] = sizes[d];
        for (size_t k = 0; k < strides.size(); ++k) {
          if (strides[k].size() != sizes.size()) throw value_error("collapse: one stride per dim per operand");
          for (size_t d = 0; d < sizes.size(); ++d) s.strides[k][d] = strides[k][d];
        }
        collapse(s);
        std::vector<int64_t> out_sizes(s.sizes, s.sizes + s.ndim);
        std::vector<std::vector<int64_t>> out_strides;
        for (int k = 0; k < s.operands; ++k) out_strides.emplace_back(s.strides[k], s.strides[k] + s.ndim);
        return py::make_tuple(out_sizes, out_strides);
      },
      py::arg("sizes"), py::arg("strides"), "The dimension collapsing every op applies (exposed for tests).");
  m.def("set_cache", [](std::string dir, bool enabled) { set_disk_cache_config(DiskCacheConfig{enabled, std::move(dir)}); },
        py::arg("directory"), py::arg("enabled"));
  m.def(
      "cache_prune",
      [](const std::string& directory, int64_t max_bytes) {
        if (max_bytes < 0) throw value_error("max_bytes: expected a size of at least 0 (got " + std::to_string(max_bytes) + ")");
        PruneResult r;
        {
          py::gil_scoped_release release;
          r = prune_cache_directory(directory, max_bytes);
        }
        return py::dict(py::arg("removed") = r.removed, py::arg("freed_bytes") = r.freed_bytes,
                        py::arg("kept_bytes") = r.kept_bytes, py::arg("kept_files") = r.kept_files);
      },
      py::arg("directory"), py::arg("max_bytes"),
      "Deletes the least recently used kernel files until they total at most max_bytes.");
  m.def("cache_config", [] {
    DiskCacheConfig c = disk_cache_config();
    return py::dict(py::arg("directory") = c.directory, py::arg("enabled") = c.enabled);
  });
  m.def("cache_stats", [] {
    RegistryCounters& r = registry_counters();
    DiskCacheCounters& d = disk_cache_counters();
    return py::dict(py::arg("compiles") = r.compiles.load(), py::arg("disk_hits") = r.disk_hits.load(),
                    py::arg("memory_hits") = r.memory_hits.load(), py::arg("module_loads") = r.loads.load(),
                    py::arg("module_unloads") = r.unloads.load(), py::arg("modules_loaded") = loaded_kernel_count(),
                    py::arg("disk_misses") = d.misses.load(), py::arg("disk_writes") = d.writes.load(),
                    py::arg("disk_rejected") = d.rejected.load(),
                    py::arg("most_concurrent_compiles") = most_concurrent_compiles());
  });
  m.def("clear_memory_cache", [] {
    py::gil_scoped_release release;  // unloading waits for the kernels still running
    clear_memory_cache();
  });
  m.def("set_memory_cache_limit", [](int64_t kernels) {
    if (kernels < 1) throw value_error("kernels: expected at least 1 (got " + std::to_string(kernels) + ")");
    py::gil_scoped_release release;
    set_memory_cache_limit(size_t(kernels));
  });
  m.def("memory_cache_limit", [] { return memory_cache_limit(); });
  m.def("nvrtc_info", [] {
    const NvrtcApi& api = nvrtc();
    return py::dict(py::arg("version") = py::make_tuple(api.major, api.minor), py::arg("path") = api.path,
                    py::arg("include_dir") = nvrtc_location().include_dir,
                    py::arg("supported_archs") = api.supported_archs);
  });
  m.def("driver_available", [] {
    std::string why;
    bool ok = driver_available(&why);
    return py::make_tuple(ok, why);
  });
  m.def("device_count", [] { return device_count(); });
  m.def(
      "cuda_status",
      [](int device) -> std::string {
        std::string why;
        if (!driver_available(&why)) return why;
        try {
          if (device >= device_count()) return "no CUDA device " + std::to_string(device);
          device_context(device).make_current();
          const CUresult r = driver().cuCtxSynchronize();  // an earlier failure in this context shows here
          if (r != CUDA_SUCCESS) check_cuda(r, "cuCtxSynchronize");
        } catch (const std::exception& e) {
          return e.what();
        }
        return "";
      },
      py::arg("device") = 0,
      "Why CUDA is unusable on `device` in this process ('' when it works): no driver, a fork, an earlier "
      "sticky error. Waits for the device's queued work.");
  m.def("device_info", [](int device) {
    const DeviceInfo& i = device_context(device).info();
    return py::dict(py::arg("name") = i.name, py::arg("arch") = i.arch(), py::arg("sm_count") = i.sm_count,
                    py::arg("max_threads_per_sm") = i.max_threads_per_sm);
  });
  m.def("set_index_checks", [](const std::string& mode) { set_index_check_mode(parse_index_check_mode(mode)); });
  m.def("index_checks", [] { return index_check_mode_name(index_check_mode()); });
  m.def("synchronize", [](int device) {
    device_context(device).make_current();
    {
      py::gil_scoped_release release;
      JITOPS_CU(driver().cuCtxSynchronize(), "cuCtxSynchronize");
    }
    raise_pending_index_error(device);
  });
  m.def("stream_synchronize", [](int device, uintptr_t stream) {
    device_context(device).make_current();
    py::gil_scoped_release release;
    JITOPS_CU(driver().cuStreamSynchronize(reinterpret_cast<CUstream>(stream)), "cuStreamSynchronize");
  });
  m.def("dtypes", [] {
    py::list rows;
    for (int i = 0; i < kNumDTypes; ++i) {
      const DTypeInfo& r = dtype_table()[i];
      rows.append(py::make_tuple(r.name, r.bits / 8, int(r.dlpack_code)));
    }
    return rows;
  });
  m.def("template_names", [] {
    std::vector<std::string> names;
    for (const TemplateFile& f : template_files()) names.push_back(f.name);
    return names;
  });
  m.def("template_source", [](const std::string& name) {
    const char* s = template_source(name);
    if (!s) throw value_error("name: no template called '" + name + "'");
    return std::string(s);
  });
}
