// The cost models of every engine (cost_model.hpp), and the tune file they read.
#include "runtime/cost_model.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <mutex>
#include <sstream>

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
    else throw error(errc::invalid_argument, "tune file line " + std::to_string(lineno) + ": unknown key '" + key + "'");
  }
  return p;
}

std::string format_cost_model(const cost_model& p) {
  std::ostringstream o;
  o.precision(6);
  o << "# Conveyor cost model (seconds per message, seconds per byte); see docs/algorithms.md\n"
    << "intra_alpha " << p.intra_alpha << "\nintra_beta " << p.intra_beta << "\n"
    << "inter_alpha " << p.inter_alpha << "\ninter_beta " << p.inter_beta << "\n"
    << "gamma " << p.gamma << "\ncopy_beta " << p.copy_beta << "\nshared_alpha " << p.shared_alpha << "\nsegment_bytes " << p.segment_bytes << "\nwindow " << p.window
    << "\nintra_piece_bytes " << p.intra_piece_bytes << "\ninter_piece_bytes " << p.inter_piece_bytes << "\n";
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

// ---------------------------------------------------------------------------
// Allreduce (docs/algorithms.md "Choosing an algorithm")
// ---------------------------------------------------------------------------
namespace {

struct link_params {
  double alpha, beta;
};

int pow2_floor(int p) {
  int q = 1;
  while (q * 2 <= p) q *= 2;
  return q;
}

// Ring allreduce of n bytes over g ranks on one kind of link.
double ring_cost(double n, int g, const link_params& l, double gamma) {
  if (g <= 1) return 0;
  const double f = double(g - 1) / g;
  return 2 * (g - 1) * l.alpha + 2 * f * n * l.beta + f * n * gamma;
}

}  // namespace

double predict_allreduce(allreduce_algorithm a, std::size_t bytes, int size, const node_layout& layout,
                         std::size_t segment_bytes, const cost_model& p) {
  const double n = static_cast<double>(bytes);
  const link_params intra{p.intra_alpha, p.intra_beta}, inter{p.inter_alpha, p.inter_beta};
  const link_params& flat = layout.nodes > 1 ? inter : intra;  // flat algorithms cross the slowest link
  const int q = pow2_floor(size);
  const double fold = q == size ? 0 : 2 * (flat.alpha + n * flat.beta) + n * p.gamma;
  const double chunks = std::max(1.0, std::ceil(n / static_cast<double>(std::max<std::size_t>(1, segment_bytes))));
  switch (a) {
    case allreduce_algorithm::ring:
      // Pipelined: every chunk after the first adds one step's latency.
      return ring_cost(n, size, flat, p.gamma) + (chunks - 1) * flat.alpha;
    case allreduce_algorithm::recursive_doubling: {
      // Round k pairs ranks 2^k apart: with consecutive ranks per node, the first
      // log2(L) rounds stay inside a node.
      double t = fold;
      for (int d = 1; d < q; d *= 2) {
        const link_params& l = d < layout.min_local ? intra : flat;
        t += l.alpha + n * l.beta + n * p.gamma;
      }
      return t;
    }
    case allreduce_algorithm::rabenseifner: {
      // Halving round at distance d moves n*d/q bytes (d = q/2, ..., 1), the
      // allgather mirrors it; rounds at distance < L stay inside a node.
      double t = fold;
      for (int d = q / 2; d >= 1; d /= 2) {
        const link_params& l = d < layout.min_local ? intra : flat;
        const double part = n * d / q;
        t += 2 * (l.alpha + part * l.beta) + part * p.gamma;
      }
      return t;
    }
    case allreduce_algorithm::hierarchical: {
      const int l = layout.max_local;
      const double fl = double(l - 1) / l;
      // Per chunk the stages run one after the other, so their latencies add; across
      // chunks they overlap, so the slower stage's bandwidth term dominates and the
      // faster one adds 1/chunks of itself.
      const double lat = 2 * (l > 1 ? 1 : 0) * intra.alpha + 2 * (layout.nodes - 1) * inter.alpha;
      const double bw_intra = 2 * fl * n * intra.beta + fl * n * p.gamma;
      const double bw_inter = ring_cost(n / l, layout.nodes, {0, inter.beta}, p.gamma);
      return lat + std::max(bw_intra, bw_inter) + std::min(bw_intra, bw_inter) / chunks;
    }
    case allreduce_algorithm::mpi:
      // The MPI library runs the same textbook algorithms (recursive doubling
      // small, Rabenseifner large): the better of the two flat predictions.
      return std::min(predict_allreduce(allreduce_algorithm::recursive_doubling, bytes, size, layout, segment_bytes, p),
                      predict_allreduce(allreduce_algorithm::rabenseifner, bytes, size, layout, segment_bytes, p));
    case allreduce_algorithm::shared_memory:
      // Two flag hand-offs (shared_alpha), the copy in, and P - 1 reductions each
      // reading another rank's slot; across nodes it runs recursive doubling.
      if (layout.nodes > 1) return predict_allreduce(allreduce_algorithm::recursive_doubling, bytes, size, layout, segment_bytes, p);
      return p.shared_alpha + n * p.copy_beta + (size - 1) * n * (p.gamma + p.copy_beta);
    case allreduce_algorithm::automatic: break;
  }
  return 0;
}

allreduce_algorithm choose_allreduce(std::size_t bytes, int size, const node_layout& layout, std::size_t segment_bytes,
                                     const cost_model& p) {
  allreduce_algorithm best = allreduce_algorithm::ring;
  double best_t = predict_allreduce(best, bytes, size, layout, segment_bytes, p);
  for (auto a : {allreduce_algorithm::recursive_doubling, allreduce_algorithm::rabenseifner,
                 allreduce_algorithm::hierarchical}) {
    // Hierarchical only pays off with several nodes of several ranks.
    if (a == allreduce_algorithm::hierarchical && (layout.nodes < 2 || layout.max_local < 2)) continue;
    const double t = predict_allreduce(a, bytes, size, layout, segment_bytes, p);
    if (t < best_t) {
      best = a;
      best_t = t;
    }
  }
  // One node, and P n up to kSharedMemoryMaxBytes: every rank reads all P inputs,
  // so beyond small messages the message-based algorithms move less memory
  // (measured before it was written, 2 and 4 ranks: 1.5-18x the MPI libraries up to
  // 4 KiB, 0.79-1.57x at 16 KiB).
  if (layout.nodes == 1 && size > 1 && bytes * static_cast<std::size_t>(size) <= kSharedMemoryMaxBytes) {
    const double t = predict_allreduce(allreduce_algorithm::shared_memory, bytes, size, layout, segment_bytes, p);
    if (t < best_t) best = allreduce_algorithm::shared_memory;
  }
  return best;
}

// ---------------------------------------------------------------------------
// DSOP: see the formulas in cost_model.hpp
// ---------------------------------------------------------------------------
namespace {

// Seconds of local work: each multiply-add on cached data costs `gamma * T / 4`
// (four per streamed element: the kernels run at about a quarter of a byte-rate
// reduction's cost per element, measured with `conveyor bench dsop`), each element
// of G written costs `gamma * T`.
double dsop_local_seconds(double fmas, double written, std::size_t T, const cost_model& p) {
  return p.gamma * static_cast<double>(T) * (fmas / 4 + written);
}

double ring_allgather_seconds(double block_bytes, int P, const node_layout& layout, const cost_model& p) {
  const bool inter = layout.nodes > 1;
  const double alpha = inter ? p.inter_alpha : p.intra_alpha, beta = inter ? p.inter_beta : p.intra_beta;
  return (P - 1) * (alpha + block_bytes * beta);
}

double dsop_seconds(outer_algorithm a, const dsop_shape& s, const node_layout& layout, const cost_model& p) {
  const double N = static_cast<double>(s.N), M = static_cast<double>(s.M), P = s.P;
  const double T = static_cast<double>(s.T), G = N * M;
  const double pairs = ring_allgather_seconds((N + M) * T, s.P, layout, p);
  switch (a) {
    case outer_algorithm::allgather:
      return pairs + dsop_local_seconds(P * G, s.distributed ? G / P : G, s.T, p);
    case outer_algorithm::generalized_rabenseifner:
      return pairs + dsop_local_seconds(G, G / P, s.T, p) + (s.distributed ? 0 : ring_allgather_seconds(G / P * T, s.P, layout, p));
    case outer_algorithm::allreduce:
    case outer_algorithm::ring: {
      const auto bytes = static_cast<std::size_t>(G * T);
      const double reduce = s.P == 1 ? 0
                                     : predict_allreduce(allreduce_algorithm::ring, bytes, s.P, layout, p.segment_bytes, p);
      // A reduce-scatter is the first half of a ring allreduce.
      return dsop_local_seconds(G, G, s.T, p) + (s.distributed ? reduce / 2 : reduce);
    }
    case outer_algorithm::automatic:
      break;
  }
  return 0;
}

}  // namespace

double predict_dsop(outer_algorithm a, const dsop_shape& s, const node_layout& layout, const cost_model& p) {
  return dsop_seconds(a, s, layout, p);
}

outer_algorithm choose_dsop(const dsop_shape& s, const node_layout& layout, const cost_model& p) {
  // Cheapest predicted; ties go to the earlier entry (Conveyor's own before the baseline).
  outer_algorithm best = outer_algorithm::generalized_rabenseifner;
  double best_s = predict_dsop(best, s, layout, p);
  for (outer_algorithm c : {outer_algorithm::allgather, outer_algorithm::ring, outer_algorithm::allreduce}) {
    const double t = predict_dsop(c, s, layout, p);
    if (t < best_s) {
      best = c;
      best_s = t;
    }
  }
  return best;
}

// ---------------------------------------------------------------------------
// Redistribute transports: see the formulas in cost_model.hpp
// ---------------------------------------------------------------------------
using redistribute::transport;

transport_seconds predict_transports(const traffic& t, const cost_model& p) {
  const auto d = [](std::int64_t x) { return static_cast<double>(x); };
  const double copy = d(t.sent_intra + t.sent_inter + t.received + t.local) * p.copy_beta;
  const double wire_intra = d(t.sent_intra) * p.intra_beta, wire_inter = d(t.sent_inter) * p.inter_beta;
  const double latency = t.peers_intra * p.intra_alpha + t.peers_inter * p.inter_alpha;
  const double chunks = std::ceil(d(t.sent_intra + t.sent_inter) / d(std::max<std::int64_t>(t.chunk_bytes, 1)));
  const double alpha_any = t.peers_inter > 0 ? p.inter_alpha : p.intra_alpha;
  const auto log2_of = [](int n) { return std::ceil(std::log2(std::max(n, 1))); };

  transport_seconds out{};
  out[static_cast<int>(transport::packed)] = latency + copy + wire_intra + wire_inter;
  out[static_cast<int>(transport::datatype)] = out[static_cast<int>(transport::packed)];
  out[static_cast<int>(transport::pipelined)] = latency + chunks * alpha_any +
                                                std::max(d(t.sent_inter) * p.copy_beta, wire_inter) +
                                                d(t.sent_intra + t.received + t.local) * p.copy_beta + wire_intra;
  out[static_cast<int>(transport::alltoallv)] = (t.ranks - 1) * alpha_any + copy + wire_intra + wire_inter;
  const double sync = t.peers_intra * p.intra_alpha + (t.peers_inter > 0 ? 2 * log2_of(t.ranks) * p.inter_alpha : 0);
  out[static_cast<int>(transport::one_sided)] = sync + copy + wire_inter + t.peers_inter * p.inter_alpha;
  return out;
}

transport cheapest_transport(const transport_seconds& slowest) {
  transport best = transport::packed;
  for (transport c : {transport::pipelined, transport::one_sided, transport::alltoallv}) {
    if (slowest[static_cast<std::size_t>(c)] < slowest[static_cast<std::size_t>(best)]) best = c;
  }
  return best;
}

}  // namespace detail

