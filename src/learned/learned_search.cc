#include "learned/learned_search.h"

#include "util/error.h"

namespace devplace {

PlacerOutput RunLearnedSearch(const PlacementProblem& problem, const std::string& method, const LearnedOptions& options) {
  if (method != "guided") throw Error("unknown learned search '" + method + "'");
  GuidedSearchOptions guided = options.guided;
  guided.learning_rate = options.learning_rate;
  GuidedRunFiles files;
  files.out_dir = options.out_dir;
  files.resume = options.resume;
  files.checkpoint_seconds = options.checkpoint_seconds;
  return PlaceGuided(problem, guided, files, options.search_start);
}

}  // namespace devplace
