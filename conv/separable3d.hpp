// plan3d's separable method, for a rank-1 kernel k(l, i, j) = a[l] b[i] c[j] (method.hpp:
// factor_rank1_3d; gaussian3d and any product of 1D kernels): three passes of 1D taps, one
// per axis, Kw + Kh + Kd multiply-adds a voxel instead of the direct sum's Kd Kh Kw or the FFT
// tiles' padded transforms.
//
//   t1(z, y, x) = sum_j c[j] in_ext(z, y, x + ox - j)       z < D,     y < H,     x < out_w
//   t2(z, y, x) = sum_i b[i] t1_ext(z, y + oy - i, x)       z < D,     y < out_h
//   out(z, y, x) = sum_l a[l] t2_ext(z + oz - l, y, x)      z < out_d
//
// Each pass extends its input along its own axis by the boundary rule (border_index): for
// every rule but zero/constant that is the 3D formula's in_ext, whose index maps are per axis.
// Under zero/constant, in_ext is the outside value o wherever any axis falls outside; a
// row, slice or column of o's filtered by the passes before is o * sum(c) after the first pass
// and o * sum(c) * sum(b) after the second, which is what the later passes take outside.
// Float sums over the taps in order, as the other methods; narrow voxels are rounded (ties
// to even) and saturated on the last pass's store.
//
// Memory: two float intermediates of the volume (t1: D x H x out_w, t2: D x out_h x out_w per
// volume). The CUDA backend runs the whole batch at once when they fit the memory cap, else
// bands of output slices, each from a slab of Kd - 1 more extended input slices
// (backend3d.hpp's make_band), on host and on device buffers alike.
#pragma once
#include <memory>

#include "backend3d.hpp"
#include "method.hpp"

namespace gpuconv::conv {

// The outside values of the three passes' inputs (o, o * sum(c), o * sum(c) * sum(b)), o =
// outside_value3d.
struct separable3d_outside {
  float rows, columns, slices;
};
inline separable3d_outside separable3d_outside_values(const problem3d& p, const rank1_3d_factors& f, pixel px) {
  const double o = outside_value3d(p.options.semantics, px);
  double sc = 0, sb = 0;
  for (float v : f.row) sc += v;
  for (float v : f.column) sb += v;
  return {float(o), float(o * sc), float(o * sc * sb)};
}

std::unique_ptr<plan3d::impl> make_cpu3d_separable(problem3d p, rank1_3d_factors f);
std::unique_ptr<plan3d::impl> make_cuda3d_separable(problem3d p, rank1_3d_factors f);

}  // namespace gpuconv::conv
