// SPDX-License-Identifier: BSD-3-Clause
// libconveyor_mpi's MPI_Alltoall, MPI_Alltoallv and MPI_Alltoallw, linked ahead of
// the MPI library. The oracle is the MPI library's reading of the datatypes: every
// case runs once through the interposed MPI_ entry point and once as MPI_Pack of
// each part, an exchange of the packed bytes and MPI_Unpack (not PMPI_Alltoallw:
// Open MPI 4.1.4's moves nothing on a one-process communicator), into receive
// buffers filled with the same sentinel, and the bytes must be equal everywhere
// (received data, and the gaps no type touches).
// The report (tests/CMakeLists.txt) checks that the calls were served.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>
#include <thread>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <set>
#include <string_view>
#include <vector>

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstddef>

#include "conveyor/alltoall.hpp"
#include "conveyor/conveyor.h"
#include "conveyor/node_memory.hpp"
#include "mpi_test_util.hpp"

namespace {

// The kernel refusing cross-memory attach on one rank, as a container's seccomp
// profile does: before main, the rank named by CONVEYOR_TEST_REFUSE_ATTACH_RANK
// (matched against the launcher's rank variable) installs a filter that fails
// process_vm_readv with EPERM in its own process. Conveyor's probe must then send
// every rank to packages; without that fallback this rank's reads fail.
const bool g_refusing = [] {
  const char* which = std::getenv("CONVEYOR_TEST_REFUSE_ATTACH_RANK");
  const char* mine = nullptr;
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    if (!mine) mine = std::getenv(name);
  }
  if (!which || !mine || std::string(which) != mine) return false;
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
    std::abort();
  return true;
}();

using conveyor::testing::rank_of;
using conveyor::testing::size_of;

std::vector<unsigned char> pattern(std::size_t n, int salt) {
  std::vector<unsigned char> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((salt * 131 + i * 7 + i / 251) & 0xff);
  return v;
}

// One Alltoallw case: the arguments of this rank.
struct case_w {
  std::size_t send_bytes = 0, recv_bytes = 0;
  std::vector<int> scounts, sdispls, rcounts, rdispls;
  std::vector<MPI_Datatype> stypes, rtypes;
};

// What MPI_Alltoallw must do, by MPI's own pack and unpack of every part.
void reference_alltoallw(const void* send, const int* sc, const int* sd, const MPI_Datatype* st, void* recv,
                         const int* rc, const int* rd, const MPI_Datatype* rt, MPI_Comm comm) {
  const int P = size_of(comm);
  const bool in_place = send == MPI_IN_PLACE;
  if (in_place) send = recv, sc = rc, sd = rd, st = rt;
  std::vector<int> sbytes(P), rbytes(P), soff(P + 1, 0), roff(P + 1, 0);
  for (int q = 0; q < P; ++q) {
    int ss = 0, rs = 0;
    if (sc[q]) MPI_Type_size(st[q], &ss);
    if (rc[q]) MPI_Type_size(rt[q], &rs);
    sbytes[q] = sc[q] * ss, rbytes[q] = rc[q] * rs;
    soff[q + 1] = soff[q] + sbytes[q], roff[q + 1] = roff[q] + rbytes[q];
  }
  std::vector<char> packed(static_cast<std::size_t>(soff[P]) + 1), got(static_cast<std::size_t>(roff[P]) + 1);
  for (int q = 0; q < P; ++q) {
    int pos = 0;
    if (sc[q]) {
      MPI_Pack(static_cast<const char*>(send) + sd[q], sc[q], st[q], packed.data() + soff[q], sbytes[q], &pos,
               MPI_COMM_SELF);
    }
  }
  PMPI_Alltoallv(packed.data(), sbytes.data(), soff.data(), MPI_BYTE, got.data(), rbytes.data(), roff.data(), MPI_BYTE,
                 comm);
  for (int q = 0; q < P; ++q) {
    int pos = 0;
    if (rc[q])
      MPI_Unpack(got.data() + roff[q], rbytes[q], &pos, static_cast<char*>(recv) + rd[q], rc[q], rt[q], MPI_COMM_SELF);
  }
}

// Runs `c` through MPI_Alltoallw and the reference (in place: the receive side
// only) and expects the same bytes.
void expect_as_mpi(const case_w& c, MPI_Comm comm, bool in_place = false) {
  const int r = rank_of(comm);
  const std::vector<unsigned char> send = pattern(c.send_bytes, r + 1);
  std::vector<unsigned char> got = pattern(c.recv_bytes, 1000 + r), want = got;
  if (in_place) {
    got = want = pattern(c.recv_bytes, r + 7);
    ASSERT_EQ(MPI_Alltoallw(MPI_IN_PLACE, nullptr, nullptr, nullptr, got.data(), c.rcounts.data(), c.rdispls.data(),
                            c.rtypes.data(), comm),
              MPI_SUCCESS);
    reference_alltoallw(MPI_IN_PLACE, nullptr, nullptr, nullptr, want.data(), c.rcounts.data(), c.rdispls.data(),
                        c.rtypes.data(), comm);
  } else {
    ASSERT_EQ(MPI_Alltoallw(send.data(), c.scounts.data(), c.sdispls.data(), c.stypes.data(), got.data(),
                            c.rcounts.data(), c.rdispls.data(), c.rtypes.data(), comm),
              MPI_SUCCESS);
    reference_alltoallw(send.data(), c.scounts.data(), c.sdispls.data(), c.stypes.data(), want.data(), c.rcounts.data(),
                        c.rdispls.data(), c.rtypes.data(), comm);
  }
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "rank " << r << " byte " << i;
}

// Every peer gets `items` of `type` from consecutive places `stride` bytes apart,
// on both sides.
case_w uniform(MPI_Comm comm, MPI_Datatype type, int items, int stride, std::size_t span) {
  const int P = size_of(comm);
  case_w c;
  c.send_bytes = c.recv_bytes = static_cast<std::size_t>(P) * static_cast<std::size_t>(stride) + span;
  for (int q = 0; q < P; ++q) {
    c.scounts.push_back(items), c.rcounts.push_back(items);
    c.sdispls.push_back(q * stride), c.rdispls.push_back(q * stride);
    c.stypes.push_back(type), c.rtypes.push_back(type);
  }
  return c;
}

MPI_Datatype committed(MPI_Datatype t) {
  MPI_Type_commit(&t);
  return t;
}

// mpi4py-fft's slab transpose of an n^3 array of `base` (esize bytes): a local
// (n/P, n, n) array sends its (n/P, n/P, n) column blocks, received as the n/P-row
// blocks of a (n, n/P, n) array; subarray types in `order`, committed.
case_w slab_case(int n, int order, MPI_Datatype base, std::size_t esize) {
  const int P = size_of(), m = n / P;
  case_w c;
  c.send_bytes = c.recv_bytes = static_cast<std::size_t>(m) * n * n * esize;
  for (int q = 0; q < P; ++q) {
    int size_a[3] = {m, n, n}, sub[3] = {m, m, n}, start_a[3] = {0, q * m, 0};
    int size_b[3] = {n, m, n}, start_b[3] = {q * m, 0, 0};
    MPI_Datatype a, b;
    MPI_Type_create_subarray(3, size_a, sub, start_a, order, base, &a);
    MPI_Type_create_subarray(3, size_b, sub, start_b, order, base, &b);
    c.stypes.push_back(committed(a)), c.rtypes.push_back(committed(b));
    c.scounts.push_back(1), c.rcounts.push_back(1), c.sdispls.push_back(0), c.rdispls.push_back(0);
  }
  return c;
}

void free_types(case_w& c) {
  for (std::size_t q = 0; q < c.stypes.size(); ++q) MPI_Type_free(&c.stypes[q]), MPI_Type_free(&c.rtypes[q]);
}

// A duplicate of the world on which this rank's sends follow `rule`
// (CONVEYOR_ALLTOALL_COPY: auto, attach or slots; read at a communicator's first
// all-to-all), unless the run set the copy path itself (the packed variants).
MPI_Comm comm_with_rule(
    const std::string& rule, const std::function<MPI_Comm()>& make = [] {
      MPI_Comm c;
      MPI_Comm_dup(MPI_COMM_WORLD, &c);
      return c;
    }) {
  const char* was = std::getenv("CONVEYOR_ALLTOALL_COPY");
  const std::string before = was ? was : "";
  const bool mine = before.empty() || before == "auto";
  if (mine) setenv("CONVEYOR_ALLTOALL_COPY", rule.c_str(), 1);
  MPI_Comm comm = make();
  (void)conveyor::alltoall_copy_path(comm);  // the setting read now, on every rank
  if (mine && before.empty()) unsetenv("CONVEYOR_ALLTOALL_COPY");
  if (mine && !before.empty()) setenv("CONVEYOR_ALLTOALL_COPY", before.c_str(), 1);
  return comm;
}

// The shared slots' size at P ranks (redistribute/alltoall_shared.cpp).
std::int64_t slot_bytes(int P) {
  return std::clamp<std::int64_t>((std::int64_t{8} << 20) / (std::int64_t{P} * P), 32 << 10, 512 << 10);
}

// Whether the ranks of `comm` share the slots (one node, 2-16 ranks, not
// CONVEYOR_ALLTOALL_COPY=packed): where senders choose their ways.
bool senders_choose(MPI_Comm comm) {
  const int P = size_of(comm);
  return P > 1 && P <= 16 && conveyor::alltoall_nodes(comm) == 1 &&
         conveyor::alltoall_copy_path(comm).rfind("packed: CONVEYOR_ALLTOALL_COPY", 0) != 0;
}

// Whether alltoallw_auto measures its candidates on `comm` (every rank's ways
// left to it, measuring on), and how many: on one node (senders_choose) the
// exchange and the library's call; across nodes the node-aware exchange too.
int measured_candidates(MPI_Comm comm) {
  const char* measure = std::getenv("CONVEYOR_ALLTOALL_MEASURE");
  const char* rule = std::getenv("CONVEYOR_ALLTOALL_COPY");
  if ((measure && std::string(measure) == "0") || (rule && !std::string(rule).empty() && std::string(rule) != "auto")) {
    return 0;
  }
  if (conveyor::alltoall_nodes(comm) > 1) return 3;
  return senders_choose(comm) ? 2 : 0;
}

