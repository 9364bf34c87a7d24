// Byte counts for people: "1.50 GiB", "512 B". Shared by the report and by
// messages from layers below it (the executor's out-of-memory line).
#pragma once

#include <cstdint>
#include <string>

namespace devplace {

std::string FormatBytes(int64_t bytes);

}  // namespace devplace
