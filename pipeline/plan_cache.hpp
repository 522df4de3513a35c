// Plans of one kernel for the image shapes a run meets, built on first use and reused; at
// most `capacity` kept (the least recently used is evicted), so that a directory of photos
// of many sizes does not pile up one plan (and its device buffers) per size.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <tuple>
#include <vector>

#include "conv/plan.hpp"

namespace gpuconv::pipeline {

class plan_cache {
 public:
  static constexpr std::size_t capacity = 8;

  // kernel: kh x kw, as it will be applied (already normalised if asked).
  plan_cache(std::vector<float> kernel, int kh, int kw, const conv::plan_options& options)
      : kernel_(std::move(kernel)), kh_(kh), kw_(kw), options_(options) {}

  // The plan for planes x h x w with `constant` as the outside value of a constant border.
  conv::plan& get(long long h, long long w, int planes, float constant) {
    std::uint32_t bits;
    std::memcpy(&bits, &constant, sizeof bits);
    const auto key = std::make_tuple(h, w, planes, bits);
    auto it = plans_.find(key);
    if (it == plans_.end()) {
      if (plans_.size() >= capacity)
        plans_.erase(std::min_element(plans_.begin(), plans_.end(), [](const auto& a, const auto& b) {
          return a.second.last_use < b.second.last_use;
        }));
      conv::plan_options o = options_;
      o.semantics.constant_value = constant;
      it = plans_.emplace(key, entry{conv::plan(h, w, planes, kernel_.data(), kh_, kw_, o), 0}).first;
    }
    it->second.last_use = ++uses_;
    return it->second.plan;
  }

  std::size_t size() const { return plans_.size(); }
  int kh() const { return kh_; }
  int kw() const { return kw_; }
  const conv::plan_options& options() const { return options_; }

 private:
  struct entry {
    conv::plan plan;
    std::uint64_t last_use;
  };
  std::vector<float> kernel_;
  int kh_, kw_;
  conv::plan_options options_;
  std::map<std::tuple<long long, long long, int, std::uint32_t>, entry> plans_;
  std::uint64_t uses_ = 0;
};

}  // namespace gpuconv::pipeline
