// 64-bit FNV-1a: the cache's file names and content checksums. Not
// cryptographic; a cache file also stores its full key text and is used only
// when that text matches, so a hash collision is a miss, never a wrong kernel.
#pragma once
#include <cstdint>
#include <string>

namespace jitops {

inline uint64_t fnv1a(const void* data, size_t size, uint64_t h = 1469598103934665603ull) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

inline uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ull) {
  return fnv1a(s.data(), s.size(), h);
}

inline std::string hex64(uint64_t v) {
  static const char* digits = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) out[i] = digits[v & 15];
  return out;
}

}  // namespace jitops
