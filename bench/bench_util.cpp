// SPDX-License-Identifier: BSD-3-Clause
#include "bench_util.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace conveyor::bench {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

double max_over_ranks(double t) {
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return t;
}

void collective_samples(std::vector<double>& out, int calls, const std::function<void()>& f) {
  for (int it = 0; it < calls; ++it) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    f();
    const double slowest = max_over_ranks(MPI_Wtime() - t0);
    if (it > 0) out.push_back(slowest);
  }
}

std::vector<std::vector<double>> interleaved_samples(const std::vector<std::function<void()>>& fns, int iterations,
                                                     int rounds) {
  rounds = std::max(1, std::min(rounds, iterations - 1));
  const int per_round = (iterations - 1 + rounds - 1) / rounds + 1;
  std::vector<std::vector<double>> out(fns.size());
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t i = 0; i < fns.size(); ++i) collective_samples(out[i], per_round, fns[i]);
  }
  return out;
}

summary summarize(std::vector<double> s) {
  summary out;
  if (s.empty()) return out;
  std::sort(s.begin(), s.end());
  const auto at = [&](double q) {
    const auto i = static_cast<std::size_t>(q * static_cast<double>(s.size() - 1) + 0.5);
    return s[std::min(i, s.size() - 1)];
  };
  out.median = s.size() % 2 ? s[s.size() / 2] : 0.5 * (s[s.size() / 2 - 1] + s[s.size() / 2]);
  out.p10 = at(0.1);
  out.p90 = at(0.9);
  return out;
}

void flush_caches() {
  // 3x a 32 MiB last-level cache, written then read so dirty lines are evicted too.
  static std::vector<unsigned char> junk(96u << 20);
  static unsigned char sink = 0;
  for (std::size_t i = 0; i < junk.size(); i += 64) junk[i] = static_cast<unsigned char>(i);
  unsigned char acc = 0;
  for (std::size_t i = 0; i < junk.size(); i += 64) acc ^= junk[i];
  sink ^= acc;
  asm volatile("" : : "r"(sink) : "memory");
}

report::report(std::string title, std::vector<std::string> columns)
    : title_(std::move(title)), columns_(std::move(columns)) {}

void report::add_row(std::vector<std::string> cells) {
  if (cells.size() != columns_.size()) throw std::logic_error("report: row width mismatch");
  rows_.push_back(std::move(cells));
}

void report::print() const {
  std::vector<std::size_t> width(columns_.size());
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    width[c] = columns_[c].size();
    for (const auto& r : rows_) width[c] = std::max(width[c], r[c].size());
  }
  std::printf("\n%s\n", title_.c_str());
  const auto line = [&](const std::vector<std::string>& cells) {
    for (std::size_t c = 0; c < cells.size(); ++c) {
      // First column left-aligned (labels), the rest right-aligned (numbers).
      if (c == 0) std::printf("%-*s", static_cast<int>(width[c]), cells[c].c_str());
      else std::printf("  %*s", static_cast<int>(width[c]), cells[c].c_str());
    }
    std::printf("\n");
  };
  line(columns_);
  for (const auto& r : rows_) line(r);
  for (const auto& n : notes_) std::printf("note: %s\n", n.c_str());
  std::fflush(stdout);
}

namespace {

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::ofstream open_or_throw(const std::string& path) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path);
  return f;
}

}  // namespace

void report::write_csv(const std::string& path) const {
  auto f = open_or_throw(path);
  for (std::size_t c = 0; c < columns_.size(); ++c) f << (c ? "," : "") << csv_cell(columns_[c]);
  f << "\n";
  for (const auto& r : rows_) {
    for (std::size_t c = 0; c < r.size(); ++c) f << (c ? "," : "") << csv_cell(r[c]);
    f << "\n";
  }
}

void report::write_json(const std::string& path) const {
  auto f = open_or_throw(path);
  f << "{\n  \"title\": " << json_string(title_) << ",\n  \"columns\": [";
  for (std::size_t c = 0; c < columns_.size(); ++c) f << (c ? ", " : "") << json_string(columns_[c]);
  f << "],\n  \"rows\": [\n";
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    f << "    [";
    for (std::size_t c = 0; c < rows_[i].size(); ++c) f << (c ? ", " : "") << json_string(rows_[i][c]);
    f << "]" << (i + 1 < rows_.size() ? "," : "") << "\n";
  }
  f << "  ],\n  \"notes\": [";
  for (std::size_t i = 0; i < notes_.size(); ++i) f << (i ? ", " : "") << json_string(notes_[i]);
  f << "]\n}\n";
}

std::string format_fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string format_bytes(std::size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, v == static_cast<double>(static_cast<long long>(v)) ? "%.0f %s" : "%.1f %s", v,
                units[u]);
  return buf;
}

void report::publish(const std::string& json_path, const std::string& csv_path) const {
  if (world_rank() != 0) return;
  print();
  if (!json_path.empty()) write_json(json_path);
  if (!csv_path.empty()) write_csv(csv_path);
}

}  // namespace conveyor::bench
