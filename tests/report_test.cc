// The HTML report's parts: SVG helpers, charts, timeline, graph view, the
// run folder reader, the assembled page, and the Chrome trace's structure.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <regex>
#include <set>

#include "cli/baseline_runner.h"
#include "cluster/presets.h"
#include "models/registry.h"
#include "report/charts.h"
#include "report/chrome_trace.h"
#include "report/device_colors.h"
#include "report/graph_view_svg.h"
#include "report/html_report.h"
#include "report/search_curve.h"
#include "report/svg.h"
#include "report/timeline_svg.h"
#include "test_util.h"
#include "util/error.h"

namespace devplace {
namespace {

using testing::MakeOp;
using testing::MakeTestCluster;
using testing::TempDir;

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// No number the browser would reject: NaN or infinity in any spelling.
void ExpectNoBadNumbers(const std::string& svg) {
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("NaN"), std::string::npos);
  EXPECT_EQ(svg.find("inf\""), std::string::npos);
}

TEST(SvgTest, NumbersAreCompactDeterministicAndAlwaysFinite) {
  EXPECT_EQ(Num(1.5), "1.5");
  EXPECT_EQ(Num(2.0), "2");
  EXPECT_EQ(Num(0.126, 2), "0.13");
  EXPECT_EQ(Num(1234.567, 1), "1234.6");
  EXPECT_EQ(Num(-0.0001), "0");
  EXPECT_EQ(Num(std::nan("")), "0");
  EXPECT_EQ(Num(INFINITY), "0");
  EXPECT_EQ(XmlEscape("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
}

TEST(SvgTest, TicksAreRoundAndCoverTheRange) {
  std::vector<double> fifths = NiceTicks(0, 1, 5);
  ASSERT_EQ(fifths.size(), 6u);
  for (size_t i = 0; i < fifths.size(); ++i) EXPECT_NEAR(fifths[i], 0.2 * i, 1e-12);
  std::vector<double> ticks = NiceTicks(0.0022, 0.0074, 6);
  ASSERT_GE(ticks.size(), 3u);
  for (double t : ticks) {
    EXPECT_GE(t, 0.0022);
    EXPECT_LE(t, 0.0074);
    EXPECT_NEAR(std::round(t / 0.001) * 0.001, t, 1e-12) << t;
  }
  EXPECT_TRUE(NiceTicks(0, NAN).empty());
  EXPECT_EQ(TickLabel(1500000), "1.5M");
  EXPECT_EQ(TickLabel(0.0025), "0.0025");
}

TEST(SvgTest, ShapesAreMarksWithTooltipsAndTheSvgHasItsId) {
  SvgBuilder svg("my-chart", 100, 50, "zoomable");
  SvgStyle style;
  style.fill = "#123456";
  svg.Rect(1, 2, 3, 4, style, "a <tip>");
  SvgStyle decoration;
  decoration.mark = false;
  decoration.stroke = "#000";
  svg.Line(0, 0, 1, 1, decoration);
  std::string out = svg.Finish();
  EXPECT_EQ(out.rfind("<svg id=\"my-chart\" class=\"chart zoomable\"", 0), 0u) << out;
  EXPECT_NE(out.find("<rect x=\"1\" y=\"2\" width=\"3\" height=\"4\" fill=\"#123456\" class=\"mark\">"
                     "<title>a &lt;tip&gt;</title></rect>"),
            std::string::npos)
      << out;
  EXPECT_EQ(Count(out, "class=\"mark\""), 1u);
  EXPECT_NE(out.find("viewBox=\"0 0 100 50\""), std::string::npos);
}

TEST(DeviceColorsTest, EveryDeviceGetsItsOwnColourAndCpusAreGrey) {
  for (const char* preset : {"k80x2", "k80x4", "h100x8"}) {
    Cluster c = *MakeClusterPreset(preset);
    std::vector<std::string> colors = DeviceColors(c);
    ASSERT_EQ(colors.size(), static_cast<size_t>(c.num_devices()));
    EXPECT_EQ(std::set<std::string>(colors.begin(), colors.end()).size(), colors.size()) << preset;
    for (int32_t d = 0; d < c.num_devices(); ++d) {
      const std::string& col = colors[d];
      const bool grey = col.substr(1, 2) == col.substr(3, 2) && col.substr(3, 2) == col.substr(5, 2);
      EXPECT_EQ(grey, c.devices[d].kind == DeviceKind::kCpu) << preset << " " << c.devices[d].name << " " << col;
    }
  }
  // More GPUs than the palette has colours still get distinct ones.
  Cluster big;
  big.name = "big";
  for (int i = 0; i < 24; ++i) big.devices.push_back(testing::MakeDevice("gpu:" + std::to_string(i), DeviceKind::kGpu));
  for (int i = 1; i < 24; ++i) big.links.push_back({0, i, 1e9, 1, -1});
  big.Finalize("big");
  std::vector<std::string> colors = DeviceColors(big);
  EXPECT_EQ(std::set<std::string>(colors.begin(), colors.end()).size(), 24u);
  EXPECT_EQ(Shade("#000000", 1.0), "#ffffff");
  EXPECT_EQ(Shade("#ffffff", -1.0), "#000000");
  EXPECT_EQ(Shade("#204060", 0), "#204060");
}

TEST(ChartsTest, DownsampleKeepsTheExtremesOfALongSeries) {
  std::vector<Point> points;
  for (int i = 0; i < 10000; ++i) points.emplace_back(i, i == 4321 ? 100.0 : i == 777 ? -50.0 : std::sin(i * 0.01));
  std::vector<Point> small = Downsample(points, 200);
  EXPECT_LE(small.size(), 200u);
  EXPECT_GE(small.size(), 150u);
  bool has_max = false, has_min = false;
  for (size_t i = 0; i < small.size(); ++i) {
    has_max |= small[i].second == 100.0;
    has_min |= small[i].second == -50.0;
    if (i > 0) {
      EXPECT_LE(small[i - 1].first, small[i].first);
    }
  }
  EXPECT_TRUE(has_max);
  EXPECT_TRUE(has_min);
  std::vector<Point> few = {{0, 1}, {1, 2}};
  EXPECT_EQ(Downsample(few, 200), few);
}

TEST(ChartsTest, StackedBarsDrawANonZeroSegmentEachAndSayWhenEmpty) {
  BarChartSpec spec;
  spec.id = "bars";
  spec.y_label = "s";
  spec.groups = {{"gpu:0", {{"a", {{1.0, "#111111", "one"}, {0.5, "#222222", "two"}}}, {"b", {{2.0, "#333333", "three"}}}}},
                 {"gpu:1", {{"a", {{0.0, "#444444", "zero"}}}}}};
  spec.y_reference = 2.5;
  spec.y_reference_label = "limit";
  std::string svg = StackedBarChart(spec);
  EXPECT_EQ(Count(svg, "class=\"mark\""), 3u);
  for (const char* text : {"gpu:0", "gpu:1", "<title>one</title>", "<title>three</title>", "limit"}) {
    EXPECT_NE(svg.find(text), std::string::npos) << text;
  }
  EXPECT_EQ(svg.find("<title>zero</title>"), std::string::npos);
  EXPECT_EQ(svg.find("no-data"), std::string::npos);
  ExpectNoBadNumbers(svg);

  BarChartSpec empty = spec;
  empty.groups = {{"gpu:0", {{"a", {{0.0, "#111111", ""}}}}}};
  std::string nothing = StackedBarChart(empty);
  EXPECT_EQ(Count(nothing, "class=\"mark\""), 0u);
  EXPECT_NE(nothing.find("no-data"), std::string::npos);
}

TEST(ChartsTest, LinesDrawAPolylinePerSeriesAndADotForOnePoint) {
  LineChartSpec spec;
  spec.id = "lines";
  spec.series = {{"best", "#0000ff", {{0, 3}, {1, 2}, {2, 1}}}, {"single", "#ff0000", {{1, 2}}}, {"none", "#00ff00", {}}};
  std::string svg = LineChart(spec);
  EXPECT_EQ(Count(svg, "<polyline"), 1u);
  EXPECT_EQ(Count(svg, "class=\"mark\""), 2u);
  EXPECT_NE(svg.find("stroke=\"#0000ff\""), std::string::npos);
  EXPECT_EQ(svg.find(">none<"), std::string::npos);  // an empty series has no legend entry
  ExpectNoBadNumbers(svg);
  LineChartSpec empty;
  empty.id = "empty";
  EXPECT_NE(LineChart(empty).find("no-data"), std::string::npos);
}

// The tiny model on k80x2 with its ops spread over both GPUs.
struct TinySetup {
  Graph graph = MakeModel("tiny");
  Cluster cluster = *MakeClusterPreset("k80x2");
  CostModel cost{cluster};
  Simulator simulator{graph, cluster, cost};
  Placement placement;
  SimResult result;
  TinySetup() {
    placement = SingleDevicePlacement(graph, cluster, 1);
    const Grouping groups = BuildGrouping(graph);
    for (int32_t op = 0; op < graph.num_ops(); ++op) {
      if (placement[op] == 1 && groups.group_of_op[op] % 2 == 1) placement[op] = 2;
    }
    SimOptions options;
    options.record_events = true;
    result = simulator.Run(placement, options);
  }
};

TEST(TimelineTest, HasALanePerDeviceAndLinkAndMergesOnlyWhatCannotBeSeen) {
  TinySetup t;
  ASSERT_TRUE(t.result.ok()) << t.result.reason;
  ASSERT_FALSE(t.result.transfer_events.empty());
  std::vector<std::string> colors = DeviceColors(t.cluster);
  std::string svg = TimelineSvg(t.graph, t.cluster, t.result, colors);
  for (const char* lane : {">cpu:0<", ">gpu:0<", ">gpu:1<", ">links<"}) EXPECT_NE(svg.find(lane), std::string::npos) << lane;
  EXPECT_NE(svg.find("class=\"chart zoomable\""), std::string::npos);
  const size_t events = t.result.op_events.size() + t.result.transfer_events.size();
  EXPECT_GT(Count(svg, "class=\"mark\""), 0u);
  EXPECT_LE(Count(svg, "class=\"mark\""), events);
  ExpectNoBadNumbers(svg);
  // Wide enough that every event is many pixels: one shape per event.
  TimelineOptions wide;
  wide.plot_width_px = 1e8;
  wide.merge_gap_px = -1;
  std::string all = TimelineSvg(t.graph, t.cluster, t.result, colors, wide);
  EXPECT_EQ(Count(all, "class=\"mark\""), events);
  // Backward ops on gpu:1 are drawn in its own colour, forward in a lighter one.
  EXPECT_NE(all.find("fill=\"" + colors[2] + "\""), std::string::npos);
  EXPECT_NE(all.find("fill=\"" + Shade(colors[2], 0.45) + "\""), std::string::npos);
}

TEST(GraphViewTest, ChainsRunLeftToRightAndBranchesShareAColumn) {
  // a -> {b, c} -> d, each op its own group.
  Graph g;
  int32_t a = g.AddOp(MakeOp(0, "a", 1, 4));
  int32_t b = g.AddOp(MakeOp(1, "b", 1, 4));
  int32_t c = g.AddOp(MakeOp(2, "c", 1, 4));
  int32_t d = g.AddOp(MakeOp(3, "d", 1, 4));
  g.AddDataEdge(a, 0, b);
  g.AddDataEdge(a, 0, c);
  g.AddDataEdge(b, 0, d);
  g.AddDataEdge(c, 0, d);
  g.Finalize();
  Grouping groups = IdentityGrouping(g);
  GraphLayout layout = LayoutGroups(g, groups, 60);
  auto col = [&](int32_t op) { return layout.column[groups.group_of_op[op]]; };
  auto row = [&](int32_t op) { return layout.row[groups.group_of_op[op]]; };
  EXPECT_LT(col(a), col(b));
  EXPECT_EQ(col(b), col(c));
  EXPECT_NE(row(b), row(c));
  EXPECT_LT(col(c), col(d));
  EXPECT_EQ(layout.num_columns, 3);
  EXPECT_EQ(layout.max_rows, 2);
  // Squeezed into two columns, depth order still holds.
  GraphLayout narrow = LayoutGroups(g, groups, 2);
  EXPECT_EQ(narrow.num_columns, 2);
  EXPECT_LE(narrow.column[groups.group_of_op[a]], narrow.column[groups.group_of_op[d]]);
}

TEST(GraphViewTest, DrawsAColouredNodePerGroupSplitWhereItsOpsAreSplit) {
  TinySetup t;
  Grouping groups = BuildGrouping(t.graph);
  std::vector<std::string> colors = DeviceColors(t.cluster);
  std::vector<std::string> names = {"cpu:0", "gpu:0", "gpu:1"};
  std::string svg = GraphViewSvg(t.graph, groups, t.placement, colors, names);
  EXPECT_EQ(Count(svg, "<g class=\"node\">"), static_cast<size_t>(groups.num_groups()));
  std::set<int32_t> used(t.placement.begin(), t.placement.end());
  for (int32_t d : used) EXPECT_NE(svg.find("fill=\"" + colors[d] + "\""), std::string::npos) << d;
  ExpectNoBadNumbers(svg);

  // A group whose ops all ran on one device, split: one more segment.
  const Group* whole = nullptr;
  for (const Group& g : groups.groups) {
    bool one_device = std::all_of(g.ops.begin(), g.ops.end(), [&](int32_t op) { return t.placement[op] == t.placement[g.ops[0]]; });
    if (g.ops.size() >= 2 && one_device) whole = &g;
  }
  ASSERT_NE(whole, nullptr);
  Placement split = t.placement;
  split[whole->ops[0]] = split[whole->ops[0]] == 1 ? 2 : 1;
  std::string two = GraphViewSvg(t.graph, groups, split, colors, names);
  EXPECT_EQ(Count(two, "class=\"mark\""), Count(svg, "class=\"mark\"") + 1);
}

TEST(SearchCurveTest, ReadsColumnsByNameAndSkipsARowBeingWritten) {
  std::string text =
      "seconds,step,samples,best_step_time_s,mean_step_time_s,failed_fraction\n"
      "0.5,1,4,0,0,1\n"
      "1.25,2,8,0.003,0.004,0.5\n"
      "2,3,12,0.002,0.0035,0\n"
      "2.5,4,1";  // the run is writing this row
  std::vector<CurvePoint> points = ParseSearchCurve(text, "curve.csv");
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[1].step, 2);
  EXPECT_DOUBLE_EQ(points[1].seconds, 1.25);
  EXPECT_DOUBLE_EQ(points[1].best_step_time_s, 0.003);
  EXPECT_DOUBLE_EQ(points[1].mean_step_time_s, 0.004);
  EXPECT_DOUBLE_EQ(points[2].best_step_time_s, 0.002);
  EXPECT_EQ(points[1].samples, 8);  // the overlaid curves' x axis
  // A complete last row without its newline counts; without a samples
  // column, samples is -1 (the overlay falls back to updates).
  const std::vector<CurvePoint> old = ParseSearchCurve("step,seconds,mean_step_time_s,best_step_time_s\n1,2,3,4", "c");
  ASSERT_EQ(old.size(), 1u);
  EXPECT_EQ(old[0].samples, -1);
  EXPECT_THROW(ParseSearchCurve("step,seconds,mean_step_time_s,best_step_time_s,samples\n1,2,3,4,-7\n", "c"), Error);
}

TEST(SearchCurveTest, BadCurvesNameTheFileAndLine) {
  auto message = [](const std::string& text) {
    try {
      ParseSearchCurve(text, "runs/x/curve.csv");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("").find("runs/x/curve.csv: empty"), std::string::npos);
  EXPECT_NE(message("step,seconds,mean_step_time_s\n").find("'best_step_time_s'"), std::string::npos);
  EXPECT_NE(message("step,seconds,mean_step_time_s,best_step_time_s\n1,2,3,4\n1,x,3,4\n5,6,7,8\n").find("line 3"),
            std::string::npos);
  EXPECT_NE(message("step,seconds,mean_step_time_s,best_step_time_s\n1,2,3\n").find("line 2"), std::string::npos);
}

TEST(SearchCurveTest, RunFoldersMustHoldARunOfThisGraphAndCluster) {
  Graph g = MakeModel("tiny");
  Cluster k80x2 = *MakeClusterPreset("k80x2");
  TempDir dir;
  EXPECT_THROW(LoadRunFolder(dir.File("missing"), g, k80x2), Error);
  std::filesystem::create_directories(dir.File("empty"));
  try {
    LoadRunFolder(dir.File("empty"), g, k80x2);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("neither curve.csv nor best_placement.json"), std::string::npos);
  }
  std::filesystem::create_directories(dir.File("run"));
  SavePlacementFile(dir.File("run/best_placement.json"), g, k80x2, SingleDevicePlacement(g, k80x2, 1));
  dir.Write("run/curve.csv", "step,seconds,mean_step_time_s,best_step_time_s\n1,0.1,0.01,0.01\n");
  RunFolder run = LoadRunFolder(dir.File("run"), g, k80x2);
  EXPECT_EQ(run.curve.size(), 1u);
  ASSERT_TRUE(run.placement);
  EXPECT_EQ(*run.placement, SingleDevicePlacement(g, k80x2, 1));
  Cluster k80x4 = *MakeClusterPreset("k80x4");
  try {
    LoadRunFolder(dir.File("run"), g, k80x4);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cluster 'k80x2', not 'k80x4'"), std::string::npos) << e.what();
  }
}

// A report of the tiny model with three baselines and, optionally, a run.
struct TinyReport {
  TinySetup t;
  PlacementProblem problem{t.graph, t.cluster, t.cost, t.simulator, 0};
  Comparison comparison = CompareMethods(problem, PlacersByName({"single_gpu", "expert", "m_etf"}), false);

  std::string Html(const RunFolder* run = nullptr, const std::string& trace = "") {
    const MethodResult& best = comparison.methods[2];
    SimOptions events;
    events.record_events = true;
    ReportInput input{t.graph, t.cluster, comparison, {best.method, best.placement, t.simulator.Run(best.placement, events)},
                      ReportedPlacement{"expert", comparison.methods[1].placement, comparison.methods[1].sim}, run, trace};
    return HtmlReport(input);
  }
};

// A placer that refuses the problem (throws Error, as one does on a graph
// beyond what it can handle) is listed with its reason; the others run.
TEST(CompareMethodsTest, APlacerThatRefusesIsListedWithItsReasonAndTheRestRun) {
  TinySetup t;
  PlacementProblem problem{t.graph, t.cluster, t.cost, t.simulator, 0};
  const PlacerInfo refuser{"refuser", "always refuses",
                           [](const PlacementProblem&) -> PlacerOutput { throw Error("refuser: the graph is too big"); }};
  Comparison c = CompareMethods(problem, {&FindPlacer("single_gpu"), &refuser, &FindPlacer("m_etf")}, false);
  ASSERT_EQ(c.methods.size(), 2u);
  EXPECT_EQ(c.methods[0].method, "single_gpu");
  EXPECT_EQ(c.methods[1].method, "m_etf");
  ASSERT_EQ(c.refused.size(), 1u);
  EXPECT_EQ(c.refused[0].method, "refuser");
  EXPECT_EQ(c.refused[0].reason, "refuser: the graph is too big");
  const std::string text = FormatComparisonText(t.cluster, c);
  EXPECT_NE(text.find("refuser: refused: refuser: the graph is too big"), std::string::npos) << text;
  const nlohmann::json rows = ComparisonToJson(t.cluster, c);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2]["method"], "refuser");
  EXPECT_TRUE(rows[2]["refused"].get<bool>());
  EXPECT_TRUE(rows[2]["step_time_s"].is_null());
  EXPECT_FALSE(rows[2]["oom"].get<bool>());
  EXPECT_FALSE(rows[0].contains("refused"));
}