TEST(Alltoall, ContiguousEveryCountAndInPlace) {
  const int P = size_of(), r = rank_of();
  // The sizes cross the shared slots' size (32-512 KiB by rank count) into cross-memory attach.
  for (int n : {0, 1, 7, 1000, 40000, 150000}) {
    std::vector<int> send(static_cast<std::size_t>(P * n)), got(send.size(), -1);
    for (int q = 0; q < P; ++q) {
      for (int i = 0; i < n; ++i) send[static_cast<std::size_t>(q * n + i)] = r * 1000003 + q * 1009 + i;
    }
    ASSERT_EQ(MPI_Alltoall(send.data(), n, MPI_INT, got.data(), n, MPI_INT, MPI_COMM_WORLD), MPI_SUCCESS);
    for (int q = 0; q < P; ++q) {
      for (int i = 0; i < n; ++i) ASSERT_EQ(got[static_cast<std::size_t>(q * n + i)], q * 1000003 + r * 1009 + i);
    }
    ASSERT_EQ(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, send.data(), n, MPI_INT, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_EQ(send, got) << n;
  }
}

TEST(Alltoall, DifferentTypesOnTheTwoSides) {
  // Send: a vector of every other double; receive: contiguous doubles.
  const int P = size_of(), n = 37;
  MPI_Datatype every_other = committed([] {
    MPI_Datatype t;
    MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &t);
    return t;
  }());
  MPI_Datatype one;  // resized so that peers' parts sit n * 2 doubles apart
  MPI_Type_create_resized(every_other, 0, static_cast<MPI_Aint>(2 * n * sizeof(double)), &one);
  MPI_Type_commit(&one);
  std::vector<double> send(static_cast<std::size_t>(2 * n * P));
  std::iota(send.begin(), send.end(), 1000.0 * rank_of());
  std::vector<double> got(static_cast<std::size_t>(n * P), -1), want(got);
  ASSERT_EQ(MPI_Alltoall(send.data(), 1, one, got.data(), n, MPI_DOUBLE, MPI_COMM_WORLD), MPI_SUCCESS);
  // The reference is MPI's pack and unpack, not PMPI_Alltoall: Open MPI 4.1.4's own
  // MPI_Alltoall gets this case wrong from 16 ranks (zeros between the values,
  // then a crash in MPI_Type_free: it writes past the receive buffer).
  const int ext = static_cast<int>(2 * n * sizeof(double)), run = static_cast<int>(n * sizeof(double));
  std::vector<int> ones(P, 1), ns(P, n), sd(P), rd(P);
  for (int q = 0; q < P; ++q) sd[q] = q * ext, rd[q] = q * run;
  std::vector<MPI_Datatype> st(P, one), rt(P, MPI_DOUBLE);
  reference_alltoallw(send.data(), ones.data(), sd.data(), st.data(), want.data(), ns.data(), rd.data(), rt.data(),
                      MPI_COMM_WORLD);
  EXPECT_EQ(got, want);
  MPI_Type_free(&one);
  MPI_Type_free(&every_other);
}

TEST(Alltoall, VUnevenSparseAndInPlace) {
  const int P = size_of(), r = rank_of();
  // Rank r sends (r + q) % 3 * 5 ints to q (zero for some pairs: a sparse pattern),
  // with gaps between the peers' parts.
  std::vector<int> sc(P), sd(P), rc(P), rd(P);
  int st = 0, rt = 0;
  for (int q = 0; q < P; ++q) {
    sc[q] = (r + q) % 3 * 5, sd[q] = st, st += sc[q] + 3;
    rc[q] = (q + r) % 3 * 5, rd[q] = rt, rt += rc[q] + 2;
  }
  std::vector<long> send(static_cast<std::size_t>(st)), got(static_cast<std::size_t>(rt), -1), want(got);
  std::iota(send.begin(), send.end(), 100000L * r);
  ASSERT_EQ(MPI_Alltoallv(send.data(), sc.data(), sd.data(), MPI_LONG, got.data(), rc.data(), rd.data(), MPI_LONG,
                          MPI_COMM_WORLD),
            MPI_SUCCESS);
  ASSERT_EQ(PMPI_Alltoallv(send.data(), sc.data(), sd.data(), MPI_LONG, want.data(), rc.data(), rd.data(), MPI_LONG,
                           MPI_COMM_WORLD),
            MPI_SUCCESS);
  EXPECT_EQ(got, want);
  // In place: the receive side's counts both ways (symmetric here: (r+q)%3 both ways).
  std::vector<long> a(static_cast<std::size_t>(rt)), b;
  std::iota(a.begin(), a.end(), 7L * r);
  b = a;
  ASSERT_EQ(MPI_Alltoallv(MPI_IN_PLACE, nullptr, nullptr, MPI_DATATYPE_NULL, a.data(), rc.data(), rd.data(), MPI_LONG,
                          MPI_COMM_WORLD),
            MPI_SUCCESS);
  ASSERT_EQ(PMPI_Alltoallv(MPI_IN_PLACE, nullptr, nullptr, MPI_DATATYPE_NULL, b.data(), rc.data(), rd.data(), MPI_LONG,
                           MPI_COMM_WORLD),
            MPI_SUCCESS);
  EXPECT_EQ(a, b);
}

// mpi4py-fft's slab transpose: a local (n0/P, n1, n2) array sends its (n0/P, n1/P,
// n2) column blocks, received as (n0/P) row blocks of a (n0, n1/P, n2) array, with
// subarray types in both orders.
TEST(Alltoall, WSubarraySlabTransposeBothOrders) {
  const int P = size_of();
  for (int order : {MPI_ORDER_C, MPI_ORDER_FORTRAN}) {
    // The last: over 512 KiB a pair (cross-memory attach at every rank count),
    // smaller blocks from 9 ranks (above the slots' 32-128 KiB there, and 32 ranks
    // stay within memory).
    for (int n : {P * 3, P * 8, P * (P < 3 ? 32 : P <= 8 ? 24 : 12)}) {
      case_w c = slab_case(n, order, MPI_C_DOUBLE_COMPLEX, 16);
      expect_as_mpi(c, MPI_COMM_WORLD);
      free_types(c);
    }
  }
}

// An FFT's every step: the same slab types in 40 calls. Each type is decoded once
// (conveyor_interpose_report.alltoall_decoded counts 2P per rank), and every call
// still moves the right bytes.
TEST(Alltoall, WRepeatedTypesDecodedOnce) {
  case_w c = slab_case(4 * size_of(), MPI_ORDER_C, MPI_DOUBLE, 8);
  for (int i = 0; i < 40; ++i) expect_as_mpi(c, MPI_COMM_WORLD);
  free_types(c);
}

#if MPI_VERSION >= 4
// Types made by MPI-4's large-count constructors (what mpi4py 4 calls on MPICH):
// MPI_Type_get_contents_c returns their arguments in another array. Each is
// decoded, not staged through MPI's packing (the first Python run on MPICH staged
// every mpi4py-fft type, several times slower than decoded: docs/results.md), and
// moves as MPI moves it.
TEST(Alltoall, WLargeCountConstructorsDecoded) {
  const int P = size_of();
  std::vector<MPI_Datatype> types;
  MPI_Datatype t;
  MPI_Type_contiguous_c(5, MPI_INT, &t), types.push_back(t);
  MPI_Type_vector_c(3, 2, -4, MPI_FLOAT, &t), types.push_back(t);
  MPI_Type_create_hvector_c(4, 3, 20, MPI_SHORT, &t), types.push_back(t);
  MPI_Count bl[3] = {2, 0, 3}, dp[3] = {5, 1, 0}, hdp[3] = {40, 8, -16};
  MPI_Type_indexed_c(3, bl, dp, MPI_DOUBLE, &t), types.push_back(t);
  MPI_Type_create_hindexed_c(3, bl, hdp, MPI_INT, &t), types.push_back(t);
  MPI_Type_create_indexed_block_c(3, 2, dp, MPI_LONG, &t), types.push_back(t);
  MPI_Type_create_hindexed_block_c(3, 1, hdp, MPI_DOUBLE, &t), types.push_back(t);
  {
    MPI_Count sbl[3] = {1, 2, 1}, sdp[3] = {0, 8, 24};
    MPI_Datatype st[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
    MPI_Type_create_struct_c(3, sbl, sdp, st, &t), types.push_back(t);
  }
  {
    MPI_Datatype inner;
    MPI_Type_vector_c(2, 1, 3, MPI_INT, &inner);
    MPI_Type_create_resized_c(inner, -8, 40, &t), types.push_back(t);
    MPI_Type_free(&inner);
  }
  for (int order : {MPI_ORDER_C, MPI_ORDER_FORTRAN}) {
    MPI_Count sizes[3] = {4, 6, 5}, subs[3] = {2, 3, 5}, starts[3] = {1, 2, 0};
    MPI_Type_create_subarray_c(3, sizes, subs, starts, order, MPI_C_DOUBLE_COMPLEX, &t), types.push_back(t);
    MPI_Count gs[2] = {7, 9};
    int ds[2] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK}, da[2] = {2, MPI_DISTRIBUTE_DFLT_DARG}, ps[2] = {2, 2};
    MPI_Type_create_darray_c(4, 3, 2, gs, ds, da, ps, order, MPI_SHORT, &t), types.push_back(t);
  }
  for (std::size_t k = 0; k < types.size(); ++k) {
    MPI_Type_commit(&types[k]);
    SCOPED_TRACE(testing::Message() << "type #" << k);
    MPI_Aint lb = 0, extent = 0;
    MPI_Type_get_extent(types[k], &lb, &extent);
    const int items = 3, span = static_cast<int>(extent) * items + 256;
    case_w c = uniform(MPI_COMM_WORLD, types[k], items, span, 128);
    for (int& d : c.sdispls) d += 64;
    for (int& d : c.rdispls) d += 64;
    expect_as_mpi(c, MPI_COMM_WORLD);
    std::vector<conveyor::datatype_part> parts;
    for (int q = 0; q < P; ++q) parts.push_back({items, c.sdispls[static_cast<std::size_t>(q)], types[k]});
    std::vector<unsigned char> a(c.send_bytes), b(c.recv_bytes);
    const conveyor::alltoallw_report rep = conveyor::alltoallw(a.data(), parts, b.data(), parts, MPI_COMM_WORLD);
    EXPECT_EQ(rep.staged_parts, 0);
  }
  for (MPI_Datatype& x : types) MPI_Type_free(&x);
}
#endif

