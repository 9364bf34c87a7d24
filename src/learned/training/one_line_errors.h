// torch's exceptions carry their C++ stack trace in what(): a command that
// let one through would print a page of frames. These run a body and turn
// what it throws into Error with one line, "<context>: <first line>", so a
// learned command fails as every other does. No torch in this header: the
// command line includes it. RunWithOneLineErrors is torch-free
// (dp_learned_base: the Python module's torch-free extension runs every
// method but the learned ones in it); RunWithOneLineTorchErrors is in
// dp_learned.
#pragma once

#include <functional>
#include <string>

#include "util/error.h"

namespace devplace {

// Error("<context>: <the first line of what>").
Error OneLineError(const std::string& context, const std::string& what);

// Runs `body`; Error passes through unchanged, any other std::exception
// (torch's, the file system's) becomes Error("<context>: <its first line>").
void RunWithOneLineErrors(const std::string& context, const std::function<void()>& body);

// As RunWithOneLineErrors, but only torch's c10::Error is turned into one
// line; every other exception passes through unchanged.
void RunWithOneLineTorchErrors(const std::string& context, const std::function<void()>& body);

}  // namespace devplace
