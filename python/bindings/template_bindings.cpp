// jitops.Template: a user's kernel template whose arguments each call fills
// from its arrays (runtime/template_call.h), compiled once per instance
// through the users' kernel family, planned, tuned and explained like a
// built-in op. The signature is parsed in Python (jitops/template.py) and
// handed over once; this file does the per-call work.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "jit/user_source.h"
#include "python/bindings/array_args.h"
#include "python/bindings/fastcall.h"
#include "python/bindings/op_runner.h"
#include "python/bindings/scalar_arg.h"
#include "python/bindings/template_call_type.h"
#include "python/bindings/torch_tensors.h"
#include "runtime/arg_error.h"
#include "runtime/launch.h"
#include "runtime/scalar.h"
#include "runtime/template_call.h"
#include "runtime/tuning.h"

namespace py = pybind11;

namespace jitops {
static_assert(kMaxTemplateArgs == LaunchPlan::kMaxKernelParams, "a Template's arguments are a kernel's parameters");
namespace {

struct Tunable {
  int param;                // template parameter
  std::vector<int> values;  // candidates; the first is the default
};

class TemplateKernel {
 public:
  TemplateSignature sig;
  std::string code;
  std::vector<std::string> options;
  std::vector<Tunable> tunables;
  bool grid_stride = false;
  uint64_t content_hash = 0;

  struct Instance {
    int program;             // its registered program
    std::string expression;  // "scale<float, 1, int32_t>"
  };

  // The instance of the deduced template arguments, registered the first time
  // (later calls find it by the values alone: no name expression to build).
  // The last one found is read without the lock: map nodes never move.
  const Instance& instance(const Deduction& d) {
    const Entry* last = last_.load(std::memory_order_acquire);
    if (last && last->first == d.values) return last->second;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = instances_.find(d.values);
    if (it == instances_.end()) {
      UserProgram p;
      p.name = sig.kernel;
      p.code = code;
      p.with_tensor_header = true;
      p.options = options;
      p.name_expressions = {template_name_expression(sig, d)};
      const int id = register_user_program(p);
      it = instances_.emplace(d.values, Instance{id, p.name_expressions[0]}).first;
    }
    last_.store(&*it, std::memory_order_release);
    return it->second;
  }

 private:
  typedef std::map<TemplateValues, Instance>::value_type Entry;
  std::mutex mutex_;
  std::map<TemplateValues, Instance> instances_;
  std::atomic<const Entry*> last_{nullptr};
};

uint64_t fnv(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xFF)) * 1099511628211ull;
  return h;
}

DType number_type(PyObject* v) {
  if (PyBool_Check(v)) return DType::Bool;
  if (PyLong_Check(v)) return DType::Int64;
  if (PyFloat_Check(v)) return DType::Float64;
  DType d = DType::Float64;  // a numpy scalar: its own dtype
  py::object name = py::handle(v).attr("dtype").attr("name");
  if (!dtype_from_name(name.cast<std::string>(), &d))
    throw type_error(std::string("a number of dtype ") + name.cast<std::string>() + " has no kernel type");
  return d;
}

// The launch a call asked for (grid= / block=), or the default: one thread per
// element of the first array, capped at `waves` of resident blocks for a
// kernel that loops (grid_stride=True).
void plan_launch(const TemplateKernel& t, PyObject* grid_arg, PyObject* block_arg, int64_t work,
                 const LaunchTuning& config, const DeviceInfo& device, LaunchPlan& plan) {
  const bool has_grid = grid_arg && grid_arg != Py_None, has_block = block_arg && block_arg != Py_None;
  if (has_block) launch_dims_arg(block_arg, "block", plan.block);
  else plan.block[0] = unsigned(config.threads);
  if (uint64_t(plan.block[0]) * plan.block[1] * plan.block[2] > 1024)
    throw value_error("block: expected at most 1024 threads a block");
  if (has_grid) {
    launch_dims_arg(grid_arg, "grid", plan.grid);
    return;
  }
  const int64_t threads = int64_t(plan.block[0]) * plan.block[1] * plan.block[2];
  int64_t blocks = std::max<int64_t>(1, (work + threads - 1) / threads);
  if (t.grid_stride) blocks = grid_blocks(work, threads, int(threads), device, config.waves);
  if (blocks > 0x7fffffff)
    throw value_error(t.sig.kernel + ": " + std::to_string(work) + " elements need more than 2^31 blocks of " +
                      std::to_string(threads) + " threads; declare grid_stride=True and loop, or pass grid=");
  plan.grid[0] = unsigned(blocks);
}

