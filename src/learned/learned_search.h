// Running a learned search (learned_methods.h's LearnedSearchList: guided)
// from the learned options `place` reads. Torch-free header; the search runs
// in the torch library.
#pragma once

#include <string>

#include "learned/learned_placer.h"

namespace devplace {

// Runs the learned search `method` on `problem` with its budget, its
// options from `options` (guided, learning_rate) and its run folder
// (out_dir, resume, checkpoint_seconds). Throws Error for an unknown method.
PlacerOutput RunLearnedSearch(const PlacementProblem& problem, const std::string& method, const LearnedOptions& options);

}  // namespace devplace
