// SPDX-License-Identifier: BSD-3-Clause
// The Redistribute engine at 1-6 ranks: random N-D layouts (1-D...5-D, random
// splits, owners, per-block storage order and padding), random axis permutations,
// alpha/beta (beta = 0 over a NaN-filled destination), every transport, batched
// plans, repeated execution; block-cyclic and Cartesian layouts; the volume matrix;
// relabeling against brute force; empty arrays; invalid layouts. Values are position-encoded
// (each element holds its global index), so any misplaced element is caught.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "reference.hpp"
#include "c_api_util.hpp"
#include "mpi_test_util.hpp"
#include "conveyor/conveyor.h"
#include "conveyor/node_memory.hpp"
#include "conveyor/redistribute.hpp"
#include "conveyor/reduce.hpp"

// Bytes Conveyor hands to MPI per destination rank (MPI_COMM_WORLD numbering; the
// plans below duplicate it), through the MPI profiling interface: the library's
// calls to MPI_Isend, MPI_Put and MPI_Alltoallv resolve to these definitions.
namespace wire {
bool counting = false;
long long allgathers = 0;                   // MPI_Allgather calls (always counted)
std::vector<std::int64_t> bytes, messages;  // per destination rank
void add(int peer, int count, MPI_Datatype type) {
  if (!counting || peer < 0 || count == 0) return;
  int size = 0;
  PMPI_Type_size(type, &size);
  if (bytes.size() <= static_cast<std::size_t>(peer)) bytes.resize(static_cast<std::size_t>(peer) + 1, 0);
  if (messages.size() <= static_cast<std::size_t>(peer)) messages.resize(static_cast<std::size_t>(peer) + 1, 0);
  bytes[static_cast<std::size_t>(peer)] += static_cast<std::int64_t>(size) * count;
  ++messages[static_cast<std::size_t>(peer)];
}
}  // namespace wire

// (Exported explicitly: the project builds with hidden visibility, and MPICH's
// mpi.h, unlike Open MPI's, does not mark the declarations default-visible.)
#define CONVEYOR_TEST_EXPORT __attribute__((visibility("default")))
extern "C" {
CONVEYOR_TEST_EXPORT int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                                   MPI_Request* req) {
  wire::add(dest, count, type);
  return PMPI_Isend(buf, count, type, dest, tag, comm, req);
}
CONVEYOR_TEST_EXPORT int MPI_Put(const void* buf, int count, MPI_Datatype type, int target, MPI_Aint disp, int tcount,
                                 MPI_Datatype ttype, MPI_Win win) {
  wire::add(target, count, type);
  return PMPI_Put(buf, count, type, target, disp, tcount, ttype, win);
}
CONVEYOR_TEST_EXPORT int MPI_Allgather(const void* sbuf, int sc, MPI_Datatype st, void* rbuf, int rc, MPI_Datatype rt,
                                       MPI_Comm comm) {
  ++wire::allgathers;
  return PMPI_Allgather(sbuf, sc, st, rbuf, rc, rt, comm);
}
CONVEYOR_TEST_EXPORT int MPI_Alltoallv(const void* sbuf, const int sc[], const int sd[], MPI_Datatype st, void* rbuf,
                                       const int rc[], const int rd[], MPI_Datatype rt, MPI_Comm comm) {
  int size = 0;
  PMPI_Comm_size(comm, &size);
  for (int p = 0; p < size; ++p) wire::add(p, sc[p], st);
  return PMPI_Alltoallv(sbuf, sc, sd, st, rbuf, rc, rd, rt, comm);
}
}

