"""Prints what CMakeLists.txt needs to build jitops._torch_autograd against the PyTorch importable here:
its include directories (comma-separated), its library directory, and its _GLIBCXX_USE_CXX11_ABI. Exits non-zero
(and the module is not built) where PyTorch is not importable."""

import torch
import torch.utils.cpp_extension as ext

print(",".join(ext.include_paths()))
print(ext.library_paths()[0])
print(int(torch._C._GLIBCXX_USE_CXX11_ABI))
