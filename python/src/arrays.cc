#include "arrays.h"

#include <pybind11/numpy.h>

#include "util/error.h"

namespace py = pybind11;

namespace devplace::python {
namespace {

std::string ShapeText(const py::array& array) {
  std::string text = "(";
  for (py::ssize_t i = 0; i < array.ndim(); ++i) text += (i ? ", " : "") + std::to_string(array.shape(i));
  return text + (array.ndim() == 1 ? ",)" : ")");
}

// `object` as a C-ordered int64 array of `ndim` dimensions; Error unless it
// is an array (or nested sequence) of integers.
py::array_t<int64_t, py::array::c_style> IntegerArray(py::handle object, int ndim, const std::string& what) {
  py::array array;
  try {
    array = py::module_::import("numpy").attr("asarray")(object);
  } catch (py::error_already_set& e) {
    throw Error(what + ": not an array of device indices (" + FirstLine(e.what()) + ")");
  }
  const char kind = array.dtype().kind();
  if (kind != 'i' && kind != 'u') {
    throw Error(what + ": dtype " + std::string(py::str(array.dtype())) +
                "; device indices are integers (numpy int32 or int64)");
  }
  if (array.ndim() != ndim) {
    throw Error(what + ": shape " + ShapeText(array) + ", expected " + std::to_string(ndim) + " dimension" +
                (ndim == 1 ? "" : "s"));
  }
  // uint64 beyond int64's range wraps negative here, and is refused below.
  return py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(array);
}

// The message only: the caller tests the range itself, so that a valid
// entry costs a comparison, not the index's text (building it for every
// entry made run_batch 0.70x of the C++ batch API on a 10,000-op graph).
[[noreturn]] void ThrowDeviceOutOfRange(int64_t device, int32_t num_devices, const std::string& what,
                                        const std::string& index) {
  throw Error(what + index + ": device " + std::to_string(device) + " is out of range: the cluster has devices 0.." +
              std::to_string(num_devices - 1));
}

bool InRange(int64_t device, int32_t num_devices) { return device >= 0 && device < num_devices; }

}  // namespace

std::string FirstLine(const std::string& text) {
  const size_t end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end);
}

std::vector<int32_t> DeviceIndices(py::handle object, int64_t length, int32_t num_devices, const std::string& what) {
  auto array = IntegerArray(object, 1, what);
  if (array.shape(0) != length) {
    throw Error(what + ": " + std::to_string(array.shape(0)) + " entries, expected " + std::to_string(length));
  }
  std::vector<int32_t> devices(static_cast<size_t>(length));
  const int64_t* data = array.data();
  for (int64_t i = 0; i < length; ++i) {
    if (!InRange(data[i], num_devices)) ThrowDeviceOutOfRange(data[i], num_devices, what, "[" + std::to_string(i) + "]");
    devices[i] = static_cast<int32_t>(data[i]);
  }
  return devices;
}

std::vector<std::vector<int32_t>> DeviceIndexRows(py::handle object, int64_t length, int32_t num_devices,
                                                  const std::string& what) {
  auto array = IntegerArray(object, 2, what);
  if (array.shape(1) != length) {
    throw Error(what + ": shape " + ShapeText(array) + ", expected (n, " + std::to_string(length) + ")");
  }
  const int64_t rows = array.shape(0);
  std::vector<std::vector<int32_t>> placements(static_cast<size_t>(rows), std::vector<int32_t>(length));
  const int64_t* data = array.data();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < length; ++i) {
      const int64_t device = data[r * length + i];
      if (!InRange(device, num_devices)) {
        ThrowDeviceOutOfRange(device, num_devices, what, "[" + std::to_string(r) + ", " + std::to_string(i) + "]");
      }
      placements[r][i] = static_cast<int32_t>(device);
    }
  }
  return placements;
}

}  // namespace devplace::python
