// NVRTC, loaded at run time from the places a CUDA user would expect, behind
// one table. The CUDA include directory (for cuda_fp16.h and friends, which
// NVRTC 13 does not find by itself) is found the same way.
#pragma once
#include <nvrtc.h>

#include <string>
#include <vector>

namespace jitops {

struct NvrtcApi {
  decltype(&::nvrtcVersion) nvrtcVersion = nullptr;
  decltype(&::nvrtcGetErrorString) nvrtcGetErrorString = nullptr;
  decltype(&::nvrtcCreateProgram) nvrtcCreateProgram = nullptr;
  decltype(&::nvrtcDestroyProgram) nvrtcDestroyProgram = nullptr;
  decltype(&::nvrtcCompileProgram) nvrtcCompileProgram = nullptr;
  decltype(&::nvrtcGetProgramLogSize) nvrtcGetProgramLogSize = nullptr;
  decltype(&::nvrtcGetProgramLog) nvrtcGetProgramLog = nullptr;
  decltype(&::nvrtcGetPTXSize) nvrtcGetPTXSize = nullptr;
  decltype(&::nvrtcGetPTX) nvrtcGetPTX = nullptr;
  decltype(&::nvrtcGetCUBINSize) nvrtcGetCUBINSize = nullptr;
  decltype(&::nvrtcGetCUBIN) nvrtcGetCUBIN = nullptr;
  decltype(&::nvrtcGetNumSupportedArchs) nvrtcGetNumSupportedArchs = nullptr;
  decltype(&::nvrtcGetSupportedArchs) nvrtcGetSupportedArchs = nullptr;
  decltype(&::nvrtcAddNameExpression) nvrtcAddNameExpression = nullptr;
  decltype(&::nvrtcGetLoweredName) nvrtcGetLoweredName = nullptr;

  int major = 0, minor = 0;
  std::vector<int> supported_archs;
  std::string path;  // the library that was loaded
};

// Which NVRTC would be loaded, found with stat() alone: a cache hit must not
// pay for dlopen-ing NVRTC (several milliseconds), yet the cache key must
// change when NVRTC does. `identity` is the library's resolved path and size
// (its file name carries the full version, e.g. libnvrtc.so.13.0.88).
struct NvrtcLocation {
  std::string path;         // empty: not found in the search dirs (the loader's path may still have it)
  std::string identity;
  std::string include_dir;  // CUDA headers; empty when none was found
};
const NvrtcLocation& nvrtc_location();

// Where to look, in order; the Python layer adds the nvidia-cuda-nvrtc wheel
// and CUDA_HOME / CUDA_PATH before the first compile.
// `loader_fallback`: also try the dynamic loader's own path after the dirs.
void set_nvrtc_search_paths(std::vector<std::string> library_dirs, std::vector<std::string> include_dirs,
                            bool loader_fallback = true);

// Loaded on first use; throws LibraryUnavailable listing every place tried.
const NvrtcApi& nvrtc();

}  // namespace jitops
