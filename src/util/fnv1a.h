// FNV-1a 64 of a byte string, the same on every machine: the checkpoint's
// checksum (a damaged file is refused before it is parsed), the seed a
// stand-in kernel draws from its op's name, and digests tests pin. Not for
// anything an attacker chooses to collide.
#pragma once

#include <cstdint>
#include <string_view>

namespace devplace {

inline uint64_t Fnv1a64(std::string_view bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

}  // namespace devplace
