#include "jit/user_source.h"

#include <deque>
#include <map>
#include <mutex>
#include <stdexcept>

namespace jitops {
namespace {

// Neither field is named: both are process-local, and named fields are
// written into the source (the cache key).
const char* const kFieldNames[KernelSpec::kFields] = {};
constexpr int kProgramField = 0, kFunctionField = 1;

std::mutex g_mutex;
std::deque<UserProgram> g_programs;  // a deque: entries never move once registered
std::map<std::string, int> g_ids;    // program content -> id

std::string content_key(const UserProgram& p) {
  std::string key = p.name + '\0' + p.code + '\0' + (p.with_tensor_header ? "T" : "R") + '\0';
  for (const std::string& o : p.options) key += o + '\0';
  key += '\0';
  for (const std::string& e : p.name_expressions) key += e + '\0';
  return key;
}

std::string user_body(const KernelSpec& spec) {
  const UserProgram p = user_program(user_spec_program(spec));
  std::string src;
  if (p.with_tensor_header) src += "#include \"jitops/tensor.cuh\"\n";
  // Compiler messages count lines in the user's own source.
  return src + "#line 1 \"" + p.name + ".cu\"\n" + p.code + "\n";
}

CompileRequest user_request(const KernelSpec& spec) {
  const UserProgram p = user_program(user_spec_program(spec));
  CompileRequest r;
  r.program_name = p.name;
  r.name_expressions = p.name_expressions;
  r.extra_options = p.options;
  return r;
}

int user_function(const KernelSpec& spec) { return spec.fields[kFunctionField]; }

}  // namespace

int register_user_program(const UserProgram& program) {
  const std::string key = content_key(program);
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_ids.find(key);
  if (it != g_ids.end()) return it->second;
  const int id = int(g_programs.size());
  g_programs.push_back(program);
  g_ids.emplace(key, id);
  return id;
}

UserProgram user_program(int id) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (id < 0 || size_t(id) >= g_programs.size()) throw std::logic_error("no user program " + std::to_string(id));
  return g_programs[size_t(id)];
}

KernelSpec user_kernel_spec(int id, int function) {
  KernelSpec s;
  s.family = KernelFamily::User;
  s.fields[kProgramField] = id;
  s.fields[kFunctionField] = function;
  return s;
}

int user_spec_program(const KernelSpec& spec) { return spec.fields[kProgramField]; }

const KernelFamilyInfo& user_family_info() {
  static const KernelFamilyInfo info{"user", kFieldNames, user_body, user_request, user_function};
  return info;
}

}  // namespace jitops
