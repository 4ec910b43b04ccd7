#include "conveyor/settings.hpp"
#include "collectives/select.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include "runtime/context.hpp"
#include "conveyor/types.hpp"

namespace conveyor {

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
    else if (key == "segment_bytes") p.segment_bytes = static_cast<std::size_t>(std::max(1.0, value));
    else if (key == "window") p.window = std::max(1, static_cast<int>(value));
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
    << "gamma " << p.gamma << "\ncopy_beta " << p.copy_beta << "\nsegment_bytes " << p.segment_bytes << "\nwindow " << p.window << "\n";
  return o.str();
}

const cost_model& current_cost_model() {
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
  return params;
}

namespace detail {
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

double predict(allreduce_algorithm a, std::size_t bytes, int size, const node_layout& layout,
               std::size_t segment_bytes, const cost_params& p) {
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
    case allreduce_algorithm::automatic: break;
  }
  return 0;
}

allreduce_algorithm choose(std::size_t bytes, int size, const node_layout& layout, std::size_t segment_bytes,
                           const cost_params& p) {
  allreduce_algorithm best = allreduce_algorithm::ring;
  double best_t = predict(best, bytes, size, layout, segment_bytes, p);
  for (auto a : {allreduce_algorithm::recursive_doubling, allreduce_algorithm::rabenseifner,
                 allreduce_algorithm::hierarchical}) {
    // Hierarchical only pays off with several nodes of several ranks.
    if (a == allreduce_algorithm::hierarchical && (layout.nodes < 2 || layout.max_local < 2)) continue;
    const double t = predict(a, bytes, size, layout, segment_bytes, p);
    if (t < best_t) {
      best = a;
      best_t = t;
    }
  }
  return best;
}

}  // namespace detail
}  // namespace conveyor
