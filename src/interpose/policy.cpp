// SPDX-License-Identifier: BSD-3-Clause
#include "interpose/policy.hpp"

#include <mpi.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "conveyor/settings.hpp"

namespace conveyor::interpose {
namespace {

constexpr std::array<std::string_view, call_count> kCallNames = {
    "allreduce",  "reduce_scatter_block", "reduce_scatter", "allgather",
    "allgatherv", "reduce_local",         "alltoall",       "alltoallv",
    "alltoallw"};
constexpr std::array<std::string_view, call_count> kMpiNames = {
    "MPI_Allreduce",  "MPI_Reduce_scatter_block", "MPI_Reduce_scatter", "MPI_Allgather",
    "MPI_Allgatherv", "MPI_Reduce_local",         "MPI_Alltoall",       "MPI_Alltoallv",
    "MPI_Alltoallw"};
constexpr std::array<std::string_view, pass_reason_count> kReasonNames = {
    "off",  "not selected", "below threshold", "empty",    "op",
    "type", "intercomm",    "arguments",       "internal", "measured faster"};

[[noreturn]] void refuse(const std::string& name, const std::string& value, const std::string& expected) {
  std::fprintf(stderr, "conveyor_mpi: %s=%s is not valid: expected %s\n", name.c_str(), value.c_str(),
               expected.c_str());
  std::fflush(stderr);
  // The launcher forwards output through a pipe and drops what is still in it when
  // the abort kills the job (seen with MPICH's hydra under load): let it drain.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  PMPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

bool flag(const char* name, bool fallback) {
  const auto v = setting(name);
  if (!v) return fallback;
  if (*v == "0") return false;
  if (*v == "1") return true;
  refuse(name, *v, "0 or 1");
}

// Bytes: a whole number, optionally with k, m or g (KiB, MiB, GiB).
std::size_t bytes_setting(const char* name) {
  const std::optional<std::string> v = setting_or_default(name);
  std::size_t value = 0, i = 0;
  for (; i < v->size() && (*v)[i] >= '0' && (*v)[i] <= '9'; ++i)
    value = value * 10 + static_cast<std::size_t>((*v)[i] - '0');
  const std::string unit = v->substr(i);
  if (i == 0 || i > 18) refuse(name, *v, "a number of bytes (optionally with k, m or g)");
  if (unit.empty()) return value;
  if (unit == "k" || unit == "K") return value << 10;
  if (unit == "m" || unit == "M") return value << 20;
  if (unit == "g" || unit == "G") return value << 30;
  refuse(name, *v, "a number of bytes (optionally with k, m or g)");
}

// "default": every call but MPI_Alltoall and MPI_Alltoallv. Their contiguous
// form is what the MPI libraries' own shared-memory paths do well: served, an
// unmodified loop still runs slower than the library at some sizes (docs/results.md,
// "The all-to-all family"), and a program preloading Conveyor must not get slower.
// They are served when named (or with "all"). MPI_Alltoallw, whose derived
// datatypes the libraries walk slowly, is served by default.
void calls_setting(policy& p) {
  const auto v = setting("CONVEYOR_MPI_CALLS");
  if (v && *v == "all") return;
  if (!v || *v == "default") {
    p.serves[static_cast<int>(call::alltoall)] = p.serves[static_cast<int>(call::alltoallv)] = false;
    return;
  }
  for (bool& s : p.serves) s = false;
  std::string_view rest = *v;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view name = rest.substr(0, comma);
    bool known = false;
    for (int c = 0; c < call_count; ++c) {
      if (kCallNames[static_cast<std::size_t>(c)] == name) p.serves[c] = known = true;
    }
    if (!known) {
      std::string valid = "all, default or a comma list of";
      for (std::string_view n : kCallNames) valid += " " + std::string(n);
      refuse("CONVEYOR_MPI_CALLS", *v, valid);
    }
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
}

struct counters {
  std::atomic<std::uint64_t> served[call_count] = {};
  std::atomic<std::uint64_t> bytes[call_count] = {};
  std::atomic<std::uint64_t> staged[call_count] = {};
  std::atomic<std::uint64_t> passed[call_count][pass_reason_count] = {};
  std::atomic<std::uint64_t> algorithms[allreduce_algorithm_count] = {};
  std::atomic<std::uint64_t> decoded = {};
  std::atomic<std::uint64_t> node_memory = {};
  std::atomic<std::uint64_t> shared_windows = {};
};
counters g_counts;

void add(std::atomic<std::uint64_t>& c, std::uint64_t n) { c.fetch_add(n, std::memory_order_relaxed); }

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  char s[32];
  std::snprintf(s, sizeof s, u ? "%.1f %s" : "%.0f %s", b, units[u]);
  return s;
}

}  // namespace

const policy& current_policy() {
  static const policy p = [] {
    policy q;
    q.on = flag("CONVEYOR_MPI", true);
    calls_setting(q);
    q.min_bytes = bytes_setting("CONVEYOR_MPI_MIN_BYTES");
    q.report = flag("CONVEYOR_MPI_REPORT", false);
    if (q.report) arrange_report_at_finalize();
    return q;
  }();
  return p;
}

// The counters feed CONVEYOR_MPI_REPORT only, so they count only when it is on:
// each is an atomic add, and three of them were most of what the interposer added
// to a small served allreduce (bench/wrapper_cost.cpp, docs/results.md).
void count_served(call c, std::size_t bytes, bool staged) {
  if (!current_policy().report) return;
  const auto i = static_cast<std::size_t>(c);
  add(g_counts.served[i], 1);
  add(g_counts.bytes[i], bytes);
  if (staged) add(g_counts.staged[i], 1);
}

void count_algorithm(allreduce_algorithm a) {
  if (current_policy().report) add(g_counts.algorithms[static_cast<std::size_t>(a)], 1);
}

void count_decoded(int types) {
  if (types && current_policy().report) add(g_counts.decoded, static_cast<std::uint64_t>(types));
}

void count_shared_window() {
  if (current_policy().report) add(g_counts.shared_windows, 1);
}

void count_node_memory() {
  if (current_policy().report) add(g_counts.node_memory, 1);
}

void count_passed(call c, pass_reason why) {
  if (current_policy().report) add(g_counts.passed[static_cast<std::size_t>(c)][static_cast<std::size_t>(why)], 1);
}

namespace {

std::vector<std::uint64_t> my_counts() {
  std::vector<std::uint64_t> mine;
  for (int c = 0; c < call_count; ++c) {
    mine.push_back(g_counts.served[c].load());
    mine.push_back(g_counts.bytes[c].load());
    mine.push_back(g_counts.staged[c].load());
    for (int r = 0; r < pass_reason_count; ++r) mine.push_back(g_counts.passed[c][r].load());
  }
  for (int a = 0; a < allreduce_algorithm_count; ++a) mine.push_back(g_counts.algorithms[a].load());
  mine.push_back(g_counts.decoded.load());
  mine.push_back(g_counts.node_memory.load());
  mine.push_back(g_counts.shared_windows.load());
  return mine;
}

// The report's lines for counts laid out as my_counts() lays them out.
std::string format_report(const std::vector<std::uint64_t>& sum, const std::string& heading) {
  std::string out = "conveyor_mpi report (" + heading + ")\n";
  std::size_t k = 0;
  for (int c = 0; c < call_count; ++c) {
    const std::uint64_t served = sum[k], bytes = sum[k + 1], staged = sum[k + 2];
    k += 3;
    std::string passed;
    std::uint64_t passed_total = 0;
    for (int r = 0; r < pass_reason_count; ++r, ++k) {
      if (!sum[k]) continue;
      passed_total += sum[k];
      passed += (passed.empty() ? "" : ", ") + std::string(kReasonNames[static_cast<std::size_t>(r)]) + " " +
                std::to_string(sum[k]);
    }
    if (!served && !passed_total) continue;
    char line[256];
    std::snprintf(line, sizeof line, "  %-25s served %llu (%s, %llu staged), passed to MPI %llu",
                  kMpiNames[static_cast<std::size_t>(c)].data(), static_cast<unsigned long long>(served),
                  human_bytes(static_cast<double>(bytes)).c_str(), static_cast<unsigned long long>(staged),
                  static_cast<unsigned long long>(passed_total));
    out += line;
    out += passed.empty() ? "\n" : " (" + passed + ")\n";
  }
  std::string algs;
  for (int a = 0; a < allreduce_algorithm_count; ++a, ++k) {
    if (sum[k])
      algs += " " + std::string(algorithm_name(static_cast<allreduce_algorithm>(a))) + " " + std::to_string(sum[k]);
  }
  if (!algs.empty()) out += "  allreduce algorithms:" + algs + "\n";
  if (sum[k]) out += "  derived datatypes decoded " + std::to_string(sum[k]) + " (each once while it lives)\n";
  if (sum[k + 1]) out += "  MPI_Alloc_mem in node memory " + std::to_string(sum[k + 1]) + "\n";
  if (sum[k + 2]) out += "  MPI_Win_allocate_shared windows noted " + std::to_string(sum[k + 2]) + "\n";
  return out;
}

std::atomic<bool> g_reported{false};

// MPI_COMM_SELF's attributes are deleted first thing in MPI_Finalize, whichever
// entry point the program called: a program whose MPI_Finalize bypasses the
// interposed symbol (MPICH's `use mpi_f08` calls PMPI_Finalize) still gets a report,
// one per process (the other processes may not have registered, so no collective).
int report_at_finalize(MPI_Comm, int, void*, void*) {
  if (g_reported.exchange(true)) return MPI_SUCCESS;
  int rank = 0, size = 1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::string out = format_report(my_counts(), "process " + std::to_string(rank) + " of " + std::to_string(size) +
                                                         ", this process only: MPI_Finalize was not intercepted");
  std::fputs(out.c_str(), stderr);
  std::fflush(stderr);
  return MPI_SUCCESS;
}

}  // namespace

void arrange_report_at_finalize() {
  int initialized = 0, finalized = 0;
  PMPI_Initialized(&initialized);
  PMPI_Finalized(&finalized);
  if (!initialized || finalized) return;
  int keyval = MPI_KEYVAL_INVALID;
  if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, report_at_finalize, &keyval, nullptr) != MPI_SUCCESS) return;
  PMPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr);
}

void print_report() {
  if (g_reported.exchange(true)) return;
  const std::vector<std::uint64_t> mine = my_counts();
  std::vector<std::uint64_t> sum(mine.size());
  int rank = 0, size = 1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  PMPI_Reduce(mine.data(), sum.data(), static_cast<int>(mine.size()), MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank != 0) return;
  const std::string out = format_report(sum, std::to_string(size) + " processes, summed");
  std::fputs(out.c_str(), stderr);
  std::fflush(stderr);
}

}  // namespace conveyor::interpose
