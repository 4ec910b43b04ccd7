// SPDX-License-Identifier: BSD-3-Clause
// conveyor::mpi_op inside the MPI library's own collectives, for every supported
// (op, dtype) pair. Inputs are chosen so every reduction order gives the same bits
// (integers; small integers for float sums; powers of two for float products;
// Gaussian integers for complex), so results are checked exactly on every rank;
// logaddexp, whose rounding depends on the order, within its tolerance per rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <random>
#include <vector>

#include "reference.hpp"
#include "conveyor/mpi.hpp"
#include "conveyor/reduce.hpp"

namespace conveyor {
namespace {

using testing::ref_apply;
using testing::same_value;
using testing::visit_dtype;

int rank_of(MPI_Comm c = MPI_COMM_WORLD) {
  int r;
  MPI_Comm_rank(c, &r);
  return r;
}
int size_of(MPI_Comm c = MPI_COMM_WORLD) {
  int s;
  MPI_Comm_size(c, &s);
  return s;
}

// Element i of rank r's contribution, such that any order of reduction is exact.
template <class T>
T exact_input(op o, int r, std::size_t i) {
  testing::splitmix64 rng((static_cast<std::uint64_t>(r) << 40) ^ i);
  if constexpr (std::is_integral_v<T>) {
    return testing::random_value<T>(rng);
  } else if constexpr (testing::is_complex<T>::value) {
    using F = typename T::value_type;
    if (o == op::sum) return T(F(int(rng() % 17) - 8), F(int(rng() % 17) - 8));
    static const T units[] = {T(1, 0), T(-1, 0), T(0, 1), T(0, -1), T(1, 1), T(1, -1)};
    return units[rng() % 6];
  } else {
    float v;
    if (o == op::sum) {
      v = float(int(rng() % 17) - 8);
    } else if (o == op::prod) {
      static const float pow2[] = {-2.0f, -1.0f, -0.5f, 0.5f, 1.0f, 2.0f};
      v = pow2[rng() % 6];
    } else {  // min/max/logaddexp: anything, NaN and signed zeros included
      return testing::random_value<T>(rng);
    }
    return T(v);
  }
}

template <class T>
std::vector<T> contribution(op o, int r, std::size_t n) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = exact_input<T>(o, r, i);
  return v;
}

template <class T>
std::vector<T> expected(op o, int nranks, std::size_t n) {
  std::vector<T> acc = contribution<T>(o, 0, n);
  for (int r = 1; r < nranks; ++r) {
    const auto c = contribution<T>(o, r, n);
    for (std::size_t i = 0; i < n; ++i) acc[i] = ref_apply(o, c[i], acc[i]);
  }
  return acc;
}

// Bitwise (NaN matches NaN), except that complex products compare by value: the
// sign of a zero real/imaginary part depends on the order MPI combines ranks in.
template <class T>
bool matches(T got, T want, op o, int steps) {
  if constexpr (testing::is_complex<T>::value) {
    return (got == want) || same_value(got, want);
  } else {
    return testing::same_result(o, got, want, steps);
  }
}

// got == want element by element; for logaddexp within `steps` combinations' rounding.
template <class T>
::testing::AssertionResult all_same(const std::vector<T>& got, const std::vector<T>& want, op o = op::sum,
                                    int steps = 1) {
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!matches(got[i], want[i], o, steps)) {
      return ::testing::AssertionFailure() << "element " << i << " of " << want.size();
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(MpiOp, AllreduceEveryPair) {
  const int P = size_of();
  for (dtype t : testing::all_dtypes()) {
    for (op o : testing::all_ops()) {
      if (!supports(o, t)) continue;
      const MPI_Op mop = mpi_op(o, t);
      const MPI_Datatype mdt = mpi_datatype(t);
      visit_dtype(t, [&](auto tg) {
        using T = typename decltype(tg)::type;
        for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1000}}) {
          const auto mine = contribution<T>(o, rank_of(), n);
          std::vector<T> out(n);
          ASSERT_EQ(MPI_Allreduce(mine.data(), out.data(), static_cast<int>(n), mdt, mop, MPI_COMM_WORLD), MPI_SUCCESS);
          EXPECT_TRUE(all_same(out, expected<T>(o, P, n), o, P)) << op_name(o) << "/" << dtype_name(t) << " n=" << n;
        }
      });
    }
  }
}