// MPI_Alltoall of a contiguous type is measured (alltoall_auto): a loop of one
// size runs its trials (alternating Conveyor's exchange and the library's own),
// then the faster; every call's result is checked, in place too, at sizes in the
// batched (under 32 KiB) and single-run trial classes.
TEST(Alltoall, MeasuredChoiceEveryCallRight) {
  const int P = size_of(), r = rank_of();
  for (int n : {16, 12000}) {
    const int calls =
        n < 1000 ? 150 : 60;  // up to 3 x 31 and 3 x 15 trials (3 candidates across nodes), then settled calls
    std::vector<std::int32_t> send(static_cast<std::size_t>(P * n)), got(send.size());
    for (int c = 0; c < calls; ++c) {
      for (int q = 0; q < P; ++q) {
        for (int i = 0; i < n; ++i) send[static_cast<std::size_t>(q * n + i)] = r * 1000003 + q * 1009 + i + c;
      }
      std::fill(got.begin(), got.end(), -1);
      const bool in_place = c % 3 == 2;
      if (in_place) {
        got = send;
        ASSERT_EQ(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got.data(), n, MPI_INT32_T, MPI_COMM_WORLD),
                  MPI_SUCCESS);
      } else {
        ASSERT_EQ(MPI_Alltoall(send.data(), n, MPI_INT32_T, got.data(), n, MPI_INT32_T, MPI_COMM_WORLD), MPI_SUCCESS);
      }
      for (int q = 0; q < P; ++q) {
        for (int i = 0; i < n; ++i) {
          ASSERT_EQ(got[static_cast<std::size_t>(q * n + i)], q * 1000003 + r * 1009 + i + c)
              << "call " << c << " n " << n;
        }
      }
    }
  }
}

// MPI_Alltoallv is measured per agreed class (alltoallw_auto's vote), and a class
// that went to the library runs later calls ahead of the vote
// (alltoallw_ahead): a loop whose sizes change while calls run ahead (one size,
// then two alternating, rank 0 sending more than the others, in place every
// fifth call) gets every call's result right on every rank and never hangs.
TEST(Alltoall, VMeasuredAndAheadEveryCallRight) {
  const int P = size_of(), r = rank_of();
  auto elements = [](int c, int from) {  // int32 items per pair in call c
    if (c < 100) return 24;
    if (c < 250) return c % 2 ? 24 : 3000 + (from == 0 ? 1000 : 0);
    return 3000;
  };
  std::vector<int> sc(static_cast<std::size_t>(P)), sd(sc.size()), rc(sc.size()), rd(sc.size());
  for (int c = 0; c < 300; ++c) {
    int so = 0, ro = 0;
    for (int q = 0; q < P; ++q) {
      const auto k = static_cast<std::size_t>(q);
      sc[k] = elements(c, r), sd[k] = so, so += sc[k];
      rc[k] = elements(c, q), rd[k] = ro, ro += rc[k];
    }
    const bool in_place = c % 5 == 4 && r != 0 && elements(c, 0) == elements(c, 1 % P);
    std::vector<std::int32_t> send(static_cast<std::size_t>(so)), got(static_cast<std::size_t>(ro), -1);
    for (int q = 0; q < P; ++q) {
      for (int i = 0; i < sc[static_cast<std::size_t>(q)]; ++i)
        send[static_cast<std::size_t>(sd[static_cast<std::size_t>(q)] + i)] = r * 1000003 + q * 1009 + i + c;
    }
    int all_in_place = in_place;  // in place needs every rank's counts equal: all or none
    MPI_Allreduce(MPI_IN_PLACE, &all_in_place, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all_in_place && sc == rc) {
      got = send;
      ASSERT_EQ(MPI_Alltoallv(MPI_IN_PLACE, nullptr, nullptr, MPI_DATATYPE_NULL, got.data(), rc.data(), rd.data(),
                              MPI_INT32_T, MPI_COMM_WORLD),
                MPI_SUCCESS);
    } else {
      ASSERT_EQ(MPI_Alltoallv(send.data(), sc.data(), sd.data(), MPI_INT32_T, got.data(), rc.data(), rd.data(),
                              MPI_INT32_T, MPI_COMM_WORLD),
                MPI_SUCCESS);
    }
    for (int q = 0; q < P; ++q) {
      for (int i = 0; i < rc[static_cast<std::size_t>(q)]; ++i) {
        ASSERT_EQ(got[static_cast<std::size_t>(rd[static_cast<std::size_t>(q)] + i)], q * 1000003 + r * 1009 + i + c)
            << "call " << c;
      }
    }
  }
}

// The node-aware exchange (alltoall_by_nodes) gives MPI_Alltoall's result at
// every size (none; one byte; blocks through the node's shared slots; blocks of
// 40 KB, read by cross-memory attach inside the node), in place too, each size
// twice (its maps kept, then rebuilt), on the world and on a subset of it, and
// sends exactly one message per ordered pair of nodes. The layout is the run's:
// tests/CMakeLists.txt emulates nodes with CONVEYOR_RANKS_PER_NODE (2 + 2 + 1 at
// 5 ranks, 3 + 1 at 4), scripts/test runs it on emulated clusters; on one node it
// is the pairwise exchange (no message between nodes).
// The byte at offset k of the part rank `from` sends rank `to`.
unsigned char value(int from, int to, std::int64_t k) {
  return static_cast<unsigned char>(from * 131 + to * 31 + k * 7 + 1);
}

// check(comm) on the world, then on a subset of it: ranks 0, 2, 3, 4 (rank 1 alone).
void on_world_and_a_subset(const std::function<void(MPI_Comm)>& check) {
  check(MPI_COMM_WORLD);
  MPI_Comm sub = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank_of() == 1, rank_of(), &sub);
  check(sub);
  MPI_Comm_free(&sub);
}

void check_by_nodes(MPI_Comm comm) {
  int P = 0, r = 0;
  MPI_Comm_size(comm, &P), MPI_Comm_rank(comm, &r);
  const int N = conveyor::alltoall_nodes(comm);
  for (int round = 0; round < 2; ++round) {
    for (std::int64_t b :
         {std::int64_t{0}, std::int64_t{1}, std::int64_t{24}, std::int64_t{4096}, std::int64_t{40000}}) {
      for (bool in_place : {false, true}) {
        const auto n = static_cast<std::size_t>(P * b);
        std::vector<unsigned char> send(n), got(n, 0xEE);
        for (std::size_t i = 0; i < n; ++i)
          send[i] = value(r, static_cast<int>(i / static_cast<std::size_t>(b)), static_cast<std::int64_t>(i) % b);
        conveyor::alltoallw_report rep;
        if (in_place) {
          got = send;
          rep = conveyor::alltoall_by_nodes(MPI_IN_PLACE, got.data(), b, comm);
        } else {
          rep = conveyor::alltoall_by_nodes(send.data(), got.data(), b, comm);
        }
        std::int64_t wrong = 0;
        for (std::size_t i = 0; i < n; ++i) {
          wrong +=
              got[i] != value(static_cast<int>(i / static_cast<std::size_t>(b)), r, static_cast<std::int64_t>(i) % b);
        }
        EXPECT_EQ(wrong, 0) << b << " bytes per peer, in place " << in_place << ", round " << round;
        int messages = b > 0 && N > 1 ? rep.send_peers : 0;
        MPI_Allreduce(MPI_IN_PLACE, &messages, 1, MPI_INT, MPI_SUM, comm);
        EXPECT_EQ(messages, b > 0 ? N * (N - 1) : 0) << b << " bytes per peer on " << N << " nodes";
      }
    }
  }
}

TEST(Alltoall, ByNodesAsPairwise) { on_world_and_a_subset(check_by_nodes); }

// Every algorithm of the family's table (conveyor::alltoall_algorithms(): what
// alltoall_auto times) run alone gives MPI_Alltoall's result at the sizes above,
// in place too, on the world and on a subset; the table keeps the library's
// call second (measured_choice's convention), names each once, and points every
// modeled row at an entry of predict_alltoall.
void check_every_algorithm(MPI_Comm comm) {
  int P = 0, r = 0;
  MPI_Comm_size(comm, &P), MPI_Comm_rank(comm, &r);
  for (const conveyor::alltoall_algorithm_info& a : conveyor::alltoall_algorithms()) {
    for (std::int64_t b : {std::int64_t{0}, std::int64_t{1}, std::int64_t{24}, std::int64_t{40000}}) {
      for (bool in_place : {false, true}) {
        const auto n = static_cast<std::size_t>(P * b);
        std::vector<unsigned char> send(n), got(n, 0xEE);
        for (std::size_t i = 0; i < n; ++i)
          send[i] = value(r, static_cast<int>(i / static_cast<std::size_t>(b)), static_cast<std::int64_t>(i) % b);
        if (in_place) got = send;
        a.run(in_place ? MPI_IN_PLACE : send.data(), got.data(), b, comm);
        std::int64_t wrong = 0;
        for (std::size_t i = 0; i < n; ++i) {
          wrong +=
              got[i] != value(static_cast<int>(i / static_cast<std::size_t>(b)), r, static_cast<std::int64_t>(i) % b);
        }
        EXPECT_EQ(wrong, 0) << a.name << ", " << b << " bytes per peer, in place " << in_place;
      }
    }
  }
}

TEST(Alltoall, EveryAlgorithmOfTheTable) {
  const auto& table = conveyor::alltoall_algorithms();
  ASSERT_GE(table.size(), 3u);
  EXPECT_EQ(table[1].name, "mpi");
  EXPECT_LT(table[1].predicted, 0);
  std::set<std::string_view> names;
  for (const auto& a : table) {
    EXPECT_TRUE(names.insert(a.name).second) << a.name;
    EXPECT_LT(a.predicted, 2) << a.name;  // (predict_alltoall's two entries)
    EXPECT_NE(a.run, nullptr) << a.name;
    EXPECT_NE(std::string(a.summary), "") << a.name;
  }
  on_world_and_a_subset(check_every_algorithm);
}

