#pragma once

namespace jitops {
// Installs the translator of jitops' C++ exceptions into Python ones.
void register_error_translators();
}  // namespace jitops
