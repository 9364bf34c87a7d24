// A test's way to kill a rank at an exact moment, with no sleep and no race:
// the environment variable `variable` set to RANK:N makes world rank RANK
// send itself SIGKILL when its count of some event (a slice measured, a
// share sent, a report to rank 0) reaches N, counted from 0. Unset, or not
// of that form, it does nothing.
#pragma once

#include <cstdint>

namespace devplace {

void KillPointForTests(const char* variable, int32_t rank, int64_t count);

}  // namespace devplace
