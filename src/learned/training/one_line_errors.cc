#include "learned/training/one_line_errors.h"

#include <c10/util/Exception.h>

#include <exception>

#include "util/error.h"

namespace devplace {
namespace {

[[noreturn]] void ThrowOneLine(const std::string& context, const std::string& what) {
  throw Error(context + ": " + ForMessage(what.substr(0, what.find('\n')), 300));
}

}  // namespace

void RunWithOneLineErrors(const std::string& context, const std::function<void()>& body) {
  try {
    body();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    ThrowOneLine(context, e.what());
  }
}

void RunWithOneLineTorchErrors(const std::string& context, const std::function<void()>& body) {
  try {
    body();
  } catch (const c10::Error& e) {
    ThrowOneLine(context, e.what_without_backtrace());
  }
}

}  // namespace devplace
