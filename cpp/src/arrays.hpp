// Strided row-major views used by every kernel: a [rows, cols] block with leading
// dimension ld, and a time sequence of such blocks.
#pragma once

#include <Eigen/Core>

#include "rnngraph/problem.hpp"

namespace rnngraph {

template <class S>
using ArrayRM = Eigen::Array<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class S>
using Block = Eigen::Map<ArrayRM<S>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <class S>
using ConstBlock = Eigen::Map<const ArrayRM<S>, Eigen::Unaligned, Eigen::OuterStride<>>;

template <class S>
inline Block<S> block(S* p, Index rows, Index cols, Index ld) {
  return Block<S>(p, rows, cols, Eigen::OuterStride<>(ld));
}
template <class S>
inline ConstBlock<S> cblock(const S* p, Index rows, Index cols, Index ld) {
  return ConstBlock<S>(p, rows, cols, Eigen::OuterStride<>(ld));
}

// A [T, N, ·] tensor seen as one [N, cols] block per timestep: step t starts at
// base + t * step, rows are ld apart. Used for a direction's slice of a
// bidirectional tensor (base offset by d·H, ld = D·H) as well as for scratch.
template <class S>
struct Seq {
  S* base = nullptr;
  Index step = 0;
  Index ld = 0;
  S* at(Index t) const { return base + t * step; }
};

template <class S>
inline Seq<const S> as_const(const Seq<S>& s) {
  return Seq<const S>{s.base, s.step, s.ld};
}

}  // namespace rnngraph