// template_args: template parameter -> value (the Python side turned dtype
// and type names into DType codes and index types into 32 / 64).
TemplateValues forced_values(const TemplateKernel& t, PyObject* template_args) {
  TemplateValues forced = TemplateValues::not_given(t.sig.params.size());
  if (!template_args || template_args == Py_None) return forced;
  py::dict d = py::reinterpret_borrow<py::dict>(template_args);
  for (auto item : d) {
    const int p = item.first.cast<int>();
    if (p < 0 || size_t(p) >= forced.size()) throw std::logic_error("template_args: bad parameter index");
    forced[size_t(p)] = item.second.cast<int>();
  }
  return forced;
}

const char* const kNames[] = {"kernel", "args", "grid", "block", "shared_mem", "stream", "template_args", "_explain"};
const FastSignature kTemplateLaunch{"template_launch", kNames, 8, 8, 2, false};

py::object template_launch_body(TemplateKernel& t, PyObject* const* p) {
  const int explain_arch = p[7] ? int(int_arg(p[7], "_explain")) : -1;
  if (!PyTuple_Check(p[1])) throw std::logic_error("template_launch: args must be a tuple");
  const size_t n = size_t(PyTuple_GET_SIZE(p[1]));
  if (n != t.sig.args.size())
    throw type_error(t.sig.kernel + "() takes " + std::to_string(t.sig.args.size()) + " arguments (got " +
                     std::to_string(n) + ")");
  // Arrays through CallArrays (in their own slots), numbers aside.
  OperandArg operands[kMaxCallOperands];
  int slot[LaunchPlan::kMaxKernelParams];  // argument -> its CallArrays slot, or -1 for a number
  if (n > size_t(LaunchPlan::kMaxKernelParams))
    throw value_error(t.sig.kernel + ": at most " + std::to_string(LaunchPlan::kMaxKernelParams) + " parameters");
  size_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    slot[i] = -1;
    PyObject* v = PyTuple_GET_ITEM(p[1], i);
    const KernelArgSpec& a = t.sig.args[i];
    const bool number = is_number(v);
    if (a.kind == KernelArgKind::Scalar) {
      if (!number)
        throw type_error(a.name + ": expected a number (got " + Py_TYPE(v)->tp_name + ")");
      continue;
    }
    if (number || v == Py_None)
      throw type_error(a.name + ": expected an array (got " + Py_TYPE(v)->tp_name + ")");
    if (count == kMaxCallOperands)
      throw value_error(t.sig.kernel + ": at most " + std::to_string(kMaxCallOperands) + " array arguments");
    slot[i] = int(count);
    operands[count++] = OperandArg{a.name.c_str(), py::handle(v), false};
  }
  CallArrays call(operands, count, p[5] ? py::handle(p[5]) : py::none());
  enter_call(call);
  CallArgument args[kMaxTemplateArgs];
  for (size_t i = 0; i < n; ++i) {
    PyObject* v = PyTuple_GET_ITEM(p[1], i);
    if (slot[i] >= 0) {
      args[i].array = &call[size_t(slot[i])];
      if (call.kind(size_t(slot[i])) == ArrayKind::Torch && torch_needs_grad(v))
        throw std::runtime_error(t.sig.args[i].name + ": " + t.sig.kernel + " has no backward, and this tensor "
                                 "requires grad (or carries a forward-mode tangent): pass x.detach(), or call "
                                 "it under torch.no_grad(), if no gradient should flow");
    } else {
      args[i].number_type = number_type(v);
    }
  }
  // Tunable parameters the caller did not fix start at their default.
  const TemplateValues forced = forced_values(t, p[6]);
  TemplateValues values = forced;
  for (const Tunable& u : t.tunables)
    if (values[size_t(u.param)] == kNotGiven) values[size_t(u.param)] = u.values[0];
  Deduction d;
  deduce_template(t.sig, args, values, d);
  // The call's GPU by reference (a copy of DeviceInfo copies its name); a description only to explain.
  DeviceInfo described;
  const bool launching = explain_arch < 0 && call.device() >= 0;
  if (!launching) described = planning_device(call, explain_arch);
  const DeviceInfo& device = launching ? device_context(call.device()).info() : described;
  // The first array sizes the default launch.
  int64_t work = 0;
  for (size_t i = 0; i < n; ++i)
    if (args[i].array) {
      work = args[i].array->numel();
      break;
    }
  const bool explicit_launch = p[2] && p[2] != Py_None;
  if (!explicit_launch && !std::any_of(args, args + n, [](const CallArgument& a) { return a.array; }))
    throw value_error("grid: " + t.sig.kernel + " has no array argument to size its launch by; pass grid= and block=");
  // Tuning: the point is the template, the deduced arguments (tunables aside) and the size.
  LaunchTuning heuristic;
  heuristic.threads = 256;
  heuristic.unroll = 1;
  heuristic.adapt_unroll = false;
  heuristic.template_count = int(t.tunables.size());
  for (size_t k = 0; k < t.tunables.size(); ++k) heuristic.template_values[k] = t.tunables[k].values[0];
  TuningPoint point;
  point.family = KernelFamily::User;
  uint64_t h = t.content_hash;
  for (size_t q = 0; q < t.sig.params.size(); ++q) {
    const bool tunable = std::any_of(t.tunables.begin(), t.tunables.end(), [&](const Tunable& u) { return u.param == int(q); });
    h = fnv(h, tunable ? 0 : uint64_t(uint32_t(d.values[q])));
  }
  point.traits = {int32_t(t.content_hash), int32_t(t.content_hash >> 32), int32_t(h), int32_t(h >> 32),
                  t.grid_stride ? 1 : 0, 0};
  point.bucket = {size_bucket(work), 0, 0};
  LaunchPlan plan;
  plan.tunable = !explicit_launch;
  if (plan.tunable) {
    plan.tuning = resolve_tuning(point, device, heuristic);
    // A tuned or forced configuration chooses the tunables the caller left open.
    if (plan.tuning.config.template_count == int(t.tunables.size())) {
      bool changed = false;
      for (size_t k = 0; k < t.tunables.size(); ++k) {
        const int q = t.tunables[k].param;
        if (forced[size_t(q)] == kNotGiven && values[size_t(q)] != plan.tuning.config.template_values[k]) {
          values[size_t(q)] = plan.tuning.config.template_values[k];
          changed = true;
        }
      }
      if (changed) deduce_template(t.sig, args, values, d);
    }
  } else {
    plan.tuning.config = heuristic;
  }
  const TemplateKernel::Instance& instance = t.instance(d);
  const std::string& expression = instance.expression;
  plan.spec = user_kernel_spec(instance.program, 0);
  plan_launch(t, p[2], p[3], work, plan.tuning.config, device, plan);
  const int64_t shared = p[4] && p[4] != Py_None ? int_arg(p[4], "shared_mem") : 0;
  if (shared < 0) throw value_error("shared_mem: expected at least 0 bytes (got " + std::to_string(shared) + ")");
  plan.shared_bytes = unsigned(shared);
  plan.regime = "template";
  // Parameters, each 16-byte aligned in the block.
  size_t offset = 0;
  plan.param_count = int(n);
  for (size_t i = 0; i < n; ++i) {
    const KernelArgSpec& a = t.sig.args[i];
    size_t bytes = 0;
    if (a.kind == KernelArgKind::Tensor) bytes = tensor_param_bytes(d.views[i].ndim, d.views[i].index_bits);
    else if (a.kind == KernelArgKind::Pointer) bytes = sizeof(void*);
    else bytes = size_t(dtype_info(scalar_type(a.element, d.values)).bytes());
    if (offset + bytes > kMaxParamBytes) throw value_error(t.sig.kernel + ": its parameters pass 4 KiB");
    unsigned char* out = plan.params + offset;
    plan.param_offsets[i] = uint16_t(offset);
    plan.param_sizes[i] = uint16_t(bytes);
    if (a.kind == KernelArgKind::Tensor) {
      write_tensor_param(*args[i].array, d.views[i], out);
    } else if (a.kind == KernelArgKind::Pointer) {
      std::memcpy(out, &args[i].array->data, sizeof(void*));
    } else {
      const DType type = scalar_type(a.element, d.values);
      unsigned char bits[16];
      encode_scalar(type, scalar_arg(PyTuple_GET_ITEM(p[1], i), a.name.c_str()), bits);
      std::memcpy(out, bits, bytes);
    }
    offset = (offset + bytes + 15) / 16 * 16;
  }
  plan.param_size = offset;
  const bool empty = !explicit_launch && work == 0;
  py::object result = execute(call, &plan, empty ? 0 : 1, py::none(), kNoOutput, explain_arch);
  if (explain_arch >= 0) {
    py::dict args_dict;
    for (size_t q = 0; q < t.sig.params.size(); ++q) {
      const std::string v = spell_template_value(t.sig, d, int(q));
      if (t.sig.params[q].kind == TemplateParamKind::Int) args_dict[py::str(t.sig.params[q].name)] = d.values[q];
      else args_dict[py::str(t.sig.params[q].name)] = v;
    }
    for (py::handle r : result) {
      r["template_args"] = args_dict;
      r["name_expression"] = expression;
      r["kernel"] = expression;
    }
    return result;
  }
  for (size_t i = 0; i < n; ++i)  // PyTorch tensors the kernel may write: autograd must see the write
    if (slot[i] >= 0 && !t.sig.args[i].is_const)
      call.finish(py::reinterpret_borrow<py::object>(PyTuple_GET_ITEM(p[1], i)), size_t(slot[i]));
  return py::none();
}

}  // namespace