// alltoallw_by_nodes (parts of any size) gives alltoallw's result: pairs of
// unequal sizes, empty pairs and a node pair with nothing to move (no message
// for it), receive parts strided (every other byte), parts of 40 KB, in place
// (sizes symmetric), each layout twice, on the world and on a subset of it; one
// message per ordered pair of nodes that has bytes to move. Layouts as
// check_by_nodes's.
void check_w_by_nodes(MPI_Comm comm) {
  int P = 0, r = 0;
  MPI_Comm_size(comm, &P), MPI_Comm_rank(comm, &r);
  const int N = conveyor::alltoall_nodes(comm);
  for (int round = 0; round < 6; ++round) {
    const bool in_place = round % 3 == 2;
    // round 0, 3: mixed sizes with empty pairs; 1, 4: rank 0 sends nothing and
    // rank P-1 receives nothing, one pair 40 KB; 2, 5: in place, symmetric sizes.
    auto size = [&](int from, int to) -> std::int64_t {
      switch (round % 3) {
        case 0:
          return (from * 7 + to * 3) % 5 == 0 ? 0 : (from + 2 * to) % 4 * 37 + 1;
        case 1:
          if (from == 0 || to == P - 1) return 0;
          return from == 1 && to == 0 ? 40000 : (from * 5 + to) % 3 * 19;
        default:
          return (std::min(from, to) * 3 + std::max(from, to)) % 4 * 23 + (from == to ? 5 : 0);
      }
    };
    const bool strided = !in_place;
    std::vector<conveyor::byte_map> send_maps(static_cast<std::size_t>(P)), recv_maps(static_cast<std::size_t>(P));
    std::int64_t so = 0, ro = 0;
    for (int q = P - 1; q >= 0; --q) {  // send parts in reverse rank order
      const std::int64_t n = size(r, q);
      if (n) send_maps[static_cast<std::size_t>(q)] = {conveyor::byte_box{so, n, 0, {}, {}}};
      so += n;
    }
    for (int q = 0; q < P; ++q) {
      const std::int64_t n = size(q, r);
      if (n && strided) {
        conveyor::byte_box b{ro, 1, 1, {}, {}};
        b.count[0] = n, b.stride[0] = 2;
        recv_maps[static_cast<std::size_t>(q)] = {b};
        ro += 2 * n;
      } else if (n) {
        recv_maps[static_cast<std::size_t>(q)] = {conveyor::byte_box{ro, n, 0, {}, {}}};
        ro += n;
      }
    }
    std::vector<unsigned char> send(static_cast<std::size_t>(so)), got(static_cast<std::size_t>(ro), 0xEE);
    for (int q = 0; q < P; ++q) {
      for (const conveyor::byte_box& b : send_maps[static_cast<std::size_t>(q)]) {
        for (std::int64_t k = 0; k < b.run; ++k) send[static_cast<std::size_t>(b.offset + k)] = value(r, q, k);
      }
    }
    conveyor::alltoallw_report rep;
    if (in_place) {
      for (int q = 0; q < P; ++q) {  // the part for q where q's part will land
        for (const conveyor::byte_box& b : recv_maps[static_cast<std::size_t>(q)]) {
          for (std::int64_t k = 0; k < b.run; ++k) got[static_cast<std::size_t>(b.offset + k)] = value(r, q, k);
        }
      }
      rep = conveyor::alltoallw_by_nodes(MPI_IN_PLACE, recv_maps, got.data(), recv_maps, comm);
    } else {
      rep = conveyor::alltoallw_by_nodes(send.data(), send_maps, got.data(), recv_maps, comm);
    }
    std::int64_t wrong = 0;
    for (int q = 0; q < P; ++q) {
      const std::int64_t n = size(q, r);
      std::int64_t at = 0;
      for (const conveyor::byte_box& b : recv_maps[static_cast<std::size_t>(q)]) at = b.offset;
      for (std::int64_t k = 0; k < n; ++k) {
        wrong += got[static_cast<std::size_t>(at + (strided ? 2 * k : k))] != value(q, r, k);
        if (strided) wrong += got[static_cast<std::size_t>(at + 2 * k + 1)] != 0xEE;  // the gaps untouched
      }
    }
    EXPECT_EQ(wrong, 0) << "round " << round;
    // Messages between nodes: one per ordered node pair with bytes to move (at
    // most N (N - 1); exactly the rank pairs with bytes when each node has one rank).
    int mine = N > 1 ? rep.send_peers : 0;
    MPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_INT, MPI_SUM, comm);
    if (N == P) {  // one rank per node: the pairs are the ranks'
      int pairs = 0;
      for (int a = 0; a < P; ++a) {
        for (int b = 0; b < P; ++b) pairs += a != b && size(a, b) > 0;
      }
      EXPECT_EQ(mine, pairs) << "round " << round;
    } else if (N > 1) {
      EXPECT_LE(mine, N * (N - 1)) << "round " << round;
    }
  }
}

TEST(Alltoall, ByNodesAnySizesAsAlltoallw) { on_world_and_a_subset(check_w_by_nodes); }

// Counts that do not match (rank 0 expects one byte more from rank 1, on its
// node in every layout run here, and from rank P - 1, on another node where the
// ranks span several): a rank that finds it throws invalid_argument, rank 0
// among them, no rank waits for another, and the next call is right.
void check_w_by_nodes_mismatch(MPI_Comm comm) {
  const int P = size_of(comm), r = rank_of(comm);
  if (P < 2) return;
  const std::int64_t n = 64;
  auto maps = [&](bool receiving, bool mismatch) {
    std::vector<conveyor::byte_map> m(static_cast<std::size_t>(P));
    std::int64_t at = 0;
    for (int q = 0; q < P; ++q) {
      const std::int64_t b = n + (mismatch && receiving && r == 0 && (q == 1 || q == P - 1) ? 1 : 0);
      m[static_cast<std::size_t>(q)] = {conveyor::byte_box{at, b, 0, {}, {}}};
      at += b;
    }
    return m;
  };
  std::vector<unsigned char> send(static_cast<std::size_t>(P * n)), got(static_cast<std::size_t>(P * n + 2));
  for (int q = 0; q < P; ++q) {
    for (std::int64_t k = 0; k < n; ++k) send[static_cast<std::size_t>(q * n + k)] = value(r, q, k);
  }
  int threw = 0;
  try {
    conveyor::alltoallw_by_nodes(send.data(), maps(false, true), got.data(), maps(true, true), comm);
  } catch (const conveyor::error& e) {
    threw = 1;
    EXPECT_EQ(e.code(), conveyor::errc::invalid_argument) << e.what();
  }
  if (r == 0) {
    EXPECT_EQ(threw, 1) << "rank 0 expected bytes that never came";
  }
  std::fill(got.begin(), got.end(), 0);
  conveyor::alltoallw_by_nodes(send.data(), maps(false, false), got.data(), maps(true, false), comm);
  std::int64_t wrong = 0;
  for (int q = 0; q < P; ++q) {
    for (std::int64_t k = 0; k < n; ++k) wrong += got[static_cast<std::size_t>(q * n + k)] != value(q, r, k);
  }
  EXPECT_EQ(wrong, 0) << "the call after the mismatch";
}

TEST(Alltoall, ByNodesMismatchedCountsThrowNoHang) { on_world_and_a_subset(check_w_by_nodes_mismatch); }

// Every constructor, each on both sides against plain bytes on the other.
TEST(Alltoall, WEveryConstructorAsMpiReadsIt) {
  const int P = size_of();
  std::vector<MPI_Datatype> types;
  MPI_Datatype t;
  MPI_Type_contiguous(5, MPI_INT, &t), types.push_back(t);
  MPI_Type_vector(3, 2, -4, MPI_FLOAT, &t), types.push_back(t);  // negative stride
  MPI_Type_create_hvector(4, 3, 20, MPI_SHORT, &t), types.push_back(t);
  int bl[3] = {2, 0, 3}, dp[3] = {5, 1, 0};
  MPI_Type_indexed(3, bl, dp, MPI_DOUBLE, &t), types.push_back(t);
  MPI_Aint hdp[3] = {40, 8, -16};
  MPI_Type_create_hindexed(3, bl, hdp, MPI_INT, &t), types.push_back(t);
  MPI_Type_create_indexed_block(3, 2, dp, MPI_LONG, &t), types.push_back(t);
  MPI_Type_create_hindexed_block(3, 1, hdp, MPI_DOUBLE, &t), types.push_back(t);
  {
    int sbl[3] = {1, 2, 1};
    MPI_Aint sdp[3] = {0, 8, 24};
    MPI_Datatype st[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
    MPI_Type_create_struct(3, sbl, sdp, st, &t), types.push_back(t);  // several basic types
  }
  {
    MPI_Datatype inner;
    MPI_Type_vector(2, 1, 3, MPI_INT, &inner);
    MPI_Type_create_resized(inner, -8, 40, &t), types.push_back(t);  // negative lower bound
    MPI_Type_free(&inner);
  }
  MPI_Type_dup(MPI_DOUBLE, &t), types.push_back(t);
  {
    int sizes[2] = {6, 5}, subs[2] = {2, 3}, starts[2] = {1, 2};
    MPI_Datatype sub;
    MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_FORTRAN, MPI_FLOAT, &sub);
    MPI_Type_contiguous(2, sub, &t), types.push_back(t);  // a subarray repeated (extent of the array)
    MPI_Type_free(&sub);
  }
  for (int distrib : {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC}) {
    for (int order : {MPI_ORDER_C, MPI_ORDER_FORTRAN}) {
      int gs[2] = {7, 9}, ds[2] = {distrib, MPI_DISTRIBUTE_NONE},
          da[2] = {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG};
      int ps[2] = {3, 1};
      MPI_Type_create_darray(3, 1, 2, gs, ds, da, ps, order, MPI_INT, &t), types.push_back(t);
      const int first = distrib == MPI_DISTRIBUTE_CYCLIC ? 2 : MPI_DISTRIBUTE_DFLT_DARG;
      int ds2[2] = {distrib, distrib}, da2[2] = {first, MPI_DISTRIBUTE_DFLT_DARG}, ps2[2] = {2, 2};
      MPI_Type_create_darray(4, 3, 2, gs, ds2, da2, ps2, order, MPI_SHORT, &t), types.push_back(t);
    }
  }
  MPI_Type_create_f90_real(15, MPI_UNDEFINED, &t), types.push_back(t);  // not read: staged through MPI_Pack
  types.push_back(MPI_SHORT_INT);                                       // a named pair with padding: staged
  for (std::size_t k = 0; k < types.size(); ++k) {
    MPI_Datatype type = types[k];
    int ni, na, nd, combiner;
    MPI_Type_get_envelope(type, &ni, &na, &nd, &combiner);
    if (combiner != MPI_COMBINER_NAMED && combiner != MPI_COMBINER_F90_REAL) MPI_Type_commit(&types[k]);
    type = types[k];
    int size = 0;
    MPI_Aint lb = 0, extent = 0;
    MPI_Type_size(type, &size);
    MPI_Type_get_extent(type, &lb, &extent);
    const int items = 3;
    const int span = static_cast<int>(extent) * items + 256;
    for (int side = 0; side < 2; ++side) {
      case_w c;
      c.send_bytes = c.recv_bytes = static_cast<std::size_t>(P) * span + 128;
      for (int q = 0; q < P; ++q) {
        // The typed side starts 64 bytes in, so negative offsets stay inside.
        const int typed_at = q * span + 64, plain_at = q * span;
        (side ? c.scounts : c.rcounts).push_back(items);
        (side ? c.sdispls : c.rdispls).push_back(typed_at);
        (side ? c.stypes : c.rtypes).push_back(type);
        (side ? c.rcounts : c.scounts).push_back(size * items);
        (side ? c.rdispls : c.sdispls).push_back(plain_at);
        (side ? c.rtypes : c.stypes).push_back(MPI_BYTE);
      }
      SCOPED_TRACE(testing::Message() << "type #" << k << " side " << side);
      expect_as_mpi(c, MPI_COMM_WORLD);
    }
    // Typed on both sides, and in place.
    case_w c = uniform(MPI_COMM_WORLD, type, items, span, 128);
    for (int& d : c.sdispls) d += 64;
    for (int& d : c.rdispls) d += 64;
    expect_as_mpi(c, MPI_COMM_WORLD);
    expect_as_mpi(c, MPI_COMM_WORLD, true);
  }
  for (MPI_Datatype& type : types) {
    int ni, na, nd, combiner;
    MPI_Type_get_envelope(type, &ni, &na, &nd, &combiner);
    if (combiner != MPI_COMBINER_NAMED && combiner != MPI_COMBINER_F90_REAL) MPI_Type_free(&type);
  }
}