// Step times keep their significant digits at any scale and stay within
// the table's column: six decimals in between.
TEST(CompareMethodsTest, StepTimesOfAnyScaleKeepTheirDigitsAndTheirColumn) {
  const Cluster cluster = *MakeClusterPreset("k80x2");
  Comparison c;
  c.graph_name = "g";
  c.cluster_name = "k80x2";
  c.bound.critical_path_us = 2.5;
  c.bound.work_us = 1.25;
  for (double step_us : {3.0, 123456.7, 1e21}) {
    MethodResult m;
    m.method = "m" + std::to_string(c.methods.size());
    m.sim.step_time_us = step_us;
    m.sim.devices.assign(cluster.num_devices(), DeviceStats{});
    c.methods.push_back(m);
  }
  const std::string text = FormatComparisonText(cluster, c);
  EXPECT_NE(text.find("lower bound: 2.5e-06 s (critical path 2.5e-06 s"), std::string::npos) << text;
  EXPECT_NE(text.find("devices 1.25e-06 s)"), std::string::npos) << text;
  EXPECT_NE(text.find("m0                 3e-06 "), std::string::npos) << text;
  EXPECT_NE(text.find("m1              0.123457 "), std::string::npos) << text;
  EXPECT_NE(text.find("m2                 1e+15 "), std::string::npos) << text;
}

