#include "python/bindings/op_runner.h"

#include <pybind11/stl.h>

#include "runtime/arg_error.h"
#include "runtime/driver_api.h"
#include "runtime/index_errors.h"
#include "runtime/kernel_registry.h"

namespace py = pybind11;

namespace jitops {
namespace {

py::dict describe_kernel(const PreparedKernel& prepared, const KernelResources& res, KernelOrigin origin,
                         double load_ms) {
  const CompiledKernel& c = *prepared.compiled;
  py::dict d;
  d["kernel"] = describe_spec(prepared.spec);
  d["family"] = family_info(prepared.spec.family).name;
  py::dict fields;
  const KernelFamilyInfo& info = family_info(prepared.spec.family);
  for (int i = 0; i < KernelSpec::kFields; ++i)
    if (info.field_names[i]) fields[info.field_names[i]] = prepared.spec.fields[i];
  d["spec"] = fields;
  d["source"] = c.source;
  d["ptx"] = c.ptx;
  d["cubin_bytes"] = c.cubin.size();
  d["cubin"] = py::bytes(c.cubin);
  d["arch"] = "sm_" + std::to_string(c.code_arch);
  d["options"] = c.options;
  d["compile_log"] = c.log;
  d["compile_ms"] = c.compile_ms;
  d["prepare_ms"] = prepared.prepare_ms;
  d["load_ms"] = load_ms;
  d["origin"] = origin_name(origin);
  d["registers"] = res.registers;
  d["shared_bytes"] = res.shared_bytes;
  d["local_bytes"] = res.local_bytes;
  return d;
}

}  // namespace

void enter_call(const CallArrays& call) {
  if (call.device() >= 0 && !call.is_virtual()) raise_pending_index_error(call.device());
}

py::object prepare_out(CallArrays& call, size_t slot, size_t like, const std::vector<int64_t>& shape, DType dtype,
                       py::handle out) {
  if (out.is_none()) return call.allocate(slot, like, shape, dtype);
  call.check_out(slot, shape, dtype);
  return py::reinterpret_borrow<py::object>(out);
}

DeviceInfo planning_device(const CallArrays& call, int explain_arch) {
  if (explain_arch > 0) return device_info_for_arch(explain_arch);
  if (call.device() >= 0) return device_context(call.device()).info();
  if (explain_arch == 0 && driver_available()) return device_context(0).info();
  throw value_error("arch: no GPU is present to explain for; pass arch='sm_90' (or set JITOPS_ARCH)");
}

IndexErrorSlot* planning_error_slot(const CallArrays& call, int explain_arch, bool indices) {
  if (explain_arch >= 0 || call.device() < 0) return nullptr;
  if (indices && index_check_mode() == IndexCheckMode::Off) return nullptr;
  return device_context(call.device()).error_slot_device();
}

py::object execute(CallArrays& call, const LaunchPlan* plans, int count, py::object out, size_t out_slot,
                   int explain_arch) {
  if (explain_arch >= 0) {
    py::list kernels;
    for (int i = 0; i < count; ++i) {
      const LaunchPlan& plan = plans[i];
      py::dict d;
      bool on_device = explain_arch == 0 && call.device() >= 0;
      if (on_device) {
        LoadedKernelRef k = find_loaded(plan.spec, call.device());
        KernelOrigin origin = KernelOrigin::Memory;
        if (!k) {
          py::gil_scoped_release release;
          k = load_kernel(plan.spec, call.device());
          origin = k->prepared.origin;
        }
        d = describe_kernel(k->prepared, k->resources, origin, k->load_ms);
        d["device"] = device_context(call.device()).info().name;
      } else {
        int arch = explain_arch > 0 ? explain_arch : planning_device(call, explain_arch).arch();
        PreparedKernel p;
        {
          py::gil_scoped_release release;
          p = prepare_kernel(plan.spec, arch);
        }
        d = describe_kernel(p, resources_from_log(p.compiled->log), p.origin, 0.0);
        d["device"] = device_info_for_arch(arch).name;
      }
      d["grid"] = py::make_tuple(plan.grid[0], plan.grid[1], plan.grid[2]);
      d["block"] = py::make_tuple(plan.block[0], plan.block[1], plan.block[2]);
      d["shared_bytes_dynamic"] = plan.shared_bytes;
      d["regime"] = plan.regime ? py::object(py::str(plan.regime)) : py::object(py::none());
      d["param_bytes"] = plan.param_size;
      d["params"] = py::bytes(reinterpret_cast<const char*>(plan.params), plan.param_size);
      d["config"] = plan.tunable ? py::object(py::str(config_id(plan.tuning.config))) : py::object(py::none());
      d["config_origin"] = plan.tunable ? config_origin_name(plan.tuning.origin) : "fixed";
      d["tuning_point"] = plan.tunable ? py::object(py::str(point_hex(plan.tuning.point))) : py::object(py::none());
      kernels.append(d);
    }
    return std::move(kernels);
  }
  if (call.is_virtual())
    throw type_error("VirtualArray describes a shape for jitops.explain(); it holds no memory to compute on");
  if (count > 0) {
    const int device = call.device();
    const bool sync = index_check_mode() == IndexCheckMode::Sync;
    {
      // Other Python threads run while this one compiles, launches and waits.
      py::gil_scoped_release release;
      for (int i = 0; i < count; ++i) {
        LoadedKernelRef k = find_loaded(plans[i].spec, device);
        if (!k) k = load_kernel(plans[i].spec, device);
        device_context(device).make_current();
        launch(plans[i], *k, call.stream());
      }
      if (sync) JITOPS_CU(driver().cuStreamSynchronize(call.stream()), "cuStreamSynchronize");
    }
    if (sync) raise_pending_index_error(device);
  }
  return call.finish(std::move(out), out_slot);
}

py::dict describe_prepared(const KernelSpec& spec, int arch) {
  PreparedKernel p;
  {
    py::gil_scoped_release release;
    p = prepare_kernel(spec, arch);
  }
  py::dict d = describe_kernel(p, resources_from_log(p.compiled->log), p.origin, 0.0);
  d["device"] = device_info_for_arch(arch).name;
  return d;
}

}  // namespace jitops
