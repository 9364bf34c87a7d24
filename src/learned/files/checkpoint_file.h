// The learned placer's checkpoint file: a sealed container of two parts, the
// run's plain facts as JSON (step, baselines, best placement, the curve so
// far) and torch's archive of the tensors (policy, optimizer, generators).
//
//   payload = "DEVPLACE-CHECKPOINT 2\n" + JSON length (8 bytes, little endian) + JSON + tensors
//   file    = payload + FNV-1a 64 of the payload (8 bytes, little endian) + "DPCKSUM\n"
//
// The checksum is checked before anything is parsed, so a damaged file (a
// zeroed block, a truncation) is refused in one line rather than half-loaded;
// the JSON keeps the facts readable and lets the loader check each one's
// range. No torch here: the tests build and edit checkpoints with it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "util/error.h"
#include "util/files.h"
#include "util/fnv1a.h"

namespace devplace {

struct CheckpointParts {
  nlohmann::json facts;
  std::string tensors;  // torch::serialize::OutputArchive's bytes
};

namespace checkpoint_file {

inline constexpr std::string_view kHeader = "DEVPLACE-CHECKPOINT 2\n";
inline constexpr std::string_view kTrailerMagic = "DPCKSUM\n";
inline constexpr size_t kTrailerBytes = 16;

inline void AppendU64(std::string& out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

inline uint64_t ReadU64(std::string_view bytes) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  return value;
}

}  // namespace checkpoint_file

// The file's bytes.
// `header` says what kind of file it is (a GDP policy file has its own).
inline std::string SealCheckpoint(const CheckpointParts& parts, std::string_view header = checkpoint_file::kHeader) {
  using namespace checkpoint_file;
  const std::string facts = parts.facts.dump();
  std::string out(header);
  AppendU64(out, facts.size());
  out += facts;
  out += parts.tensors;
  const uint64_t checksum = Fnv1a64(out);
  AppendU64(out, checksum);
  out += kTrailerMagic;
  return out;
}

// The parts of the file at `path` whose bytes are `bytes`; throws Error
// naming the file if it is not a sealed checkpoint or its checksum fails.
inline CheckpointParts UnsealCheckpoint(const std::string& path, std::string_view bytes,
                                        std::string_view header = checkpoint_file::kHeader,
                                        const std::string& noun = "checkpoint") {
  using namespace checkpoint_file;
  const std::string name = ForMessage(path);
  const bool checkpoint = noun == "checkpoint";
  if (bytes.size() < header.size() + 8 + kTrailerBytes || bytes.substr(bytes.size() - kTrailerMagic.size()) != kTrailerMagic) {
    throw Error(name + ": not a devplace " + noun + ", or damaged (no checksum trailer" +
                (checkpoint ? "; an older devplace's checkpoints cannot be resumed)" : ")"));
  }
  const std::string_view payload = bytes.substr(0, bytes.size() - kTrailerBytes);
  if (ReadU64(bytes.substr(payload.size(), 8)) != Fnv1a64(payload)) {
    throw Error(name + ": " + noun + " is damaged (its checksum does not match its contents)");
  }
  if (payload.substr(0, header.size()) != header) throw Error(name + ": not a devplace " + noun + " of this version");
  const uint64_t facts_bytes = ReadU64(payload.substr(header.size(), 8));
  const size_t facts_at = header.size() + 8;
  if (facts_bytes > payload.size() - facts_at) throw Error(name + ": " + noun + " is damaged (its parts do not add up)");
  CheckpointParts parts;
  parts.facts = ParseJson(payload.substr(facts_at, facts_bytes), path);  // bounded depth, one-line errors
  if (!parts.facts.is_object()) throw Error(name + ": " + noun + " is damaged (its facts are not a JSON object)");
  parts.tensors.assign(payload.substr(facts_at + facts_bytes));
  return parts;
}

}  // namespace devplace