namespace conveyor {
namespace {

namespace rd = redistribute;

using testing::c_redistribute_options;
using testing::c_transform;
using testing::rank_of;
using testing::size_of;

using index_t = std::vector<std::int64_t>;

// A layout plus the memory this rank allocated for its blocks.
// Block buffers from the heap, or from node memory (the one_copy transport's sources).
template <class T>
struct block_allocator {
  using value_type = T;
  bool node = false;
  block_allocator() = default;
  explicit block_allocator(bool in_node_memory) : node(in_node_memory) {}
  template <class U>
  block_allocator(const block_allocator<U>& o) : node(o.node) {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(node ? conveyor::node_alloc(n * sizeof(T)) : ::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t) {
    if (node) conveyor::node_free(p);
    else ::operator delete(p);
  }
  bool operator==(const block_allocator& o) const { return node == o.node; }
  bool operator!=(const block_allocator& o) const { return node != o.node; }
};
using block_buffer = std::vector<double, block_allocator<double>>;

struct owned_layout {
  rd::layout l;
  std::vector<block_buffer> storage;  // one buffer per local block (double-sized slots)
  std::vector<rd::block_index> blocks;
  std::vector<std::vector<std::int64_t>> strides;
};

// Random strictly increasing split points of [0, extent].
rd::axis_splits random_splits(std::int64_t extent, testing::splitmix64& rng) {
  std::vector<std::int64_t> pts{0};
  for (std::int64_t x = 1; x < extent; ++x) {
    if (rng() % 3 == 0) pts.push_back(x);
  }
  pts.push_back(extent);
  return rd::axis_splits::explicit_points(pts);
}

std::int64_t block_extent(const rd::layout& l, const rd::block_index& b, int d) {
  return l.splits(d).start(b[static_cast<std::size_t>(d)] + 1) - l.splits(d).start(b[static_cast<std::size_t>(d)]);
}

// Custom layout of `shape` with random splits/owners; storage per block in random
// order (row- or column-major) with random padding, in units of `slot` doubles per element.
owned_layout random_layout(const index_t& shape, std::uint64_t seed, int slots, bool node_memory = false) {
  testing::splitmix64 rng(seed);
  std::vector<rd::axis_splits> splits;
  for (auto e : shape) splits.push_back(random_splits(e, rng));
  std::int64_t nblocks = 1;
  for (const auto& s : splits) nblocks *= s.count();
  std::vector<int> owners(static_cast<std::size_t>(nblocks));
  for (auto& o : owners) o = static_cast<int>(rng() % static_cast<std::uint64_t>(size_of()));
  owned_layout out{rd::layout::custom(splits, owners), {}, {}, {}};
  testing::splitmix64 local(seed * 31 + static_cast<std::uint64_t>(rank_of()));
  const int n = out.l.ndim();
  for (const auto& b : out.l.blocks_of(rank_of())) {
    // Dimension order: identity (row-major) or reversed (column-major); padding of 0-2.
    const bool reversed = local() % 2;
    std::vector<std::int64_t> strides(static_cast<std::size_t>(n));
    std::int64_t s = 1;
    for (int i = 0; i < n; ++i) {
      const int d = reversed ? i : n - 1 - i;
      strides[static_cast<std::size_t>(d)] = s;
      s *= block_extent(out.l, b, d) + static_cast<std::int64_t>(local() % 3);
    }
    out.storage.emplace_back(static_cast<std::size_t>(s * slots), std::nan(""), block_allocator<double>(node_memory));
    out.blocks.push_back(b);
    out.strides.push_back(strides);
  }
  for (std::size_t i = 0; i < out.blocks.size(); ++i)
    out.l.set_storage(out.blocks[i], out.storage[i].data(), out.strides[i]);
  return out;
}

std::int64_t linear_index(const index_t& shape, const index_t& at) {
  std::int64_t v = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) v = v * shape[d] + at[d];
  return v;
}

// Calls fn(global index, element pointer) for every element of this rank's blocks.
template <class T, class Fn>
void for_my_elements(const owned_layout& o, Fn&& fn) {
  const int n = o.l.ndim();
  for (std::size_t i = 0; i < o.blocks.size(); ++i) {
    const auto& b = o.blocks[i];
    index_t lo(static_cast<std::size_t>(n)), ext(static_cast<std::size_t>(n)), at(static_cast<std::size_t>(n));
    std::int64_t count = 1;
    for (int d = 0; d < n; ++d) {
      lo[static_cast<std::size_t>(d)] = o.l.splits(d).start(b[static_cast<std::size_t>(d)]);
      ext[static_cast<std::size_t>(d)] = block_extent(o.l, b, d);
      count *= ext[static_cast<std::size_t>(d)];
    }
    T* base = reinterpret_cast<T*>(const_cast<double*>(o.storage[i].data()));
    for (std::int64_t e = 0; e < count; ++e) {
      std::int64_t r = e, off = 0;
      for (int d = n; d-- > 0;) {
        const auto k = static_cast<std::size_t>(d);
        const std::int64_t x = r % ext[k];
        r /= ext[k];
        at[k] = lo[k] + x;
        off += x * o.strides[i][k];
      }
      fn(at, base + off);
    }
  }
}

template <class T>
T encode(std::int64_t v, int generation) {
  if constexpr (std::is_same_v<T, std::complex<double>> || std::is_same_v<T, std::complex<float>>) {
    using F = typename T::value_type;
    return T(static_cast<F>(v + generation), static_cast<F>(-v));
  } else {
    return static_cast<T>(v + generation);
  }
}

template <class T>
bool same(T a, T b) {
  return a == b;
}

struct case_params {
  index_t shape;
  std::vector<int> perm;
  double alpha = 1, beta = 0;
  bool conjugate = false;
  int ranks_per_node = 0;          // emulated nodes (one_sided: shared memory within, MPI_Put across)
  bool node_sources = false;       // source blocks in node memory (one_copy pulls)
  bool node_destinations = false;  // destination blocks in node memory (one_copy pushes)
};

// Returns the transport the plan ran.
template <class T>
rd::transport run_case(const case_params& c, rd::transport method, std::uint64_t seed, const std::string& label,
                       int executions = 1) {
  const int n = static_cast<int>(c.shape.size());
  index_t dshape(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k)
    dshape[static_cast<std::size_t>(k)] = c.shape[static_cast<std::size_t>(c.perm[static_cast<std::size_t>(k)])];
  const int slots = static_cast<int>((sizeof(T) + sizeof(double) - 1) / sizeof(double));
  owned_layout src = random_layout(c.shape, seed, slots, c.node_sources);
  owned_layout dst = random_layout(dshape, seed + 977, slots, c.node_destinations);
  rd::transform t;
  t.src = &src.l;
  t.dst = &dst.l;
  t.perm = c.perm;
  t.alpha = c.alpha;
  t.beta = c.beta;
  t.conjugate = c.conjugate;
  t.type = dtype_of_v<T>;
  rd::plan_options opt;
  opt.transport = method;
  opt.chunk_bytes = 64;  // many chunks for the pipelined transport
  opt.ranks_per_node = c.ranks_per_node;
  rd::plan p(t, MPI_COMM_WORLD, opt);

  // The volume matrix covers every element exactly once.
  std::int64_t total = 0;
  for (auto v : p.volume()) total += v;
  std::int64_t elements = 1;
  for (auto e : c.shape) elements *= e;
  EXPECT_EQ(total, elements * static_cast<std::int64_t>(sizeof(T))) << label;

  for (int gen = 0; gen < executions; ++gen) {
    for_my_elements<T>(src, [&](const index_t& at, T* x) { *x = encode<T>(linear_index(c.shape, at), gen); });
    // beta = 0: NaN in dst must not leak; otherwise a known old value.
    for_my_elements<T>(dst, [&](const index_t& at, T* x) {
      if constexpr (std::is_integral_v<T>) {
        *x = c.beta == 0 ? T(-12345) : encode<T>(3 * linear_index(dshape, at), 0);
      } else {
        *x = c.beta == 0 ? T(std::numeric_limits<double>::quiet_NaN()) : encode<T>(3 * linear_index(dshape, at), 0);
      }
    });
    p.execute();
    std::int64_t wrong = 0;
    for_my_elements<T>(dst, [&](const index_t& at, T* x) {
      index_t sat(static_cast<std::size_t>(n));
      for (int k = 0; k < n; ++k)
        sat[static_cast<std::size_t>(c.perm[static_cast<std::size_t>(k)])] = at[static_cast<std::size_t>(k)];
      T v = encode<T>(linear_index(c.shape, sat), gen);
      if constexpr (!std::is_integral_v<T>) {
        if constexpr (!std::is_floating_point_v<T>) {
          if (c.conjugate) v = std::conj(v);
        }
        using R = decltype(std::abs(T{}));
        T want = static_cast<R>(c.alpha) * v;
        if (c.beta != 0) want += static_cast<R>(c.beta) * encode<T>(3 * linear_index(dshape, at), 0);
        wrong += !same(*x, want);
      } else {
        wrong += !same(*x, v);
      }
    });
    EXPECT_EQ(wrong, 0) << label << " execution " << gen;
  }
  return p.transport();
}

std::vector<int> random_perm(int n, testing::splitmix64& rng) {
  std::vector<int> p(static_cast<std::size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  for (int i = n - 1; i > 0; --i)
    std::swap(p[static_cast<std::size_t>(i)], p[rng() % static_cast<std::uint64_t>(i + 1)]);
  return p;
}

// Random case `trial` (1-D…5-D by trial, random shape, permutation; alpha and beta
// cycling through {1, 2} and {0, 0.5}).
case_params random_case(int trial, testing::splitmix64& rng) {
  const int n = 1 + trial % 5;
  case_params c;
  for (int d = 0; d < n; ++d) c.shape.push_back(1 + static_cast<std::int64_t>(rng() % (n <= 2 ? 13 : 5)));
  c.perm = random_perm(n, rng);
  c.alpha = trial % 3 == 0 ? 1.0 : 2.0;
  c.beta = trial % 2 == 0 ? 0.0 : 0.5;
  return c;
}

const rd::transport kTransports[] = {rd::transport::packed,    rd::transport::pipelined, rd::transport::datatype,
                                     rd::transport::one_sided, rd::transport::alltoallv, rd::transport::automatic};

// The table of transports (src/redistribute/transport_table.hpp) and kTransports
// agree: a row added to the table is run by the random-layout tests or this test
// fails (one_copy, which needs node memory, has its own tests below).
TEST(Redistribute, EveryTransportOfTheTableIsTested) {
  const auto& table = rd::transports();
  EXPECT_EQ(table.size(), static_cast<std::size_t>(rd::transport_count - 1));
  for (const rd::transport_info& t : table) {
    EXPECT_EQ(t.name, rd::transport_name(t.transport));
    EXPECT_GT(std::string(t.summary).size(), 20u) << t.name;
    const bool listed = std::find(std::begin(kTransports), std::end(kTransports), t.transport) != std::end(kTransports);
    EXPECT_TRUE(listed || t.transport == rd::transport::one_copy)
        << t.name << " is in the table but not in kTransports";
  }
}

TEST(Redistribute, RandomLayoutsEveryTransport) {
  testing::splitmix64 rng(2024);
  for (int trial = 0; trial < 12; ++trial) {
    const case_params c = random_case(trial, rng);
    const int n = static_cast<int>(c.shape.size());
    for (rd::transport m : kTransports) {
      const std::string label =
          "trial " + std::to_string(trial) + " ndim " + std::to_string(n) + " " + std::string(rd::transport_name(m));
      run_case<double>(c, m, 100 + static_cast<std::uint64_t>(trial), label);
    }
  }
}

// one_sided within and across (emulated) nodes: 1 rank per node = MPI_Put only,
// 2 = shared memory for one peer and MPI_Put for the others, 0 = the real node.
TEST(Redistribute, OneSidedSharedMemoryAndPut) {
  testing::splitmix64 rng(77);
  for (int ppn : {1, 2, 0}) {
    for (int trial = 0; trial < 4; ++trial) {
      const int n = 1 + trial;
      case_params c;
      for (int d = 0; d < n; ++d) c.shape.push_back(2 + static_cast<std::int64_t>(rng() % 6));
      c.perm = random_perm(n, rng);
      c.beta = trial % 2 ? 0.5 : 0.0;
      c.ranks_per_node = ppn;
      run_case<double>(c, rd::transport::one_sided, 300 + static_cast<std::uint64_t>(trial),
                       "ranks per node " + std::to_string(ppn) + " trial " + std::to_string(trial), 3);
    }
  }
}

// one_sided synchronizes node peers through counters, not fences: executions back
// to back (no barrier between them, new values each time) must never let a sender
// overwrite a package its receiver is still unpacking. Uneven random layouts make
// some ranks unpack much more than others.
TEST(Redistribute, OneSidedBackToBackExecutions) {
  for (int ppn : {0, 2}) {
    case_params c;
    c.shape = {64, 48};
    c.perm = {1, 0};
    c.ranks_per_node = ppn;
    run_case<double>(c, rd::transport::one_sided, 555 + static_cast<std::uint64_t>(ppn),
                     "ranks per node " + std::to_string(ppn), 40);
  }
}

// Whether every rank of MPI_COMM_WORLD shares one node (the same on every rank):
// not so on the emulated clusters of scripts/test, whose nodes are namespaces.
bool all_on_one_node() {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_size = 0;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  int one = node_size == size_of(MPI_COMM_WORLD) ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return one != 0;
}

// Which transport a plan of `t` runs (auto unless asked), or the error's code.
std::string transport_or_error(const rd::transform& t, rd::transport asked, int ranks_per_node = 0) {
  rd::plan_options o;
  o.transport = asked;
  o.ranks_per_node = ranks_per_node;
  try {
    return std::string(rd::transport_name(rd::plan(t, MPI_COMM_WORLD, o).transport()));
  } catch (const conveyor::error& e) {
    return "error " + std::to_string(static_cast<int>(e.code()));
  }
}

// one_copy: destinations in node memory (each sender pushes into its receivers'
// arrays, auto's choice on one node) or only sources (each receiver pulls, when
// asked). Every shape, permutation, alpha/beta and conjugation of the random
// cases, three executions each on new data.
TEST(Redistribute, OneCopyThroughNodeMemory) {
  // Across real nodes it cannot run: OneCopyRefusedOnEveryRankWhereItCannotRun checks that.
  if (!all_on_one_node()) GTEST_SKIP() << "the ranks span several nodes";
  testing::splitmix64 rng(4711);
  for (int trial = 0; trial < 10; ++trial) {
    case_params c = random_case(trial, rng);
    const int n = static_cast<int>(c.shape.size());
    const auto seed = 700 + static_cast<std::uint64_t>(trial);
    const std::string label = "trial " + std::to_string(trial) + " ndim " + std::to_string(n);
    c.node_destinations = true;
    EXPECT_EQ(run_case<double>(c, rd::transport::automatic, seed, label + " push, auto"), rd::transport::one_copy);
    run_case<double>(c, rd::transport::one_copy, seed, label + " push", 3);
    c.node_destinations = false;
    c.node_sources = true;
    run_case<double>(c, rd::transport::one_copy, seed, label + " pull", 3);
    EXPECT_NE(run_case<double>(c, rd::transport::automatic, seed, label + " sources only, auto"),
              rd::transport::one_copy);
    c.conjugate = true;
    run_case<std::complex<float>>(c, rd::transport::one_copy, seed + 20, label + " pull complex64");
    c.node_destinations = true;
    run_case<std::complex<float>>(c, rd::transport::one_copy, seed + 20, label + " push complex64");
  }
  // Back to back without a barrier: a sender returning before its readers are done
  // (pull), or a receiver before its writers are (push), would see data of the
  // wrong execution.
  case_params c;
  c.shape = {64, 48};
  c.perm = {1, 0};
  c.node_sources = true;
  run_case<double>(c, rd::transport::one_copy, 733, "pull back to back", 40);
  c.node_sources = false;
  c.node_destinations = true;
  run_case<double>(c, rd::transport::one_copy, 733, "push back to back", 40);
}

// Where one_copy cannot run, asking for it is the same error on every rank and
// auto runs another transport: heap buffers on one rank (each rank in turn),
// emulated nodes, sources that are also the destination.
TEST(Redistribute, OneCopyRefusedOnEveryRankWhereItCannotRun) {
  const int rank = rank_of(MPI_COMM_WORLD), size = size_of(MPI_COMM_WORLD);
  const std::int64_t n = 1000;  // per rank
  const auto splits = rd::axis_splits::regular(n * size, n);
  std::vector<int> owners(static_cast<std::size_t>(size)), rotated(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r)
    owners[static_cast<std::size_t>(r)] = r, rotated[static_cast<std::size_t>(r)] = (r + 1) % size;
  auto* node = static_cast<double*>(conveyor::node_alloc(2 * n * sizeof(double)));
  std::vector<double> heap(static_cast<std::size_t>(2 * n));
  const std::string invalid = "error " + std::to_string(static_cast<int>(conveyor::errc::invalid_argument));
  const bool one_node = all_on_one_node();  // else (an emulated cluster) node memory alone is not enough
  for (int heap_rank = -1; heap_rank < size; ++heap_rank) {
    double* a = rank == heap_rank ? heap.data() : node;
    rd::layout src = rd::layout::custom({splits}, owners), dst = rd::layout::custom({splits}, rotated);
    src.set_storage({rank}, a, {1});
    dst.set_storage({(rank + size - 1) % size}, a + n, {1});
    rd::transform t;
    t.src = &src;
    t.dst = &dst;
    const std::string label = "heap buffers on rank " + std::to_string(heap_rank);
    if (heap_rank < 0) {
      EXPECT_EQ(transport_or_error(t, rd::transport::one_copy), one_node ? "one_copy" : invalid) << label;
      EXPECT_EQ(transport_or_error(t, rd::transport::automatic) == "one_copy", one_node) << label;
      EXPECT_EQ(transport_or_error(t, rd::transport::one_copy, 1), invalid) << "emulated nodes";
      EXPECT_NE(transport_or_error(t, rd::transport::automatic, 1), "one_copy") << "emulated nodes";
    } else {
      EXPECT_EQ(transport_or_error(t, rd::transport::one_copy), invalid) << label;
      EXPECT_NE(transport_or_error(t, rd::transport::automatic), "one_copy") << label;
    }
  }
  // The destination is the source (a rotation in place): readers would see bytes
  // their owner is rewriting.
  rd::layout src = rd::layout::custom({splits}, owners), dst = rd::layout::custom({splits}, rotated);
  src.set_storage({rank}, node, {1});
  dst.set_storage({(rank + size - 1) % size}, node, {1});
  rd::transform t;
  t.src = &src;
  t.dst = &dst;
  EXPECT_EQ(transport_or_error(t, rd::transport::one_copy), invalid);
  rd::plan p(t, MPI_COMM_WORLD);
  EXPECT_NE(p.transport(), rd::transport::one_copy);
  std::fill(node, node + n, static_cast<double>(rank));
  p.execute();
  EXPECT_EQ(node[0], (rank + size - 1) % size);
  EXPECT_EQ(node[n - 1], (rank + size - 1) % size);
  conveyor::node_free(node);
}

// The volume matrix a plan claims is what it sends: per peer, over MPI, per call
// (its own row; local pieces never reach MPI).
TEST(Redistribute, VolumeEqualsBytesSent) {
  const int rank = rank_of(MPI_COMM_WORLD), size = size_of(MPI_COMM_WORLD);
  const index_t shape = {9, 7, 5};
  owned_layout src = random_layout(shape, 4242, 1), dst = random_layout({5, 9, 7}, 4343, 1);
  rd::transform t;
  t.src = &src.l;
  t.dst = &dst.l;
  t.perm = {2, 0, 1};
  t.alpha = 2;
  for (rd::transport m : kTransports) {
    rd::plan_options opt;
    opt.transport = m;
    opt.chunk_bytes = 100;
    opt.ranks_per_node = 1;  // one_sided: every package through MPI_Put
    const long long allgathers_before = wire::allgathers;
    rd::plan p(t, MPI_COMM_WORLD, opt);
    // Custom layouts: the volume rows and packing orders come from one MPI_Allgather
    // (the block-cyclic test below expects none).
    EXPECT_GE(wire::allgathers - allgathers_before, 1);
    wire::bytes.assign(static_cast<std::size_t>(size), 0);
    wire::counting = true;
    p.execute();
    p.execute();
    wire::counting = false;
    for (int j = 0; j < size; ++j) {
      const std::int64_t claimed = j == rank ? 0 : 2 * p.volume()[static_cast<std::size_t>(rank * size + j)];
      EXPECT_EQ(wire::bytes[static_cast<std::size_t>(j)], claimed) << rd::transport_name(m) << " to rank " << j;
    }
  }
}

// Whether this MPI gives the ranks of a node a shared window (Open MPI without its
// osc/sm component does not: the redistribute_no_shm CTest run).
bool shared_windows_work() {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
  char* base = nullptr;
  MPI_Win win = MPI_WIN_NULL;
  int ok = MPI_Win_allocate_shared(64, 1, MPI_INFO_NULL, node, &base, &win) == MPI_SUCCESS;
  if (win != MPI_WIN_NULL) MPI_Win_free(&win);
  MPI_Comm_free(&node);
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return ok != 0;
}

// auto runs the cheapest transport under the cost model and says which: shared
// memory (one_sided) when the peers share a node, not when every peer is remote;
// without shared windows, packed (one_sided's MPI_Put path was not what it counted).
TEST(Redistribute, AutoChoosesTheCheapestPredictedTransport) {
  const bool shared = shared_windows_work();
  const int rank = rank_of(MPI_COMM_WORLD), size = size_of(MPI_COMM_WORLD);
  const bool one_node = all_on_one_node();
  const std::int64_t n = std::int64_t{1} << 16;  // per rank
  std::vector<double> a(static_cast<std::size_t>(n), rank), b(static_cast<std::size_t>(n), -1);
  std::vector<int> owners(static_cast<std::size_t>(size)), rotated(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    owners[static_cast<std::size_t>(r)] = r;
    rotated[static_cast<std::size_t>(r)] = (r + 1) % size;
  }
  const auto splits = rd::axis_splits::regular(n * size, n);
  rd::layout src = rd::layout::custom({splits}, owners), dst = rd::layout::custom({splits}, rotated);
  src.set_storage({rank}, a.data(), {1});
  dst.set_storage({(rank + size - 1) % size}, b.data(), {1});
  rd::transform t;
  t.src = &src;
  t.dst = &dst;
  for (int ppn : {0, 1}) {
    rd::plan_options opt;
    opt.ranks_per_node = ppn;
    rd::plan p(t, MPI_COMM_WORLD, opt);
    const rd::transport chosen = p.transport();
    ASSERT_NE(chosen, rd::transport::automatic);
    EXPECT_NE(chosen, rd::transport::datatype);
    for (rd::transport m :
         {rd::transport::packed, rd::transport::pipelined, rd::transport::one_sided, rd::transport::alltoallv}) {
      EXPECT_GT(p.predicted_seconds(m), 0.0);
      if (shared) {
        EXPECT_LE(p.predicted_seconds(chosen), p.predicted_seconds(m)) << rd::transport_name(m);
      }
    }
    if (size > 1 && ppn == 0 && one_node) {
      // One node: no wire at all; without shared windows, auto's fallback. (On an
      // emulated cluster the cheapest-prediction check above is the test.)
      EXPECT_EQ(chosen, shared ? rd::transport::one_sided : rd::transport::packed);
    }
    if (size > 1 && ppn == 1) {
      EXPECT_NE(chosen, rd::transport::one_sided);  // every peer on another node
    }
    std::fill(b.begin(), b.end(), -1.0);
    p.execute();
    EXPECT_EQ(b.front(), (rank + size - 1) % size);  // rank r's block lands on r + 1
    EXPECT_EQ(b.back(), (rank + size - 1) % size);
  }
  rd::plan_options fixed;
  fixed.transport = rd::transport::packed;
  EXPECT_EQ(rd::plan(t, MPI_COMM_WORLD, fixed).predicted_seconds(rd::transport::packed), 0.0);
}

// Transposing copies of 8-byte elements (plain, or float64 with alpha/beta) go
// through the SIMD transpose kernel (4 x 4 in registers, 2 x 2 on 128-bit
// targets): every target this CPU runs, results identical to the scalar kernel.
TEST(Redistribute, TransposesOnEverySimdTarget) {
  case_params c;
  c.shape = {37, 29};
  c.perm = {1, 0};
  for (const std::string& target : simd_targets().supported) {
    set_simd_target(target);
    run_case<double>(c, rd::transport::packed, 900, "float64 transpose, " + target, 2);
    run_case<std::complex<float>>(c, rd::transport::one_sided, 901, "complex64 transpose, " + target);
    run_case<std::int64_t>(c, rd::transport::alltoallv, 902, "int64 transpose, " + target);
    case_params scaled = c;
    scaled.shape = {64, 48};  // larger pieces: full 4 x 4 blocks for every seed
    scaled.alpha = 2;
    run_case<double>(scaled, rd::transport::packed, 903, "float64 2 * transpose, " + target);
    scaled.beta = 0.5;
    run_case<double>(scaled, rd::transport::one_sided, 904, "float64 2 * transpose + 0.5 * dst, " + target, 2);
  }
  set_simd_target("");
}

TEST(Redistribute, DtypesConjugateAndRepeatedExecution) {
  case_params c;
  c.shape = {7, 5};
  c.perm = {1, 0};  // transpose
  c.alpha = 1;
  c.beta = 0;
  run_case<float>(c, rd::transport::packed, 5, "float32 transpose", 3);
  run_case<std::int32_t>(c, rd::transport::pipelined, 6, "int32 transpose (copy only)", 2);
  c.conjugate = true;
  c.alpha = 2;
  c.beta = 0.5;
  run_case<std::complex<double>>(c, rd::transport::packed, 7, "complex128 conjugate transpose", 3);
  run_case<std::complex<float>>(c, rd::transport::datatype, 8, "complex64 conjugate transpose", 2);
}

TEST(Redistribute, BatchedPlanOneMessagePerPeer) {
  const int slots = 1;
  owned_layout a = random_layout({9, 4}, 11, slots), b = random_layout({4, 9}, 12, slots);
  owned_layout c2 = random_layout({6, 6, 3}, 13, slots), d = random_layout({6, 6, 3}, 14, slots);
  std::vector<rd::transform> batch(2);
  batch[0].src = &a.l;
  batch[0].dst = &b.l;
  batch[0].perm = {1, 0};
  batch[1].src = &c2.l;
  batch[1].dst = &d.l;
  batch[1].alpha = 3;
  const int rank = rank_of(), size = size_of();
  for (rd::transport m : kTransports) {
    rd::plan_options o;
    o.transport = m;
    o.ranks_per_node = 1;  // one_sided: MPI_Put, so the messages can be counted
    rd::plan p(batch, MPI_COMM_WORLD, o);
    for_my_elements<double>(a, [&](const index_t& at, double* x) {
      *x = static_cast<double>(linear_index({9, 4}, at));
    });
    for_my_elements<double>(c2, [&](const index_t& at, double* x) {
      *x = static_cast<double>(linear_index({6, 6, 3}, at));
    });
    wire::bytes.assign(static_cast<std::size_t>(size), 0);
    wire::messages.assign(static_cast<std::size_t>(size), 0);
    wire::counting = true;
    p.execute();
    wire::counting = false;
    // Both transforms' pieces for a peer travel as one message (pipelined: one per
    // chunk of >= chunk_bytes, 8 MiB here, so one).
    for (int j = 0; j < size; ++j) {
      const bool sends = j != rank && p.volume()[static_cast<std::size_t>(rank * size + j)] > 0;
      EXPECT_EQ(wire::messages[static_cast<std::size_t>(j)], sends ? 1 : 0)
          << rd::transport_name(m) << " to rank " << j;
    }
    std::int64_t wrong = 0;
    for_my_elements<double>(
        b, [&](const index_t& at, double* x) { wrong += *x != static_cast<double>(at[1] * 4 + at[0]); });
    for_my_elements<double>(d, [&](const index_t& at, double* x) {
      wrong += *x != 3.0 * static_cast<double>(linear_index({6, 6, 3}, at));
    });
    EXPECT_EQ(wrong, 0) << rd::transport_name(m);
  }
}

// 2-D block-cyclic (ScaLAPACK storage, submatrix offsets) <-> Cartesian, with transposes.
TEST(Redistribute, BlockCyclicAndCartesian) {
  const int P = size_of(), me = rank_of();
  for (int pr = 1; pr <= P; ++pr) {
    if (P % pr) continue;
    const int pc = P / pr;
    const std::int64_t M = 23, N = 17, mb = 4, nb = 3, ia = 2, ja = 5;  // submatrix M x N at (ia, ja)
    const std::int64_t GM = M + ia, GN = N + ja;                        // the full global matrix
    const int myr = me / pc, myc = me % pc;                             // row-major grid
    const auto numroc = [](std::int64_t n, std::int64_t nbk, int iproc, int nprocs) {
      const std::int64_t nblocks = n / nbk;
      std::int64_t count = (nblocks / nprocs) * nbk;
      const std::int64_t extra = nblocks % nprocs;
      if (iproc < extra) count += nbk;
      else if (iproc == extra) count += n % nbk;
      return count;
    };
    const std::int64_t lrows = numroc(GM, mb, myr, pr), lcols = numroc(GN, nb, myc, pc);
    const std::int64_t lld = std::max<std::int64_t>(1, lrows) + 1;
    std::vector<double> local(static_cast<std::size_t>(lld * std::max<std::int64_t>(lcols, 1)), -1.0);
    rd::layout::block_cyclic_params bp;
    bp.M = M;
    bp.N = N;
    bp.mb = mb;
    bp.nb = nb;
    bp.prow = pr;
    bp.pcol = pc;
    bp.row_offset = ia;
    bp.col_offset = ja;
    bp.local = local.data();
    bp.lld = lld;
    const rd::layout bc = rd::layout::block_cyclic(bp);
    // Fill the local array with the global (row, col) encoded, ScaLAPACK's mapping.
    for (std::int64_t lj = 0; lj < lcols; ++lj) {
      for (std::int64_t li = 0; li < lrows; ++li) {
        const std::int64_t gi = (li / mb * pr + myr) * mb + li % mb, gj = (lj / nb * pc + myc) * nb + lj % nb;
        local[static_cast<std::size_t>(li + lj * lld)] = static_cast<double>(gi * 1000 + gj);
      }
    }
    // Destination: Cartesian over a 1 x P grid of the transposed submatrix (rank = grid column).
    std::vector<int> grid = {1, P};
    if (N < P) continue;
    const rd::layout probe = rd::layout::cartesian({N, M}, grid, nullptr);
    const auto myblock = probe.blocks_of(me);
    std::int64_t cols = 0;
    for (const auto& b : myblock) cols = probe.splits(1).start(b[1] + 1) - probe.splits(1).start(b[1]);
    std::vector<double> cart(static_cast<std::size_t>(N * std::max<std::int64_t>(cols, 1)), std::nan(""));
    const rd::layout cl = rd::layout::cartesian({N, M}, grid, cart.data());
    rd::transform t;
    t.src = &bc;
    t.dst = &cl;
    t.perm = {1, 0};
    for (rd::transport m : kTransports) {
      rd::plan_options o;
      o.transport = m;
      rd::plan p(t, MPI_COMM_WORLD, o);
      std::fill(cart.begin(), cart.end(), std::nan(""));
      p.execute();
      std::int64_t wrong = 0;
      for (const auto& b : myblock) {
        const std::int64_t c0 = cl.splits(1).start(b[1]);
        for (std::int64_t i = 0; i < N; ++i) {
          for (std::int64_t j = 0; j < cols; ++j) {
            // dst (i, c0 + j) = src (c0 + j, i) of the submatrix = global (ia + c0 + j, ja + i).
            const double want = static_cast<double>((ia + c0 + j) * 1000 + (ja + i));
            wrong += cart[static_cast<std::size_t>(i * cols + j)] != want;
          }
        }
      }
      EXPECT_EQ(wrong, 0) << pr << "x" << pc << " " << rd::transport_name(m);
    }
  }
}

// A random ScaLAPACK-style block-cyclic submatrix and its local array: grid of
// at most P positions (a random subset of the ranks, in random order), block
// sizes 1-6 (a first block of its own size half the time), source process,
// offsets, padding of lld; every element holds its submatrix coordinates.
struct cyclic_matrix {
  rd::layout l;
  std::vector<double> local;
};

cyclic_matrix random_cyclic(std::int64_t M, std::int64_t N, testing::splitmix64& rng) {
  const int P = size_of(), me = rank_of();
  rd::layout::block_cyclic_params p;
  p.M = M;
  p.N = N;
  p.prow = 1 + static_cast<int>(rng() % static_cast<std::uint64_t>(P));
  p.pcol = 1 + static_cast<int>(rng() % static_cast<std::uint64_t>(P / p.prow));
  p.mb = 1 + static_cast<std::int64_t>(rng() % 6);
  p.nb = 1 + static_cast<std::int64_t>(rng() % 6);
  p.imb = rng() % 2 ? 1 + static_cast<std::int64_t>(rng() % 6) : 0;
  p.inb = rng() % 2 ? 1 + static_cast<std::int64_t>(rng() % 6) : 0;
  p.rsrc = static_cast<int>(rng() % static_cast<std::uint64_t>(p.prow));
  p.csrc = static_cast<int>(rng() % static_cast<std::uint64_t>(p.pcol));
  p.row_offset = static_cast<std::int64_t>(rng() % 5);
  p.col_offset = static_cast<std::int64_t>(rng() % 5);
  std::vector<int> ranks(static_cast<std::size_t>(P));
  std::iota(ranks.begin(), ranks.end(), 0);
  for (std::size_t i = ranks.size(); i > 1; --i) std::swap(ranks[i - 1], ranks[rng() % i]);
  const int pcol = p.pcol;
  p.rank_of_grid = [ranks, pcol](int r, int c) { return ranks[static_cast<std::size_t>(r * pcol + c)]; };
  const std::int64_t padding = static_cast<std::int64_t>(rng() % 3);
  // The local array holds this rank's part of the whole matrix (ScaLAPACK's
  // NUMROC of the descriptor's M and N), not only of the submatrix.
  rd::layout::block_cyclic_params whole = p;
  whole.M += p.row_offset, whole.N += p.col_offset;
  whole.row_offset = whole.col_offset = 0;
  const rd::layout probe = rd::layout::block_cyclic(whole);
  const std::vector<std::int64_t> shape = probe.local_shape(me);
  p.lld = std::max<std::int64_t>(1, shape[0]) + padding;
  cyclic_matrix m{probe,
                  std::vector<double>(static_cast<std::size_t>(p.lld * std::max<std::int64_t>(1, shape[1])), -7.0)};
  p.local = m.local.data();
  m.l = rd::layout::block_cyclic(p);
  for (const rd::block_index& b : m.l.blocks_of(me)) {
    const rd::block_storage st = m.l.storage(b);
    for (std::int64_t i = 0; i < block_extent(m.l, b, 0); ++i) {
      for (std::int64_t j = 0; j < block_extent(m.l, b, 1); ++j) {
        m.local[static_cast<std::size_t>(st.offset + i * st.strides[0] + j * st.strides[1])] =
            static_cast<double>((m.l.splits(0).start(b[0]) + i) * 1000 + m.l.splits(1).start(b[1]) + j);
      }
    }
  }
  return m;
}

// The same layout with every block's storage described by set_storage (where
// `explicit_storage`): the plan then walks piece lists instead of interval products.
void describe_storage(rd::layout& l, bool explicit_storage) {
  if (!explicit_storage) return;
  for (const rd::block_index& b : l.blocks_of(rank_of())) {
    const rd::block_storage st = l.storage(b);
    l.set_storage(b, static_cast<double*>(st.data) + st.offset, {st.strides[0], st.strides[1]});
  }
}

// Block-cyclic to block-cyclic (ScaLAPACK's p?gemr2d / p?tran shapes) is planned
// as interval products (one row and one column interval list per peer) instead of
// piece lists. Random pairs of layouts, transposed or not, scaled or not, on every
// transport (all but packed convert the products to pieces), with storage by the
// formula on every rank, described explicitly on every rank (piece lists), or on
// every other rank only: a plan whose ranks mix both packs and unpacks the same
// bytes, which is what the products' byte order promises. Every rank computes the
// volume matrix itself (checked against a count of every element's owners) and
// the plan calls no MPI_Allgather.
TEST(Redistribute, BlockCyclicIntervalProductsMatchPieceLists) {
  const int me = rank_of();
  testing::splitmix64 rng(2026);
  // The communicator's context is built at its first use, with an MPI_Allgather of
  // the node layout: build it before counting (the test may run first).
  int one = 1, ranks = 0;
  ASSERT_EQ(conveyor_allreduce(&one, &ranks, 1, CONVEYOR_INT32, CONVEYOR_SUM, MPI_COMM_WORLD, nullptr, nullptr), 0);
  for (int trial = 0; trial < 24; ++trial) {
    const bool transpose = rng() % 2, scaled = rng() % 3 == 0;
    const std::int64_t M = static_cast<std::int64_t>(rng() % 26), N = static_cast<std::int64_t>(rng() % 26);
    cyclic_matrix a = random_cyclic(transpose ? N : M, transpose ? M : N, rng);
    cyclic_matrix b = random_cyclic(M, N, rng);
    const int mode = static_cast<int>(rng() % 3);  // 0 formula, 1 explicit, 2 mixed
    describe_storage(a.l, mode == 1 || (mode == 2 && me % 2 == 0));
    describe_storage(b.l, mode == 1 || (mode == 2 && me % 2 == 1));
    rd::transform t;
    t.src = &a.l;
    t.dst = &b.l;
    if (transpose) t.perm = {1, 0};
    if (scaled) t.alpha = 2, t.beta = 0.5;
    // The volume matrix, counted element by element: a grid pair's is computed
    // by every rank without exchanging rows, so it must equal this.
    const int P = size_of();
    std::vector<std::int64_t> volume(static_cast<std::size_t>(P) * static_cast<std::size_t>(P), 0);
    for (std::int64_t i = 0; i < M; ++i) {
      for (std::int64_t j = 0; j < N; ++j) {
        rd::block_index at_src{}, at_dst{};
        at_src[0] = a.l.splits(0).block_of(transpose ? j : i);
        at_src[1] = a.l.splits(1).block_of(transpose ? i : j);
        at_dst[0] = b.l.splits(0).block_of(i);
        at_dst[1] = b.l.splits(1).block_of(j);
        volume[static_cast<std::size_t>(a.l.owner(at_src) * P + b.l.owner(at_dst))] += 8;
      }
    }
    for (rd::transport m : kTransports) {
      rd::plan_options o;
      o.transport = m;
      const long long allgathers_before = wire::allgathers;
      rd::plan p(t, MPI_COMM_WORLD, o);
      EXPECT_EQ(p.volume(), volume) << "trial " << trial;
      // No exchange of packing orders and volume rows (the plan's only MPI_Allgather).
      EXPECT_EQ(wire::allgathers, allgathers_before) << "trial " << trial;
      const std::vector<double> before = b.local;
      p.execute();
      std::int64_t wrong = 0;
      for (const rd::block_index& blk : b.l.blocks_of(me)) {
        const rd::block_storage st = b.l.storage(blk);
        for (std::int64_t i = 0; i < block_extent(b.l, blk, 0); ++i) {
          for (std::int64_t j = 0; j < block_extent(b.l, blk, 1); ++j) {
            const std::int64_t gi = b.l.splits(0).start(blk[0]) + i, gj = b.l.splits(1).start(blk[1]) + j;
            const double v = static_cast<double>(transpose ? gj * 1000 + gi : gi * 1000 + gj);
            const std::ptrdiff_t at =
                static_cast<double*>(st.data) + st.offset + i * st.strides[0] + j * st.strides[1] - b.local.data();
            wrong += b.local[static_cast<std::size_t>(at)] !=
                     (scaled ? 2 * v + 0.5 * before[static_cast<std::size_t>(at)] : v);
          }
        }
      }
      EXPECT_EQ(wrong, 0) << "trial " << trial << " " << M << "x" << N << (transpose ? " transposed" : "")
                          << (scaled ? " scaled" : "") << " storage mode " << mode << " " << rd::transport_name(m);
      // Restore the destination's values (elements hold their coordinates again).
      b.local = before;
    }
  }
}

// Arrays with a zero extent: layouts without blocks, plans that move nothing, on
// every transport; in a batch beside a transform that does move data.
TEST(Redistribute, EmptyArraysMoveNothing) {
  const int P = size_of();
  double unused = 7;
  const rd::layout cart_src = rd::layout::cartesian({0, 5}, {P, 1}, nullptr);
  const rd::layout cart_dst = rd::layout::cartesian({5, 0}, {1, P}, &unused);
  rd::layout::block_cyclic_params bp;
  bp.N = 7;
  bp.mb = bp.nb = 2;
  bp.pcol = P;
  bp.local = &unused;
  const rd::layout bc_src = rd::layout::block_cyclic(bp);
  bp.nb = 3;
  const rd::layout bc_dst = rd::layout::block_cyclic(bp);
  const rd::layout custom =
      rd::layout::custom({rd::axis_splits::regular(0, 3), rd::axis_splits::explicit_points({0, 2, 4})}, {});
  EXPECT_EQ(cart_src.blocks(), 0);
  EXPECT_TRUE(cart_dst.blocks_of(rank_of()).empty());
  EXPECT_EQ(custom.blocks(), 0);
  owned_layout a = random_layout({6, 5}, 21, 1), b = random_layout({6, 5}, 22, 1);
  std::vector<rd::transform> batch(4);
  batch[0].src = &cart_src;
  batch[0].dst = &cart_dst;
  batch[0].perm = {1, 0};
  batch[1].src = &bc_src;
  batch[1].dst = &bc_dst;
  batch[2].src = &custom;
  batch[2].dst = &custom;
  batch[2].beta = 1;
  batch[3].src = &a.l;
  batch[3].dst = &b.l;
  for (rd::transport m : kTransports) {
    rd::plan_options o;
    o.transport = m;
    for (std::size_t k = 0; k < 3; ++k) {  // each empty transform alone
      rd::plan p(batch[k], MPI_COMM_WORLD, o);
      p.execute();
      p.execute();
      EXPECT_EQ(std::count(p.volume().begin(), p.volume().end(), 0), static_cast<std::ptrdiff_t>(P) * P) << k;
    }
    rd::plan p(batch, MPI_COMM_WORLD, o);
    for_my_elements<double>(a, [&](const index_t& at, double* x) {
      *x = static_cast<double>(linear_index({6, 5}, at));
    });
    p.execute();
    std::int64_t wrong = 0;
    for_my_elements<double>(b, [&](const index_t& at, double* x) {
      wrong += *x != static_cast<double>(linear_index({6, 5}, at));
    });
    EXPECT_EQ(wrong, 0) << rd::transport_name(m);
    EXPECT_EQ(unused, 7);
  }
  EXPECT_THROW(rd::axis_splits::regular(-1, 2), error);
  EXPECT_THROW(rd::layout::cartesian({4, -1}, {1, 1}, nullptr), error);
}

// The C API: block-cyclic (1 x P grid, column-major local arrays) -> transposed
// Cartesian (P x 1) with alpha = 2 on every transport, then a custom layout with
// storage set per block, relabeling, and errors. The layout handles are freed
// before the plans run (plans keep their own references).
TEST(Redistribute, CApi) {
  const int P = size_of(), me = rank_of();
  // N >= P: the destination cuts N into P row blocks (N = 11 up to 11 ranks).
  const int64_t M = 13, N = std::max<int64_t>(11, P + 2), mb = 2, nb = 3;
  // Source: N in blocks of nb over P columns; this rank's local columns.
  int64_t lcols = 0;
  for (int64_t j = 0; j < N; ++j) lcols += (j / nb) % P == me;
  std::vector<double> a(static_cast<std::size_t>(M * std::max<int64_t>(lcols, 1)));
  for (int64_t j = 0, lj = 0; j < N; ++j) {
    if ((j / nb) % P != me) continue;
    for (int64_t i = 0; i < M; ++i) a[static_cast<std::size_t>(i + lj * M)] = static_cast<double>(i * 100 + j);
    ++lj;
  }
  conveyor_block_cyclic bc;
  conveyor_block_cyclic_init(&bc);
  bc.M = M;
  bc.N = N;
  bc.mb = mb;
  bc.nb = nb;
  bc.pcol = P;
  bc.local = a.data();
  bc.lld = M;
  // Destination: N x M cut into P row blocks.
  const int64_t dshape[2] = {N, M};
  const int grid[2] = {P, 1};
  const int64_t r0 = N / P * me + std::min<int64_t>(me, N % P), r1 = r0 + N / P + (me < N % P ? 1 : 0);
  std::vector<double> c(static_cast<std::size_t>(std::max<int64_t>(r1 - r0, 1) * M));
  const int perm[2] = {1, 0};
  for (int method = CONVEYOR_TRANSPORT_AUTO; method <= CONVEYOR_TRANSPORT_ALLTOALLV; ++method) {
    conveyor_layout src = nullptr, dst = nullptr;
    ASSERT_EQ(conveyor_layout_block_cyclic(&bc, &src), CONVEYOR_SUCCESS) << conveyor_last_error();
    ASSERT_EQ(conveyor_layout_cartesian(2, dshape, grid, c.data(), 0, nullptr, &dst), CONVEYOR_SUCCESS)
        << conveyor_last_error();
    conveyor_transform t = c_transform(src, dst);
    t.perm = perm;
    t.alpha = 2;
    conveyor_redistribute_options o = c_redistribute_options();
    o.transport = method;
    conveyor_redistribute_plan plan = nullptr;
    ASSERT_EQ(conveyor_redistribute_plan_create(&t, 1, MPI_COMM_WORLD, &o, &plan), CONVEYOR_SUCCESS)
        << conveyor_last_error();
    conveyor_layout_free(src);
    conveyor_layout_free(dst);
    int ran = -1;
    ASSERT_EQ(conveyor_redistribute_plan_transport(plan, &ran), CONVEYOR_SUCCESS);
    if (method != CONVEYOR_TRANSPORT_AUTO) {
      EXPECT_EQ(ran, method);
    }
    EXPECT_GT(ran, CONVEYOR_TRANSPORT_AUTO);
    std::fill(c.begin(), c.end(), std::nan(""));
    ASSERT_EQ(conveyor_redistribute_plan_execute(plan), CONVEYOR_SUCCESS) << conveyor_last_error();
    std::int64_t wrong = 0;
    for (int64_t i = r0; i < r1; ++i) {
      for (int64_t j = 0; j < M; ++j)
        wrong += c[static_cast<std::size_t>((i - r0) * M + j)] != 2.0 * static_cast<double>(j * 100 + i);
    }
    EXPECT_EQ(wrong, 0) << "transport " << method;
    std::vector<int64_t> volume(static_cast<std::size_t>(P) * static_cast<std::size_t>(P));
    ASSERT_EQ(conveyor_redistribute_plan_volume(plan, volume.data(), volume.size()), CONVEYOR_SUCCESS);
    EXPECT_EQ(std::accumulate(volume.begin(), volume.end(), int64_t{0}), M * N * 8);
    EXPECT_EQ(conveyor_redistribute_plan_volume(plan, volume.data(), volume.size() - 1), CONVEYOR_ERR_INVALID_ARGUMENT);
    conveyor_redistribute_plan_free(plan);
  }

  // Custom 1-D layout: P blocks of 3, block k on rank (k + 1) % P -> identity owners,
  // storage described per block; optimal relabeling finds the rotation.
  std::vector<int64_t> points;
  for (int k = 0; k <= P; ++k) points.push_back(3 * k);
  const int64_t* pts = points.data();
  const int64_t count = P + 1;
  std::vector<int> rotated(static_cast<std::size_t>(P)), identity(static_cast<std::size_t>(P));
  for (int k = 0; k < P; ++k) {
    rotated[static_cast<std::size_t>(k)] = (k + 1) % P;
    identity[static_cast<std::size_t>(k)] = k;
  }
  conveyor_layout x = nullptr, y = nullptr;
  ASSERT_EQ(conveyor_layout_custom(1, &pts, &count, rotated.data(), P, &x), CONVEYOR_SUCCESS) << conveyor_last_error();
  ASSERT_EQ(conveyor_layout_custom(1, &pts, &count, identity.data(), P, &y), CONVEYOR_SUCCESS) << conveyor_last_error();
  double xs[3], ys[3];
  const int64_t unit = 1, mine_x = (me + P - 1) % P, mine_y = me;
  ASSERT_EQ(conveyor_layout_set_storage(x, &mine_x, xs, &unit), CONVEYOR_SUCCESS) << conveyor_last_error();
  ASSERT_EQ(conveyor_layout_set_storage(y, &mine_y, ys, &unit), CONVEYOR_SUCCESS) << conveyor_last_error();
  for (int i = 0; i < 3; ++i) xs[i] = static_cast<double>(3 * mine_x + i);
  int64_t nblocks = -1;
  ASSERT_EQ(conveyor_layout_local_blocks(x, me, &nblocks), CONVEYOR_SUCCESS);
  EXPECT_EQ(nblocks, 1);
  conveyor_transform t = c_transform(x, y);
  conveyor_redistribute_options o = c_redistribute_options();
  o.relabel = CONVEYOR_RELABEL_OPTIMAL;
  conveyor_redistribute_plan plan = nullptr;
  ASSERT_EQ(conveyor_redistribute_plan_create(&t, 1, MPI_COMM_WORLD, &o, &plan), CONVEYOR_SUCCESS)
      << conveyor_last_error();
  ASSERT_EQ(conveyor_redistribute_plan_execute(plan), CONVEYOR_SUCCESS) << conveyor_last_error();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(ys[i], static_cast<double>(3 * me + i));
  std::vector<int> sigma(static_cast<std::size_t>(P));
  ASSERT_EQ(conveyor_redistribute_plan_sigma(plan, sigma.data(), sigma.size()), CONVEYOR_SUCCESS);
  EXPECT_EQ(sigma, rotated);  // destination block of rank r goes to the rank holding it
  conveyor_layout relabeled = nullptr;
  ASSERT_EQ(conveyor_redistribute_plan_relabeled_destination(plan, 0, &relabeled), CONVEYOR_SUCCESS);
  ASSERT_EQ(conveyor_layout_local_blocks(relabeled, me, &nblocks), CONVEYOR_SUCCESS);
  EXPECT_EQ(nblocks, 1);
  EXPECT_EQ(conveyor_redistribute_plan_relabeled_destination(plan, 1, &relabeled), CONVEYOR_ERR_INVALID_ARGUMENT);
  conveyor_layout_free(relabeled);
  conveyor_redistribute_plan_free(plan);

  // Errors: local ones at once, the plan's on every rank.
  conveyor_layout bad = nullptr;
  const int64_t shape9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  const int grid9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(conveyor_layout_cartesian(9, shape9, grid9, nullptr, 0, nullptr, &bad), CONVEYOR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(conveyor_layout_cartesian(2, shape9, grid9, nullptr, 0, nullptr, nullptr), CONVEYOR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(conveyor_layout_set_storage(x, &mine_x, xs, nullptr), CONVEYOR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bad, nullptr);
  o.relabel = 7;
  EXPECT_EQ(conveyor_redistribute_plan_create(&t, 1, MPI_COMM_WORLD, &o, &plan), CONVEYOR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(conveyor_last_error()).find("unknown relabeling"), std::string::npos) << conveyor_last_error();
  EXPECT_EQ(plan, nullptr);
  conveyor_redistribute_options_init(&o);
  o.transport = 99;
  EXPECT_EQ(conveyor_redistribute_plan_create(&t, 1, MPI_COMM_WORLD, &o, &plan), CONVEYOR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(conveyor_last_error()).find("unknown transport"), std::string::npos) << conveyor_last_error();
  conveyor_layout_free(x);
  conveyor_layout_free(y);
}

// ---------------------------------------------------------------------------
// Relabeling
// ---------------------------------------------------------------------------
double assignment_value(const std::vector<double>& g, int n, const std::vector<int>& s) {
  double v = 0;
  for (int i = 0; i < n; ++i) v += g[static_cast<std::size_t>(i * n + s[static_cast<std::size_t>(i)])];
  return v;
}

// Topology-aware relabeling (2 ranks per emulated node; moves within a node free):
// destination rank 0 gets 6 elements from rank 0 and 5 + 5 from ranks 2 and 3
// (node 1), rank 1 the same with rank 1, ranks 2 and 3 one element each from
// themselves. Counting bytes alone keeps the identity (14 elements stay local, 20
// cross nodes); counting nodes moves destinations 0 and 1 onto node 1 (12 + 2 cross).
TEST(Redistribute, TopologyAwareRelabelingKeepsBytesOnTheNode) {
  const int P = size_of();
  if (P < 4) GTEST_SKIP() << "needs two nodes of two ranks";
  struct run {
    int from, to;
    std::int64_t length;
  };
  const run runs[] = {{0, 0, 6}, {2, 0, 5}, {3, 0, 5}, {1, 1, 6}, {2, 1, 5}, {3, 1, 5}, {2, 2, 1}, {3, 3, 1}};
  std::vector<std::int64_t> points{0};
  std::vector<int> from, to;
  for (const run& r : runs) {
    points.push_back(points.back() + r.length);
    from.push_back(r.from);
    to.push_back(r.to);
  }
  rd::layout a = rd::layout::custom({rd::axis_splits::explicit_points(points)}, from);
  rd::layout b = rd::layout::custom({rd::axis_splits::explicit_points(points)}, to);
  std::vector<double> src_mem(64), dst_mem(64);  // each block at its global position
  for (auto [l, mem] : {std::pair{&a, &src_mem}, std::pair{&b, &dst_mem}}) {
    for (const auto& blk : l->blocks_of(rank_of()))
      l->set_storage(blk, mem->data() + points[static_cast<std::size_t>(blk[0])], {1});
  }
  rd::transform t;
  t.src = &a;
  t.dst = &b;
  rd::plan_options blind, aware;
  blind.relabel = aware.relabel = rd::relabeling::optimal;
  aware.ranks_per_node = blind.ranks_per_node = 2;
  aware.intra_node_cost = 0;
  rd::plan pb(t, MPI_COMM_WORLD, blind), pa(t, MPI_COMM_WORLD, aware);
  // Elements crossing nodes when destination rank j's data goes to sigma[j].
  const auto across_nodes = [&](const rd::plan& p) {
    std::int64_t bytes = 0;
    for (int i = 0; i < P; ++i) {
      for (int j = 0; j < P; ++j) {
        if (i / 2 != p.sigma()[static_cast<std::size_t>(j)] / 2)
          bytes += p.volume()[static_cast<std::size_t>(i * P + j)];
      }
    }
    return bytes / static_cast<std::int64_t>(sizeof(double));
  };
  EXPECT_EQ(across_nodes(pb), 20);
  EXPECT_EQ(across_nodes(pa), 14);
  EXPECT_EQ(pb.relabeled_remote_bytes() / 8, 20);  // the byte-count optimum: the identity
  EXPECT_GE(pa.relabeled_remote_bytes(),
            pb.relabeled_remote_bytes());  // aware gives up local bytes for node-local ones
}

TEST(Redistribute, OptimalAssignmentEqualsBruteForce) {
  testing::splitmix64 rng(77);
  for (int n = 1; n <= 7; ++n) {
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<double> g(static_cast<std::size_t>(n * n));
      for (auto& x : g) x = static_cast<double>(rng() % 1000) - 300;
      std::vector<int> perm(static_cast<std::size_t>(n));
      std::iota(perm.begin(), perm.end(), 0);
      double best = -1e300;
      do best = std::max(best, assignment_value(g, n, perm));
      while (std::next_permutation(perm.begin(), perm.end()));
      const auto s = rd::max_weight_assignment(g, n);
      std::vector<int> sorted = s;
      std::sort(sorted.begin(), sorted.end());
      for (int i = 0; i < n; ++i) ASSERT_EQ(sorted[static_cast<std::size_t>(i)], i);
      EXPECT_EQ(assignment_value(g, n, s), best) << "n=" << n << " trial " << trial;
    }
  }
}

TEST(Redistribute, RelabelingNeverMovesMoreThanGreedyOrNone) {
  // Destination = source with owners rotated: optimal relabeling makes everything local.
  const int P = size_of();
  owned_layout src = random_layout({12, 10}, 21, 1);
  testing::splitmix64 rng(21);
  std::vector<rd::axis_splits> splits = {random_splits(12, rng), random_splits(10, rng)};
  std::int64_t nb = splits[0].count() * splits[1].count();
  std::vector<int> owners(static_cast<std::size_t>(nb));
  for (auto& o : owners) o = static_cast<int>(rng() % static_cast<std::uint64_t>(P));
  std::vector<int> rotated(owners);
  for (auto& o : rotated) o = (o + 1) % P;
  rd::layout a = rd::layout::custom(splits, owners), b = rd::layout::custom(splits, rotated);
  std::vector<std::vector<double>> mem;
  for (auto* l : {&a, &b}) {
    for (const auto& blk : l->blocks_of(rank_of())) {
      const std::int64_t r = l->splits(0).start(blk[0] + 1) - l->splits(0).start(blk[0]);
      const std::int64_t cc = l->splits(1).start(blk[1] + 1) - l->splits(1).start(blk[1]);
      mem.emplace_back(static_cast<std::size_t>(r * cc));
      l->set_storage(blk, mem.back().data(), {cc, 1});
    }
  }
  rd::transform t;
  t.src = &a;
  t.dst = &b;
  std::int64_t moved[3];
  for (auto mode : {rd::relabeling::none, rd::relabeling::greedy, rd::relabeling::optimal}) {
    rd::plan_options o;
    o.relabel = mode;
    rd::plan p(t, MPI_COMM_WORLD, o);
    moved[static_cast<int>(mode)] = p.relabeled_remote_bytes();
    if (mode == rd::relabeling::none) {
      EXPECT_EQ(p.relabeled_remote_bytes(), p.remote_bytes());
    }
    if (mode == rd::relabeling::optimal) {
      EXPECT_EQ(p.relabeled_remote_bytes(), 0);  // the rotation is undone exactly
      // Adopting the relabeled layout: a plan to it moves nothing between ranks.
      rd::layout adopted = p.relabeled_destination();
      EXPECT_EQ(adopted.blocks_of(rank_of()), a.blocks_of(rank_of()));
    }
  }
  (void)src;
  EXPECT_LE(moved[2], moved[1]);
  EXPECT_LE(moved[1], moved[0]);
  // Every row of the table of relabelings (rd::relabelings()): in the enum's
  // order, a permutation sigma, never more bytes between ranks than none.
  const auto& table = rd::relabelings();
  ASSERT_EQ(table.size(), static_cast<std::size_t>(rd::relabeling_count));
  for (std::size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(static_cast<std::size_t>(table[i].mode), i);
    EXPECT_EQ(rd::parse_relabeling(table[i].name), table[i].mode);
    EXPECT_GT(std::strlen(table[i].summary), 20u) << table[i].name;
    rd::plan_options o;
    o.relabel = table[i].mode;
    rd::plan p(t, MPI_COMM_WORLD, o);
    std::vector<int> sorted = p.sigma();
    std::sort(sorted.begin(), sorted.end());
    for (int r = 0; r < P; ++r) EXPECT_EQ(sorted[static_cast<std::size_t>(r)], r) << table[i].name;
    EXPECT_LE(p.relabeled_remote_bytes(), moved[0]) << table[i].name;
  }
}

// ---------------------------------------------------------------------------
// Invalid layouts and transforms
// ---------------------------------------------------------------------------
using testing::expect_error_everywhere;

TEST(Redistribute, InvalidLayoutsAndTransforms) {
  EXPECT_THROW(rd::axis_splits::explicit_points({0, 3, 3, 5}), error);
  EXPECT_THROW(rd::axis_splits::explicit_points({1, 5}), error);
  EXPECT_THROW(rd::axis_splits::explicit_points({}), error);
  EXPECT_THROW(rd::axis_splits::regular(10, 0), error);
  EXPECT_THROW(rd::layout::custom({rd::axis_splits::regular(4, 2)}, {0}), error);  // 2 blocks, 1 owner
  EXPECT_THROW(rd::layout::cartesian({4, 4}, {5, 1}, nullptr), error);
  const int P = size_of(), me = rank_of();
  std::vector<double> buf(64);
  // Owner outside the communicator.
  {
    rd::layout a = rd::layout::custom({rd::axis_splits::regular(4, 4)}, {P});
    rd::layout b = rd::layout::custom({rd::axis_splits::regular(4, 4)}, {0});
    if (me == 0) b.set_storage(rd::block_index{}, buf.data(), {1});
    rd::transform t;
    t.src = &a;
    t.dst = &b;
    expect_error_everywhere([&] { rd::plan p(t, MPI_COMM_WORLD); }, "outside the communicator");
  }
  // A block this rank owns without storage (only the last rank forgets).
  {
    std::vector<int> owners(static_cast<std::size_t>(P));
    std::iota(owners.begin(), owners.end(), 0);
    rd::layout a = rd::layout::custom({rd::axis_splits::regular(P, 1)}, owners);
    rd::block_index mine{};
    mine[0] = me;
    if (me != P - 1) a.set_storage(mine, buf.data(), {1});
    rd::transform t;
    t.src = &a;
    t.dst = &a;
    expect_error_everywhere([&] { rd::plan p(t, MPI_COMM_WORLD); }, "no storage was described");
  }
  // Storage that overlaps: two blocks of rank 0 sharing an element, then a block
  // whose strides do not fit its extents.
  {
    rd::layout a = rd::layout::custom({rd::axis_splits::regular(4, 2), rd::axis_splits::regular(2, 2)}, {0, 0});
    rd::transform t;
    t.src = &a;
    t.dst = &a;
    if (me == 0) {
      a.set_storage({0, 0}, buf.data(), {2, 1});      // elements 0..3
      a.set_storage({1, 0}, buf.data() + 3, {2, 1});  // elements 3..6
    }
    expect_error_everywhere([&] { rd::plan p(t, MPI_COMM_WORLD); }, "blocks 0 and 1 of rank 0 overlap in memory");
    if (me == 0) a.set_storage({1, 0}, buf.data() + 4, {2, 1});  // 4..7: fine
    EXPECT_NO_THROW(rd::plan(t, MPI_COMM_WORLD));
    if (me == 0) a.set_storage({1, 0}, buf.data() + 4, {1, 1});  // 2 x 2 on 3 elements
    expect_error_everywhere([&] { rd::plan p(t, MPI_COMM_WORLD); }, "overlaps itself");
  }
  // A rank describing a block it does not own.
  if (P > 1) {
    rd::layout a = rd::layout::custom({rd::axis_splits::regular(4, 4)}, {0});
    if (me == 0 || me == P - 1) a.set_storage(rd::block_index{}, buf.data(), {1});
    rd::transform t;
    t.src = &a;
    t.dst = &a;
    expect_error_everywhere([&] { rd::plan p(t, MPI_COMM_WORLD); }, "which rank 0 owns");
  }
  // Block-cyclic: lld below the local rows (8 x 8 in 2 x 2 blocks, all on rank 0).
  {
    rd::layout::block_cyclic_params bc;
    bc.M = bc.N = 8;
    bc.mb = bc.nb = 2;
    bc.local = buf.data();
    bc.lld = 4;
    rd::layout a = rd::layout::block_cyclic(bc);
    rd::transform t;
    t.src = &a;
    t.dst = &a;
    expect_error_everywhere([&] { rd::plan p(t, MPI_COMM_WORLD); }, "lld 4 is below the 8 local rows");
  }
  // Shapes that do not match under the permutation; not a permutation; copy-only dtype with alpha.
  {
    rd::layout a = rd::layout::cartesian({4, 6}, {1, 1}, me == 0 ? buf.data() : nullptr);
    rd::layout b = rd::layout::cartesian({4, 6}, {1, 1}, me == 0 ? buf.data() : nullptr);
    rd::transform t;
    t.src = &a;
    t.dst = &b;
    t.perm = {1, 0};
    expect_error_everywhere([&] { rd::plan p(t, MPI_COMM_WORLD); }, "destination extent 4 in dimension 0");
    t.perm = {0, 0};
    expect_error_everywhere([&] { rd::plan p(t, MPI_COMM_WORLD); }, "not a permutation");
    t.perm = {};
    t.type = dtype::int32;
    t.alpha = 2;
    expect_error_everywhere([&] { rd::plan p(t, MPI_COMM_WORLD); }, "copy-only");
  }
}

// A plan owns its layouts: the caller's layout objects may be destroyed, or given
// other storage, after the plan is built, and the plan still moves the data the
// layouts described when it was built (mutation check: without the plan's own
// copies this reads freed memory or writes into `elsewhere`).
TEST(Redistribute, PlanOwnsItsLayouts) {
  const int P = size_of(), me = rank_of();
  std::vector<double> in(6, me + 1.0), out(6, -1.0), elsewhere(6, -2.0);
  std::vector<int> owners(static_cast<std::size_t>(P));
  std::iota(owners.begin(), owners.end(), 0);
  std::vector<int> rotated(static_cast<std::size_t>(P));
  for (int p = 0; p < P; ++p) rotated[static_cast<std::size_t>(p)] = (p + 1) % P;
  std::unique_ptr<rd::plan> plan;
  rd::layout dst = rd::layout::custom({rd::axis_splits::regular(6 * P, 6)}, rotated);
  dst.set_storage({(me + P - 1) % P}, out.data(), {1});
  {
    const rd::layout src = rd::layout::cartesian({6 * static_cast<std::int64_t>(P)}, {P}, in.data());
    rd::transform t;
    t.src = &src;
    t.dst = &dst;
    plan = std::make_unique<rd::plan>(t, MPI_COMM_WORLD);
  }                                                            // the source layout is gone
  dst.set_storage({(me + P - 1) % P}, elsewhere.data(), {1});  // the caller's layout changes
  plan->execute();
  const double from = static_cast<double>((me + P - 1) % P) + 1.0;  // block me-1 came from rank me-1
  EXPECT_EQ(out, std::vector<double>(6, from));
  EXPECT_EQ(elsewhere, std::vector<double>(6, -2.0));
}

}  // namespace
}  // namespace conveyor
