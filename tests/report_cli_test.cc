// End-to-end tests of `devplace export` and `devplace report`, and of the
// report in a real browser: headless Chromium loads it, the page checks
// itself (every chart drawn, no script error) and the DOM dump shows the
// verdict.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "run_devplace.h"
#include "test_util.h"
#include "util/files.h"

namespace devplace {
namespace {

using testing::ExpectCleanError;
using testing::Outcome;
using testing::RunCommand;
using testing::RunDevplace;
using testing::TempDir;

constexpr const char* kChromium = "/usr/bin/chromium";

size_t Lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

bool FolderIsEmpty(const std::string& path) {
  return std::filesystem::directory_iterator(path) == std::filesystem::directory_iterator();
}

TEST(ExportCliTest, WritesEveryFormatByExtensionOrFlag) {
  TempDir dir;
  const std::string common = "export --graph tiny --cluster k80x2 --placement single:gpu:1 ";
  Outcome json = RunDevplace(common + "-o " + dir.File("p.json"));
  ASSERT_EQ(json.exit_code, 0) << json.out;
  // devplace's own file: simulate takes it and gives the same step.
  Outcome a = RunDevplace("simulate --graph tiny --cluster k80x2 --json --placement " + dir.File("p.json"));
  Outcome b = RunDevplace("simulate --graph tiny --cluster k80x2 --json --placement single:gpu:1");
  ASSERT_EQ(a.exit_code, 0) << a.out;
  EXPECT_EQ(a.out, b.out);

  ASSERT_EQ(RunDevplace(common + "-o " + dir.File("p.csv")).exit_code, 0);
  std::string csv = ReadTextFile(dir.File("p.csv"));
  EXPECT_EQ(csv.rfind("op,device\n", 0), 0u);
  EXPECT_EQ(Lines(csv), 51u);  // the header and 50 ops

  ASSERT_EQ(RunDevplace(common + "-o " + dir.File("p.tf.json")).exit_code, 0);
  nlohmann::json tf = ReadJsonFile(dir.File("p.tf.json"));
  EXPECT_EQ(tf.size(), 50u);
  std::regex device_string("/device:(CPU|GPU):[0-9]+");
  for (const auto& [op, device] : tf.items()) EXPECT_TRUE(std::regex_match(device.get<std::string>(), device_string)) << device;

  // --format wins over the name, and - is standard output.
  ASSERT_EQ(RunDevplace(common + "--format csv -o " + dir.File("csv.json")).exit_code, 0);
  EXPECT_EQ(ReadTextFile(dir.File("csv.json")), csv);
  Outcome out = RunDevplace(common + "--format csv -o -");
  ASSERT_EQ(out.exit_code, 0) << out.out;
  EXPECT_EQ(out.out, csv);
  // A baseline placer instead of a placement.
  Outcome method = RunDevplace("export --graph tiny --cluster k80x2 --method m_etf --format tf -o -");
  ASSERT_EQ(method.exit_code, 0) << method.out;
  EXPECT_EQ(nlohmann::json::parse(method.out).size(), 50u);
}

TEST(ExportCliTest, BadRequestsGiveOneLineErrorsAndNoFile) {
  TempDir dir;
  const std::string common = "export --graph tiny --cluster k80x2 ";
  ExpectCleanError(RunDevplace(common + "--placement single:gpu:0 -o " + dir.File("p.txt")), "--format");
  ExpectCleanError(RunDevplace(common + "--placement single:gpu:0 --format yaml -o " + dir.File("p.json")), "yaml");
  ExpectCleanError(RunDevplace(common + "--placement single:gpu:0 --method m_etf -o " + dir.File("p.json")), "exactly one");
  ExpectCleanError(RunDevplace(common + "-o " + dir.File("p.json")), "exactly one");
  ExpectCleanError(RunDevplace(common + "--method magic -o " + dir.File("p.json")), "magic");
  ExpectCleanError(RunDevplace(common + "--placement single:gpu:0 -o -"), "--format");
  // The built-in models are not PyTorch exports: no modules to map.
  ExpectCleanError(RunDevplace(common + "--placement single:gpu:0 -o " + dir.File("m.device_map.json")), "export_pytorch.py");
  // A placement that cannot run: the CPU-only input on a GPU.
  Outcome single = RunDevplace(common + "--placement single:gpu:0 --format devplace -o -");
  ASSERT_EQ(single.exit_code, 0) << single.out;
  nlohmann::json document = nlohmann::json::parse(single.out);
  ASSERT_EQ(document["placement"]["input/batch"], "cpu:0");
  document["placement"]["input/batch"] = "gpu:0";
  std::string bad = dir.Write("bad.json", document.dump());
  ExpectCleanError(RunDevplace(common + "--placement " + bad + " -o " + dir.File("out.csv")), "cannot run on gpu:0");
  std::filesystem::remove(bad);
  EXPECT_TRUE(FolderIsEmpty(dir.File(""))) << "a failed export left a file";
}

// A real PyTorch export (skipped where python3 lacks torch, as the
// exporter's own tests are): blocks on two GPUs become a device_map by block.
TEST(ExportCliTest, DeviceMapOfAPyTorchExportNamesItsModules) {
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 lacks torch";
  TempDir dir;
  const std::string script = dir.Write("blocks.py", R"(import torch
class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)
    def forward(self, x):
        return torch.relu(self.fc2(torch.relu(self.fc1(x))))
def make_model(batch):
    model = torch.nn.Sequential(Block(), Block(), torch.nn.Linear(8, 4))
    return model, (torch.randn(batch, 8),), torch.randint(0, 4, (batch,))
)");
  Outcome exported = RunCommand("/usr/bin/python3 " + std::string(DEVPLACE_TOOLS) + "/export_pytorch.py " + script +
                                " --batch 4 -o " + dir.File("blocks.json"));
  ASSERT_EQ(exported.exit_code, 0) << exported.out;
  // Block 0 on gpu:0; block 1, the head and the loss on gpu:1; inputs on the CPU.
  nlohmann::json graph = ReadJsonFile(dir.File("blocks.json"));
  nlohmann::json placement = nlohmann::json::object();
  for (const auto& op : graph["ops"]) {
    const std::string group = op.value("colocation_group", "");
    const bool cpu_only = op.contains("devices") && op["devices"] == nlohmann::json::array({"cpu"});
    placement[op["name"].get<std::string>()] = cpu_only ? "cpu:0" : group.rfind("0", 0) == 0 ? "gpu:0" : "gpu:1";
  }
  std::string file = dir.Write("p.json", nlohmann::json({{"placement", placement}}).dump());
  Outcome o = RunDevplace("export --graph " + dir.File("blocks.json") + " --cluster k80x2 --placement " + file +
                          " --format device_map -o -");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_EQ(nlohmann::json::parse(o.out).dump(), R"({"0":0,"1":1,"2":1})");
}

TEST(ReportCliTest, WritesTheReportAndALinkedTrace) {
  TempDir dir;
  Outcome o = RunDevplace("report --graph tiny --cluster k80x2 --methods single_gpu,expert,m_etf -o " +
                          dir.File("r.html") + " --trace " + dir.File("r.trace.json"));
  ASSERT_EQ(o.exit_code, 0) << o.out;
  std::string html = ReadTextFile(dir.File("r.html"));
  for (const char* part : {"comparison-section", "timeline-section", "graph-section", "href=\"r.trace.json\"",
                           "<td>m_etf</td>"}) {
    EXPECT_NE(html.find(part), std::string::npos) << part;
  }
  EXPECT_EQ(html.find("<td>scotch</td>"), std::string::npos);  // --methods picks
  nlohmann::json trace = ReadJsonFile(dir.File("r.trace.json"));
  EXPECT_GT(trace["traceEvents"].size(), 50u);
}

// --overlay draws several runs' best-so-far curves in one chart, each named
// by its folder, against the placements measured (curve.csv's samples).
TEST(ReportCliTest, OverlaysTheCurvesOfSeveralRuns) {
  TempDir dir;
  for (const char* method : {"rl", "gdp"}) {
    Outcome o = RunDevplace(std::string("place --graph tiny --cluster k80x2 --max-steps 2 --samples-per-step 2 --json --method ") +
                            method + " --out " + dir.File(std::string("run-") + method));
    ASSERT_EQ(o.exit_code, 0) << o.out;
  }
  Outcome o = RunDevplace("report --graph tiny --cluster k80x2 --methods expert --run " + dir.File("run-rl") + " --overlay " +
                          dir.File("run-gdp") + " -o " + dir.File("r.html"));
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const std::string html = ReadTextFile(dir.File("r.html"));
  for (const char* part : {"overlay-section", "overlay-samples", "overlay-seconds", "placements measured", "run-rl", "run-gdp"}) {
    EXPECT_NE(html.find(part), std::string::npos) << part;
  }
  Outcome plain = RunDevplace("report --graph tiny --cluster k80x2 --methods expert --run " + dir.File("run-rl") + " -o " + dir.File("p.html"));
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_EQ(ReadTextFile(dir.File("p.html")).find("overlay-section"), std::string::npos);

  ASSERT_EQ(RunDevplace("place --graph tiny --cluster k80x2 --method m_etf --json --out " + dir.File("baseline")).exit_code, 0);
  ExpectCleanError(RunDevplace("report --graph tiny --cluster k80x2 --overlay " + dir.File("baseline") + " -o " + dir.File("b.html")),
                   "no curve.csv to overlay");
  ExpectCleanError(RunDevplace("report --graph tiny --cluster k80x4 --overlay " + dir.File("run-gdp") + " -o " + dir.File("c.html")),
                   "k80x2");
  EXPECT_FALSE(std::filesystem::exists(dir.File("b.html")));
  EXPECT_FALSE(std::filesystem::exists(dir.File("c.html")));
}

TEST(ReportCliTest, BadRunsGiveOneLineErrorsAndNoReport) {
  TempDir dir;
  const std::string out = " -o " + dir.File("r.html");
  ExpectCleanError(RunDevplace("report --graph tiny --cluster k80x2 --run " + dir.File("nope") + out), "nope");
  std::filesystem::create_directories(dir.File("run"));
  ExpectCleanError(RunDevplace("report --graph tiny --cluster k80x2 --run " + dir.File("run") + out), "curve.csv");
  ASSERT_EQ(RunDevplace("place --graph tiny --cluster k80x4 --method m_etf --json --out " + dir.File("run")).exit_code, 0);
  ExpectCleanError(RunDevplace("report --graph tiny --cluster k80x2 --run " + dir.File("run") + out), "k80x4");
  dir.Write("run/curve.csv", "step,seconds\n");
  ExpectCleanError(RunDevplace("report --graph tiny --cluster k80x4 --run " + dir.File("run") + out), "mean_step_time_s");
  ExpectCleanError(RunDevplace("report --graph tiny --cluster k80x2 --methods m_etf,magic" + out), "magic");
  EXPECT_FALSE(std::filesystem::exists(dir.File("r.html")));
}

// What the page's self-check wrote into #report-status once Chromium ran it.
std::string BrowserVerdict(const std::string& html_path, const TempDir& dir) {
  if (!std::filesystem::exists(kChromium)) {
    return std::string("chromium is not installed at ") + kChromium + " (scripts/install-deps.sh installs it)";
  }
  // Its own profile folder, so parallel tests do not share one; no sandbox
  // (CI runs as root); a small /dev/shm in containers is not enough for it.
  // Its log (D-Bus complaints and the like) is noise here; a hang is
  // stopped after two minutes.
  Outcome o = RunCommand("(timeout 120 " + std::string(kChromium) +
                         " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --user-data-dir=" +
                         dir.File("profile") + " --dump-dom file://" + html_path + " 2>/dev/null)");
  if (o.exit_code != 0) return "chromium failed (exit " + std::to_string(o.exit_code) + "): " + o.out.substr(0, 500);
  std::smatch m;
  if (!std::regex_search(o.out, m, std::regex("<div id=\"report-status\">([^<]*)</div>"))) {
    return "no #report-status in the DOM: " + o.out.substr(0, 500);
  }
  return m[1];
}

TEST(ReportBrowserTest, ARunReportLoadsInChromiumWithEveryChartDrawn) {
  TempDir dir;
  Outcome place = RunDevplace("place --method rl --graph tiny --cluster k80x2 --max-steps 5 --json --out " + dir.File("run"));
  ASSERT_EQ(place.exit_code, 0) << place.out;
  Outcome o = RunDevplace("report --graph tiny --cluster k80x2 --run " + dir.File("run") + " -o " + dir.File("r.html"));
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_EQ(BrowserVerdict(dir.File("r.html"), dir), "report-ok 8 charts");
  // Another run overlaid adds its two charts (against samples and time).
  Outcome other = RunDevplace("place --graph tiny --cluster k80x2 --method hdp --max-steps 3 --json --out " + dir.File("hdp-run"));
  ASSERT_EQ(other.exit_code, 0) << other.out;
  Outcome overlaid = RunDevplace("report --graph tiny --cluster k80x2 --run " + dir.File("run") + " --overlay " + dir.File("hdp-run") +
                                 " -o " + dir.File("o.html"));
  ASSERT_EQ(overlaid.exit_code, 0) << overlaid.out;
  EXPECT_EQ(BrowserVerdict(dir.File("o.html"), dir), "report-ok 10 charts");
}

TEST(ReportBrowserTest, AnInceptionReportLoadsInChromiumWithEveryChartDrawn) {
  TempDir dir;
  Outcome o = RunDevplace("report --graph inception_v3 --cluster k80x2 -o " + dir.File("r.html"));
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_EQ(BrowserVerdict(dir.File("r.html"), dir), "report-ok 6 charts");
}

// The self-check catches what it is there for: a script error, a chart
// with nothing drawn, a chart missing.
TEST(ReportBrowserTest, TheSelfCheckReportsBrokenPages) {
  TempDir dir;
  Outcome o = RunDevplace("report --graph tiny --cluster k80x2 --methods single_gpu,m_etf -o " + dir.File("r.html"));
  ASSERT_EQ(o.exit_code, 0) << o.out;
  const std::string html = ReadTextFile(dir.File("r.html"));

  std::string thrower = html;
  // After the script that catches errors, before the one that checks.
  thrower.insert(thrower.find("</script>", thrower.find("report-status")) + 9, "<script>undefinedFunction();</script>");
  dir.Write("thrower.html", thrower);
  EXPECT_EQ(BrowserVerdict(dir.File("thrower.html"), dir).rfind("report-error: ", 0), 0u);

  std::string empty = html;
  const size_t start = empty.find("<svg id=\"device-compute\""), end = empty.find("</svg>", start);
  std::string chart = empty.substr(start, end - start);
  chart = std::regex_replace(chart, std::regex(" class=\"mark\""), "");
  empty.replace(start, end - start, chart);
  dir.Write("empty.html", empty);
  EXPECT_EQ(BrowserVerdict(dir.File("empty.html"), dir), "report-error: empty chart device-compute");

  std::string missing = std::regex_replace(html, std::regex("data-charts=\"6\""), "data-charts=\"7\"");
  dir.Write("missing.html", missing);
  EXPECT_EQ(BrowserVerdict(dir.File("missing.html"), dir), "report-error: 6 charts, expected 7");
}

}  // namespace
}  // namespace devplace
