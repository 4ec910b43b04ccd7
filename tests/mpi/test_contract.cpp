// SPDX-License-Identifier: BSD-3-Clause
// The collective contract under a bad-input sweep (issue: "one contract for every
// collective entry point"). Each case gives a bad argument to ONE rank only, each
// rank in turn, through the C++ or the C interface: every rank must fail within
// seconds (a watchdog aborts the job otherwise), with the same error code and the
// same message, naming the bad rank for a local problem; then the same call with
// good arguments on the same communicator must work on every rank.
// Python's side of the sweep: tests/python/test_contract.py.
#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/collectives.hpp"
#include "conveyor/conveyor.h"
#include "conveyor/dsop.hpp"
#include "conveyor/redistribute.hpp"
#include "conveyor/sinkhorn.hpp"
#include "c_api_util.hpp"
#include "mpi_test_util.hpp"

namespace conveyor {
namespace {

using testing::c_redistribute_options;
using testing::c_transform;
using testing::rank_of;
using testing::size_of;
namespace rd = redistribute;
namespace sk = sinkhorn;

// One case: run(bad) makes the call, with the bad argument when `bad`. A case is
// `local` when the bad rank alone can see the problem (its message then names the
// rank); otherwise it is a mismatch between ranks.
struct sweep_case {
  std::string name;
  bool local;
  std::function<void(bool bad)> run;
};

// Aborts the whole job when a case takes longer than this: a hang is a failure.
constexpr double kSecondsPerCase = 20;

class watchdog {
 public:
  watchdog() : thread_([this] { watch(); }) {}
  ~watchdog() {
    stop_ = true;
    thread_.join();
  }
  void arm(const std::string& what) {
    what_ = what;
    deadline_ = now() + kSecondsPerCase;
  }
  void disarm() { deadline_ = 0; }

