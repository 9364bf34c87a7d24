#include "learned/training/one_line_errors.h"

#include <exception>

#include "util/error.h"

namespace devplace {

Error OneLineError(const std::string& context, const std::string& what) {
  return Error(context + ": " + ForMessage(what.substr(0, what.find('\n')), 300));
}

void RunWithOneLineErrors(const std::string& context, const std::function<void()>& body) {
  try {
    body();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw OneLineError(context, e.what());
  }
}

}  // namespace devplace
