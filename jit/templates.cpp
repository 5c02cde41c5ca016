#include "jit/templates.h"

#include <cstring>

#include "jit/hash.h"

namespace jitops {

uint64_t templates_hash() {
  static const uint64_t h = [] {
    uint64_t acc = fnv1a("jitops-templates");
    for (const TemplateFile& f : template_files()) {
      acc = fnv1a(f.name, std::strlen(f.name) + 1, acc);
      acc = fnv1a(f.content, std::strlen(f.content) + 1, acc);
    }
    return acc;
  }();
  return h;
}

const char* template_source(const std::string& name) {
  for (const TemplateFile& f : template_files())
    if (name == f.name) return f.content;
  return nullptr;
}

}  // namespace jitops
