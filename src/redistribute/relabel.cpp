// SPDX-License-Identifier: BSD-3-Clause
// Process relabeling (relabel.hpp): the assignment solvers (exact and greedy), the
// relabelings as a table (relabeling_rows: none, greedy, optimal, each a summary
// and its solver), and relabel(): the gains of every destination swap, then the
// row's solver (none: the identity, without gains).
#include "redistribute/relabel.hpp"

#include <limits>
#include <numeric>

#include "runtime/context.hpp"

namespace conveyor::redistribute {

// Shortest augmenting paths with potentials (the Hungarian method in the
// Jonker-Volgenant formulation), minimizing cost = -gain; O(n^3). Written here
// although Debian has assignment solvers: dlib's max_cost_assignment takes integer
// costs only (the gains are bytes weighted by a real intra_node_cost), and LEMON
// (matchings, min-cost flow) would be a build dependency of the whole library for
// a 60-line solver of P x P problems.
std::vector<int> max_weight_assignment(const std::vector<double>& gain, int n) {
  if (n < 0 || gain.size() != static_cast<std::size_t>(n) * static_cast<std::size_t>(n)) {
    throw error(errc::invalid_argument, "max_weight_assignment: need an n x n gain matrix");
  }
  const double inf = std::numeric_limits<double>::infinity();
  const auto cost = [&](int i, int j) {
    return -gain[static_cast<std::size_t>(i) * static_cast<std::size_t>(n) + static_cast<std::size_t>(j)];
  };
  // 1-based arrays: row_of[j] is the row assigned to column j (0: none).
  std::vector<double> u(static_cast<std::size_t>(n) + 1, 0), v(static_cast<std::size_t>(n) + 1, 0);
  std::vector<int> row_of(static_cast<std::size_t>(n) + 1, 0), way(static_cast<std::size_t>(n) + 1, 0);
  for (int i = 1; i <= n; ++i) {
    row_of[0] = i;
    int j0 = 0;
    std::vector<double> minv(static_cast<std::size_t>(n) + 1, inf);
    std::vector<char> used(static_cast<std::size_t>(n) + 1, 0);
    do {
      used[static_cast<std::size_t>(j0)] = 1;
      const int i0 = row_of[static_cast<std::size_t>(j0)];
      double delta = inf;
      int j1 = 0;
      for (int j = 1; j <= n; ++j) {
        const auto jj = static_cast<std::size_t>(j);
        if (used[jj]) continue;
        const double cur = cost(i0 - 1, j - 1) - u[static_cast<std::size_t>(i0)] - v[jj];
        if (cur < minv[jj]) {
          minv[jj] = cur;
          way[jj] = j0;
        }
        if (minv[jj] < delta) {
          delta = minv[jj];
          j1 = j;
        }
      }
      for (int j = 0; j <= n; ++j) {
        const auto jj = static_cast<std::size_t>(j);
        if (used[jj]) {
          u[static_cast<std::size_t>(row_of[jj])] += delta;
          v[jj] -= delta;
        } else {
          minv[jj] -= delta;
        }
      }
      j0 = j1;
    } while (row_of[static_cast<std::size_t>(j0)] != 0);
    do {
      const int j1 = way[static_cast<std::size_t>(j0)];
      row_of[static_cast<std::size_t>(j0)] = row_of[static_cast<std::size_t>(j1)];
      j0 = j1;
    } while (j0 != 0);
  }
  std::vector<int> sigma(static_cast<std::size_t>(n));
  for (int j = 1; j <= n; ++j) sigma[static_cast<std::size_t>(row_of[static_cast<std::size_t>(j)] - 1)] = j - 1;
  return sigma;
}

namespace detail {

std::vector<double> pair_costs(int P, const conveyor::detail::node_layout* nodes, double intra_node_cost) {
  std::vector<double> w(static_cast<std::size_t>(P) * static_cast<std::size_t>(P), 1.0);
  for (int i = 0; i < P; ++i) {
    for (int j = 0; j < P; ++j) {
      double& c = w[static_cast<std::size_t>(i) * static_cast<std::size_t>(P) + static_cast<std::size_t>(j)];
      if (i == j) c = 0;
      else if (nodes && nodes->node_of[static_cast<std::size_t>(i)] == nodes->node_of[static_cast<std::size_t>(j)])
        c = intra_node_cost;
    }
  }
  return w;
}

std::vector<int> greedy_assignment(const std::vector<double>& gain, int n) {
  std::vector<int> sigma(static_cast<std::size_t>(n));
  std::iota(sigma.begin(), sigma.end(), 0);
  const auto g = [&](int x, int y) {
    return gain[static_cast<std::size_t>(x) * static_cast<std::size_t>(n) + static_cast<std::size_t>(y)];
  };
  for (;;) {
    double best = 1e-12;
    int bx = -1, by = -1;
    for (int x = 0; x < n; ++x) {
      for (int y = x + 1; y < n; ++y) {
        const int sx = sigma[static_cast<std::size_t>(x)], sy = sigma[static_cast<std::size_t>(y)];
        const double improvement = g(x, sy) + g(y, sx) - g(x, sx) - g(y, sy);
        if (improvement > best) {
          best = improvement;
          bx = x;
          by = y;
        }
      }
    }
    if (bx < 0) return sigma;
    std::swap(sigma[static_cast<std::size_t>(bx)], sigma[static_cast<std::size_t>(by)]);
  }
}

std::vector<int> relabel(const std::vector<std::int64_t>& volume, const std::vector<double>& cost, int P,
                         relabeling mode) {
  std::vector<int> id(static_cast<std::size_t>(P));
  std::iota(id.begin(), id.end(), 0);
  const relabeling_row* row = nullptr;
  for (const relabeling_row& r : relabeling_rows()) {
    if (r.mode == mode) row = &r;
  }
  if (!row)
    throw error(errc::invalid_argument, "relabel: unknown relabeling " + std::to_string(static_cast<int>(mode)));
  if (!row->assign) return id;
  // gain[x][y] = sum_i V[i][x] (w(i, x) - w(i, y))
  const auto at = [P](int i, int j) {
    return static_cast<std::size_t>(i) * static_cast<std::size_t>(P) + static_cast<std::size_t>(j);
  };
  std::vector<double> gain(static_cast<std::size_t>(P) * static_cast<std::size_t>(P), 0.0);
  for (int x = 0; x < P; ++x) {
    for (int y = 0; y < P; ++y) {
      double s = 0;
      for (int i = 0; i < P; ++i) s += static_cast<double>(volume[at(i, x)]) * (cost[at(i, x)] - cost[at(i, y)]);
      gain[at(x, y)] = s;
    }
  }
  return row->assign(gain, P);
}

const std::vector<relabeling_row>& relabeling_rows() {
  static const std::vector<relabeling_row> rows = [] {
    std::vector<relabeling_row> r = {
        {relabeling::none, "keep the destination ranks as the layout names them", nullptr},
        {relabeling::greedy, "COSTA's pair swaps from the identity while one gains: O(P^2) a swap", greedy_assignment},
        {relabeling::optimal,
         "the exact linear assignment of destination blocks to ranks (Jonker-Volgenant, O(P^3)): the most bytes kept "
         "local",
         max_weight_assignment},
    };
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (static_cast<std::size_t>(r[i].mode) != i) throw error(errc::internal, "relabel: the table is out of order");
    }
    if (r.size() != static_cast<std::size_t>(relabeling_count)) {
      throw error(errc::internal, "relabel: one row per relabeling");
    }
    return r;
  }();
  return rows;
}

std::int64_t remote_volume(const std::vector<std::int64_t>& volume, int P, const std::vector<int>& sigma) {
  std::int64_t total = 0;
  for (int i = 0; i < P; ++i) {
    for (int j = 0; j < P; ++j) {
      if (i != sigma[static_cast<std::size_t>(j)])
        total += volume[static_cast<std::size_t>(i) * static_cast<std::size_t>(P) + static_cast<std::size_t>(j)];
    }
  }
  return total;
}

}  // namespace detail

const std::vector<relabeling_info>& relabelings() {
  static const std::vector<relabeling_info> infos = [] {
    std::vector<relabeling_info> out;
    for (const detail::relabeling_row& r : detail::relabeling_rows()) {
      out.push_back({r.mode, relabeling_name(r.mode), r.summary});
    }
    return out;
  }();
  return infos;
}

}  // namespace conveyor::redistribute
