// The queue between a batch's stages (src/bounded_queue.hpp): bounded, drained before a close
// ends its consumers, and a consumer waiting for a fuller batch never returns empty while the
// queue is open - even when another consumer takes the items during its wait.
#include <catch2/catch_test_macros.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <type_traits>
#include <vector>

#include "bounded_queue.hpp"

using namespace gpuconv::app;
using namespace std::chrono_literals;

TEST_CASE("bounded queue: two consumers waiting for a full batch, one item - the other keeps waiting", "[app][queue]") {
  bounded_queue<int> q(16);
  std::atomic<int> returned{0}, empty_before_close{0}, items{0};
  std::atomic<bool> closed{false};
  auto consumer = [&] {
    for (;;) {
      const std::vector<int> batch = q.pop_up_to(8, 100ms);
      if (batch.empty()) {
        if (!closed) ++empty_before_close;  // an open queue never hands out an empty batch
        return;
      }
      items += int(batch.size());
      ++returned;
    }
  };
  std::thread a(consumer), b(consumer);
  std::this_thread::sleep_for(50ms);  // both waiting
  q.push(1);                          // both wake; one takes it after the patience, the other must wait on
  std::this_thread::sleep_for(400ms);
  CHECK(returned == 1);
  CHECK(items == 1);
  for (int k = 0; k < 3; ++k) q.push(k);
  std::this_thread::sleep_for(400ms);
  CHECK(items == 4);
  closed = true;
  q.close();
  a.join();
  b.join();
  CHECK(empty_before_close == 0);
}

TEST_CASE("bounded queue: a full batch without waiting out the patience; drained before close ends", "[app][queue]") {
  bounded_queue<int> q(32);
  for (int k = 0; k < 10; ++k) q.push(k);
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<int> first = q.pop_up_to(8, 1000ms);
  CHECK(std::chrono::steady_clock::now() - t0 < 500ms);
  CHECK(first == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  q.close();
  bounded_queue<int>::pop_timing timing;
  CHECK(q.pop_up_to(8, 1000ms, &timing) == std::vector<int>{8, 9});
  CHECK(q.pop_up_to(8, 1000ms, &timing).empty());
  CHECK(timing.takes == 1);  // the call that took items; the closed, drained one not
  CHECK(timing.taken == 2);
  CHECK(timing.found == 2);
  CHECK(timing.lock >= 0);
  CHECK(timing.patience < 0.5);  // closed: no wait for a full batch
  CHECK_FALSE(q.pop().has_value());
}

TEST_CASE("bounded queue: a producer waits while it is full", "[app][queue]") {
  bounded_queue<int> q(2);
  q.push(1);
  q.push(2);
  std::atomic<bool> pushed{false};
  std::thread producer([&] {
    q.push(3);
    pushed = true;
  });
  std::this_thread::sleep_for(100ms);
  CHECK_FALSE(pushed);
  CHECK(q.size() == 2);
  CHECK(q.pop() == 1);
  producer.join();
  CHECK(pushed);
  CHECK(q.pop_up_to(8) == std::vector<int>{2, 3});
}

TEST_CASE("bounded queue: many producers and consumers, every item delivered once, none left waiting", "[app][queue]") {
  constexpr int producers = 8, per_producer = 2000, capacity = 10;
  bounded_queue<int> batches(capacity), singles(capacity);
  std::atomic<long long> sum_batches{0}, sum_singles{0};
  std::atomic<int> count_batches{0}, count_singles{0}, empty_batches{0};
  std::atomic<bool> closing{false};
  std::vector<std::thread> threads;
  for (int c = 0; c < 3; ++c)  // as the GPU decode stages: batches of up to 8, 1 ms patience
    threads.emplace_back([&] {
      for (std::vector<int> b; !(b = batches.pop_up_to(8, 1ms)).empty();) {
        for (int v : b) sum_batches += v;
        count_batches += int(b.size());
      }
      if (!closing) ++empty_batches;
    });
  for (int c = 0; c < 16; ++c)  // as the writers: one at a time
    threads.emplace_back([&] {
      while (auto v = singles.pop()) {
        sum_singles += *v;
        ++count_singles;
      }
    });
  std::vector<std::thread> feeding;
  for (int p = 0; p < producers; ++p)
    feeding.emplace_back([&, p] {
      for (int k = 1; k <= per_producer; ++k) {
        batches.push(p * per_producer + k);
        singles.push(p * per_producer + k);
      }
    });
  for (auto& t : feeding) t.join();
  closing = true;
  batches.close();
  singles.close();
  for (auto& t : threads) t.join();
  const long long n = producers * per_producer, total = n * (n + 1) / 2;
  CHECK(count_batches == n);
  CHECK(sum_batches == total);
  CHECK(count_singles == n);
  CHECK(sum_singles == total);
  CHECK(empty_batches == 0);
}

namespace {
// An item whose move may throw (as cv::Mat's): a growing vector would copy it.
struct counted {
  static inline std::atomic<int> copies{0};
  int value = 0;
  explicit counted(int v) : value(v) {}
  counted(const counted& o) : value(o.value) { ++copies; }
  counted(counted&& o) : value(o.value) {}  // not noexcept
  counted& operator=(const counted& o) {
    value = o.value;
    ++copies;
    return *this;
  }
  counted& operator=(counted&& o) {
    value = o.value;
    return *this;
  }
};
}  // namespace

TEST_CASE("bounded queue: a batch is taken without copying its items", "[app][queue]") {
  static_assert(!std::is_nothrow_move_constructible_v<counted>);
  bounded_queue<counted> q(16);
  for (int k = 0; k < 12; ++k) q.push(counted(k));
  counted::copies = 0;
  const auto batch = q.pop_up_to(8, 10ms);
  REQUIRE(batch.size() == 8);
  CHECK(batch.back().value == 7);
  CHECK(counted::copies == 0);
  CHECK(q.pop_up_to(8).size() == 4);
  CHECK(counted::copies == 0);
}

TEST_CASE("bounded queue: a byte budget lets small items queue past the count, never large ones", "[app][queue]") {
  bounded_queue<int> q(2, 1000);
  for (int k = 0; k < 10; ++k) q.push(k, 100);  // 10 x 100 bytes: within the budget, past the count
  CHECK(q.size() == 10);
  std::atomic<bool> pushed{false};
  std::thread producer([&] {
    q.push(10, 100);  // 1100 bytes and 11 items: over both
    pushed = true;
  });
  std::this_thread::sleep_for(100ms);
  CHECK_FALSE(pushed);
  CHECK(q.pop() == 0);  // 900 bytes again: room for it
  producer.join();
  CHECK(q.size() == 10);
  CHECK(q.pop_up_to(16).size() == 10);  // empty, budget all free

  // large items: the count alone bounds them (each over the budget's room once one is queued)
  q.push(100, 800);
  q.push(101, 800);  // the second: under the count
  std::atomic<bool> third{false};
  std::thread big([&] {
    q.push(102, 800);
    third = true;
  });
  std::this_thread::sleep_for(100ms);
  CHECK_FALSE(third);
  CHECK(q.size() == 2);
  CHECK(q.pop() == 100);  // one item and 800 bytes: under the count again
  big.join();
  CHECK(third);
  CHECK(q.pop_up_to(4) == std::vector<int>{101, 102});
}