TEST(HtmlReportTest, HasEverySectionTheTableNumbersAndOneColourPerDevice) {
  TinyReport r;
  std::string html = r.Html();
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* id : {"comparison-section", "compute-section", "copies-section", "memory-section",
                         "timeline-section", "graph-section", "id=\"device-compute\"", "id=\"device-copies\"",
                         "id=\"device-memory\"", "id=\"memory-over-time\"", "id=\"timeline\"", "id=\"graph-view\"",
                         "id=\"report-status\""}) {
    EXPECT_NE(html.find(id), std::string::npos) << id;
  }
  EXPECT_EQ(html.find("curve-section"), std::string::npos);  // no run, no curve
  // The page's self-check expects exactly the charts it holds.
  EXPECT_NE(html.find("data-charts=\"" + std::to_string(Count(html, "<svg ")) + "\""), std::string::npos);
  EXPECT_EQ(Count(html, "<svg "), 6u);
  // Each method's row with its step time as `compare` prints it.
  for (const MethodResult& m : r.comparison.methods) {
    char step[32];
    std::snprintf(step, sizeof step, "%.6f", m.sim.step_time_s());
    EXPECT_NE(html.find("<td>" + m.method + "</td><td>" + step + "</td>"), std::string::npos) << m.method;
  }
  EXPECT_NE(html.find("<tr class=\"analysed\"><td>m_etf</td>"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"reference\"><td>expert</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>1.00x</td>"), std::string::npos);  // single_gpu against itself
  // One legend colour per device, all different.
  std::regex swatch("<i style=\"background:(#[0-9a-f]{6})\"></i>([a-z0-9:]+)</span>");
  std::map<std::string, std::string> color_of;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), swatch); it != std::sregex_iterator(); ++it) {
    auto [at, inserted] = color_of.emplace((*it)[2], (*it)[1]);
    if (!inserted) {
      EXPECT_EQ(at->second, (*it)[1].str()) << "device " << (*it)[2] << " changed colour";
    }
  }
  EXPECT_EQ(color_of.size(), 3u);
  std::set<std::string> distinct;
  for (const auto& [device, color] : color_of) distinct.insert(color);
  EXPECT_EQ(distinct.size(), 3u);
  // Self-contained: nothing fetched, nothing a browser rejects.
  EXPECT_EQ(html.find("http"), std::string::npos);
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(Count(html, "<svg "), Count(html, "</svg>"));
  ExpectNoBadNumbers(html);
  // The same input gives the same page.
  EXPECT_EQ(html, r.Html());
}