// mpi4py's testAlltoallwBottom: MPI_BOTTOM, each part a struct of one block at
// an absolute address; of a type read directly (int), and of types staged
// through MPI's packing (MPI_SHORT_INT has padding; long double's size may not
// fill its extent). MPICH's MPI_Pack refuses MPI_BOTTOM: the staging must not use it.
TEST(Alltoall, WBottomAbsoluteAddresses) {
  const int P = size_of(), r = rank_of(), n = 3;
  struct short_int {
    short s;
    int i;
  };
  std::vector<int> si(static_cast<std::size_t>(P * n)), ri(si.size(), -1);
  std::vector<short_int> ss(si.size()), rs(si.size(), short_int{-1, -1});
  std::vector<long double> sl(si.size()), rl(si.size(), -1);
  for (int k = 0; k < P * n; ++k) {
    const int v = r * 1000 + k;
    si[k] = v, ss[k] = {static_cast<short>(v % 30000), v}, sl[k] = v + 0.5L;
  }
  auto run = [&](void* sbase, void* rbase, MPI_Datatype t, std::size_t esize) {
    std::vector<MPI_Datatype> st(P), rt(P);
    std::vector<int> ones(P, 1), zeros(P, 0);
    for (int q = 0; q < P; ++q) {
      MPI_Aint sa = 0, ra = 0;
      MPI_Get_address(static_cast<char*>(sbase) + static_cast<std::size_t>(q * n) * esize, &sa);
      MPI_Get_address(static_cast<char*>(rbase) + static_cast<std::size_t>(q * n) * esize, &ra);
      int bl = n;
      MPI_Type_create_struct(1, &bl, &sa, &t, &st[q]);
      MPI_Type_create_struct(1, &bl, &ra, &t, &rt[q]);
      MPI_Type_commit(&st[q]), MPI_Type_commit(&rt[q]);
    }
    ASSERT_EQ(MPI_Alltoallw(MPI_BOTTOM, ones.data(), zeros.data(), st.data(), MPI_BOTTOM, ones.data(), zeros.data(),
                            rt.data(), MPI_COMM_WORLD),
              MPI_SUCCESS);
    for (int q = 0; q < P; ++q) MPI_Type_free(&st[q]), MPI_Type_free(&rt[q]);
  };
  run(si.data(), ri.data(), MPI_INT, sizeof(int));
  run(ss.data(), rs.data(), MPI_SHORT_INT, sizeof(short_int));
  run(sl.data(), rl.data(), MPI_LONG_DOUBLE, sizeof(long double));
  for (int q = 0; q < P; ++q) {
    for (int i = 0; i < n; ++i) {
      const int v = q * 1000 + r * n + i;
      const auto k = static_cast<std::size_t>(q * n + i);
      EXPECT_EQ(ri[k], v);
      EXPECT_EQ(rs[k].i, v);
      EXPECT_EQ(rs[k].s, v % 30000);
      EXPECT_EQ(rl[k], v + 0.5L);
    }
  }
}

// Types made and freed around every call (their handles reused by MPI), on a
// communicator of half the ranks, many small distinct calls.
TEST(Alltoall, WHandlesReusedOnASubcommunicator) {
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank_of() % 2, rank_of(), &half);
  for (int i = 0; i < 60; ++i) {
    MPI_Datatype t;
    if (i % 2) MPI_Type_vector(1 + i % 5, 1 + i % 3, 4, MPI_INT, &t);
    else MPI_Type_contiguous(1 + i % 7, MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
    MPI_Aint lb = 0, extent = 0;
    MPI_Type_get_extent(t, &lb, &extent);
    case_w c = uniform(half, t, 1 + i % 4, static_cast<int>(extent) * (1 + i % 4) + 8, 16);
    expect_as_mpi(c, half);
    MPI_Type_free(&t);
  }
  MPI_Comm_free(&half);
}

// mpi4py-fft's pencil transfer: the ranks as a P0 x P1 grid (P1 >= P0), each
// rank's (N/P0, N/P1, N) pencil turned into an (N/P0, N, N/P1) one on its row of
// the grid (MPI_Cart_sub: a communicator of P1 ranks, P0 of them at once): the
// send side's rows N/P1 elements long. N small (the shared slots) and large
// (from 32 KiB per pair), with each sender rule on the rows: through
// MPI_Alltoallw against the oracle, and through conveyor::alltoallw, whose
// report must show the way the rule gives large pairs where senders choose —
// attach: the short rows packed first for the reader; messages: one message of
// the caller's types.
TEST(Alltoall, WPencilOnTheRowsOfAGrid) {
  const int P = size_of();
  int d[2] = {0, 0}, periods[2] = {0, 0}, keep[2] = {0, 1};
  MPI_Dims_create(P, 2, d);
  int dims[2] = {d[1], d[0]};
  MPI_Comm grid;
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
  const int lcm = std::lcm(dims[0], dims[1]);
  for (const std::string rule : {"auto", "attach", "slots", "messages"}) {
    MPI_Comm row = comm_with_rule(rule, [&] {
      MPI_Comm c;
      MPI_Cart_sub(grid, keep, &c);
      return c;
    });
    for (const int N : {4 * lcm, 16 * lcm}) {
      const int m = N / dims[0], m1 = N / dims[1];
      case_w c;
      c.send_bytes = c.recv_bytes = static_cast<std::size_t>(m) * m1 * N * 16;
      std::vector<conveyor::datatype_part> sp, rp;
      for (int q = 0; q < dims[1]; ++q) {
        int size_a[3] = {m, m1, N}, sub[3] = {m, m1, m1}, start_a[3] = {0, 0, q * m1};
        int size_b[3] = {m, N, m1}, start_b[3] = {0, q * m1, 0};
        MPI_Datatype st, rt;
        MPI_Type_create_subarray(3, size_a, sub, start_a, MPI_ORDER_C, MPI_C_DOUBLE_COMPLEX, &st);
        MPI_Type_create_subarray(3, size_b, sub, start_b, MPI_ORDER_C, MPI_C_DOUBLE_COMPLEX, &rt);
        c.stypes.push_back(committed(st)), c.rtypes.push_back(committed(rt));
        c.scounts.push_back(1), c.rcounts.push_back(1), c.sdispls.push_back(0), c.rdispls.push_back(0);
        sp.push_back({1, 0, c.stypes.back()}), rp.push_back({1, 0, c.rtypes.back()});
      }
      expect_as_mpi(c, row);
      const std::vector<unsigned char> send = pattern(c.send_bytes, rank_of(row) + 1);
      std::vector<unsigned char> got(c.recv_bytes), want(c.recv_bytes);
      const conveyor::alltoallw_report rep = conveyor::alltoallw(send.data(), sp, got.data(), rp, row);
      reference_alltoallw(send.data(), c.scounts.data(), c.sdispls.data(), c.stypes.data(), want.data(),
                          c.rcounts.data(), c.rdispls.data(), c.rtypes.data(), row);
      EXPECT_EQ(got, want) << rule << " N " << N;
      const std::int64_t pair = static_cast<std::int64_t>(m) * m1 * m1 * 16;
      const int peers = dims[1] - 1;
      if (senders_choose(row) && pair >= 32 << 10) {  // where the rules differ
        const bool attach = conveyor::alltoall_copy_path(row) == "cross-memory attach";
        if (rule == "attach" && attach) {
          EXPECT_EQ(rep.packed_for_peers, peers) << N;
        }
        if (rule == "messages" || (rule == "slots" && pair >= slot_bytes(dims[1]))) {
          EXPECT_EQ(rep.typed_peers, peers) << rule << " N " << N;
        }
      }
      for (int q = 0; q < dims[1]; ++q) MPI_Type_free(&c.stypes[q]), MPI_Type_free(&c.rtypes[q]);
    }
    MPI_Comm_free(&row);
  }
  MPI_Comm_free(&grid);
}

// The same arguments call after call (counts, displacements, the type handle's
// value) while the type behind the handle changes: freed and made again with
// another layout of the same size (MPI hands the freed handle out again), so the
// last call's maps, kept for a repeated call, must not be reused. Each call
// against MPI's own packing; the handles seen reused are counted, so a library
// that never reuses them shows in the output.
TEST(Alltoall, WSameArgumentsAnotherTypeBehindTheHandle) {
  int reused = 0;
  for (const bool in_place : {false, true}) {
    MPI_Datatype previous = MPI_DATATYPE_NULL;
    for (int i = 0; i < 12; ++i) {
      MPI_Datatype t;
      if (i % 3 == 0) MPI_Type_contiguous(4, MPI_INT, &t);         // 16 bytes in a row
      else if (i % 3 == 1) MPI_Type_vector(4, 1, 2, MPI_INT, &t);  // every other int
      else MPI_Type_vector(2, 2, 3, MPI_INT, &t);                  // two pairs, a gap of one
      MPI_Type_commit(&t);
      reused += t == previous;
      previous = t;
      expect_as_mpi(uniform(MPI_COMM_WORLD, t, 2, 64, 64), MPI_COMM_WORLD, in_place);
      MPI_Type_free(&t);
    }
  }
  if (rank_of() == 0) std::printf("[ handles reused: %d of 22 ]\n", reused);
}

// Counts that do not match between ranks: the receiving rank gets an MPI error
// (its communicator's handler), never wrong data or a hang. Across nodes the call
// goes to the MPI library, where such a program is erroneous with no error
// required (Open MPI returns success): there, only that nothing hangs and the
// communicator works after.
TEST(Alltoall, MismatchedCountsAnErrorNotWrongData) {
  const int P = size_of(), r = rank_of();
  if (P < 2) GTEST_SKIP() << "needs two ranks";
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  // Rank 1 expects 4 ints from rank 0, which sends 2 (and everyone else agrees).
  std::vector<int> sc(P, 3), rc(P, 3), sd(P), rd(P);
  for (int q = 0; q < P; ++q) sd[q] = rd[q] = 8 * q;
  if (r == 0) sc[1] = 2;
  if (r == 1) rc[0] = 4;
  std::vector<int> send(8 * P, r), got(8 * P, -1);
  const int rc_code =
      MPI_Alltoallv(send.data(), sc.data(), sd.data(), MPI_INT, got.data(), rc.data(), rd.data(), MPI_INT, comm);
  const bool served = conveyor::alltoall_nodes(comm) == 1;
  if (r == 1 && served) {
    EXPECT_NE(rc_code, MPI_SUCCESS);
  } else if (r != 1) {
    EXPECT_EQ(rc_code, MPI_SUCCESS);
  }
  // The communicator still works.
  std::vector<int> ok_send(P, r), ok_got(P, -1);
  ASSERT_EQ(MPI_Alltoall(ok_send.data(), 1, MPI_INT, ok_got.data(), 1, MPI_INT, comm), MPI_SUCCESS);
  for (int q = 0; q < P; ++q) EXPECT_EQ(ok_got[q], q);
  MPI_Comm_free(&comm);
}