namespace {

// One launch of `t` with the 8 parameters of kTemplateLaunch; host operands go
// to jitops.template._launch_on_host with the call's own arguments.
PyObject* launch(TemplateKernel& t, PyObject* const* params, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  autotune_requested();  // drops a request left by a call that failed after planning
  try {
    PyObject* result = template_launch_body(t, params).release().ptr();
    if (autotune_requested()) {
      py::object owned = py::reinterpret_steal<py::object>(result);
      py::module_::import("jitops.template").attr("_autotune")(py::handle(params[0]), py::handle(params[1]));
      return owned.release().ptr();
    }
    return result;
  } catch (const HostOperands&) {
    PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::object> storage;  // see fastcall.cpp
    PyObject* host = storage.call_once_and_store_result([] {
                              return py::object(py::module_::import("jitops.template").attr("_launch_on_host"));
                            }).get_stored().ptr();
    return PyObject_Vectorcall(host, args, nargsf, kwnames);
  }
}

}  // namespace

PyObject* template_launch(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  try {
    PyObject* params[16];
    parse_fast_args(kTemplateLaunch, args, nargs, kwnames, params);
    return launch(py::handle(params[0]).cast<TemplateKernel&>(), params, args, size_t(nargs), kwnames);
  } catch (...) {
    return translate_current_exception();
  }
}

