#include "report/device_colors.h"

#include <cmath>
#include <cstdio>
#include <set>

namespace devplace {
namespace {

// Colour-blind-friendly categorical colours (Okabe-Ito, then Tableau), no grey.
constexpr const char* kGpuPalette[] = {"#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7",
                                       "#56b4e9", "#8c564b", "#bcbd22", "#9467bd", "#f0e442"};
constexpr const char* kCpuPalette[] = {"#a0a0a0", "#707070", "#c8c8c8", "#505050"};

std::string Hex(int r, int g, int b) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "#%02x%02x%02x", r, g, b);
  return buffer;
}

// A mid-lightness colour of hue `h` in [0, 360).
std::string FromHue(double h) {
  const double c = 0.55, x = c * (1 - std::abs(std::fmod(h / 60.0, 2) - 1)), m = 0.2;
  double r = 0, g = 0, b = 0;
  if (h < 60) r = c, g = x;
  else if (h < 120) r = x, g = c;
  else if (h < 180) g = c, b = x;
  else if (h < 240) g = x, b = c;
  else if (h < 300) r = x, b = c;
  else r = c, b = x;
  return Hex(static_cast<int>(std::lround((r + m) * 255)), static_cast<int>(std::lround((g + m) * 255)),
             static_cast<int>(std::lround((b + m) * 255)));
}

}  // namespace

std::vector<std::string> DeviceColors(const Cluster& cluster) {
  std::vector<std::string> colors;
  std::set<std::string> used;
  size_t gpus = 0, cpus = 0, extra = 0;
  for (const Device& device : cluster.devices) {
    std::string color;
    if (device.kind == DeviceKind::kCpu && cpus < std::size(kCpuPalette)) {
      color = kCpuPalette[cpus++];
    } else if (device.kind == DeviceKind::kGpu && gpus < std::size(kGpuPalette)) {
      color = kGpuPalette[gpus++];
    }
    // Past the palettes: golden-angle hues, skipping any repeat.
    while (color.empty() || used.count(color)) color = FromHue(std::fmod(17.0 + 137.508 * extra++, 360.0));
    used.insert(color);
    colors.push_back(color);
  }
  return colors;
}

std::string Shade(const std::string& color, double amount) {
  unsigned r = 0, g = 0, b = 0;
  if (color.size() != 7 || std::sscanf(color.c_str(), "#%02x%02x%02x", &r, &g, &b) != 3) return color;
  auto move = [&](unsigned v) {
    double target = amount > 0 ? 255.0 : 0.0;
    return static_cast<int>(std::lround(v + (target - v) * std::abs(amount)));
  };
  return Hex(move(r), move(g), move(b));
}

}  // namespace devplace
