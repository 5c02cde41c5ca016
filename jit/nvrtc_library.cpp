#include "jit/nvrtc_library.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <mutex>

#include "runtime/cuda_error.h"

namespace jitops {
namespace {

std::mutex g_mutex;
std::vector<std::string> g_library_dirs;
std::vector<std::string> g_include_dirs;
bool g_loader_fallback = true;
NvrtcApi* g_api = nullptr;

bool file_exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

template <typename F>
bool load_symbol(void* handle, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
  return fn != nullptr;
}

const char* const kNames[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
NvrtcLocation* g_location = nullptr;

NvrtcLocation* locate() {
  auto* loc = new NvrtcLocation();
  for (const std::string& dir : g_library_dirs) {
    for (const char* name : kNames) {
      std::string path = dir + "/" + name;
      if (!file_exists(path)) continue;
      loc->path = path;
      char resolved[4096];
      struct stat st;
      std::string real = realpath(path.c_str(), resolved) ? resolved : path;
      loc->identity = real + " " + (stat(real.c_str(), &st) == 0 ? std::to_string(st.st_size) : "?");
      break;
    }
    if (!loc->path.empty()) break;
  }
  for (const std::string& dir : g_include_dirs) {
    if (file_exists(dir + "/cuda_fp16.h")) {
      loc->include_dir = dir;
      break;
    }
  }
  return loc;
}

NvrtcApi* load() {
  std::string tried;
  void* handle = nullptr;
  std::string loaded_path;
  std::vector<std::string> dirs = g_library_dirs;
  if (g_loader_fallback) dirs.push_back("");  // finally, the dynamic loader's own path
  for (const std::string& dir : dirs) {
    for (const char* name : kNames) {
      std::string path = dir.empty() ? std::string(name) : dir + "/" + name;
      if (!dir.empty() && !file_exists(path)) {
        tried += "\n  " + path + ": no such file";
        continue;
      }
      handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle) {
        loaded_path = path;
        break;
      }
      const char* err = dlerror();
      tried += "\n  " + path + ": " + (err ? err : "failed to load");
    }
    if (handle) break;
  }
  if (!handle)
    throw LibraryUnavailable("jitops could not load NVRTC (libnvrtc.so.13); it looked in:" + tried +
                             "\nInstall the CUDA toolkit, set CUDA_HOME, or pip install nvidia-cuda-nvrtc.");
  auto api = new NvrtcApi();
  bool ok = load_symbol(handle, "nvrtcVersion", api->nvrtcVersion) &&
            load_symbol(handle, "nvrtcGetErrorString", api->nvrtcGetErrorString) &&
            load_symbol(handle, "nvrtcCreateProgram", api->nvrtcCreateProgram) &&
            load_symbol(handle, "nvrtcDestroyProgram", api->nvrtcDestroyProgram) &&
            load_symbol(handle, "nvrtcCompileProgram", api->nvrtcCompileProgram) &&
            load_symbol(handle, "nvrtcGetProgramLogSize", api->nvrtcGetProgramLogSize) &&
            load_symbol(handle, "nvrtcGetProgramLog", api->nvrtcGetProgramLog) &&
            load_symbol(handle, "nvrtcGetPTXSize", api->nvrtcGetPTXSize) &&
            load_symbol(handle, "nvrtcGetPTX", api->nvrtcGetPTX) &&
            load_symbol(handle, "nvrtcGetCUBINSize", api->nvrtcGetCUBINSize) &&
            load_symbol(handle, "nvrtcGetCUBIN", api->nvrtcGetCUBIN) &&
            load_symbol(handle, "nvrtcGetNumSupportedArchs", api->nvrtcGetNumSupportedArchs) &&
            load_symbol(handle, "nvrtcGetSupportedArchs", api->nvrtcGetSupportedArchs) &&
            load_symbol(handle, "nvrtcAddNameExpression", api->nvrtcAddNameExpression) &&
            load_symbol(handle, "nvrtcGetLoweredName", api->nvrtcGetLoweredName);
  if (!ok) {
    delete api;
    throw LibraryUnavailable("NVRTC at " + loaded_path + " lacks a function jitops needs (NVRTC 11.2 or newer is needed)");
  }
  api->path = loaded_path;
  api->nvrtcVersion(&api->major, &api->minor);
  int n = 0;
  api->nvrtcGetNumSupportedArchs(&n);
  api->supported_archs.resize(n);
  if (n > 0) api->nvrtcGetSupportedArchs(api->supported_archs.data());
  return api;
}

}  // namespace

void set_nvrtc_search_paths(std::vector<std::string> library_dirs, std::vector<std::string> include_dirs,
                            bool loader_fallback) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_loader_fallback = loader_fallback;
  g_library_dirs = std::move(library_dirs);
  g_include_dirs = std::move(include_dirs);
  delete g_location;
  g_location = nullptr;
}

const NvrtcLocation& nvrtc_location() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_location) g_location = locate();
  return *g_location;
}

const NvrtcApi& nvrtc() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_api) g_api = load();
  return *g_api;
}

}  // namespace jitops
