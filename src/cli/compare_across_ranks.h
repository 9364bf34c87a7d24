// `devplace compare` across the ranks of a world (RANK, WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT; docs/distributed.md): method i runs on rank
// i % WORLD_SIZE; each worker sends rank 0 its methods' placements, times,
// notes and refusals, and rank 0 simulates each placement and prints the
// table one process would, rows in the command's order. In devplace-learn
// only (the store is torch's).
#pragma once

#include <optional>
#include <vector>

#include "cli/baseline_runner.h"
#include "cli/commands.h"

namespace devplace {

// Joins the world (Error on its faults, one line on every rank) and runs
// this rank's methods: rank 0 gets the whole table, a worker nullopt.
std::optional<Comparison> CompareAcrossRanksOfWorld(const PlacementProblem& problem,
                                                    const std::vector<const PlacerInfo*>& placers,
                                                    const CompareRankFacts& facts, bool progress);

// A method's result as the bytes a worker sends, and back; rank 0
// simulates the placement again with `problem`'s simulator. Throws Error
// on bytes that are not one (a placement of another graph, ...).
std::string EncodeComparedMethod(const ComparedMethod& compared);
ComparedMethod DecodeComparedMethod(const std::string& bytes, const PlacementProblem& problem);

}  // namespace devplace