// ---------------------------------------------------------------------------
// Predictions for a job described by its shape alone (no communicator)
// ---------------------------------------------------------------------------
namespace {

// The model reads only the node count and the smallest and largest node.
detail::node_layout uniform_layout(int nodes, int ranks_per_node, const char* who) {
  if (nodes < 1 || ranks_per_node < 1) {
    throw error(errc::invalid_argument, std::string(who) + ": nodes and ranks_per_node must be >= 1 (got " +
                                            std::to_string(nodes) + ", " + std::to_string(ranks_per_node) + ")");
  }
  detail::node_layout l;
  l.nodes = nodes;
  l.min_local = l.max_local = ranks_per_node;
  return l;
}

}  // namespace

double predict_allreduce_seconds(allreduce_algorithm a, std::size_t bytes, int nodes, int ranks_per_node,
                                 const cost_model& m) {
  const detail::node_layout l = uniform_layout(nodes, ranks_per_node, "predict_allreduce_seconds");
  const int P = nodes * ranks_per_node;
  if (a == allreduce_algorithm::automatic) a = detail::choose_allreduce(bytes, P, l, m.segment_bytes, m);
  return detail::predict_allreduce(a, bytes, P, l, m.segment_bytes, m);
}

allreduce_algorithm predicted_allreduce_choice(std::size_t bytes, int nodes, int ranks_per_node, const cost_model& m) {
  const detail::node_layout l = uniform_layout(nodes, ranks_per_node, "predicted_allreduce_choice");
  return detail::choose_allreduce(bytes, nodes * ranks_per_node, l, m.segment_bytes, m);
}

double predict_outer_seconds(outer_algorithm a, std::size_t N, std::size_t M, std::size_t element_bytes, int nodes,
                             int ranks_per_node, bool distributed, const cost_model& m) {
  const detail::node_layout l = uniform_layout(nodes, ranks_per_node, "predict_outer_seconds");
  const detail::dsop_shape s{N, M, element_bytes, nodes * ranks_per_node, distributed};
  if (a == outer_algorithm::automatic) a = detail::choose_dsop(s, l, m);
  return detail::predict_dsop(a, s, l, m);
}

outer_algorithm predicted_outer_choice(std::size_t N, std::size_t M, std::size_t element_bytes, int nodes,
                                       int ranks_per_node, bool distributed, const cost_model& m) {
  const detail::node_layout l = uniform_layout(nodes, ranks_per_node, "predicted_outer_choice");
  return detail::choose_dsop({N, M, element_bytes, nodes * ranks_per_node, distributed}, l, m);
}

}  // namespace conveyor
