// SPDX-License-Identifier: BSD-3-Clause
// `conveyor bench reduce` (see reduce_bench.hpp).
//
// Method, following the vector-reductions paper: for each (op, dtype) case and
// each buffer size, caches are flushed, then every implementation is calibrated to
// ~0.2 ms per sample and sampled `reps` times, interleaved (one sample of each
// implementation per round) so slow drifts of a shared machine hit all of them
// alike. All use the two-buffer form inout = in op inout. GB/s counts the bytes an
// implementation must move: 3x the buffer size for a reduction (two reads, one
// write), 2x for memcpy.
#include "reduce_bench.hpp"

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "conveyor/mpi.hpp"
#include "conveyor/reduce.hpp"
#include "plain_loops.hpp"

namespace conveyor::bench {
namespace {

struct bench_case {
  op o;
  dtype t;
  std::function<void(const void*, void*, std::size_t)> plain;  // count in elements
};

// A typed plain loop as the case's type-erased baseline.
template <class T>
std::function<void(const void*, void*, std::size_t)> typed(void (*loop)(const T*, T*, std::size_t)) {
  return [loop](const void* in, void* io, std::size_t n) { loop(static_cast<const T*>(in), static_cast<T*>(io), n); };
}

std::vector<bench_case> cases() {
  return {
      {op::sum, dtype::float32, typed(&plain_sum_f32)},
      {op::sum, dtype::float64, typed(&plain_sum_f64)},
      {op::sum, dtype::int8, typed(&plain_sum_i8)},
      {op::band, dtype::uint8, typed(&plain_band_u8)},
      // No MPI op means logaddexp: its rows have no MPI_Reduce_local baseline.
      {op::logaddexp, dtype::float32, typed(&plain_logaddexp_f32)},
      {op::logaddexp, dtype::float64, typed(&plain_logaddexp_f64)},
  };
}

struct impl {
  std::string name;
  double bytes_factor;  // bytes moved per buffer byte
  std::function<void()> run;
  std::string target;  // a SIMD target to switch to while this row runs; empty: the active one
};

// Fills a buffer so repeated sums stay finite and normal (small positive values).
void fill(std::vector<unsigned char>& buf, dtype t) {
  const std::size_t size = dtype_size(t);
  for (std::size_t i = 0; i + size <= buf.size(); i += size) {
    if (t == dtype::float32) {
      const float v = 1e-3f * static_cast<float>(i % 7 + 1);
      std::memcpy(&buf[i], &v, size);
    } else if (t == dtype::float64) {
      const double v = 1e-3 * static_cast<double>(i % 7 + 1);
      std::memcpy(&buf[i], &v, size);
    } else {
      buf[i] = static_cast<unsigned char>(0xF0 | (i % 13));
    }
  }
}

std::string mpi_library_name() {
#if defined(OPEN_MPI)
  return "Open MPI";
#elif defined(MPICH_VERSION)
  return "MPICH";
#else
  return "MPI";
#endif
}

}  // namespace

int run_reduce_bench(const reduce_bench_options& opt) {
  const simd_info simd = simd_targets();
  const std::string active = simd.active;
  const std::string mpi_name = "MPI_Reduce_local (" + mpi_library_name() + ")";
  report rep("conveyor bench reduce: inout = in op inout, median of " + std::to_string(opt.reps) +
                 " samples; Conveyor SIMD target " + simd.active,
             {"case", "size", "implementation", "median_us", "p10_us", "p90_us", "GB/s", "x_vs_MPI", "x_vs_loop"});
  rep.add_note(
      "GB/s counts 3x the buffer size for reductions (read in, read inout, write inout) "
      "and 2x for memcpy; x_vs_* = baseline median time / this median time");
  rep.add_note(
      "plain loop = `inout[i] += in[i]` (or &=, or max + log1p(exp(min - max)) with libm for logaddexp) compiled -O3 "
      "for the active SIMD target (" +
      plain_loop_target() + ")");

  for (const bench_case& c : cases()) {
    const std::string case_name = std::string(op_name(c.o)) + "/" + std::string(dtype_name(c.t));
    if (!opt.only_case.empty() && opt.only_case != case_name) continue;
    const MPI_Datatype mdt = mpi_datatype(c.t);
    const bool mpi_has_op = c.o != op::logaddexp;
    const MPI_Op mop = mpi_has_op ? mpi_builtin_op(c.o) : MPI_OP_NULL;
    const std::size_t esize = dtype_size(c.t);

    for (std::size_t bytes = opt.min_bytes; bytes <= opt.max_bytes;) {
      const std::size_t n = bytes / esize;
      std::vector<unsigned char> in(bytes), inout(bytes), copy_dst(bytes);
      fill(in, c.t);
      fill(inout, c.t);

      std::vector<impl> impls;
      impls.push_back({"conveyor", 3.0, [&] { reduce_local(in.data(), inout.data(), n, c.t, c.o); }, ""});
      if (mpi_has_op) {
        impls.push_back(
            {mpi_name, 3.0, [&] { MPI_Reduce_local(in.data(), inout.data(), static_cast<int>(n), mdt, mop); }, ""});
      }
      impls.push_back({"plain loop -O3", 3.0, [&] { c.plain(in.data(), inout.data(), n); }, ""});
      impls.push_back({"memcpy", 2.0, [&] { std::memcpy(copy_dst.data(), in.data(), bytes); }, ""});
      // --all-targets: Conveyor on every runnable target, in the same rounds (the
      // target is switched outside the timed batch and switched back after it).
      if (opt.all_targets) {
        for (const std::string& target : simd.supported) {
          impls.push_back(
              {"conveyor " + target, 3.0, [&] { reduce_local(in.data(), inout.data(), n, c.t, c.o); }, target});
        }
      }

      flush_caches();
      // Calibrate each implementation, then sample them round-robin.
      std::vector<std::vector<double>> samples(impls.size());
      std::vector<std::size_t> iters(impls.size());
      for (std::size_t k = 0; k < impls.size(); ++k) {
        if (!impls[k].target.empty()) set_simd_target(impls[k].target);
        const auto probe = time_per_call(impls[k].run, 1);
        iters[k] = std::max<std::size_t>(1, static_cast<std::size_t>(2e-4 / std::max(probe[0], 1e-9)));
        if (!impls[k].target.empty()) set_simd_target(active);
      }
      for (int r = 0; r < opt.reps; ++r) {
        for (std::size_t k = 0; k < impls.size(); ++k) {
          if (!impls[k].target.empty()) set_simd_target(impls[k].target);
          const double t0 = now_seconds();
          for (std::size_t i = 0; i < iters[k]; ++i) impls[k].run();
          samples[k].push_back((now_seconds() - t0) / static_cast<double>(iters[k]));
          if (!impls[k].target.empty()) set_simd_target(active);
        }
      }

      std::vector<summary> sums;
      for (auto& s : samples) sums.push_back(summarize(s));
      const double t_mpi = mpi_has_op ? sums[1].median : 0, t_loop = sums[mpi_has_op ? 2 : 1].median;
      const auto add = [&](const std::string& name, double factor, const summary& s) {
        rep.add_row({case_name, format_bytes(bytes), name, format_fixed(s.median * 1e6, 3),
                     format_fixed(s.p10 * 1e6, 3), format_fixed(s.p90 * 1e6, 3),
                     format_fixed(factor * static_cast<double>(bytes) / s.median / 1e9, 2),
                     t_mpi > 0 ? format_fixed(t_mpi / s.median, 2) : "-", format_fixed(t_loop / s.median, 2)});
      };
      for (std::size_t k = 0; k < impls.size(); ++k) add(impls[k].name, impls[k].bytes_factor, sums[k]);

      if (bytes == opt.max_bytes) break;
      // Every 2^k and 3*2^k (2^k -> 3*2^(k-1) -> 2^(k+1)), or a fixed step.
      const std::size_t next = opt.size_step > 0            ? bytes * opt.size_step
                               : (bytes & (bytes - 1)) == 0 ? bytes / 2 * 3
                                                            : bytes / 3 * 4;
      bytes = next > opt.max_bytes || next <= bytes ? opt.max_bytes : next;
    }
  }
  rep.publish(opt.json_path, opt.csv_path);  // (run on rank 0 only)
  return 0;
}

}  // namespace conveyor::bench