TEST(HtmlReportTest, ARunAddsItsCurveAndATraceItsLink) {
  TinyReport r;
  RunFolder run;
  run.path = "runs/tiny";
  run.curve = {{1, 0.1, 0.004, 0.003}, {2, 0.2, 0.0035, 0.0028}, {3, 0.3, 0, 0.0028}};
  std::string html = r.Html(&run, "step.trace.json");
  for (const char* id : {"curve-section", "id=\"curve-steps\"", "id=\"curve-seconds\"", "best so far",
                         "mean of the samples", "best baseline (m_etf)", "href=\"step.trace.json\""}) {
    EXPECT_NE(html.find(id), std::string::npos) << id;
  }
  EXPECT_EQ(Count(html, "<svg "), 8u);
  EXPECT_NE(html.find("data-charts=\"8\""), std::string::npos);
}

TEST(ChromeTraceTest, IsValidTraceEventFormat) {
  TinySetup t;
  nlohmann::json trace = ChromeTraceJson(t.graph, t.cluster, t.result);
  ASSERT_TRUE(trace.contains("traceEvents"));
  EXPECT_EQ(trace["displayTimeUnit"], "ms");
  const int32_t D = t.cluster.num_devices();
  size_t ops = 0, transfers = 0, counters = 0;
  std::set<int> named_processes;
  for (const auto& e : trace["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("name")) << e.dump();
    const std::string ph = e["ph"];
    ASSERT_TRUE(e["pid"].is_number_integer()) << e.dump();
    if (ph == "M") {
      const std::string name = e["name"];
      EXPECT_TRUE(name == "process_name" || name == "process_sort_index" || name == "thread_name") << name;
      ASSERT_TRUE(e.contains("args")) << e.dump();
      if (name == "process_name") named_processes.insert(e["pid"].get<int>());
      if (name == "thread_name") {
        EXPECT_TRUE(e.contains("tid") && e["args"]["name"].is_string()) << e.dump();
      }
    } else if (ph == "X") {
      ASSERT_TRUE(e["ts"].is_number() && e["dur"].is_number() && e.contains("tid")) << e.dump();
      EXPECT_GE(e["ts"].get<double>(), 0);
      EXPECT_GE(e["dur"].get<double>(), 0);
      EXPECT_LE(e["ts"].get<double>() + e["dur"].get<double>(), t.result.step_time_us * (1 + 1e-9));
      (e["cat"] == "transfer" ? transfers : ops)++;
      EXPECT_EQ(e["pid"].get<int>() == D, e["cat"] == "transfer") << e.dump();
    } else if (ph == "C") {
      ASSERT_TRUE(e["ts"].is_number() && e["args"]["bytes"].is_number()) << e.dump();
      EXPECT_LT(e["pid"].get<int>(), D);
      ++counters;
    } else {
      ADD_FAILURE() << "unexpected event phase " << ph;
    }
  }
  EXPECT_EQ(ops, t.result.op_events.size());
  EXPECT_EQ(transfers, t.result.transfer_events.size());
  EXPECT_EQ(counters, t.result.memory_events.size());
  EXPECT_EQ(named_processes.size(), static_cast<size_t>(D + 1));  // the devices and the links
}

}  // namespace
}  // namespace devplace
