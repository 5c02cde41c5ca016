# Writes OUTPUT: a C++ file holding every template under TEMPLATE_DIR as a raw
# string, for jit/templates.h. Run at build time, so editing a template rebuilds.
file(GLOB_RECURSE files RELATIVE "${TEMPLATE_DIR}" "${TEMPLATE_DIR}/*.cuh" "${TEMPLATE_DIR}/*.h")
list(SORT files)
set(body "// Generated from templates/ by cmake/embed_templates.cmake. Do not edit.\n#include \"jit/templates.h\"\n\nnamespace jitops {\n\nconst std::vector<TemplateFile>& template_files() {\n  static const std::vector<TemplateFile> files = {\n")
foreach(f IN LISTS files)
  file(READ "${TEMPLATE_DIR}/${f}" content)
  string(APPEND body "    {\"${f}\", R\"JITOPS_TEMPLATE(${content})JITOPS_TEMPLATE\"},\n")
endforeach()
string(APPEND body "  };\n  return files;\n}\n\n}  // namespace jitops\n")
file(WRITE "${OUTPUT}.tmp" "${body}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
