#include "jit/reduction_source.h"

#include <map>
#include <mutex>
#include <stdexcept>

#include "jit/elementwise_source.h"
#include "runtime/dtype.h"

namespace jitops {
namespace {

using F = ReductionSpecFields;

// The operation id is process-local, so it is not named: named fields are
// written into the source, which keys the disk cache.
const char* const kFieldNames[KernelSpec::kFields] = {nullptr,   "inputs", "dtypes", "strategy", "offset", "rdims",
                                                      "vector",  "group",  "unroll", "split",    "threads"};

std::mutex g_mutex;
std::vector<ReductionOperation> g_operations;
std::vector<uint32_t> g_hashes;
std::map<std::string, int> g_ids;

std::string operation_text(const ReductionOperation& op) {
  std::string t = op.name + '\n' + std::to_string(op.inputs) + '\n' + op.map_expr + '\n' + op.reduce_expr + '\n' +
                  op.post_map_expr + '\n' + op.identity + '\n' + op.reduce_type + '\n' + op.preamble + '\n';
  for (size_t i = 0; i < op.param_names.size(); ++i) t += op.param_types[i] + ' ' + op.param_names[i] + ',';
  return t;
}

int operand_dtype(const KernelSpec& s, int k) { return int((uint32_t(s.fields[F::kDTypes]) >> (4 * k)) & 0xF); }

std::string reduction_body(const KernelSpec& s) {
  const auto& f = s.fields;
  const ReductionOperation op = reduction_operation(f[F::kOperation]);
  const int inputs = f[F::kInputs];
  std::vector<std::string> types(size_t(inputs) + 2);  // inputs, output, reduce type
  for (int k = 0; k < inputs + 2; ++k) types[size_t(k)] = required_cuda_type_name(operand_dtype(s, k), "reduction");
  std::string src = "#include \"reduction.cuh\"\n#include \"elementwise.cuh\"\n\n";
  // Each placeholder is the type of the first operand declared with it.
  std::map<std::string, bool> done;
  auto typedef_placeholder = [&](const std::string& name, const std::string& type) {
    DType d;
    if (dtype_from_name(name, &d) || done[name]) return;
    done[name] = true;
    src += "typedef " + type + " " + name + ";\n";
  };
  for (int k = 0; k <= inputs; ++k) typedef_placeholder(op.param_types[size_t(k)], types[size_t(k)]);
  typedef_placeholder(op.reduce_type, types[size_t(inputs) + 1]);
  src += "typedef " + types[size_t(inputs) + 1] + " _type_reduce;\n";
  if (!op.preamble.empty()) src += "\n" + op.preamble + "\n";
  const std::string& out_name = op.param_names[size_t(inputs)];
  src += "\nstruct JitopsReduction {\n"
         "  typedef _type_reduce R;\n"
         "  typedef " + types[size_t(inputs)] + " Y;\n"
         "  static constexpr int kInputs = " + std::to_string(inputs) + ";\n"
         "  __device__ static __forceinline__ R identity() {\n"
         "#line 1 \"identity\"\n"
         "    return R(" + op.identity + ");\n"
         "  }\n"
         "  __device__ static __forceinline__ R reduce(const R& a, const R& b) {\n"
         "#line 1 \"reduce_expr\"\n"
         "    return R(" + op.reduce_expr + ");\n"
         "  }\n"
         "  template <int V, typename P, typename Off>\n"
         "  __device__ static __forceinline__ void map(const P& p, const Off* off, R (&out)[V]) {\n";
  for (int k = 0; k < inputs; ++k) {
    const std::string& t = types[size_t(k)];
    const std::string pack = "jitops::Pack<" + t + ", V>";
    src += "    const " + pack + " in" + std::to_string(k) + " = jitops::load_pack_readonly(reinterpret_cast<const " +
           pack + "*>(static_cast<const " + t + "*>(p.in[" + std::to_string(k) + "]) + off[" + std::to_string(k) +
           "]));\n";
  }
  src += "#pragma unroll\n    for (int v = 0; v < V; ++v) {\n";
  for (int k = 0; k < inputs; ++k)
    src += "      const " + types[size_t(k)] + "& " + op.param_names[size_t(k)] + " = in" + std::to_string(k) +
           ".v[v];\n";
  src += "#line 1 \"map_expr\"\n"
         "      out[v] = R(" + op.map_expr + ");\n"
         "    }\n"
         "  }\n"
         "  __device__ static __forceinline__ void post(const R& a, Y& " + out_name +
         ", long long in_size, long long out_size) {\n"
         "    const jitops::ReductionIndexSize _in_ind{in_size}, _out_ind{out_size};\n"
         "#line 1 \"post_map_expr\"\n"
         "    " + op.post_map_expr + ";\n"
         "  }\n"
         "};\n\n";
  const std::string bits = std::to_string(f[F::kOffsetBits]);
  src += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(f[F::kMaxThreads]) + ")\n" +
         "jitops_kernel(const jitops::ReductionParams<" + bits + "> p) {\n";
  const std::string split = f[F::kSplit] ? "true" : "false";
  switch (f[F::kStrategy]) {
    case kReduceInner:
      src += "  jitops::reduce_inner<JitopsReduction, " + bits + ", " + std::to_string(f[F::kReducedDims]) + ", " +
             std::to_string(f[F::kVector]) + ", " + std::to_string(f[F::kGroup]) + ", " +
             std::to_string(f[F::kUnroll]) + ", " + split + ">(p);\n";
      break;
    case kReduceOuter:
      src += "  jitops::reduce_outer<JitopsReduction, " + bits + ", " + std::to_string(f[F::kReducedDims]) + ", " +
             std::to_string(f[F::kVector]) + ", " + std::to_string(f[F::kUnroll]) + ", " + split + ">(p);\n";
      break;
    case kReduceFinish:
      src += "  jitops::reduce_finish<JitopsReduction, " + bits + ", " + std::to_string(f[F::kGroup]) +
             ">(p);\n";
      break;
    default:
      throw std::logic_error("reduction: unknown strategy " + std::to_string(f[F::kStrategy]));
  }
  return src + "}\n";
}

uint32_t fnv32(const std::string& text) {
  uint32_t h = 2166136261u;
  for (char c : text) h = (h ^ uint8_t(c)) * 16777619u;
  return h;
}

}  // namespace

int register_reduction_operation(const ReductionOperation& op) {
  if (op.inputs < 1 || op.inputs > kMaxReductionOperands - 1 || op.param_names.size() != size_t(op.inputs) + 1 ||
      op.param_types.size() != op.param_names.size())
    throw std::logic_error("reduction: 1 to 4 inputs and one output");
  std::lock_guard<std::mutex> lock(g_mutex);
  const std::string text = operation_text(op);
  auto it = g_ids.find(text);
  if (it != g_ids.end()) return it->second;
  const int id = int(g_operations.size());
  g_operations.push_back(op);
  g_hashes.push_back(fnv32(text));
  g_ids.emplace(text, id);
  return id;
}

ReductionOperation reduction_operation(int id) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (id < 0 || size_t(id) >= g_operations.size()) throw std::logic_error("reduction: no operation " + std::to_string(id));
  return g_operations[size_t(id)];
}

uint32_t reduction_operation_hash(int id) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_hashes.at(size_t(id));
}

const KernelFamilyInfo& reduction_family_info() {
  static const KernelFamilyInfo info{"reduction", kFieldNames, &reduction_body};
  return info;
}

}  // namespace jitops
