// Running the devplace program from a test: its exit code and output, and
// the check that a bad input gave one clean error line.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>

namespace devplace::testing {

struct Outcome {
  int exit_code;
  std::string out;  // stdout and stderr together
};

// Runs `command` through the shell, stderr folded into stdout.
inline Outcome RunCommand(const std::string& command) {
  Outcome outcome{-1, ""};
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return outcome;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) outcome.out.append(buffer.data(), n);
  int status = ::pclose(pipe);
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return outcome;
}

inline Outcome RunDevplace(const std::string& args) { return RunCommand(std::string(DEVPLACE_BINARY) + " " + args); }

// A bad input must give one line naming the problem and a non-zero exit.
inline void ExpectCleanError(const Outcome& o, const std::string& must_mention) {
  EXPECT_NE(o.exit_code, 0) << o.out;
  EXPECT_EQ(o.out.rfind("devplace: error: ", 0), 0u) << o.out;
  EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 1) << "not one line: " << o.out;
  EXPECT_NE(o.out.find(must_mention), std::string::npos) << o.out;
}

}  // namespace devplace::testing
