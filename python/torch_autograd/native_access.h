// The table of python/bindings/torch_native.h, filled from PyTorch's C++ API.
#pragma once
#include "python/bindings/torch_native.h"

namespace jitops_autograd {

const jitops::TorchNativeApi* native_api();

}  // namespace jitops_autograd
