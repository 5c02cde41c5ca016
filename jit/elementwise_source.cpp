#include "jit/elementwise_source.h"

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>

#include "jit/elementwise_operands_text.h"
#include "runtime/dtype.h"

namespace jitops {
namespace {

const char* const kFieldNames[KernelSpec::kFields] = {"operation", "inputs", "outputs",      "pack",    "dims",
                                                      "threads",   "scalars", "dtypes",       "load_outputs", "offset",
                                                      "uniform",   "unroll",  "tile_a",       "tile_b",       "staged",
                                                      "batch_first"};

std::mutex g_mutex;
std::vector<ElementwiseOperation> g_operations;
std::map<std::string, int> g_ids;  // the operation's full text -> id

std::string operation_text(const ElementwiseOperation& op) {
  std::string t = op.name + '\n' + std::to_string(op.inputs) + '\n' + op.operation + '\n' + op.preamble + '\n';
  for (size_t i = 0; i < op.param_names.size(); ++i) t += op.param_types[i] + ' ' + op.param_names[i] + ',';
  return t;
}

int operand_dtype(const KernelSpec& s, int k) {
  return int((uint32_t(s.fields[ElementwiseSpecFields::kDTypes]) >> (4 * k)) & 0xF);
}

bool is_low_precision(int dtype) { return dtype == int(DType::Float16) || dtype == int(DType::BFloat16); }

// A built-in binary op as an operation over x, y -> z, computed in C (float
// for 16-bit floats, as PyTorch's opmath does) and rounded once to Z, the
// first output's type (mul's gradients: both outputs are of it).
ElementwiseOperation builtin_operation(int op) {
  ElementwiseOperation e;
  e.param_names = {"x", "y", "z"};
  e.inputs = 2;
  const char* expr = "";
  switch (op) {
    case kEwAdd: e.name = "add"; expr = "z = Z(C(x) + C(y));"; break;
    case kEwSub: e.name = "sub"; expr = "z = Z(C(x) - C(y));"; break;
    case kEwMul: e.name = "mul"; expr = "z = Z(C(x) * C(y));"; break;
    case kEwDiv: e.name = "div"; expr = "z = Z(C(x) / C(y));"; break;
    // NaN propagates from either side, as torch.maximum and numpy.maximum do.
    case kEwMaximum: e.name = "maximum"; expr = "const C a = C(x), b = C(y); z = Z((a != a || a > b) ? a : b);"; break;
    case kEwMinimum: e.name = "minimum"; expr = "const C a = C(x), b = C(y); z = Z((a != a || a < b) ? a : b);"; break;
    case kEwMulGradients:
    case kEwDivGradients:
      e.name = op == kEwMulGradients ? "mul_gradients" : "div_gradients";
      e.param_names = {"g", "x", "y", "gx", "gy"};
      e.inputs = 3;
      expr = op == kEwMulGradients ? "const C c = C(g); gx = Z(c * C(y)); gy = Z(c * C(x));"
                                   : "const C c = C(g), b = C(y); gx = Z(c / b); gy = Z(-c * ((C(x) / b) / b));";
      break;
    default: throw std::logic_error("unknown elementwise built-in " + std::to_string(op));
  }
  e.operation = expr;
  return e;
}

std::string pack_type(const std::string& t, int pack) {
  return "jitops::Pack<" + t + ", " + std::to_string(pack) + ">";
}

// The dense loop's tail, fewer than one pack, taken by the first threads of
// the same launch. Its loads come before the loop, so they share the packs'
// DRAM round trip: loaded after the loop, they waited for a second one, the
// last warp's, which a small call's time is made of (NOTES 108).
std::string dense_tail_loads(const ElementwiseOperandsText& text, int pack, const std::function<bool(int)>& uniform) {
  std::string b = "  // The tail, fewer than one pack: loaded before the loop, computed and stored after it.\n"
                  "  const int64_t i = packs * " + std::to_string(pack) + " + jitops::global_thread();\n"
                  "  const bool tail = i < p.n;\n";
  for (int k = 0; k < text.operands; ++k) {
    if (!text.reads(k) || (k < text.inputs && uniform(k))) continue;  // uniform inputs: u<k>, read once
    const std::string t = operand_name("t", k);
    b += "  " + text.types[k] + " " + t + "{};\n  if (tail) " + t + " = " + text.pointer(k) + "[i];\n";
  }
  return b;
}

// ... and its compute and store, after the loop.
std::string dense_tail_stores(const ElementwiseOperandsText& text, const std::function<bool(int)>& uniform) {
  std::string b = "  if (tail) {\n";
  for (int k = text.inputs; k < text.operands; ++k)
    if (!text.load_outputs) b += "    " + text.types[k] + " " + operand_name("t", k) + "{};\n";
  b += "    " + text.call([&](int k) { return k < text.inputs && uniform(k) ? operand_name("u", k) : operand_name("t", k); }) + "\n";
  for (int k = text.inputs; k < text.operands; ++k)
    b += "    " + text.pointer(k) + "[i] = " + operand_name("t", k) + ";\n";
  return b + "  }\n";
}

// The dense loop with U packs a thread: a block takes U * blockDim consecutive
// packs (thread t: t + u * blockDim, coalesced), every load issued before the
// first use. One array operand moving 16 bytes a pack otherwise has half of
// PyTorch's bytes in flight a thread (its unrolled loop: 4 elements), and
// mid-size calls wait on DRAM (NOTES 79).
std::string dense_unrolled_loop(const ElementwiseOperandsText& text, int pack, int unroll, int offset_bits,
                                const std::function<bool(int)>& uniform) {
  const int inputs = text.inputs, operands = text.operands;
  const bool load_outputs = text.load_outputs;
  const std::string p_ = std::to_string(pack);
  auto name = operand_name;
  auto type = [&](int k) { return pack > 1 ? pack_type(text.types[k], pack) : text.types[k]; };
  auto at = [&](int k) {
    return pack > 1 ? "*reinterpret_cast<" + std::string(k < inputs ? "const " : "") + type(k) + "*>(" +
                          text.pointer(k) + " + q * " + p_ + ")"
                    : text.pointer(k) + "[q]";
  };
  auto moves = [&](int k) { return !text.scalar(k) && !(k < inputs && uniform(k)); };
  const std::string head = "#pragma unroll\n    for (int u = 0; u < U; ++u) {\n"
                           "      const L q = q0 + L(u) * blockDim.x;\n"
                           "      if (q >= L(packs)) break;\n";
  // 32-bit counting where every element's number fits (n < 2^31): fewer registers a pack.
  std::string b = std::string("  typedef ") + (offset_bits == 32 ? "uint32_t" : "int64_t") + " L;\n" +
                  "  constexpr int U = " + std::to_string(unroll) + ";\n"
                  "  for (L q0 = L(blockIdx.x) * blockDim.x * U + threadIdx.x; q0 < L(packs);\n"
                  "       q0 += L(gridDim.x) * blockDim.x * U) {\n";
  for (int k = 0; k < operands; ++k)
    if (moves(k) && text.reads(k)) b += "    " + type(k) + " " + name("v", k) + "[U];\n";
  b += head;
  for (int k = 0; k < operands; ++k)
    if (moves(k) && text.reads(k)) b += "      " + name("v", k) + "[u] = " + at(k) + ";\n";
  b += "    }\n" + head;
  for (int k = inputs; k < operands; ++k)
    if (!load_outputs) b += "      " + type(k) + " " + name("v", k) + "_{};\n";
  auto arg = [&](int k, const std::string& lane) {
    if (k < inputs && uniform(k)) return name("u", k);
    return (k >= inputs && !load_outputs ? name("v", k) + "_" : name("v", k) + "[u]") + lane;
  };
  if (pack > 1)
    b += "#pragma unroll\n      for (int l = 0; l < " + p_ + "; ++l) " +
         text.call([&](int k) { return arg(k, ".v[l]"); }) + "\n";
  else
    b += "      " + text.call([&](int k) { return arg(k, ""); }) + "\n";
  for (int k = inputs; k < operands; ++k)
    b += "      " + at(k) + " = " + (load_outputs ? name("v", k) + "[u]" : name("v", k) + "_") + ";\n";
  return b + "    }\n  }\n";
}

std::string elementwise_body(const KernelSpec& s) {
  using F = ElementwiseSpecFields;
  const auto& f = s.fields;
  const int op_id = f[F::kOperation], inputs = f[F::kInputs], outputs = f[F::kOutputs];
  const int operands = inputs + outputs, pack = f[F::kPack], dims = f[F::kDims];
  const bool load_outputs = f[F::kLoadOutputs] != 0, tiled = f[F::kTileA] > 0;
  ElementwiseOperation op = op_id >= kFirstUserOperation ? elementwise_operation(op_id) : builtin_operation(op_id);
  const ElementwiseOperandsText text(s);
  const std::vector<std::string>& types = text.types;
  auto scalar = [&](int k) { return text.scalar(k); };
  auto uniform = [&](int k) { return (f[F::kUniformMask] >> k) & 1; };

  std::string src = tiled ? "#include \"elementwise_tile.cuh\"\n\n" : "#include \"elementwise.cuh\"\n\n";
  if (op_id < kFirstUserOperation) {
    const int z = operand_dtype(s, inputs);
    src += "typedef " + types[inputs] + " Z;\ntypedef " + (is_low_precision(z) ? "float" : types[inputs]) + " C;\n";
  } else {
    // Each placeholder is the type of the first operand declared with it.
    std::map<std::string, bool> done;
    for (int k = 0; k < operands; ++k) {
      const std::string& t = op.param_types[k];
      DType d;
      if (dtype_from_name(t, &d) || done[t]) continue;
      done[t] = true;
      src += "typedef " + types[k] + " " + t + ";\n";
    }
    if (!op.preamble.empty()) src += "\n" + op.preamble + "\n";
  }
  // The operation is defined last, under #line, so compile errors point at
  // the user's own text ("name(1): error: ...").
  std::string signature = "__device__ __forceinline__ void jitops_operation(";
  for (int k = 0; k < operands; ++k) {
    signature += std::string(k < inputs ? "const " : "") + types[k] + "& " + op.param_names[k];
    signature += k + 1 < operands ? ", " : ")";
  }
  src += "\n" + signature + ";\n\n";

  const std::string params = std::string(tiled ? "jitops::ElementwiseTileParams<" : "jitops::ElementwiseParams<") +
                             std::to_string(dims) + ", " + std::to_string(f[F::kOffsetBits]) + ">";
  src += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(f[F::kMaxThreads]) + ")\n"
         "jitops_kernel(const " + params + " p) {\n" + text.scalar_declarations();
  auto name = operand_name;
  // Operand k in one element (or pack lane): a value u<k> that is the same
  // along the packed dim, or lane `lane` of v<k>.
  auto call = [&](const std::string& lane) {
    return text.call([&](int k) { return uniform(k) ? name("u", k) : name("v", k) + lane; });
  };
  auto ptr = [&](int k) { return text.pointer(k); };
  auto pack_ptr = [&](int k, const std::string& at) {
    return std::string("reinterpret_cast<") + (k < inputs ? "const " : "") + pack_type(types[k], pack) + "*>(" +
           ptr(k) + " + " + at + ")";
  };
  // One item at offsets off(k): single elements (packed: false) or packs of `pack`.
  auto item = [&](const std::function<std::string(int)>& off, bool packed, const std::string& indent) {
    std::string b;
    for (int k = 0; k < operands; ++k) {
      if (scalar(k) || (uniform(k) && dims == 0)) continue;  // dense uniform operands are read once, before the loop
      const std::string t = packed && !uniform(k) ? pack_type(types[k], pack) : std::string(types[k]);
      const std::string v = uniform(k) ? name("u", k) : name("v", k);
      const std::string from = packed && !uniform(k) ? "*" + pack_ptr(k, off(k)) : ptr(k) + "[" + off(k) + "]";
      if (k < inputs || load_outputs)
        b += indent + (k < inputs ? "const " : "") + t + " " + v + " = " + from + ";\n";
      else
        b += indent + t + " " + v + "{};\n";
    }
    if (packed)
      b += indent + "#pragma unroll\n" + indent + "for (int l = 0; l < " + std::to_string(pack) + "; ++l) " + call(".v[l]") +
           "\n";
    else
      b += indent + call("") + "\n";
    for (int k = inputs; k < operands; ++k)
      b += indent + (packed ? "*" + pack_ptr(k, off(k)) : ptr(k) + "[" + off(k) + "]") + " = " + name("v", k) + ";\n";
    return b;
  };
  if (dims == 0) {
    for (int k = 0; k < inputs; ++k)
      if (uniform(k) && !scalar(k))
        src += "  const " + std::string(types[k]) + " " + name("u", k) + " = " + ptr(k) + "[0];\n";
    const std::string p_ = std::to_string(pack);
    src += "  const int64_t packs = p.n / " + p_ + ";\n";
    if (pack > 1) src += dense_tail_loads(text, pack, uniform);
    if (f[F::kUnroll] > 1)
      src += dense_unrolled_loop(text, pack, f[F::kUnroll], f[F::kOffsetBits], uniform);
    else
      src += "  for (int64_t q = jitops::global_thread(); q < packs; q += jitops::grid_threads()) {\n" +
             item([&](int) { return "q * " + p_; }, pack > 1, "    ") + "  }\n";
    if (pack > 1) src += dense_tail_stores(text, uniform);
  } else if (tiled) {
    src += tiled_elementwise_loop(s, text);
  } else {
    // A block takes a chunk of U * blockDim consecutive items (thread t: t +
    // u * blockDim), every load issued before the first use; resident blocks
    // hold consecutive chunks, so the sectors a strided operand shares
    // between neighbouring rows are read once from DRAM. Items spread a grid
    // apart read a transposed float64 operand 4 times over (ncu: 9.1 GB
    // against PyTorch's 2.2 GB, NOTES item 37).
    const std::string bits = std::to_string(f[F::kOffsetBits]), unroll = std::to_string(std::max(1, f[F::kUnroll]));
    src += "  typedef jitops::OffsetTypes<" + bits + ">::Linear L;\n"
           "  typedef jitops::OffsetTypes<" + bits + ">::Stride S;\n"
           "  constexpr int U = " + unroll + ";\n"
           "  const L stride = blockDim.x;\n"
           "  for (L q0 = L(blockIdx.x) * blockDim.x * U + threadIdx.x; q0 < p.n; q0 += L(gridDim.x) * blockDim.x * U) {\n"
           "    S o[U][" + std::to_string(operands) + "];\n";
    for (int k = 0; k < operands; ++k) {
      if (scalar(k) || (k >= inputs && !load_outputs)) continue;
      const std::string t = pack > 1 && !uniform(k) ? pack_type(types[k], pack) : std::string(types[k]);
      src += "    " + t + " " + (uniform(k) ? name("u", k) : name("v", k)) + "[U];\n";
    }
    src += "#pragma unroll\n    for (int u = 0; u < U; ++u) {\n"
           "      if (q0 + L(u) * stride >= p.n) break;\n"
           "      jitops::operand_offsets(p, q0 + L(u) * stride, o[u]);\n";
    for (int k = 0; k < operands; ++k) {
      if (scalar(k) || (k >= inputs && !load_outputs)) continue;
      const std::string at = "o[u][" + std::to_string(k) + "]";
      const std::string from = pack > 1 && !uniform(k) ? "*" + pack_ptr(k, at) : ptr(k) + "[" + at + "]";
      src += "      " + (uniform(k) ? name("u", k) : name("v", k)) + "[u] = " + from + ";\n";
    }
    src += "    }\n#pragma unroll\n    for (int u = 0; u < U; ++u) {\n"
           "      if (q0 + L(u) * stride >= p.n) break;\n";
    for (int k = inputs; k < operands; ++k)
      if (!load_outputs)
        src += "      " + (pack > 1 ? pack_type(types[k], pack) : std::string(types[k])) + " " + name("v", k) + "_{};\n";
    auto lane_call = [&](const std::string& lane) {
      return text.call([&](int k) {
        if (uniform(k)) return name("u", k) + "[u]";
        if (k >= inputs && !load_outputs) return name("v", k) + "_" + lane;
        return name("v", k) + "[u]" + lane;
      });
    };
    if (pack > 1)
      src += "#pragma unroll\n      for (int l = 0; l < " + std::to_string(pack) + "; ++l) " + lane_call(".v[l]") + "\n";
    else
      src += "      " + lane_call("") + "\n";
    for (int k = inputs; k < operands; ++k) {
      const std::string at = "o[u][" + std::to_string(k) + "]";
      const std::string value = load_outputs ? name("v", k) + "[u]" : name("v", k) + "_";
      src += "      " + (pack > 1 ? "*" + pack_ptr(k, at) : ptr(k) + "[" + at + "]") + " = " + value + ";\n";
    }
    src += "    }\n  }\n";
  }
  src += "}\n\n" + signature + " {\n#line 1 \"" + op.name + "\"\n" + op.operation + ";\n}\n";
  return src;
}

}  // namespace

ElementwiseOperandsText::ElementwiseOperandsText(const KernelSpec& s) {
  using F = ElementwiseSpecFields;
  inputs = s.fields[F::kInputs];
  operands = inputs + s.fields[F::kOutputs];
  load_outputs = s.fields[F::kLoadOutputs] != 0;
  scalars = uint32_t(s.fields[F::kScalarMask]);
  for (int k = 0; k < operands; ++k) types.push_back(required_cuda_type_name(operand_dtype(s, k), "elementwise"));
}

std::string ElementwiseOperandsText::pointer(int k) const {
  return "static_cast<" + std::string(k < inputs ? "const " : "") + types[size_t(k)] + "*>(p.data[" +
         std::to_string(k) + "])";
}

std::string ElementwiseOperandsText::scalar_declarations() const {
  std::string d;
  for (int k = 0; k < operands; ++k)
    if (scalar(k))
      d += "  const " + types[size_t(k)] + " " + operand_name("s", k) + " = jitops::scalar_operand<" + types[size_t(k)] +
           ">(p.scalar[" + std::to_string(k) + "]);\n";
  return d;
}

std::string ElementwiseOperandsText::call(const std::function<std::string(int)>& arg) const {
  std::string c = "jitops_operation(";
  for (int k = 0; k < operands; ++k) c += (scalar(k) ? operand_name("s", k) : arg(k)) + (k + 1 < operands ? ", " : ");");
  return c;
}

const char* cuda_type_name(int dtype) {
  switch (DType(dtype)) {
    case DType::Bool: return "bool";
    case DType::Int8: return "signed char";
    case DType::UInt8: return "unsigned char";
    case DType::Int16: return "short";
    case DType::UInt16: return "unsigned short";
    case DType::Int32: return "int";
    case DType::UInt32: return "unsigned int";
    case DType::Int64: return "long long";
    case DType::UInt64: return "unsigned long long";
    case DType::Float16: return "__half";
    case DType::BFloat16: return "__nv_bfloat16";
    case DType::Float32: return "float";
    case DType::Float64: return "double";
    default: return nullptr;
  }
}

const char* required_cuda_type_name(int dtype, const char* family) {
  const char* t = cuda_type_name(dtype);
  if (!t) throw std::logic_error(std::string(family) + ": no CUDA type for dtype " + std::to_string(dtype));
  return t;
}

int register_elementwise_operation(const ElementwiseOperation& op) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const std::string text = operation_text(op);
  auto it = g_ids.find(text);
  if (it != g_ids.end()) return it->second;
  const int id = kFirstUserOperation + int(g_operations.size());
  g_operations.push_back(op);
  g_ids.emplace(text, id);
  return id;
}

ElementwiseOperation elementwise_operation(int id) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const size_t i = size_t(id - kFirstUserOperation);
  if (id < kFirstUserOperation || i >= g_operations.size())
    throw std::logic_error("elementwise: no registered operation " + std::to_string(id));
  return g_operations[i];
}

const KernelFamilyInfo& elementwise_family_info() {
  static const KernelFamilyInfo info{"elementwise", kFieldNames, &elementwise_body};
  return info;
}

}  // namespace jitops