// conveyor::alltoallw with validate: a bad map list on one rank (each rank in
// turn), and counts that disagree between one pair, throw the same error on every
// rank; the communicator works after.
TEST(Alltoall, ValidatedErrorsOnEveryRank) {
  const int P = size_of(), r = rank_of();
  std::vector<int> a(static_cast<std::size_t>(4 * P), r), b(a.size(), -1);
  auto maps = [&](int ints_to_each) {
    std::vector<conveyor::byte_map> m(static_cast<std::size_t>(P));
    for (int q = 0; q < P; ++q)
      m[static_cast<std::size_t>(q)] = {conveyor::byte_box{q * 16, ints_to_each * 4, 0, {}, {}}};
    return m;
  };
  for (int bad = 0; bad < P; ++bad) {
    std::vector<conveyor::byte_map> send = maps(4), recv = maps(4);
    if (r == bad) send.push_back({});  // one map too many
    std::string what;
    try {
      conveyor::alltoallw(a.data(), send, b.data(), recv, MPI_COMM_WORLD, true);
    } catch (const conveyor::error& e) {
      what = e.what();
    }
    EXPECT_NE(what.find("rank " + std::to_string(bad)), std::string::npos) << what;
    EXPECT_NE(what.find("one map per rank"), std::string::npos) << what;
  }
  if (P >= 2) {
    // Rank 1 expects 4 ints from rank 0, which sends 2.
    std::vector<conveyor::byte_map> send = maps(4), recv = maps(4);
    if (r == 0) send[1][0].run = 8;
    if (r == 1) recv[0][0].run = 16;
    std::string what;
    try {
      conveyor::alltoallw(a.data(), send, b.data(), recv, MPI_COMM_WORLD, true);
    } catch (const conveyor::error& e) {
      what = e.what();
    }
    EXPECT_NE(what.find("rank 0 sent 8 bytes where this rank expects 16"), std::string::npos) << what;
  }
  if (P >= 2) {
    // Receive parts that overlap on one rank (each rank in turn): the parts from
    // ranks 0 and 1 share 4 bytes. Every rank gets the error, nothing moves.
    for (int bad = 0; bad < P; ++bad) {
      std::vector<conveyor::byte_map> recv = maps(4);
      if (r == bad) recv[1][0].offset = 12;
      std::string what;
      try {
        conveyor::alltoallw(a.data(), maps(4), b.data(), recv, MPI_COMM_WORLD, true);
      } catch (const conveyor::error& e) {
        what = e.what();
      }
      EXPECT_NE(what.find("rank " + std::to_string(bad)), std::string::npos) << what;
      EXPECT_NE(what.find("the receive parts of ranks 0 and 1 overlap at byte 12"), std::string::npos) << what;
    }
  }
  const conveyor::alltoallw_report rep =
      conveyor::alltoallw(a.data(), maps(4), b.data(), maps(4), MPI_COMM_WORLD, true);
  EXPECT_EQ(rep.self_bytes, 16);
  for (int q = 0; q < P; ++q) EXPECT_EQ(b[static_cast<std::size_t>(4 * q)], q);
}

TEST(Alltoall, IntercommunicatorsGoToMpi) {
  const int P = size_of(), r = rank_of();
  if (P < 2) GTEST_SKIP() << "needs two ranks";
  MPI_Comm local, inter;
  MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &local);
  MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, r % 2 ? 0 : 1, 7, &inter);
  int remote = 0;
  MPI_Comm_remote_size(inter, &remote);
  std::vector<int> send(remote, r), got(remote, -1);
  ASSERT_EQ(MPI_Alltoall(send.data(), 1, MPI_INT, got.data(), 1, MPI_INT, inter), MPI_SUCCESS);
  for (int i = 0; i < remote; ++i) EXPECT_EQ(got[i] % 2, (r + 1) % 2);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
}

// The copy path between ranks of a node is what the run expects
// (CONVEYOR_TEST_EXPECT_COPY, a regex; tests/CMakeLists.txt sets it per entry):
// cross-memory attach by default, packed when the setting says so or when one
// rank's kernel refuses it (tests/support/refuse_attach.c) -- on every rank alike.
TEST(Alltoall, CopyPathAsExpected) {
  const std::string path = conveyor::alltoall_copy_path(MPI_COMM_WORLD);
  if (rank_of() == 0) std::printf("alltoall copy path: %s\n", path.c_str());
  if (g_refusing) std::printf("rank %d: the kernel refuses process_vm_readv here (seccomp)\n", rank_of());
  const char* want = std::getenv("CONVEYOR_TEST_EXPECT_COPY");
  if (!want || !*want) return;
  EXPECT_TRUE(std::regex_search(path, std::regex(want))) << path << " !~ " << want;
}

// A send buffer from MPI_Alloc_mem (node memory under libconveyor_mpi from 64
// KiB) is read by each attached receiver with one memcpy from its own mapping of
// it, not process_vm_readv; a heap buffer is not; the bytes are the same.
TEST(Alltoall, NodeMemorySendRowsReadByMemcpy) {
  const int P = size_of(), r = rank_of();
  const std::int64_t n = std::int64_t{1} << 20;  // per peer: above the shared slots at every rank count
  void* small = nullptr;
  ASSERT_EQ(MPI_Alloc_mem(100, MPI_INFO_NULL, &small), MPI_SUCCESS);
  EXPECT_FALSE(conveyor::is_node_memory(small, 100));  // below 64 KiB: the MPI library's
  EXPECT_EQ(MPI_Free_mem(small), MPI_SUCCESS);
  void* node = nullptr;
  ASSERT_EQ(MPI_Alloc_mem(static_cast<MPI_Aint>(n * P), MPI_INFO_NULL, &node), MPI_SUCCESS);
  EXPECT_TRUE(conveyor::is_node_memory(node, static_cast<std::size_t>(n * P)));
  std::vector<unsigned char> heap(static_cast<std::size_t>(n * P)), recv(static_cast<std::size_t>(n * P));
  std::vector<conveyor::byte_map> maps(static_cast<std::size_t>(P));
  for (int q = 0; q < P; ++q) maps[static_cast<std::size_t>(q)] = {conveyor::byte_box{q * n, n, 0, {}, {}}};
  MPI_Comm comm = comm_with_rule("attach");  // no trials of the other ways
  const bool attach = conveyor::alltoall_copy_path(comm) == "cross-memory attach";
  const bool one_node = conveyor::alltoall_nodes(comm) == 1;
  for (unsigned char* send : {static_cast<unsigned char*>(node), heap.data()}) {
    for (std::int64_t i = 0; i < n * P; ++i) send[i] = static_cast<unsigned char>(i / n * 31 + r * 7 + i % 251);
    std::fill(recv.begin(), recv.end(), 0);
    const conveyor::alltoallw_report rep = conveyor::alltoallw(send, maps, recv.data(), maps, comm);
    const bool in_node = send != heap.data();
    EXPECT_EQ(rep.node_memory_peers, in_node ? rep.attached_peers : 0) << (in_node ? "node memory" : "heap");
    if (attach && one_node) {
      EXPECT_EQ(rep.attached_peers, P - 1);
    }
    std::int64_t wrong = 0;
    for (std::int64_t i = 0; i < n * P; ++i) {
      const std::int64_t q = i / n;  // what rank q sent me: its part r
      wrong += recv[static_cast<std::size_t>(i)] != static_cast<unsigned char>(r * 31 + q * 7 + (r * n + i % n) % 251);
    }
    EXPECT_EQ(wrong, 0) << (in_node ? "node memory" : "heap");
  }
  EXPECT_EQ(MPI_Free_mem(node), MPI_SUCCESS);
  MPI_Comm_free(&comm);
}

// Send rows in an MPI shared window (MPI_Win_allocate_shared, noted by
// libconveyor_mpi) are read by each attached receiver that is in the window too
// with one memcpy from its own mapping of it; receivers outside it (the windows
// here are per half of the ranks, even and odd, on each node) fall back to
// process_vm_readv. The
// bytes are the same either way, and a window freed and allocated again (handles
// and memory reused) is read right.
TEST(Alltoall, SharedWindowSendRowsReadByMemcpy) {
  const int P = size_of(), r = rank_of();
  const std::int64_t n = std::int64_t{1} << 20;  // per peer: above the shared slots at every rank count
  // A shared window needs ranks that share memory: each half's ranks on one node
  // (the emulated clusters put the halves on several; first run there: MPI_ERR_RMA_SHARED).
  MPI_Comm split = MPI_COMM_NULL, half = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &split);
  MPI_Comm_split_type(split, MPI_COMM_TYPE_SHARED, r, MPI_INFO_NULL, &half);
  MPI_Comm_free(&split);
  MPI_Comm comm = comm_with_rule("attach");  // no trials of the other ways
  const bool attach = conveyor::alltoall_copy_path(comm) == "cross-memory attach";
  const bool one_node = conveyor::alltoall_nodes(comm) == 1;
  std::vector<conveyor::byte_map> maps(static_cast<std::size_t>(P));
  for (int q = 0; q < P; ++q) maps[static_cast<std::size_t>(q)] = {conveyor::byte_box{q * n, n, 0, {}, {}}};
  std::vector<unsigned char> recv(static_cast<std::size_t>(n * P));
  for (int round = 0; round < 2; ++round) {
    unsigned char* send = nullptr;
    MPI_Win win = MPI_WIN_NULL;
    ASSERT_EQ(MPI_Win_allocate_shared(static_cast<MPI_Aint>(n * P), 1, MPI_INFO_NULL, half, &send, &win), MPI_SUCCESS);
    for (std::int64_t i = 0; i < n * P; ++i) send[i] = static_cast<unsigned char>(i / n * 31 + r * 7 + i % 251 + round);
    std::fill(recv.begin(), recv.end(), 0);
    const conveyor::alltoallw_report rep = conveyor::alltoallw(send, maps, recv.data(), maps, comm);
    int noted = -1;  // noted again through the C API (the preload noted it already)
    EXPECT_EQ(conveyor_note_shared_window(win, &noted), CONVEYOR_SUCCESS);
    if (attach && one_node) {
      int same_half = 0;
      for (int q = 0; q < P; ++q) same_half += q != r && q % 2 == r % 2;
      EXPECT_EQ(rep.attached_peers, P - 1);
      EXPECT_EQ(rep.node_memory_peers, same_half) << "round " << round;
      if (same_half > 0) {
        EXPECT_EQ(noted, 1);
      }
    }
    std::int64_t wrong = 0;
    for (std::int64_t i = 0; i < n * P; ++i) {
      const std::int64_t q = i / n;
      wrong += recv[static_cast<std::size_t>(i)] !=
               static_cast<unsigned char>(r * 31 + q * 7 + (r * n + i % n) % 251 + round);
    }
    EXPECT_EQ(wrong, 0) << "round " << round;
    conveyor_forget_shared_window(win);
    MPI_Win_free(&win);
  }
  MPI_Comm_free(&half);
  MPI_Comm_free(&comm);
}

