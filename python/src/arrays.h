// What Python hands over, checked before C++ reads it: a sequence or numpy
// array of device indices becomes a placement (or a batch of them), and
// anything else (a float or object array, a wrong shape, an index outside
// the cluster) is an Error of one line naming the argument and the problem.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

namespace devplace::python {

// A 1-D array of `length` integer device indices, each in [0, num_devices).
std::vector<int32_t> DeviceIndices(pybind11::handle object, int64_t length, int32_t num_devices,
                                   const std::string& what);

// A 2-D [n, length] array of integer device indices, each in [0, num_devices).
std::vector<std::vector<int32_t>> DeviceIndexRows(pybind11::handle object, int64_t length, int32_t num_devices,
                                                  const std::string& what);

// The first line of a message (Python's errors can span several).
std::string FirstLine(const std::string& text);

}  // namespace devplace::python
