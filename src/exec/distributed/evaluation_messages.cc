#include "exec/distributed/evaluation_messages.h"

#include <cstring>

#include "util/error.h"

namespace devplace {
namespace {

constexpr int64_t kJobMagic = 0x31424f4a50445644;  // "DVDPJOB1"
constexpr size_t kHeaderWords = 13;

// A placement's device ids travel as one byte each where every id of the
// job fits one (clusters of up to 256 devices), else as int32s: the job is
// most of what crosses processes, and a quarter of the bytes is a quarter
// of the store's copying on both sides.
int64_t BytesPerDeviceId(const std::vector<Placement>& placements) {
  for (const Placement& p : placements) {
    for (int32_t d : p) {
      if (d < 0 || d > 255) return sizeof(int32_t);
    }
  }
  return 1;
}

class Writer {
 public:
  template <typename T>
  void Add(T value) {
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &value, sizeof(T));
  }
  void AddInts(const int32_t* values, size_t count) {
    const size_t at = bytes_.size();
    bytes_.resize(at + count * sizeof(int32_t));
    if (count > 0) std::memcpy(bytes_.data() + at, values, count * sizeof(int32_t));
  }
  void AddBytes(const int32_t* values, size_t count) {
    const size_t at = bytes_.size();
    bytes_.resize(at + count);
    for (size_t i = 0; i < count; ++i) bytes_[at + i] = static_cast<char>(static_cast<uint8_t>(values[i]));
  }
  std::string Take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  template <typename T>
  T Next() {
    T value;
    Need(sizeof(T));
    std::memcpy(&value, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  void NextInts(int32_t* values, size_t count) {
    Need(count * sizeof(int32_t));
    if (count > 0) std::memcpy(values, bytes_.data() + at_, count * sizeof(int32_t));
    at_ += count * sizeof(int32_t);
  }
  void NextBytes(int32_t* values, size_t count) {
    Need(count);
    for (size_t i = 0; i < count; ++i) values[i] = static_cast<uint8_t>(bytes_[at_ + i]);
    at_ += count;
  }
  size_t left() const { return bytes_.size() - at_; }

 private:
  void Need(size_t n) const {
    if (bytes_.size() - at_ < n) throw Error("distributed run: a message ended early (" + std::to_string(bytes_.size()) + " bytes)");
  }
  const std::string& bytes_;
  size_t at_ = 0;
};

}  // namespace

std::string EncodeJob(const EvaluationJob& job) {
  const int64_t num_ops = job.placements.empty() ? 0 : static_cast<int64_t>(job.placements[0].size());
  Writer out;
  out.Add<int64_t>(kJobMagic);
  out.Add<int64_t>(static_cast<int64_t>(job.kind));
  out.Add<int64_t>(job.batch);
  out.Add<int64_t>(job.stream);
  out.Add<int64_t>(job.first_sample);
  out.Add<int64_t>(static_cast<int64_t>(job.placements.size()));
  out.Add<int64_t>(num_ops);
  out.Add<int64_t>(job.options.workers);
  out.Add<int64_t>(job.options.measure_steps);
  out.Add<int64_t>(job.options.measure_overflow ? 1 : 0);
  out.Add<int64_t>(static_cast<int64_t>(job.options.seed));
  out.Add<int64_t>(job.options.cache_bytes);
  const int64_t id_bytes = BytesPerDeviceId(job.placements);
  out.Add<int64_t>(id_bytes);
  out.Add<double>(job.options.noise.jitter);
  out.Add<double>(job.options.noise.failure_probability);
  for (const Placement& p : job.placements) {
    if (static_cast<int64_t>(p.size()) != num_ops) throw Error("internal: placements of a batch differ in length");
    if (id_bytes == 1) {
      out.AddBytes(p.data(), p.size());
    } else {
      out.AddInts(p.data(), p.size());
    }
  }
  return out.Take();
}

EvaluationJob DecodeJob(const std::string& bytes) {
  Reader in(bytes);
  int64_t header[kHeaderWords];
  for (int64_t& word : header) word = in.Next<int64_t>();
  if (header[0] != kJobMagic || header[1] < 1 || header[1] > 4 || header[5] < 0 || header[6] < 0 ||
      (header[12] != 1 && header[12] != static_cast<int64_t>(sizeof(int32_t)))) {
    throw Error("distributed run: a message to a worker is not a job (another devplace build?)");
  }
  EvaluationJob job;
  job.kind = static_cast<JobKind>(header[1]);
  job.batch = header[2];
  job.stream = static_cast<int32_t>(header[3]);
  job.first_sample = static_cast<int32_t>(header[4]);
  job.options.workers = static_cast<int32_t>(header[7]);
  job.options.measure_steps = static_cast<int32_t>(header[8]);
  job.options.measure_overflow = header[9] != 0;
  job.options.seed = static_cast<uint64_t>(header[10]);
  job.options.cache_bytes = header[11];
  job.options.noise.jitter = in.Next<double>();
  job.options.noise.failure_probability = in.Next<double>();
  const size_t count = static_cast<size_t>(header[5]), num_ops = static_cast<size_t>(header[6]);
  const size_t id_bytes = static_cast<size_t>(header[12]);
  if (num_ops > 0 && count > in.left() / num_ops) throw Error("distributed run: a job's placements have the wrong size");
  if (in.left() != count * num_ops * id_bytes) throw Error("distributed run: a job's placements have the wrong size");
  job.placements.assign(count, Placement(num_ops));
  for (Placement& p : job.placements) {
    if (id_bytes == 1) {
      in.NextBytes(p.data(), num_ops);
    } else {
      in.NextInts(p.data(), num_ops);
    }
  }
  return job;
}

std::string EncodeOutcomes(const std::vector<Outcome>& outcomes) {
  Writer out;
  for (const Outcome& o : outcomes) {
    out.Add<double>(o.ok ? 1.0 : 0.0);
    out.Add<double>(o.step_time_s);
    out.Add<double>(o.memory_overflow);
  }
  return out.Take();
}

std::vector<Outcome> DecodeOutcomes(const std::string& bytes, size_t count) {
  if (bytes.size() != count * 3 * sizeof(double)) {
    throw Error("distributed run: an answer holds " + std::to_string(bytes.size()) + " bytes, not " +
                std::to_string(count) + " outcomes");
  }
  Reader in(bytes);
  std::vector<Outcome> outcomes(count);
  for (Outcome& o : outcomes) {
    o.ok = in.Next<double>() != 0;
    o.step_time_s = in.Next<double>();
    o.memory_overflow = in.Next<double>();
  }
  return outcomes;
}

std::string ByeKey(int32_t worker) { return "bye/" + std::to_string(worker); }

std::string JobKey(int32_t worker, int64_t n) { return "job/" + std::to_string(worker) + "/" + std::to_string(n); }
std::string ResultKey(int32_t worker, int64_t n) { return "result/" + std::to_string(worker) + "/" + std::to_string(n); }

}  // namespace devplace