// Pairs of every kind in one call: none, a few bytes, 40 KiB (the slots, or
// attached from 8 KiB) and beyond the slots (attached, or MPI messages), with
// each rank's sends fixed by its own rule (auto, attach, slots, messages in turn
// over the ranks): receivers follow each sender's header, so the data is right whatever
// the mix; repeated (auto's trials) and in place.
// In place, a pair's counts are the same both ways (MPI takes the send side from
// the receive side), so that case is symmetric.
case_w mixed_pairs(MPI_Comm comm, int salt, bool symmetric) {
  const int P = size_of(comm), r = rank_of(comm);
  const std::int64_t kinds[4] = {0, 100, 40 << 10, (512 << 10) + 4096};
  auto bytes = [&](int from, int to) { return static_cast<int>(kinds[(from + (symmetric ? 1 : 2) * to + salt) % 4]); };
  case_w c;
  int soff = 0, roff = 0;
  for (int q = 0; q < P; ++q) {
    c.scounts.push_back(bytes(r, q)), c.sdispls.push_back(soff), soff += bytes(r, q) + 8;
    c.rcounts.push_back(bytes(q, r)), c.rdispls.push_back(roff), roff += bytes(q, r) + 8;
    c.stypes.push_back(MPI_BYTE), c.rtypes.push_back(MPI_BYTE);
  }
  c.send_bytes = static_cast<std::size_t>(soff), c.recv_bytes = static_cast<std::size_t>(roff);
  return c;
}

TEST(Alltoall, SendersChooseTheirOwnWays) {
  const char* rules[4] = {"auto", "attach", "slots", "messages"};
  MPI_Comm comm = comm_with_rule(rules[rank_of() % 4]);
  for (int call = 0; call < 24; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    const bool in_place = call % 5 == 4;
    expect_as_mpi(mixed_pairs(comm, call % 2, in_place), comm, in_place);
  }
  MPI_Comm_free(&comm);
}

// Each sender's plan on one node: its first calls are trials of the rules that
// move its pairs differently (of slots then attach, attach from 8 KiB, slots then
// messages, messages from 8 KiB), 6 calls each, then none; every call's bytes right.
TEST(Alltoall, CopyTrialsThenOneWay) {
  const int P = size_of(), r = rank_of();
  MPI_Comm comm = comm_with_rule("auto");
  const std::int64_t mid = 40 << 10, large = (512 << 10) + 4096;
  std::vector<conveyor::byte_map> smaps(static_cast<std::size_t>(P)), rmaps(smaps.size());
  auto bytes = [&](int from, int to) { return (from + to) % 2 ? mid : large; };
  std::int64_t soff = 0, roff = 0;
  for (int q = 0; q < P; ++q) {
    smaps[static_cast<std::size_t>(q)] = {conveyor::byte_box{soff, bytes(r, q), 0, {}, {}}}, soff += bytes(r, q);
    rmaps[static_cast<std::size_t>(q)] = {conveyor::byte_box{roff, bytes(q, r), 0, {}, {}}}, roff += bytes(q, r);
  }
  const std::int64_t slot = slot_bytes(P);
  bool has_mid = false, has_large = false;
  for (int q = 0; q < P; ++q) {
    if (q == r) continue;
    has_mid = has_mid || (bytes(r, q) >= (8 << 10) && bytes(r, q) < slot);
    has_large = has_large || bytes(r, q) >= slot;
  }
  // Rules that differ here (redistribute/alltoall_copy_choice.cpp's table).
  const bool attach = conveyor::alltoall_copy_path(comm) == "cross-memory attach";
  const int with_attach[2][2] = {{1, 2}, {3, 4}};  // [mid][large]
  const int candidates = attach ? with_attach[has_mid][has_large] : 1 + has_mid;
  const int want_trials = senders_choose(comm) && candidates > 1 ? 6 * candidates : 0;
  std::vector<unsigned char> send(static_cast<std::size_t>(soff)), got(static_cast<std::size_t>(roff));
  int trials = 0, trials_after_first_settled = 0;
  bool settled = false;
  for (int call = 0; call < 30; ++call) {
    for (std::size_t i = 0; i < send.size(); ++i) send[i] = static_cast<unsigned char>(r * 37 + i % 253 + call);
    std::fill(got.begin(), got.end(), 0);
    const conveyor::alltoallw_report rep = conveyor::alltoallw(send.data(), smaps, got.data(), rmaps, comm);
    trials += rep.copy_trial;
    if (settled && rep.copy_trial) ++trials_after_first_settled;
    settled = settled || !rep.copy_trial;
    std::int64_t at = 0, wrong = 0;
    for (int q = 0; q < P; ++q) {
      std::int64_t from = 0;  // where rank q's part for this rank starts in q's send buffer
      for (int k = 0; k < r; ++k) from += bytes(q, k);
      for (std::int64_t i = 0; i < bytes(q, r); ++i, ++at) {
        wrong += got[static_cast<std::size_t>(at)] != static_cast<unsigned char>(q * 37 + (from + i) % 253 + call);
      }
    }
    ASSERT_EQ(wrong, 0) << "call " << call;
  }
  EXPECT_EQ(trials, want_trials) << "candidates " << candidates;
  EXPECT_EQ(trials_after_first_settled, 0);
  MPI_Comm_free(&comm);
}

// Counts that disagree between a pair above the slots, with the sender attaching
// or sending a message: an error on the receiver (which, on one node, writes
// nothing where the pair lands); success elsewhere; the communicator works after.
TEST(Alltoall, MismatchedLargeCountsEachWay) {
  const int P = size_of(), r = rank_of();
  if (P < 2) GTEST_SKIP() << "needs two ranks";
  for (const char* rule : {"attach", "slots", "messages"}) {
    SCOPED_TRACE(rule);
    MPI_Comm comm = comm_with_rule(rule);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    const int n = (512 << 10) + 4096;
    std::vector<int> sc(P, n), rc(P, n), sd(P), rd(P);
    for (int q = 0; q < P; ++q) sd[q] = rd[q] = q * (n + 8192);
    if (r == 0) sc[1] = n - 1000;
    if (r == 1) rc[0] = n;
    std::vector<unsigned char> send(static_cast<std::size_t>(P) * (n + 8192), static_cast<unsigned char>(r)),
        got(send.size(), 0xee);
    const int code =
        MPI_Alltoallv(send.data(), sc.data(), sd.data(), MPI_BYTE, got.data(), rc.data(), rd.data(), MPI_BYTE, comm);
    const bool served = conveyor::alltoall_nodes(comm) == 1;
    if (r == 1 && served) {
      EXPECT_NE(code, MPI_SUCCESS);
      // Where the pair's way is announced in the shared header (one node), before
      // any receive is posted; elsewhere a message lands straight in the caller's
      // buffer (one run) before its length is seen: the error is still raised.
      if (senders_choose(comm)) {
        const auto touched = std::count_if(got.begin(), got.begin() + n, [](unsigned char b) { return b != 0xee; });
        EXPECT_EQ(touched, 0) << "bytes written from the mismatched pair";
      }
    } else if (r != 1) {
      EXPECT_EQ(code, MPI_SUCCESS);
    }
    std::vector<int> ok_send(P, r), ok_got(P, -1);
    ASSERT_EQ(MPI_Alltoall(ok_send.data(), 1, MPI_INT, ok_got.data(), 1, MPI_INT, comm), MPI_SUCCESS);
    for (int q = 0; q < P; ++q) EXPECT_EQ(ok_got[q], q);
    MPI_Comm_free(&comm);
  }
}

// alltoallw_auto (libconveyor_mpi's MPI_Alltoallv / w on one node): the class
// of the largest package any rank sends, voted through the exchange's headers,
// picks between the exchange and the library's call on every rank alike. A
// class's trials wait while any rank times its copy ways (up to 24 calls of a
// new plan), then 2 x trials calls alternate the two (exactly `trials` of them
// the library's), then one decision holds. Phase 1 stops after class A's first
// trial (the exchange's), so in phase 2, where rank 0 sends class B and the
// others class A, the others expect the library for their own class: where the
// agreed class runs the exchange they send every pair as a message. A library
// that sleeps is never chosen. Every call's bytes are checked, in place too.
int class_of(std::int64_t bytes) {  // runtime/measured_choice.cpp's size_class
  int octave = 0;
  while ((bytes | 1) >> (octave + 1)) ++octave;
  return 2 * octave + (octave > 0 && ((bytes >> (octave - 1)) & 1));
}
int trials_of_bytes(std::int64_t bytes) {
  const int octave = class_of(bytes) / 2;
  return octave <= 14 ? 31 : octave <= 18 ? 15 : octave <= 22 ? 9 : 5;
}

struct vote_call {
  conveyor::alltoallw_report rep;
  int library_runs = 0;
};