TEST(MpiOp, InPlaceLargeAndOtherCollectives) {
  const int P = size_of(), r = rank_of();
  const MPI_Op sum_f32 = mpi_op(op::sum, dtype::float32);
  // In place, large (above any eager/segment threshold).
  const std::size_t n = (std::size_t{1} << 20) + 3;
  auto buf = contribution<float>(op::sum, r, n);
  ASSERT_EQ(MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(n), MPI_FLOAT, sum_f32, MPI_COMM_WORLD),
            MPI_SUCCESS);
  EXPECT_TRUE(all_same(buf, expected<float>(op::sum, P, n)));

  // Reduce to the last rank.
  const std::size_t m = 333;
  auto mine = contribution<std::int16_t>(op::prod, r, m);
  std::vector<std::int16_t> root_out(m);
  ASSERT_EQ(MPI_Reduce(mine.data(), root_out.data(), static_cast<int>(m), MPI_INT16_T, mpi_op(op::prod, dtype::int16),
                       P - 1, MPI_COMM_WORLD),
            MPI_SUCCESS);
  if (r == P - 1) {
    EXPECT_TRUE(all_same(root_out, expected<std::int16_t>(op::prod, P, m)));
  }

  // Reduce-scatter: block r of the full result.
  const std::size_t block = 129;
  auto full_in = contribution<double>(op::max, r, block * P);
  std::vector<double> part(block);
  ASSERT_EQ(MPI_Reduce_scatter_block(full_in.data(), part.data(), static_cast<int>(block), MPI_DOUBLE,
                                     mpi_op(op::max, dtype::float64), MPI_COMM_WORLD),
            MPI_SUCCESS);
  const auto full_want = expected<double>(op::max, P, block * P);
  EXPECT_TRUE(all_same(part, std::vector<double>(full_want.begin() + r * block, full_want.begin() + (r + 1) * block)));
}

// A derived datatype of 3 contiguous elements is reduced element by element.
TEST(MpiOp, DerivedContiguousDatatype) {
  const int P = size_of();
  MPI_Datatype triple;
  MPI_Type_contiguous(3, mpi_datatype(dtype::bfloat16), &triple);
  MPI_Type_commit(&triple);
  const std::size_t n = 3 * 101;
  const auto mine = contribution<bfloat16>(op::sum, rank_of(), n);
  std::vector<bfloat16> out(n);
  ASSERT_EQ(MPI_Allreduce(mine.data(), out.data(), 101, triple, mpi_op(op::sum, dtype::bfloat16), MPI_COMM_WORLD),
            MPI_SUCCESS);
  EXPECT_TRUE(all_same(out, expected<bfloat16>(op::sum, P, n)));
  MPI_Type_free(&triple);
}

TEST(MpiOp, HandlesAreSharedAndDatatypesHaveTheRightSize) {
  EXPECT_EQ(mpi_op(op::sum, dtype::float32), mpi_op(op::sum, dtype::float32));
  EXPECT_NE(mpi_op(op::sum, dtype::float32), mpi_op(op::sum, dtype::float64));
  for (dtype t : testing::all_dtypes()) {
    int size = 0;
    MPI_Type_size(mpi_datatype(t), &size);
    EXPECT_EQ(static_cast<std::size_t>(size), dtype_size(t)) << dtype_name(t);
  }
  EXPECT_EQ(mpi_builtin_op(op::bxor), MPI_BXOR);
  EXPECT_THROW(mpi_builtin_op(op::logaddexp), error);  // MPI has none
  int commute = 0;
  MPI_Op_commutative(mpi_op(op::min, dtype::int8), &commute);
  EXPECT_EQ(commute, 1);
}

TEST(MpiOp, UnsupportedPairThrowsOnEveryRank) {
  try {
    mpi_op(op::band, dtype::float64);
    ADD_FAILURE() << "no exception";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::unsupported);
  }
  EXPECT_THROW(mpi_op(op::max, dtype::complex64), error);
}

}  // namespace
}  // namespace conveyor
