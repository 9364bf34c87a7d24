// Writing SVG by hand for the HTML report: escaping, compact deterministic
// numbers, axis ticks, and a small builder for the shapes the charts use.
// Every data shape carries class "mark", which the report's self-check (and
// the tests) count to tell a drawn chart from an empty one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace devplace {

// Text safe inside an XML element or a double-quoted attribute.
std::string XmlEscape(std::string_view text);

// A coordinate or value with at most `decimals` decimals and no trailing
// zeros ("12.5", "3", "-0.25"); the same number always prints the same way,
// so reports are byte-for-byte reproducible.
std::string Num(double value, int decimals = 2);

// About `count` round tick values (1, 2 or 5 times a power of ten) covering
// [low, high]. Empty if the range is not finite.
std::vector<double> NiceTicks(double low, double high, int count = 5);

// A tick label: "0.25", "1.5k", "2M", ... short enough for an axis.
std::string TickLabel(double value);

// Optional parts of a shape.
struct SvgStyle {
  std::string fill = "none";
  std::string stroke;           // empty: none
  double stroke_width = 1;
  std::string dash;             // stroke-dasharray, empty: solid
  double opacity = 1;
  std::string css_class;        // extra classes besides "mark"
  bool mark = true;             // a data shape (class "mark") or decoration
};

class SvgBuilder {
 public:
  // A chart: an <svg class="chart ..."> of the given size with a title and
  // an id the page's script and the tests find it by.
  SvgBuilder(std::string id, double width_px, double height_px, std::string extra_class = "");

  // Shapes; `tooltip` becomes a <title> child shown on hover.
  void Rect(double x, double y, double width, double height, const SvgStyle& style, std::string_view tooltip = {});
  void Line(double x1, double y1, double x2, double y2, const SvgStyle& style);
  void Polyline(const std::vector<std::pair<double, double>>& points, const SvgStyle& style,
                std::string_view tooltip = {});
  void Path(const std::string& d, const SvgStyle& style, std::string_view tooltip = {});
  // anchor: "start", "middle" or "end". Text is decoration, never a mark.
  void Text(double x, double y, std::string_view text, const std::string& anchor = "start", double size_px = 11,
            const std::string& css_class = "");
  void Raw(std::string_view markup) { body_ += markup; }
  void OpenGroup(const std::string& attributes);
  void CloseGroup() { body_ += "</g>"; }

  // Shows the drawing at this size on the page instead of its natural size
  // (the viewBox keeps the drawing's own coordinates).
  void SetDisplaySize(double width_px, double height_px) {
    display_width_px_ = width_px;
    display_height_px_ = height_px;
  }

  // The finished <svg> element.
  std::string Finish() const;

 private:
  std::string Attributes(const SvgStyle& style) const;

  std::string id_;
  double width_px_;
  double height_px_;
  double display_width_px_ = 0;
  double display_height_px_ = 0;
  std::string extra_class_;
  std::string body_;
};

}  // namespace devplace