// One call: rank `from` sends bytes(from, to) bytes to `to` (contiguous, peer order).
vote_call call_with_vote(MPI_Comm comm, const std::function<std::int64_t(int, int)>& bytes, bool in_place, int salt,
                         int sleep_ms) {
  const int P = size_of(comm), r = rank_of(comm);
  std::vector<int> sc(static_cast<std::size_t>(P)), sd(sc.size()), rc(sc.size()), rd(sc.size());
  std::vector<conveyor::datatype_part> sp(sc.size()), rp(sc.size());
  int soff = 0, roff = 0;
  for (int q = 0; q < P; ++q) {
    const auto k = static_cast<std::size_t>(q);
    sc[k] = static_cast<int>(bytes(r, q)), sd[k] = soff, soff += sc[k];
    rc[k] = static_cast<int>(bytes(q, r)), rd[k] = roff, roff += rc[k];
    sp[k] = {sc[k], sd[k], MPI_BYTE}, rp[k] = {rc[k], rd[k], MPI_BYTE};
  }
  if (in_place) {
    EXPECT_EQ(sc, rc) << "an in-place call needs equal counts";
  }
  auto value = [&](int from, int to, int i) {
    return static_cast<unsigned char>(from * 37 + to * 11 + i % 251 + salt);
  };
  std::vector<unsigned char> send(static_cast<std::size_t>(soff) + 1), got(static_cast<std::size_t>(roff) + 1, 0xEE);
  for (int q = 0; q < P; ++q) {
    for (int i = 0; i < sc[static_cast<std::size_t>(q)]; ++i)
      send[static_cast<std::size_t>(sd[static_cast<std::size_t>(q)] + i)] = value(r, q, i);
  }
  if (in_place) got = send;
  vote_call out;
  const void* from = in_place ? MPI_IN_PLACE : send.data();
  out.rep = conveyor::alltoallw_auto(from, sp, got.data(), rp, comm, [&] {
    ++out.library_runs;
    if (sleep_ms) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    if (PMPI_Alltoallv(from, sc.data(), sd.data(), MPI_BYTE, got.data(), rc.data(), rd.data(), MPI_BYTE, comm) !=
        MPI_SUCCESS) {
      throw conveyor::error(conveyor::errc::mpi, "PMPI_Alltoallv");
    }
  });
  std::int64_t wrong = 0;
  for (int q = 0; q < P; ++q) {
    for (int i = 0; i < rc[static_cast<std::size_t>(q)]; ++i)
      wrong += got[static_cast<std::size_t>(rd[static_cast<std::size_t>(q)] + i)] != value(q, r, i);
  }
  EXPECT_EQ(wrong, 0) << "salt " << salt << (in_place ? ", in place" : "");
  EXPECT_EQ(out.library_runs, out.rep.library ? 1 : 0);
  int ran[2] = {out.rep.library, -out.rep.library};  // the same on every rank
  MPI_Allreduce(MPI_IN_PLACE, ran, 2, MPI_INT, MPI_MAX, comm);
  EXPECT_EQ(ran[0], -ran[1]) << "ranks disagree on the library's call, salt " << salt;
  return out;
}

TEST(Alltoall, LibraryVoteAgreedByEveryRank) {
  const int P = size_of();
  MPI_Comm comm = comm_with_rule("auto");
  const int candidates = measured_candidates(comm);
  const bool voting = candidates > 0;
  const std::int64_t A = 16 << 10, B = 96 << 10, C = 40 << 10, D = 64 << 10;
  struct phase {
    const char* name;
    std::function<std::int64_t(int, int)> bytes;
    int sleep_ms;
    bool in_place_too;
  };
  const std::vector<phase> phases = {
      {"A up to its first trial", [&](int, int) { return A; }, 0, false},
      {"rank 0 at B, the others at A", [&](int from, int) { return from == 0 ? B : A; }, 0, false},
      {"C, in place every other call", [&](int, int) { return C; }, 0, true},
      {"D, a library that sleeps", [&](int, int) { return D; }, 30, false},
  };
  constexpr int kCopyTrials = 24;  // redistribute/alltoall_copy_choice.hpp: 6 calls x up to 4 ways
  int salt = 0;
  for (const phase& ph : phases) {
    SCOPED_TRACE(ph.name);
    std::int64_t largest = 0;
    for (int q = 0; q < P; ++q) largest = std::max(largest, ph.bytes(0, q));
    const bool first_only = &ph == &phases[0];
    const int trials = trials_of_bytes(largest);
    // Phase C's two plans (in place or not) time their ways in turn.
    const int calls = !voting ? 3 : first_only ? kCopyTrials + 1 : 2 * kCopyTrials + candidates * trials + 4;
    int trial_calls = 0, library_trials = 0, settled_library = 0, settled = 0;
    for (int c = 0; c < calls; ++c) {
      const vote_call v = call_with_vote(comm, ph.bytes, ph.in_place_too && c % 2 == 1, ++salt, ph.sleep_ms);
      if (v.rep.library_trial) {
        ++trial_calls, library_trials += v.rep.library;
        EXPECT_EQ(settled, 0) << "a trial after the decision";
      } else if (trial_calls > 0) {
        ++settled, settled_library += v.rep.library;
      }
      if (first_only && trial_calls == 1) break;
    }
    if (!voting) {
      EXPECT_EQ(trial_calls + settled_library, 0) << "no vote, never the library";
    } else if (first_only) {
      EXPECT_EQ(trial_calls, 1);
      EXPECT_EQ(library_trials, 0) << "the exchange's trial runs first";
    } else {
      EXPECT_EQ(trial_calls, candidates * trials);
      EXPECT_EQ(library_trials, trials);
      EXPECT_GT(settled, 0);
      EXPECT_TRUE(settled_library == 0 || settled_library == settled) << "one decision";
      if (ph.sleep_ms) {
        EXPECT_EQ(settled_library, 0) << "a library 30 ms slower was chosen";
      }
    }
  }
  // A rank whose ways are forced vetoes the vote: the exchange on every rank.
  if (P > 1) {
    MPI_Comm forced = comm_with_rule(rank_of() == P - 1 ? "slots" : "auto");
    for (int c = 0; c < 4; ++c) {
      const vote_call v = call_with_vote(
          forced, [&](int, int) { return B; }, false, ++salt, 0);
      EXPECT_FALSE(v.rep.library_trial || v.rep.library);
    }
    MPI_Comm_free(&forced);
  }
  MPI_Comm_free(&comm);
}

// Ahead of the vote (conveyor::alltoallw_ahead): once a class went to the
// library, the next 63 calls ask nothing of the peers and run the library's call
// (every rank answers alike), then one call votes again. A library that does
// nothing beats any exchange, so the 1 KiB class (measured like every class)
// goes to it; with the vote off, never ahead.
void expect_ahead_after_library_wins(MPI_Comm comm) {
  int P = 1;
  MPI_Comm_size(comm, &P);
  const int candidates = P > 1 ? measured_candidates(comm) : 0;
  const bool voting = candidates > 0;
  const int n = 1024;
  std::vector<conveyor::datatype_part> parts(static_cast<std::size_t>(P));
  for (int q = 0; q < P; ++q) parts[static_cast<std::size_t>(q)] = {n, static_cast<std::int64_t>(q) * n, MPI_BYTE};
  std::vector<char> send(static_cast<std::size_t>(P) * n, 1), recv(send.size());
  auto agreed = [&](bool mine) {  // -1: the ranks disagree
    int v[2] = {mine, -static_cast<int>(mine)};
    MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_INT, MPI_MAX, comm);
    return v[0] == -v[1] ? v[0] : -1;
  };
  int library_runs = 0;
  auto vote = [&] {
    return conveyor::alltoallw_auto(send.data(), parts, recv.data(), parts, comm, [&] { ++library_runs; });
  };
  const int trials = trials_of_bytes(n);
  int calls = 0;
  const int limit = std::max(candidates, 2) * trials + 30;
  while (calls < limit && agreed(conveyor::alltoallw_ahead(comm)) == 0) {
    const conveyor::alltoallw_report rep = vote();
    ++calls;
    if (!voting) {
      EXPECT_FALSE(rep.library || rep.library_trial);
    }
  }
  if (!voting) {
    EXPECT_EQ(calls, limit) << "ahead without a vote";
    EXPECT_EQ(library_runs, 0);
  } else {
    // The trials, then the first call of the decided class, then ahead.
    EXPECT_EQ(calls, candidates * trials + 1) << "not ahead right after the library's class was decided";
    int ahead = 1;  // the loop's last question said yes
    while (ahead < 200 && agreed(conveyor::alltoallw_ahead(comm)) == 1) ++ahead;
    EXPECT_EQ(ahead, 63) << "calls ahead before the next vote";
    const int before = library_runs;
    const conveyor::alltoallw_report rep = vote();  // votes again: the library, decided
    EXPECT_TRUE(rep.library && !rep.library_trial);
    EXPECT_EQ(library_runs, before + 1);
    EXPECT_EQ(agreed(conveyor::alltoallw_ahead(comm)), 1) << "ahead again after the vote";
  }
}

TEST(Alltoall, AheadOfTheVoteAfterTheLibraryWins) {
  MPI_Comm comm = comm_with_rule("auto");
  expect_ahead_after_library_wins(comm);
  MPI_Comm_free(&comm);
}

// The same on each half of the ranks at once (a subset communicator, uneven at odd
// P), beside a communicator of every rank created before: the halves' decisions
// and calls ahead are theirs alone, and the whole one still votes.
TEST(Alltoall, AheadOnEachHalfApartFromTheWhole) {
  const int P = size_of(), r = rank_of();
  MPI_Comm whole = comm_with_rule("auto");
  MPI_Comm half = comm_with_rule("auto", [&] {
    MPI_Comm c;
    MPI_Comm_split(MPI_COMM_WORLD, r < (P + 1) / 2 ? 0 : 1, r, &c);
    return c;
  });
  expect_ahead_after_library_wins(half);
  int ahead_on_whole = conveyor::alltoallw_ahead(whole) ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &ahead_on_whole, 1, MPI_INT, MPI_MAX, whole);
  EXPECT_EQ(ahead_on_whole, 0) << "a half's decision reached the communicator of every rank";
  MPI_Comm_free(&half);
  expect_ahead_after_library_wins(whole);  // (and the freed half's state does not linger)
  MPI_Comm_free(&whole);
}

#if MPI_VERSION >= 4
TEST(Alltoall, CountForms) {
  const int P = size_of(), r = rank_of();
  std::vector<MPI_Count> c(P, 2);
  std::vector<MPI_Aint> d(P);
  for (int q = 0; q < P; ++q) d[q] = 2 * q;
  std::vector<int> send(2 * P, r), got(2 * P, -1);
  ASSERT_EQ(MPI_Alltoall_c(send.data(), 2, MPI_INT, got.data(), 2, MPI_INT, MPI_COMM_WORLD), MPI_SUCCESS);
  for (int q = 0; q < P; ++q) EXPECT_EQ(got[2 * q + 1], q);
  std::fill(got.begin(), got.end(), -1);
  ASSERT_EQ(MPI_Alltoallv_c(send.data(), c.data(), d.data(), MPI_INT, got.data(), c.data(), d.data(), MPI_INT,
                            MPI_COMM_WORLD),
            MPI_SUCCESS);
  for (int q = 0; q < P; ++q) EXPECT_EQ(got[2 * q], q);
  std::vector<MPI_Datatype> ty(P, MPI_INT);
  for (auto& x : d) x *= 4;
  std::fill(got.begin(), got.end(), -1);
  ASSERT_EQ(MPI_Alltoallw_c(send.data(), c.data(), d.data(), ty.data(), got.data(), c.data(), d.data(), ty.data(),
                            MPI_COMM_WORLD),
            MPI_SUCCESS);
  for (int q = 0; q < P; ++q) EXPECT_EQ(got[2 * q], q);
}
#endif

}  // namespace
