#include "cli/shipped_policy.h"

#include <filesystem>
#include <system_error>
#include <vector>

namespace devplace {

std::optional<std::string> FindShippedPolicy(const std::string& name) {
  namespace fs = std::filesystem;
  std::vector<fs::path> folders;
  // Relative to the program rather than the working folder, so that
  // placing from any folder finds the same file.
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (!error) folders.push_back(self.parent_path().parent_path() / "share" / "devplace" / "policies");
  folders.push_back(fs::path(DEVPLACE_SOURCE_DIR) / "policies");
  for (const fs::path& folder : folders) {
    const fs::path file = folder / name;
    if (fs::is_regular_file(file, error)) return file.string();
  }
  return std::nullopt;
}

std::string DefaultGuidedScreen(const GuidedSearchOptions& guided) {
  if (guided.learning != GuidedLearning::kRegression || guided.hidden != GuidedSearchOptions{}.hidden) return "";
  return FindShippedPolicy(kShippedGuidedScreen).value_or("");
}

}  // namespace devplace
