// The 2017 paper's method as a Policy: the graph's co-location groups (with
// the single-consumer merge), read in chain order by the seq2seq network
// (learned/networks/seq2seq_net.h), a device per group.
#pragma once

#include <memory>

#include "learned/policies/policy.h"
#include "learned/learned_placer.h"

namespace devplace {

// Throws Error if the graph has nothing to place, a group no device of the
// cluster can run, or an unknown group order.
std::unique_ptr<Policy> MakeSeq2SeqPolicy(const PlacementProblem& problem, const LearnedOptions& options);

}  // namespace devplace
