// The files of a `devplace place` run folder (--out), named once: the
// learned placers' training loop writes them, `place` writes every method's
// placement and refuses a folder that holds a run, `report --run` reads
// them, and a run's start removes the temporaries a killed one left.
// Header only and torch-free, so that the report layer reads it without
// linking the learned placers.
#pragma once

#include <array>

namespace devplace::run_folder {

inline constexpr const char* kBestPlacement = "best_placement.json";
inline constexpr const char* kCheckpoint = "checkpoint.pt";
inline constexpr const char* kCurve = "curve.csv";
// The best placements run for real (`place --reward calibrated`).
inline constexpr const char* kRemeasured = "remeasured.json";

// Every file a run leaves: any of them in a folder means a previous run's
// work is there.
inline constexpr std::array<const char*, 4> kAllFiles = {kBestPlacement, kCheckpoint, kCurve, kRemeasured};

}  // namespace devplace::run_folder