 private:
  static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  void watch() {
    while (!stop_) {
      const double d = deadline_;
      if (d > 0 && now() > d) {
        std::fprintf(stderr, "rank %d: case '%s' did not return within %.0f s: a collective hangs\n", rank_of(),
                     what_.c_str(), kSecondsPerCase);
        std::abort();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  std::atomic<bool> stop_{false};
  std::atomic<double> deadline_{0};
  std::string what_;
  std::thread thread_;
};

// The messages of all ranks, gathered on every rank.
std::vector<std::string> gather_strings(const std::string& mine) {
  std::vector<int> lengths;
  const std::vector<char> all = testing::gather_all(std::vector<char>(mine.begin(), mine.end()), &lengths);
  std::vector<std::string> out;
  std::size_t at = 0;
  for (int len : lengths) {
    out.emplace_back(all.data() + at, static_cast<std::size_t>(len));
    at += static_cast<std::size_t>(len);
  }
  return out;
}

// Runs every case with each rank in turn as the bad one; returns the number of runs.
int sweep(const std::vector<sweep_case>& cases) {
  watchdog dog;
  const int P = size_of(), me = rank_of();
  int runs = 0;
  for (const sweep_case& c : cases) {
    if (P == 1 && !c.local) continue;  // one rank cannot disagree with itself
    for (int bad_rank = 0; bad_rank < P; ++bad_rank) {
      const std::string what = c.name + " (bad on rank " + std::to_string(bad_rank) + ")";
      dog.arm(what);
      int code = 0;
      std::string message;
      try {
        c.run(me == bad_rank);
      } catch (const error& e) {
        code = static_cast<int>(e.code());
        message = std::to_string(code) + " " + e.what();
      }
      const auto all = gather_strings(message);
      EXPECT_NE(code, 0) << what << ": rank " << me << " did not fail";
      for (int p = 0; p < P; ++p)
        EXPECT_EQ(all[static_cast<std::size_t>(p)], message) << what << ": rank " << p << " differs";
      if (c.local && P > 1) {
        EXPECT_NE(message.find("rank " + std::to_string(bad_rank) + ":"), std::string::npos) << what << ": " << message;
      }
      // The communicator still works: the same call, good everywhere.
      std::string after;
      try {
        c.run(false);
      } catch (const error& e) {
        after = e.what();
      }
      EXPECT_EQ(after, "") << what << ": the good call afterwards failed";
      dog.disarm();
      ++runs;
    }
  }
  return runs;
}

// A C call as C++: a non-zero status becomes conveyor::error with the C message.
void c_call(int status) {
  if (status == CONVEYOR_SUCCESS) return;
  const std::string message = conveyor_last_error(), prefix = "conveyor: ";
  throw error(static_cast<errc>(status), message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message);
}

// The communicator every case runs on (a duplicate of world, kept for the whole sweep).
MPI_Comm sweep_comm() {
  static MPI_Comm comm = [] {
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    return c;
  }();
  return comm;
}

// ---------------------------------------------------------------------------
// Reduce engine: allreduce / reduce_scatter / allgather(v) with validation
// ---------------------------------------------------------------------------
std::vector<sweep_case> collective_cases() {
  std::vector<sweep_case> cs;
  const MPI_Comm comm = sweep_comm();
  const int P = size_of();
  // allreduce(options) with `mutate` applied on the bad rank.
  struct ar_args {
    const void* send;
    void* recv;
    std::size_t count;
    dtype t;
    op o;
    allreduce_options opt;
  };
  const auto allreduce_case = [&](const std::string& name, bool local, std::function<void(ar_args&)> mutate) {
    cs.push_back({"allreduce: " + name, local, [comm, mutate](bool bad) {
                    std::vector<float> x(64, 1.0f), y(64);
                    ar_args a{x.data(), y.data(), x.size(), dtype::float32, op::sum, {}};
                    a.opt.validate = true;
                    if (bad) mutate(a);
                    allreduce(a.send, a.recv, a.count, a.t, a.o, comm, a.opt);
                    if (!bad && y[0] != static_cast<float>(size_of())) throw error(errc::internal, "wrong sum");
                  }});
  };
  allreduce_case("null send", true, [](ar_args& a) { a.send = nullptr; });
  allreduce_case("null recv", true, [](ar_args& a) { a.recv = nullptr; });
  allreduce_case("partial overlap", true,
                 [](ar_args& a) { a.recv = static_cast<char*>(const_cast<void*>(a.send)) + 4; });
  allreduce_case("dtype out of range", true, [](ar_args& a) { a.t = static_cast<dtype>(99); });
  allreduce_case("op out of range", true, [](ar_args& a) { a.o = static_cast<op>(-1); });
  allreduce_case("band on float32", true, [](ar_args& a) { a.o = op::band; });
  allreduce_case("algorithm out of range", true,
                 [](ar_args& a) { a.opt.algorithm = static_cast<allreduce_algorithm>(17); });
  allreduce_case("ranks_per_node < 0", true, [](ar_args& a) { a.opt.ranks_per_node = -2; });
  allreduce_case("count overflows", true, [](ar_args& a) { a.count = std::numeric_limits<std::size_t>::max() / 2; });
  allreduce_case("different count", false, [](ar_args& a) { a.count = 63; });
  allreduce_case("different dtype", false, [](ar_args& a) { a.t = dtype::int32; });
  allreduce_case("different op", false, [](ar_args& a) { a.o = op::max; });
  allreduce_case("different algorithm", false, [](ar_args& a) { a.opt.algorithm = allreduce_algorithm::ring; });
  allreduce_case("different segment size", false, [](ar_args& a) { a.opt.segment_bytes = 4096; });
  allreduce_case("different deterministic flag", false, [](ar_args& a) { a.opt.deterministic = true; });
  allreduce_case("different ranks_per_node", false, [](ar_args& a) { a.opt.ranks_per_node = 1; });

  const auto rs_case = [&](const std::string& name, bool local,
                           std::function<void(std::vector<std::size_t>&, const void*&, dtype&, op&)> mutate) {
    cs.push_back({"reduce_scatter: " + name, local, [comm, P, mutate](bool bad) {
                    std::vector<std::size_t> counts(static_cast<std::size_t>(P), 3);
                    std::vector<double> x(3 * static_cast<std::size_t>(P), 1.0), y(3);
                    const void* send = x.data();
                    dtype t = dtype::float64;
                    op o = op::sum;
                    if (bad) mutate(counts, send, t, o);
                    reduce_scatter(send, y.data(), counts, t, o, comm, true);
                  }});
  };
  rs_case("one count too few", true, [](auto& c, auto&, auto&, auto&) { c.pop_back(); });
  rs_case("null send", true, [](auto&, auto& s, auto&, auto&) { s = nullptr; });
  rs_case("bxor on float64", true, [](auto&, auto&, auto&, auto& o) { o = op::bxor; });
  rs_case("different counts", false, [](auto& c, auto&, auto&, auto&) { c[0] = 2; });
  rs_case("different op", false, [](auto&, auto&, auto&, auto& o) { o = op::min; });

  const auto ag_case = [&](const std::string& name, bool local,
                           std::function<void(std::vector<std::size_t>&, void*&, dtype&)> mutate) {
    cs.push_back({"allgatherv: " + name, local, [comm, P, mutate](bool bad) {
                    std::vector<std::size_t> counts(static_cast<std::size_t>(P), 2);
                    std::vector<int> x(2, rank_of()), y(2 * static_cast<std::size_t>(P));
                    void* recv = y.data();
                    dtype t = dtype::int32;
                    if (bad) mutate(counts, recv, t);
                    allgatherv(x.data(), recv, counts, t, comm, true);
                  }});
  };
  ag_case("one count too many", true, [](auto& c, auto&, auto&) { c.push_back(1); });
  ag_case("null recv", true, [](auto&, auto& r, auto&) { r = nullptr; });
  ag_case("dtype out of range", true, [](auto&, auto&, auto& t) { t = static_cast<dtype>(14); });
  ag_case("different counts", false, [](auto& c, auto&, auto&) { c[0] = 1; });
  ag_case("different dtype", false, [](auto&, auto&, auto& t) { t = dtype::uint32; });
  return cs;
}

// ---------------------------------------------------------------------------
// Sinkhorn: scale, scale_in_place, transport (always agreed)
// ---------------------------------------------------------------------------
struct sk_args {
  std::size_t rows = 3, cols = 5, ld = 5;
  std::vector<double> A, r, c;
  double eps = 0.5;
  sk::options o;
  bool single = false;
  bool null_matrix = false;
  std::size_t plan_ld = 5;
};

sk_args sinkhorn_problem() {
  sk_args s;
  s.A.assign(s.rows * s.ld, 1.0);
  for (std::size_t i = 0; i < s.A.size(); ++i) s.A[i] = 1.0 + static_cast<double>((i * 7 + 3) % 5);
  s.r.assign(s.rows, 1.0 / (3.0 * size_of()));
  s.c.assign(s.cols, 1.0 / 5.0);
  s.o.max_iter = 50;
  s.o.tol = 1e-6;
  return s;
}

template <class T>
std::vector<T> as(const std::vector<double>& x) {
  return std::vector<T>(x.begin(), x.end());
}

template <class T>
void run_sinkhorn(sk_args& s, int which, MPI_Comm comm) {
  auto A = as<T>(s.A), r = as<T>(s.r), c = as<T>(s.c);
  T* a = s.null_matrix ? nullptr : A.data();
  if (which == 0) sk::scale(a, s.rows, s.cols, s.ld, r.data(), c.data(), comm, s.o);
  if (which == 1) sk::scale_in_place(a, s.rows, s.cols, s.ld, r.data(), c.data(), comm, s.o);
  if (which == 2) {
    std::vector<T> plan(s.rows * std::max(s.plan_ld, s.cols));
    sk::transport(a, s.rows, s.cols, s.ld, r.data(), c.data(), s.eps, comm, s.o, plan.data(), s.plan_ld);
  }
}

std::vector<sweep_case> sinkhorn_cases() {
  std::vector<sweep_case> cs;
  const MPI_Comm comm = sweep_comm();
  const char* names[] = {"sinkhorn::scale", "sinkhorn::scale_in_place", "sinkhorn::transport"};
  const auto add = [&](int which, const std::string& name, bool local, std::function<void(sk_args&)> mutate) {
    cs.push_back({std::string(names[which]) + ": " + name, local, [comm, which, mutate](bool bad) {
                    sk_args s = sinkhorn_problem();
                    if (bad) mutate(s);
                    if (s.single) run_sinkhorn<float>(s, which, comm);
                    else run_sinkhorn<double>(s, which, comm);
                  }});
  };
  for (int w = 0; w < 3; ++w) {
    add(w, "null matrix", true, [](sk_args& s) { s.null_matrix = true; });
    add(w, "ld < cols", true, [](sk_args& s) { s.ld = 4; });
    add(w, "negative tol", true, [](sk_args& s) { s.o.tol = -1; });
    add(w, "max_iter 0", true, [](sk_args& s) { s.o.max_iter = 0; });
    add(w, "threads < 0", true, [](sk_args& s) { s.o.threads = -3; });
    add(w, "different columns", false, [](sk_args& s) { s.cols = 4; });
    add(w, "different dtype", false, [](sk_args& s) { s.single = true; });
    add(w, "different max_iter", false, [](sk_args& s) { s.o.max_iter = 49; });
    add(w, "NaN in a row marginal (data)", true, [](sk_args& s) { s.r[1] = std::nan(""); });
  }
  add(0, "variant rewrites A (scale is read-only)", true, [](sk_args& s) { s.o.variant = sk::variant::typical; });
  add(1, "variant out of range", true, [](sk_args& s) { s.o.variant = static_cast<sk::variant>(9); });
  add(1, "init_u of the wrong length", true, [](sk_args& s) { s.o.init_u.assign(2, 1.0); });
  add(1, "different tol", false, [](sk_args& s) { s.o.tol = 1e-7; });
  add(0, "negative matrix entry (data)", true, [](sk_args& s) { s.A[2] = -1; });
  add(2, "eps = 0", true, [](sk_args& s) { s.eps = 0; });
  add(2, "plan ld < cols", true, [](sk_args& s) { s.plan_ld = 2; });
  add(2, "different eps", false, [](sk_args& s) { s.eps = 0.25; });
  add(2, "infinite cost (data)", true, [](sk_args& s) { s.A[4] = INFINITY; });
  add(2, "negative column marginal (data)", true, [](sk_args& s) { s.c[0] = -0.2; });
  return cs;
}

// ---------------------------------------------------------------------------
// DSOP (always agreed)
// ---------------------------------------------------------------------------
std::vector<sweep_case> outer_cases() {
  std::vector<sweep_case> cs;
  const MPI_Comm comm = sweep_comm();
  struct args {
    std::size_t N = 6, M = 4, G_count = 24;
    dtype t = dtype::float64;
    bool null_a = false;
    outer_options o;
  };
  const auto add = [&](const std::string& name, bool local, std::function<void(args&)> mutate) {
    cs.push_back({"outer_sum: " + name, local, [comm, mutate](bool bad) {
                    args x;
                    if (bad) mutate(x);
                    std::vector<double> a(x.N, 1.0), b(x.M, 2.0), G(std::max<std::size_t>(x.G_count, 1));
                    outer_sum(x.null_a ? nullptr : a.data(), x.N, b.data(), x.M, G.data(), x.G_count, x.t, comm, x.o);
                  }});
  };
  add("int32 dtype", true, [](args& x) { x.t = dtype::int32; });
  add("null a", true, [](args& x) { x.null_a = true; });
  add("G too small", true, [](args& x) { x.G_count = 23; });
  add("algorithm out of range", true, [](args& x) { x.o.algorithm = static_cast<outer_algorithm>(9); });
  add("matrix order out of range", true, [](args& x) { x.o.order = static_cast<matrix_order>(2); });
  add("allreduce ranks_per_node < 0", true, [](args& x) { x.o.allreduce.ranks_per_node = -1; });
  add("different N", false, [](args& x) {
    x.N = 5;
    x.G_count = 20;
  });
  add("different algorithm", false, [](args& x) { x.o.algorithm = outer_algorithm::ring; });
  add("different distributed flag", false, [](args& x) { x.o.distributed = true; });
  return cs;
}

// ---------------------------------------------------------------------------
// Redistribute plans (always agreed)
// ---------------------------------------------------------------------------
std::vector<sweep_case> plan_cases() {
  std::vector<sweep_case> cs;
  const MPI_Comm comm = sweep_comm();
  const int P = size_of();
  struct args {
    std::vector<std::int64_t> dst_shape;
    std::vector<int> dst_grid;
    std::vector<int> perm;
    bool null_src = false, null_storage = false;
    bool rotate_owners = false;  // destination blocks owned by the next rank
    dtype t = dtype::float64;
    double alpha = 1;
    rd::plan_options o;
  };
  const auto add = [&](const std::string& name, bool local, std::function<void(args&)> mutate) {
    cs.push_back(
        {"redistribute::plan: " + name, local, [comm, P, mutate](bool bad) {
           args x;
           x.dst_shape = {2, 4 * static_cast<std::int64_t>(P)};
           x.dst_grid = {1, P};
           if (bad) mutate(x);
           std::vector<double> in(8, 1.0), out(8);
           const rd::layout src = rd::layout::cartesian({4 * static_cast<std::int64_t>(P), 2}, {P, 1},
                                                        x.null_storage ? nullptr : in.data());
           rd::layout dst = rd::layout::cartesian(x.dst_shape, x.dst_grid, out.data());
           if (x.rotate_owners) {  // the same blocks, owned by the next rank
             std::vector<int> owners(static_cast<std::size_t>(P));
             for (int q = 0; q < P; ++q) owners[static_cast<std::size_t>(q)] = (q + 1) % P;
             dst = rd::layout::custom({rd::axis_splits::regular(2, 2), rd::axis_splits::regular(4 * P, 4)}, owners);
             dst.set_storage({0, (rank_of() + P - 1) % P}, out.data(), {4, 1});
           }
           rd::transform t;
           t.src = x.null_src ? nullptr : &src;
           t.dst = &dst;
           t.perm = x.perm.empty() ? std::vector<int>{1, 0} : x.perm;
           t.type = x.t;
           t.alpha = x.alpha;
           rd::plan p(t, comm, x.o);
           p.execute();
         }});
  };
  add("null source layout", true, [](args& x) { x.null_src = true; });
  add("null block storage", true, [](args& x) { x.null_storage = true; });
  add("perm not a permutation", true, [](args& x) { x.perm = {1, 1}; });
  add("extents do not match", true, [](args& x) { x.dst_shape[1] += 1; });
  add("transport out of range", true, [](args& x) { x.o.transport = static_cast<rd::transport>(11); });
  add("relabeling out of range", true, [](args& x) { x.o.relabel = static_cast<rd::relabeling>(5); });
  add("chunk_bytes 0", true, [](args& x) { x.o.chunk_bytes = 0; });
  add("alpha on a copy-only dtype", true, [](args& x) {
    x.t = dtype::int64;
    x.alpha = 2;
  });
  add("different dtype", false, [](args& x) { x.t = dtype::int64; });
  add("different alpha", false, [](args& x) { x.alpha = 3; });
  add("different transport", false, [](args& x) { x.o.transport = rd::transport::alltoallv; });
  add("different destination owners", false, [](args& x) { x.rotate_owners = true; });
  return cs;
}

// ---------------------------------------------------------------------------
// The C interface
// ---------------------------------------------------------------------------
std::vector<sweep_case> c_cases() {
  std::vector<sweep_case> cs;
  const MPI_Comm comm = sweep_comm();
  const int P = size_of();
  const auto add = [&](const std::string& name, bool local, std::function<void(bool)> run) {
    cs.push_back({"C " + name, local, std::move(run)});
  };
  const auto c_allreduce = [comm](conveyor_dtype t, size_t count, void* recv) {
    std::vector<double> x(16, 1.0), y(16);
    conveyor_allreduce_options o;
    conveyor_allreduce_options_init(&o);
    o.validate = 1;
    c_call(conveyor_allreduce(x.data(), recv ? recv : (count ? nullptr : y.data()), count, t, CONVEYOR_SUM, comm, &o,
                              nullptr));
  };
  std::vector<double> scratch(16);
  add("conveyor_allreduce: dtype out of range", true, [=](bool bad) mutable {
    c_allreduce(bad ? static_cast<conveyor_dtype>(42) : CONVEYOR_FLOAT64, 16, scratch.data());
  });
  add("conveyor_allreduce: null recv", true,
      [=](bool bad) mutable { c_allreduce(CONVEYOR_FLOAT64, 16, bad ? nullptr : scratch.data()); });
  add("conveyor_allreduce: different count", false,
      [=](bool bad) mutable { c_allreduce(CONVEYOR_FLOAT64, bad ? 15 : 16, scratch.data()); });
  add("conveyor_reduce_scatter: null counts", true, [comm, P](bool bad) {
    std::vector<size_t> counts(static_cast<std::size_t>(P), 2);
    std::vector<float> x(2 * static_cast<std::size_t>(P), 1), y(2);
    c_call(conveyor_reduce_scatter(x.data(), y.data(), bad ? nullptr : counts.data(), CONVEYOR_FLOAT32, CONVEYOR_SUM,
                                   comm, 1));
  });
  add("conveyor_allgatherv: null counts", true, [comm, P](bool bad) {
    std::vector<size_t> counts(static_cast<std::size_t>(P), 2);
    std::vector<float> x(2, 1), y(2 * static_cast<std::size_t>(P));
    c_call(conveyor_allgatherv(x.data(), y.data(), bad ? nullptr : counts.data(), CONVEYOR_FLOAT32, comm, 1));
  });
  for (int transport = 0; transport < 2; ++transport) {
    const std::string fn = transport ? "conveyor_sinkhorn_transport" : "conveyor_sinkhorn_scale";
    const auto run = [comm, transport](conveyor_dtype t, int variant) {
      sk_args s = sinkhorn_problem();
      conveyor_sinkhorn_options o;
      conveyor_sinkhorn_options_init(&o);
      o.max_iter = 50;
      o.variant = variant;
      std::vector<double> u(s.rows), v(s.cols);
      if (transport) {
        c_call(conveyor_sinkhorn_transport(t, s.A.data(), s.rows, s.cols, s.ld, s.r.data(), s.c.data(), 0.5, comm, &o,
                                           u.data(), v.data(), nullptr, 0, nullptr));
      } else {
        c_call(conveyor_sinkhorn_scale(t, s.A.data(), s.rows, s.cols, s.ld, s.r.data(), s.c.data(), comm, 0, &o,
                                       u.data(), v.data(), nullptr));
      }
    };
    add(fn + ": int32 dtype (checked before the C++ call)", true,
        [run](bool bad) { run(bad ? CONVEYOR_INT32 : CONVEYOR_FLOAT64, 0); });
    add(fn + ": dtype out of range", true,
        [run](bool bad) { run(bad ? static_cast<conveyor_dtype>(-7) : CONVEYOR_FLOAT64, 0); });
    add(fn + ": variant out of range", true, [run](bool bad) { run(CONVEYOR_FLOAT64, bad ? 12 : 0); });
  }
  add("conveyor_outer_sum: G too small", true, [comm](bool bad) {
    std::vector<double> a(3, 1), b(2, 1), G(6);
    c_call(
        conveyor_outer_sum(a.data(), 3, b.data(), 2, G.data(), bad ? 5 : 6, CONVEYOR_FLOAT64, comm, nullptr, nullptr));
  });
  add("conveyor_outer_sum: different M", false, [comm](bool bad) {
    std::vector<double> a(3, 1), b(3, 1), G(9);
    c_call(
        conveyor_outer_sum(a.data(), 3, b.data(), bad ? 3 : 2, G.data(), 9, CONVEYOR_FLOAT64, comm, nullptr, nullptr));
  });
  const auto create = [comm, P](bool null_transforms, bool null_result, int transport) {
    std::vector<double> in(4, 1.0), out(4);
    const int64_t shape[1] = {4 * static_cast<int64_t>(P)};
    const int grid[1] = {P};
    conveyor_layout src = nullptr, dst = nullptr;
    c_call(conveyor_layout_cartesian(1, shape, grid, in.data(), 0, nullptr, &src));
    c_call(conveyor_layout_cartesian(1, shape, grid, out.data(), 0, nullptr, &dst));
    conveyor_transform t = c_transform(src, dst);
    conveyor_redistribute_options o = c_redistribute_options();
    o.transport = transport;
    conveyor_redistribute_plan plan = nullptr;
    const int rc =
        conveyor_redistribute_plan_create(null_transforms ? nullptr : &t, 1, comm, &o, null_result ? nullptr : &plan);
    if (rc == CONVEYOR_SUCCESS) c_call(conveyor_redistribute_plan_execute(plan));
    conveyor_redistribute_plan_free(plan);
    conveyor_layout_free(src);
    conveyor_layout_free(dst);
    if (rc != CONVEYOR_SUCCESS) c_call(rc);
  };
  add("conveyor_redistribute_plan_create: null transforms", true, [create](bool bad) { create(bad, false, 0); });
  add("conveyor_redistribute_plan_create: null result", true, [create](bool bad) { create(false, bad, 0); });
  add("conveyor_redistribute_plan_create: transport out of range", true,
      [create](bool bad) { create(false, false, bad ? 99 : 0); });
  add("conveyor_redistribute_plan_create: different transport", false,
      [create](bool bad) { create(false, false, bad ? 2 : 0); });
  return cs;
}

int total_cases = 0;

TEST(Contract, ReduceEngineBadArgumentOnOneRank) {
  const auto cs = collective_cases();
  total_cases += static_cast<int>(cs.size());
  EXPECT_GT(sweep(cs), 0);
}

TEST(Contract, SinkhornBadArgumentOnOneRank) {
  const auto cs = sinkhorn_cases();
  total_cases += static_cast<int>(cs.size());
  EXPECT_GT(sweep(cs), 0);
}

TEST(Contract, OuterSumBadArgumentOnOneRank) {
  const auto cs = outer_cases();
  total_cases += static_cast<int>(cs.size());
  EXPECT_GT(sweep(cs), 0);
}

TEST(Contract, RedistributePlanBadArgumentOnOneRank) {
  const auto cs = plan_cases();
  total_cases += static_cast<int>(cs.size());
  EXPECT_GT(sweep(cs), 0);
}

TEST(Contract, CInterfaceBadArgumentOnOneRank) {
  const auto cs = c_cases();
  total_cases += static_cast<int>(cs.size());
  EXPECT_GT(sweep(cs), 0);
}

// The sweep's size is part of what it claims (at least 100 cases with Python's).
TEST(Contract, SweepSize) {
  if (rank_of() == 0) std::printf("collective contract sweep: %d C++ and C cases\n", total_cases);
  EXPECT_GE(total_cases, 80);
}

// Without validate, MPI's semantics: a local problem throws on its rank only (the
// test does it on every rank at once, so nobody waits).
TEST(Contract, UnvalidatedAllreduceThrowsLocally) {
  std::vector<float> x(8, 1.0f);
  try {
    allreduce(x.data(), nullptr, x.size(), dtype::float32, op::sum, sweep_comm());
    FAIL() << "no error";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
    EXPECT_EQ(std::string(e.what()).rfind("conveyor: allreduce: rank ", 0), 0u) << e.what();
    EXPECT_EQ(std::string(e.what()).find("conveyor: conveyor"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace conveyor
