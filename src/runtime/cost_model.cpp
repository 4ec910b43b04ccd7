// SPDX-License-Identifier: BSD-3-Clause
// The tune file every engine's cost model reads, and the terms they share
// (cost_model.hpp).
#include "runtime/cost_model.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <mutex>
#include <sstream>

#include "conveyor/types.hpp"
#include "conveyor/settings.hpp"
#include "runtime/context.hpp"

namespace conveyor {

// ---------------------------------------------------------------------------
// The tune file (CONVEYOR_TUNE_FILE; written by `conveyor tune`)
// ---------------------------------------------------------------------------
cost_model parse_cost_model(const std::string& text) {
  cost_model p;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream ls(line);
    std::string key;
    double value = 0;
    if (!(ls >> key)) continue;
    if (!(ls >> value) || !(value >= 0)) {
      throw error(errc::invalid_argument,
                  "tune file line " + std::to_string(lineno) + ": '" + key + "' needs a non-negative number");
    }
    if (key == "intra_alpha") p.intra_alpha = value;
    else if (key == "intra_beta") p.intra_beta = value;
    else if (key == "inter_alpha") p.inter_alpha = value;
    else if (key == "inter_beta") p.inter_beta = value;
    else if (key == "gamma") p.gamma = value;
    else if (key == "copy_beta") p.copy_beta = value;
    else if (key == "shared_alpha") p.shared_alpha = value;
    else if (key == "segment_bytes") p.segment_bytes = static_cast<std::size_t>(std::max(1.0, value));
    else if (key == "window") p.window = std::max(1, static_cast<int>(value));
    else if (key == "intra_piece_bytes") p.intra_piece_bytes = static_cast<std::size_t>(value);
    else if (key == "inter_piece_bytes") p.inter_piece_bytes = static_cast<std::size_t>(value);
    else
      throw error(errc::invalid_argument, "tune file line " + std::to_string(lineno) + ": unknown key '" + key + "'");
  }
  return p;
}

std::string format_cost_model(const cost_model& p) {
  std::ostringstream o;
  o.precision(6);
  o << "# Conveyor cost model (seconds per message, seconds per byte); see docs/algorithms.md\n"
    << "intra_alpha " << p.intra_alpha << "\nintra_beta " << p.intra_beta << "\n"
    << "inter_alpha " << p.inter_alpha << "\ninter_beta " << p.inter_beta << "\n"
    << "gamma " << p.gamma << "\ncopy_beta " << p.copy_beta << "\nshared_alpha " << p.shared_alpha << "\nsegment_bytes "
    << p.segment_bytes << "\nwindow " << p.window << "\nintra_piece_bytes " << p.intra_piece_bytes
    << "\ninter_piece_bytes " << p.inter_piece_bytes << "\n";
  return o.str();
}

namespace {
// Set once the tune file was read without a problem: later calls return at once
// (std::call_once and the failure check cost a few percent of a small allreduce).
std::atomic<const cost_model*> g_loaded{nullptr};
}  // namespace

const cost_model& current_cost_model() {
  if (const cost_model* p = g_loaded.load(std::memory_order_acquire)) return *p;
  static std::once_flag once;
  static cost_model params;
  static std::string failure;
  std::call_once(once, [] {
    const auto file = setting("CONVEYOR_TUNE_FILE");
    if (!file) return;
    const char* path = file->c_str();
    std::ifstream f(path);
    if (!f) {
      failure = std::string("CONVEYOR_TUNE_FILE=") + path + " cannot be read";
      return;
    }
    std::stringstream ss;
    ss << f.rdbuf();
    try {
      params = parse_cost_model(ss.str());
    } catch (const error& e) {
      failure = std::string(path) + ": " + e.message();
    }
  });
  if (!failure.empty()) throw error(errc::invalid_argument, failure);
  g_loaded.store(&params, std::memory_order_release);
  return params;
}

namespace detail {

link_params flat_link(const node_layout& layout, const cost_model& p) {
  return layout.nodes > 1 ? inter_node_link(p) : intra_node_link(p);
}

int pow2_floor(int p) {
  int q = 1;
  while (q * 2 <= p) q *= 2;
  return q;
}

double ring_allreduce_seconds(double n, int g, const link_params& l, double gamma) {
  if (g <= 1) return 0;
  const double f = double(g - 1) / g;
  return 2 * (g - 1) * l.alpha + 2 * f * n * l.beta + f * n * gamma;
}

double pipelined_ring_allreduce_seconds(std::size_t bytes, int size, const node_layout& layout,
                                        std::size_t segment_bytes, const cost_model& p) {
  const double n = static_cast<double>(bytes);
  const double segments = std::max(1.0, std::ceil(n / static_cast<double>(std::max<std::size_t>(1, segment_bytes))));
  const link_params flat = flat_link(layout, p);
  return ring_allreduce_seconds(n, size, flat, p.gamma) + (segments - 1) * flat.alpha;
}

node_layout uniform_node_layout(int nodes, int ranks_per_node, const char* who) {
  if (nodes < 1 || ranks_per_node < 1) {
    throw error(errc::invalid_argument, std::string(who) + ": nodes and ranks_per_node must be >= 1 (got " +
                                            std::to_string(nodes) + ", " + std::to_string(ranks_per_node) + ")");
  }
  node_layout l;
  l.nodes = nodes;
  l.min_local = l.max_local = ranks_per_node;
  return l;
}

}  // namespace detail
}  // namespace conveyor
