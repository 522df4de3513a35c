// The queue between a batch's stages (src/bounded_queue.hpp): bounded, drained before a close
// ends its consumers, and a consumer waiting for a fuller batch never returns empty while the
// queue is open - even when another consumer takes the items during its wait.
#include <catch2/catch_test_macros.hpp>

#include <atomic>
#include <chrono>
#include <thread>
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
  CHECK(q.pop_up_to(8, 1000ms) == std::vector<int>{8, 9});
  CHECK(q.pop_up_to(8, 1000ms).empty());
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
