// SPDX-License-Identifier: BSD-3-Clause
// libconveyor_mpi under plain MPI calls. This program is linked with the library
// ahead of the MPI library, so every MPI_Allreduce, MPI_Reduce_scatter(_block),
// MPI_Allgather(v) and MPI_Reduce_local below (and the test harness's own) goes
// through it; results are checked against values computed here. Which calls were
// served and which passed through is checked from CONVEYOR_MPI_REPORT by the
// CTest entries next to this one (tests/CMakeLists.txt).
#include <gtest/gtest.h>
#include <mpi.h>

#include <complex>
#include <cstdint>
#include <thread>
#include <vector>

#include "mpi_test_util.hpp"

namespace {

using conveyor::testing::rank_of;
using conveyor::testing::size_of;

int sum_of_ranks(int p) { return p * (p - 1) / 2; }

TEST(Interpose, AllreduceEveryKindOfPredefinedType) {
  const int p = size_of(), r = rank_of();
  const int n = 1003;  // odd: no kernel sees only whole vectors
  std::vector<float> f(n), fout(n);
  for (int i = 0; i < n; ++i) f[i] = static_cast<float>(r) + 0.5f * static_cast<float>(i);
  ASSERT_EQ(MPI_Allreduce(f.data(), fout.data(), n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(fout[i], static_cast<float>(sum_of_ranks(p)) + 0.5f * static_cast<float>(p * i)) << i;

  std::vector<double> d(n);
  for (int i = 0; i < n; ++i) d[i] = (i % 2 ? 1.0 : -1.0) * r;
  MPI_Allreduce(MPI_IN_PLACE, d.data(), n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  for (int i = 0; i < n; ++i) ASSERT_EQ(d[i], i % 2 ? p - 1.0 : 0.0) << i;

  // 8-bit sums wrap around, as C and MPI define them (Open MPI 4.1's own op/avx
  // saturates them: this fails without the library there).
  std::vector<std::int8_t> small(n, 100), small_out(n);
  MPI_Allreduce(small.data(), small_out.data(), n, MPI_INT8_T, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(small_out[n - 1], static_cast<std::int8_t>(static_cast<std::uint8_t>(100 * p)));

  std::vector<std::uint16_t> bits(n, static_cast<std::uint16_t>(1u << (r % 16))), bits_out(n);
  MPI_Allreduce(bits.data(), bits_out.data(), n, MPI_UINT16_T, MPI_BOR, MPI_COMM_WORLD);
  unsigned want = 0;
  for (int q = 0; q < p; ++q) want |= 1u << (q % 16);
  EXPECT_EQ(bits_out[7], want);

  bool mine = r % 2 == 0, all = false, any = false;
  MPI_Allreduce(&mine, &all, 1, MPI_C_BOOL, MPI_LAND, MPI_COMM_WORLD);
  MPI_Allreduce(&mine, &any, 1, MPI_C_BOOL, MPI_LOR, MPI_COMM_WORLD);
  EXPECT_EQ(all, p == 1);
  EXPECT_TRUE(any);

  std::vector<std::complex<double>> z(5, {1.0 * r, -2.0}), z_out(5);
  MPI_Allreduce(z.data(), z_out.data(), 5, MPI_C_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(z_out[4], std::complex<double>(sum_of_ranks(p), -2.0 * p));

  // Types Conveyor does not reduce go to the MPI library, with the same result.
  long double ld = r, ld_out = 0;
  MPI_Allreduce(&ld, &ld_out, 1, MPI_LONG_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(ld_out, static_cast<long double>(sum_of_ranks(p)));

  int nothing = 7;
  EXPECT_EQ(MPI_Allreduce(MPI_IN_PLACE, &nothing, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
  EXPECT_EQ(nothing, 7);
}

// MPI asks ranks to agree on type signatures only: here even ranks pass 4-float
// contiguous items and odd ranks one strided vector of the same floats. Every rank
// must take the same path (served by Conveyor, the vector staged) or they would
// meet in different collectives.
TEST(Interpose, SameSignatureBuiltDifferentlyOnEachRank) {
  const int p = size_of(), r = rank_of();
  const int items = 257, floats = 4 * items;
  MPI_Datatype t;
  int count = 0;
  std::vector<float> send, recv;
  const int stride = r % 2 ? 2 : 1;
  if (r % 2 == 0) {
    MPI_Type_contiguous(4, MPI_FLOAT, &t);
    count = items;
  } else {
    MPI_Type_vector(floats, 1, 2, MPI_FLOAT, &t);
    count = 1;
  }
  MPI_Type_commit(&t);
  send.assign(static_cast<std::size_t>(floats * stride), -1.0f);
  recv.assign(send.size(), -7.0f);
  for (int j = 0; j < floats; ++j) send[static_cast<std::size_t>(j * stride)] = static_cast<float>(r + j);
  ASSERT_EQ(MPI_Allreduce(send.data(), recv.data(), count, t, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
  for (int j = 0; j < floats; ++j) {
    ASSERT_EQ(recv[static_cast<std::size_t>(j * stride)], static_cast<float>(sum_of_ranks(p) + p * j)) << j;
    if (stride == 2) {
      ASSERT_EQ(recv[static_cast<std::size_t>(j * 2 + 1)], -7.0f) << "gap " << j << " written";
    }
  }
  // In place, the same mix.
  ASSERT_EQ(MPI_Allreduce(MPI_IN_PLACE, send.data(), count, t, MPI_MAX, MPI_COMM_WORLD), MPI_SUCCESS);
  for (int j = 0; j < floats; ++j) ASSERT_EQ(send[static_cast<std::size_t>(j * stride)], static_cast<float>(p - 1 + j));
  MPI_Type_free(&t);
}

// MPI_BOTTOM with a type of absolute addresses over two separate arrays.
TEST(Interpose, AbsoluteAddressesFromMpiBottom) {
  const int p = size_of(), r = rank_of();
  std::vector<double> a(5, r), b(7, 2.0 * r);
  MPI_Aint where[2];
  MPI_Get_address(a.data(), &where[0]);
  MPI_Get_address(b.data(), &where[1]);
  const int lengths[2] = {5, 7};
  MPI_Datatype t;
  MPI_Type_create_hindexed(2, lengths, where, MPI_DOUBLE, &t);
  MPI_Type_commit(&t);
  ASSERT_EQ(MPI_Allreduce(MPI_IN_PLACE, MPI_BOTTOM, 1, t, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
  EXPECT_EQ(a[4], sum_of_ranks(p));
  EXPECT_EQ(b[6], 2.0 * sum_of_ranks(p));
  MPI_Type_free(&t);
}

// MPI's user function computes inout[i] = in[i] op inout[i]; here a op b = a.
void keep_first(void* in, void* inout, int* len, MPI_Datatype*) {
  auto* src = static_cast<int*>(in);
  auto* dst = static_cast<int*>(inout);
  for (int i = 0; i < *len; ++i) dst[i] = src[i];
}

TEST(Interpose, WhatConveyorDoesNotServeStillWorks) {
  const int p = size_of(), r = rank_of();
  struct {
    double value;
    int rank;
  } mine{r == p - 1 ? -1.0 : 1.0 * r, r}, lowest{};
  MPI_Allreduce(&mine, &lowest, 1, MPI_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD);
  EXPECT_EQ(lowest.rank, p - 1);

  // A non-commutative user op: ((x0 op x1) op x2) ... with a op b = a is x0.
  MPI_Op first;
  MPI_Op_create(keep_first, 0, &first);
  int x = 10 + r, out = 0;
  MPI_Allreduce(&x, &out, 1, MPI_INT, first, MPI_COMM_WORLD);
  EXPECT_EQ(out, 10);
  MPI_Op_free(&first);

  if (p < 2) return;  // an intercommunicator needs two groups
  MPI_Comm half, inter;
  MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &half);
  MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, r % 2 ? 0 : 1, 99, &inter);
  int v = r, other = 0, want = 0;
  MPI_Allreduce(&v, &other, 1, MPI_INT, MPI_SUM, inter);  // each group gets the other group's sum
  for (int q = 0; q < p; ++q) want += q % 2 != r % 2 ? q : 0;
  EXPECT_EQ(other, want);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&half);
}

TEST(Interpose, ReduceScatterBothForms) {
  const int p = size_of(), r = rank_of();
  const int k = 33;
  std::vector<int> send(static_cast<std::size_t>(p * k)), block(k);
  for (int i = 0; i < p * k; ++i) send[static_cast<std::size_t>(i)] = r + i;
  MPI_Reduce_scatter_block(send.data(), block.data(), k, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  for (int i = 0; i < k; ++i) ASSERT_EQ(block[i], sum_of_ranks(p) + p * (r * k + i));
  std::vector<int> inplace = send;
  MPI_Reduce_scatter_block(MPI_IN_PLACE, inplace.data(), k, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  for (int i = 0; i < k; ++i) ASSERT_EQ(inplace[i], sum_of_ranks(p) + p * (r * k + i));

  // Uneven counts, some zero.
  std::vector<int> counts(static_cast<std::size_t>(p));
  int total = 0, before = 0;
  for (int q = 0; q < p; ++q) {
    counts[static_cast<std::size_t>(q)] = (q * 5) % 3;
    if (q < r) before += counts[static_cast<std::size_t>(q)];
    total += counts[static_cast<std::size_t>(q)];
  }
  std::vector<double> in(static_cast<std::size_t>(total) + 1), out(3, -1.0);
  for (int i = 0; i < total; ++i) in[static_cast<std::size_t>(i)] = r * 1.0 + i;
  MPI_Reduce_scatter(in.data(), out.data(), counts.data(), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  for (int i = 0; i < counts[static_cast<std::size_t>(r)]; ++i) ASSERT_EQ(out[i], sum_of_ranks(p) + p * (before + i));
  MPI_Reduce_scatter(MPI_IN_PLACE, in.data(), counts.data(), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  for (int i = 0; i < counts[static_cast<std::size_t>(r)]; ++i) ASSERT_EQ(in[i], sum_of_ranks(p) + p * (before + i));
}

TEST(Interpose, GathersWithMixedTypesGapsAndInPlace) {
  const int p = size_of(), r = rank_of();
  // Send one 3-int item, receive 3 MPI_INT per rank.
  MPI_Datatype three;
  MPI_Type_contiguous(3, MPI_INT, &three);
  MPI_Type_commit(&three);
  const int mine[3] = {r, 10 * r, 100 * r};
  std::vector<int> all(static_cast<std::size_t>(3 * p), -1);
  MPI_Allgather(mine, 1, three, all.data(), 3, MPI_INT, MPI_COMM_WORLD);
  for (int q = 0; q < p; ++q) ASSERT_EQ(all[static_cast<std::size_t>(3 * q + 2)], 100 * q);
  std::vector<int> in_place(static_cast<std::size_t>(3 * p), -1);
  for (int i = 0; i < 3; ++i) in_place[static_cast<std::size_t>(3 * r + i)] = mine[i];
  MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, in_place.data(), 1, three, MPI_COMM_WORLD);
  EXPECT_EQ(in_place, all);
  MPI_Type_free(&three);

  // Allgatherv into blocks with gaps between them (staged: not consecutive), and
  // a receive type that is a strided vector.
  std::vector<int> counts(static_cast<std::size_t>(p)), displs(static_cast<std::size_t>(p));
  for (int q = 0; q < p; ++q) {
    counts[static_cast<std::size_t>(q)] = q % 3 + 1;
    displs[static_cast<std::size_t>(q)] = q * 6;
  }
  std::vector<double> send(static_cast<std::size_t>(counts[static_cast<std::size_t>(r)]), 0.5 + r);
  std::vector<double> gathered(static_cast<std::size_t>(6 * p), -9.0);
  MPI_Allgatherv(send.data(), counts[static_cast<std::size_t>(r)], MPI_DOUBLE, gathered.data(), counts.data(),
                 displs.data(), MPI_DOUBLE, MPI_COMM_WORLD);
  for (int q = 0; q < p; ++q) {
    for (int i = 0; i < 6; ++i) {
      const double want = i < counts[static_cast<std::size_t>(q)] ? 0.5 + q : -9.0;
      ASSERT_EQ(gathered[static_cast<std::size_t>(6 * q + i)], want) << q << " " << i;
    }
  }
  MPI_Datatype every_other;  // one double, then a hole: extent 2 doubles
  MPI_Type_create_resized(MPI_DOUBLE, 0, 2 * sizeof(double), &every_other);
  MPI_Type_commit(&every_other);
  std::vector<double> spread(static_cast<std::size_t>(12 * p), -9.0);
  for (int i = 0; i < counts[static_cast<std::size_t>(r)]; ++i)
    spread[static_cast<std::size_t>(2 * (6 * r + i))] = 0.5 + r;
  MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, spread.data(), counts.data(), displs.data(), every_other,
                 MPI_COMM_WORLD);
  for (int q = 0; q < p; ++q) {
    for (int i = 0; i < 6; ++i) {
      ASSERT_EQ(spread[static_cast<std::size_t>(2 * (6 * q + i))], gathered[static_cast<std::size_t>(6 * q + i)]);
      ASSERT_EQ(spread[static_cast<std::size_t>(2 * (6 * q + i) + 1)], -9.0);
    }
  }
  MPI_Type_free(&every_other);
}

TEST(Interpose, ReduceLocal) {
  std::vector<float> in(101, 1.5f), inout(101, 2.0f);
  MPI_Reduce_local(in.data(), inout.data(), 101, MPI_FLOAT, MPI_PROD);
  EXPECT_EQ(inout[100], 3.0f);
  // Non-contiguous: staged (Open MPI 4.1 alone would refuse it with MPI_ERR_OP).
  MPI_Datatype pairs;
  MPI_Type_vector(10, 1, 2, MPI_FLOAT, &pairs);
  MPI_Type_commit(&pairs);
  MPI_Reduce_local(in.data(), inout.data(), 1, pairs, MPI_SUM);
  EXPECT_EQ(inout[0], 4.5f);
  EXPECT_EQ(inout[1], 3.0f);
  MPI_Type_free(&pairs);
}

#if MPI_VERSION >= 4
// MPI-4's MPI_Count forms (MPICH 4; what mpi4py 4 calls).
TEST(Interpose, LargeCountForms) {
  const int p = size_of(), r = rank_of();
  std::vector<double> v(77, 1.0 + r), all(static_cast<std::size_t>(77 * p));
  ASSERT_EQ(MPI_Allreduce_c(MPI_IN_PLACE, v.data(), MPI_Count{77}, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
  EXPECT_EQ(v[76], p + sum_of_ranks(p));
  std::vector<double> mine(77, 1.0 * r);
  ASSERT_EQ(
      MPI_Allgather_c(mine.data(), MPI_Count{77}, MPI_DOUBLE, all.data(), MPI_Count{77}, MPI_DOUBLE, MPI_COMM_WORLD),
      MPI_SUCCESS);
  EXPECT_EQ(all.back(), p - 1.0);
  std::vector<double> block(77);
  ASSERT_EQ(MPI_Reduce_scatter_block_c(all.data(), block.data(), MPI_Count{77}, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
            MPI_SUCCESS);
  EXPECT_EQ(block[0], 1.0 * p * r);
  ASSERT_EQ(MPI_Reduce_local_c(mine.data(), v.data(), MPI_Count{77}, MPI_DOUBLE, MPI_SUM), MPI_SUCCESS);
  EXPECT_EQ(v[0], p + sum_of_ranks(p) + r);
}
#endif

// MPI_THREAD_MULTIPLE (this program's CTest entries ask for it): two threads, each
// on its own communicator, many allreduces of every size class at once.
TEST(Interpose, ThreadsOnTheirOwnCommunicators) {
  int provided = 0;
  MPI_Query_thread(&provided);
  ASSERT_EQ(provided, MPI_THREAD_MULTIPLE) << "run with CONVEYOR_TEST_THREAD_LEVEL=multiple";
  const int p = size_of();
  MPI_Comm comms[2];
  MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]);
  MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
  int wrong[2] = {0, 0};
  auto work = [&](int which) {
    for (int round = 0; round < 40; ++round) {
      const int n = 1 << (round % 16);
      std::vector<int> v(static_cast<std::size_t>(n), which + 1);
      MPI_Allreduce(MPI_IN_PLACE, v.data(), n, MPI_INT, MPI_SUM, comms[which]);
      if (v[static_cast<std::size_t>(n - 1)] != p * (which + 1)) ++wrong[which];
    }
  };
  std::thread other(work, 1);
  work(0);
  other.join();
  EXPECT_EQ(wrong[0], 0);
  EXPECT_EQ(wrong[1], 0);
  MPI_Comm_free(&comms[0]);
  MPI_Comm_free(&comms[1]);
}

}  // namespace
