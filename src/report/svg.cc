#include "report/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace devplace {

std::string XmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string Num(double value, int decimals) {
  // A NaN or infinity in an attribute would make the browser drop the shape
  // silently; the charts never mean to write one.
  if (!std::isfinite(value)) value = 0;
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  std::string out = buffer;
  if (out.find('.') != std::string::npos) {
    while (out.back() == '0') out.pop_back();
    if (out.back() == '.') out.pop_back();
  }
  if (out == "-0") out = "0";
  return out;
}

std::vector<double> NiceTicks(double low, double high, int count) {
  std::vector<double> ticks;
  if (!std::isfinite(low) || !std::isfinite(high) || count < 1) return ticks;
  if (high < low) std::swap(low, high);
  if (high == low) {
    ticks.push_back(low);
    return ticks;
  }
  const double raw_step = (high - low) / count;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw_step)));
  double step = magnitude;
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    step = factor * magnitude;
    if (step >= raw_step) break;
  }
  // Half a step of slack so rounding never drops the last tick.
  // Multiples of the step, not a running sum, so errors do not add up.
  for (double k = std::ceil(low / step - 1e-9); k * step <= high + step * 1e-9; k += 1) {
    ticks.push_back(k == 0 ? 0.0 : k * step);
  }
  return ticks;
}

std::string TickLabel(double value) {
  const double a = std::abs(value);
  if (a >= 1e9) return Num(value / 1e9, 2).append("G");
  if (a >= 1e6) return Num(value / 1e6, 2).append("M");
  if (a >= 1e4) return Num(value / 1e3, 2).append("k");
  if (a >= 1 || a == 0) return Num(value, 2);
  return Num(value, 4);
}

SvgBuilder::SvgBuilder(std::string id, double width_px, double height_px, std::string extra_class)
    : id_(std::move(id)), width_px_(width_px), height_px_(height_px), extra_class_(std::move(extra_class)) {}

std::string SvgBuilder::Attributes(const SvgStyle& style) const {
  std::string a = " fill=\"" + style.fill + "\"";
  if (!style.stroke.empty()) {
    a += " stroke=\"" + style.stroke + "\"";
    if (style.stroke_width != 1) a += " stroke-width=\"" + Num(style.stroke_width) + "\"";
  }
  if (!style.dash.empty()) a += " stroke-dasharray=\"" + style.dash + "\"";
  if (style.opacity != 1) a += " opacity=\"" + Num(style.opacity) + "\"";
  std::string classes = style.mark ? "mark" : "";
  if (!style.css_class.empty()) {
    if (!classes.empty()) classes += ' ';
    classes += style.css_class;
  }
  if (!classes.empty()) a += " class=\"" + classes + "\"";
  return a;
}

namespace {

// A shape with an optional hover text as its <title> child.
std::string Element(const std::string& open, std::string_view tooltip) {
  if (tooltip.empty()) return open + "/>";
  return open + "><title>" + XmlEscape(tooltip) + "</title></" + open.substr(1, open.find(' ') - 1) + ">";
}

}  // namespace

void SvgBuilder::Rect(double x, double y, double width, double height, const SvgStyle& style, std::string_view tooltip) {
  body_ += Element("<rect x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" width=\"" + Num(std::max(width, 0.0)) +
                       "\" height=\"" + Num(std::max(height, 0.0)) + "\"" + Attributes(style),
                   tooltip);
}

void SvgBuilder::Line(double x1, double y1, double x2, double y2, const SvgStyle& style) {
  body_ += "<line x1=\"" + Num(x1) + "\" y1=\"" + Num(y1) + "\" x2=\"" + Num(x2) + "\" y2=\"" + Num(y2) + "\"" +
           Attributes(style) + "/>";
}

void SvgBuilder::Polyline(const std::vector<std::pair<double, double>>& points, const SvgStyle& style,
                          std::string_view tooltip) {
  std::string list;
  for (const auto& [x, y] : points) {
    if (!list.empty()) list += ' ';
    list.append(Num(x)).append(",").append(Num(y));
  }
  body_ += Element("<polyline points=\"" + list + "\"" + Attributes(style), tooltip);
}

void SvgBuilder::Path(const std::string& d, const SvgStyle& style, std::string_view tooltip) {
  body_ += Element("<path d=\"" + d + "\"" + Attributes(style), tooltip);
}

void SvgBuilder::Text(double x, double y, std::string_view text, const std::string& anchor, double size_px,
                      const std::string& css_class) {
  body_ += "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\"";
  if (anchor != "start") body_ += " text-anchor=\"" + anchor + "\"";
  if (size_px != 11) body_ += " font-size=\"" + Num(size_px) + "\"";
  if (!css_class.empty()) body_ += " class=\"" + css_class + "\"";
  body_.append(">").append(XmlEscape(text)).append("</text>");
}

void SvgBuilder::OpenGroup(const std::string& attributes) {
  body_ += "<g";
  if (!attributes.empty()) body_.append(" ").append(attributes);
  body_ += ">";
}

std::string SvgBuilder::Finish() const {
  const std::string w = Num(width_px_, 0), h = Num(height_px_, 0);
  const std::string shown_w = display_width_px_ > 0 ? Num(display_width_px_, 0) : w;
  const std::string shown_h = display_height_px_ > 0 ? Num(display_height_px_, 0) : h;
  std::string classes = "chart";
  if (!extra_class_.empty()) classes.append(" ").append(extra_class_);
  return "<svg id=\"" + XmlEscape(id_) + "\" class=\"" + classes +
         "\" width=\"" + shown_w + "\" height=\"" + shown_h + "\" viewBox=\"0 0 " + w + " " + h +
         "\" font-family=\"sans-serif\" font-size=\"11\">" + body_ + "</svg>\n";
}

}  // namespace devplace