void* template_kernel_pointer(PyObject* kernel) {
  try {
    return &py::handle(kernel).cast<TemplateKernel&>();
  } catch (...) {
    translate_current_exception();
    return nullptr;
  }
}

PyObject* template_launch_positional(void* kernel, PyObject* const* params) {
  try {
    PyObject* all[8] = {params[0], params[1], params[2], params[3], params[4], params[5], nullptr, nullptr};
    return launch(*static_cast<TemplateKernel*>(kernel), all, params, 6, nullptr);
  } catch (...) {
    return translate_current_exception();
  }
}

namespace {

PyMethodDef g_template_launch{
    "template_launch", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&template_launch)),
    METH_FASTCALL | METH_KEYWORDS,
    "template_launch(kernel, args, grid, block, shared_mem, stream, template_args, _explain): one Template call."};

TemplateRef ref_arg(py::handle h) {
  py::tuple t = h.cast<py::tuple>();
  TemplateRef r;
  r.param = t[0].cast<int>();
  r.value = t[1].cast<int>();
  return r;
}

}  // namespace

void bind_templates(py::module_& m) {
  py::class_<TemplateKernel>(m, "TemplateKernel")
      .def(py::init([](std::string kernel, std::string code, std::vector<std::string> options, py::list params,
                       py::list args, py::list tunables, bool grid_stride) {
             auto t = std::make_unique<TemplateKernel>();
             t->sig.kernel = std::move(kernel);
             t->code = std::move(code);
             t->options = std::move(options);
             t->grid_stride = grid_stride;
             for (py::handle p : params) {
               py::tuple q = p.cast<py::tuple>();
               TemplateParamSpec s;
               s.name = q[0].cast<std::string>();
               s.kind = q[1].cast<std::string>() == "int" ? TemplateParamKind::Int : TemplateParamKind::Type;
               s.default_value = q[2].is_none() ? kNotGiven : q[2].cast<int>();
               t->sig.params.push_back(s);
             }
             for (py::handle a : args) {
               py::tuple q = a.cast<py::tuple>();
               KernelArgSpec s;
               s.name = q[0].cast<std::string>();
               const std::string kind = q[1].cast<std::string>();
               s.kind = kind == "tensor" ? KernelArgKind::Tensor : kind == "pointer" ? KernelArgKind::Pointer
                                                                                      : KernelArgKind::Scalar;
               s.is_const = q[2].cast<bool>();
               s.element = ref_arg(q[3]);
               s.dims = ref_arg(q[4]);
               s.index = ref_arg(q[5]);
               t->sig.args.push_back(s);
             }
             if (t->sig.args.size() > size_t(LaunchPlan::kMaxKernelParams))
               throw value_error("code: at most " + std::to_string(LaunchPlan::kMaxKernelParams) + " kernel parameters");
             for (py::handle u : tunables) {
               py::tuple q = u.cast<py::tuple>();
               t->tunables.push_back(Tunable{q[0].cast<int>(), q[1].cast<std::vector<int>>()});
             }
             if (t->tunables.size() > 4) throw value_error("tunable: at most 4 tunable template parameters");
             if (t->sig.params.size() > size_t(kMaxTemplateParams))
               throw value_error("code: at most " + std::to_string(kMaxTemplateParams) + " template parameters (got " +
                                 std::to_string(t->sig.params.size()) + ")");
             uint64_t h = 1469598103934665603ull;
             for (char c : t->sig.kernel + '\0' + t->code) h = fnv(h, uint8_t(c));
             for (const std::string& o : t->options) for (char c : o) h = fnv(h, uint8_t(c));
             t->content_hash = h;
             return t;
           }),
           py::arg("kernel"), py::arg("code"), py::arg("options"), py::arg("params"), py::arg("args"),
           py::arg("tunables"), py::arg("grid_stride"));
  m.def("tensor_param_bytes", &tensor_param_bytes, py::arg("ndim"), py::arg("index_bits"),
        "Bytes of a jitops::Tensor kernel parameter (the layout templates/jitops/tensor.cuh defines).");
  add_fastcall(m, &g_template_launch);
  bind_template_call_type(m);
}

}  // namespace jitops
