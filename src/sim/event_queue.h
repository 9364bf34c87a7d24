// The simulator's pending events, earliest first: a binary min-heap keyed by
// (time, sequence). It is std::push_heap/pop_heap's algorithm with the
// comparison written without branches and the hole moved instead of
// swapping: a step spends a quarter of its time here, mostly on mispredicted
// comparisons (perf, docs/simulator.md "Speed").
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

namespace devplace {

// kOpWoken / kHopWoken: an op or a host core's copy whose device's wake-up
// ends; it starts then (Device::wake_up_us).
enum class EventKind : uint8_t { kOpDone, kHopDone, kOpWoken, kHopWoken };

// 16 bytes, so that the heap moves two words per level, not three.
struct Event {
  // The time's bits: times are finite and never negative nor -0 (checked
  // where costs are made; a step starts at +0), and such doubles order as
  // their bits do, so (time, order) compares as one 128-bit integer.
  uint64_t time_bits;
  // The schedule order, then the kind and id, in one word: events at one
  // instant are all handled before anything starts at that instant, so
  // their order among themselves changes no result; the sequence keeps even
  // the trace's order reproducible. A run schedules far fewer than 2^32
  // events (a million-op graph, a few million) and ids (slots, transfers)
  // stay below 2^30.
  uint64_t order;

  static Event Make(double time_us, uint64_t sequence, EventKind kind, int32_t id) {
    return {std::bit_cast<uint64_t>(time_us), sequence << 32 | uint64_t{static_cast<uint8_t>(kind)} << 30 | static_cast<uint32_t>(id)};
  }
  double time_us() const { return std::bit_cast<double>(time_bits); }
  uint64_t sequence() const { return order >> 32; }
  EventKind kind() const { return static_cast<EventKind>((order >> 30) & 3); }
  int32_t id() const { return static_cast<int32_t>(order & 0x3fffffff); }
};

class EventQueue {
 public:
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const Event& top() const { return heap_.front(); }
  void clear() { heap_.clear(); }

  void Push(const Event& event) {
    heap_.push_back(event);
    size_t hole = heap_.size() - 1;
    while (hole > 0) {
      const size_t parent = (hole - 1) / 2;
      if (!Earlier(event, heap_[parent])) break;
      heap_[hole] = heap_[parent];
      hole = parent;
    }
    heap_[hole] = event;
  }

  // Removes and returns the earliest event. The queue must not be empty.
  Event Pop() {
    const Event earliest = heap_.front();
    const Event last = heap_.back();
    heap_.pop_back();
    const size_t n = heap_.size();
    if (n == 0) return earliest;
    size_t hole = 0;
    for (;;) {
      size_t child = 2 * hole + 1;
      if (child >= n) break;
      // The earlier child, without a branch on the comparison.
      const size_t right = child + 1 < n ? child + 1 : child;
      child = Earlier(heap_[right], heap_[child]) ? right : child;
      if (!Earlier(heap_[child], last)) break;
      heap_[hole] = heap_[child];
      hole = child;
    }
    heap_[hole] = last;
    return earliest;
  }

 private:
  // (time, order), as integers: fewer instructions than comparing doubles.
  static bool Earlier(const Event& a, const Event& b) {
    __extension__ using Key = unsigned __int128;
    return (Key{a.time_bits} << 64 | a.order) < (Key{b.time_bits} << 64 | b.order);
  }

  std::vector<Event> heap_;
};

}  // namespace devplace
