// SPDX-License-Identifier: BSD-3-Clause
// The C API of Redistribute: layouts and plans as handles (conveyor/c/redistribute.h).
#include <cstring>
#include <memory>
#include <vector>

#include "capi/guarded.hpp"
#include "conveyor/c/redistribute.h"
#include "conveyor/contract.hpp"
#include "conveyor/redistribute.hpp"

using namespace conveyor::capi;

namespace rd = conveyor::redistribute;

struct conveyor_layout_s {
  rd::layout l;
};

// The plan keeps its own copies of the layouts: the caller's handles may go first.
struct conveyor_redistribute_plan_s {
  std::unique_ptr<rd::plan> p;
};

namespace {

void require(bool ok, const char* what) {
  if (!ok) throw conveyor::error(conveyor::errc::invalid_argument, what);
}

int check_ndim(int ndim) {
  require(ndim >= 1 && ndim <= rd::max_dims, "ndim must be 1..8");
  return ndim;
}

conveyor_layout wrap(rd::layout l) { return new conveyor_layout_s{std::move(l)}; }

}  // namespace

int conveyor_layout_cartesian(int ndim, const int64_t* shape, const int* grid, void* local, int column_major_ranks,
                              const int64_t* local_strides, conveyor_layout* result) {
  if (!result) return null_result("conveyor_layout_cartesian");
  return guarded([&] {
    const auto n = static_cast<std::size_t>(check_ndim(ndim));
    require(shape && grid, "conveyor_layout_cartesian: shape and grid must not be NULL");
    std::vector<std::int64_t> strides;
    if (local_strides) strides.assign(local_strides, local_strides + n);
    *result = wrap(rd::layout::cartesian(std::vector<std::int64_t>(shape, shape + n), std::vector<int>(grid, grid + n),
                                         local, column_major_ranks != 0, std::move(strides)));
  });
}

void conveyor_block_cyclic_init(conveyor_block_cyclic* params) {
  if (params) *params = conveyor_block_cyclic{0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, nullptr, 1};
}

int conveyor_layout_block_cyclic(const conveyor_block_cyclic* params, conveyor_layout* result) {
  if (!result) return null_result("conveyor_layout_block_cyclic");
  return guarded([&] {
    require(params != nullptr, "conveyor_layout_block_cyclic: params is NULL");
    const conveyor_block_cyclic& c = *params;
    // Every field of the C struct, in the C++ struct's order (imb, inb: the C API
    // has no irregular first block; rank_of_grid: none).
    const rd::layout::block_cyclic_params p{
        c.M,    c.N,    c.mb,         c.nb,         0,       0,     c.prow, c.pcol, c.row_major_grid != 0,
        c.rsrc, c.csrc, c.row_offset, c.col_offset, c.local, c.lld, {}};
    *result = wrap(rd::layout::block_cyclic(p));
  });
}

int conveyor_layout_custom(int ndim, const int64_t* const* split_points, const int64_t* split_counts, const int* owners,
                           int64_t owner_count, conveyor_layout* result) {
  if (!result) return null_result("conveyor_layout_custom");
  return guarded([&] {
    const auto n = static_cast<std::size_t>(check_ndim(ndim));
    require(split_points && split_counts, "conveyor_layout_custom: split points are NULL");
    require(owner_count >= 0 && (owners || owner_count == 0), "conveyor_layout_custom: owners are NULL");
    std::vector<rd::axis_splits> splits;
    for (std::size_t d = 0; d < n; ++d) {
      require(split_counts[d] >= 0 && (split_points[d] || split_counts[d] == 0),
              "conveyor_layout_custom: split points are NULL");
      splits.push_back(rd::axis_splits::explicit_points(
          std::vector<std::int64_t>(split_points[d], split_points[d] + split_counts[d])));
    }
    *result = wrap(rd::layout::custom(std::move(splits), std::vector<int>(owners, owners + owner_count)));
  });
}

int conveyor_layout_set_storage(conveyor_layout layout, const int64_t* block, void* data, const int64_t* strides) {
  return guarded([&] {
    require(layout && block && strides, "conveyor_layout_set_storage: layout, block or strides is NULL");
    const auto n = static_cast<std::size_t>(layout->l.ndim());
    rd::block_index b{};
    std::copy(block, block + n, b.begin());
    layout->l.set_storage(b, data, std::vector<std::int64_t>(strides, strides + n));
  });
}

int conveyor_layout_ndim(conveyor_layout layout, int* result) {
  if (!result) return null_result("conveyor_layout_ndim");
  return guarded([&] {
    require(layout != nullptr, "conveyor_layout_ndim: layout is NULL");
    *result = layout->l.ndim();
  });
}

int conveyor_layout_local_blocks(conveyor_layout layout, int rank, int64_t* result) {
  if (!result) return null_result("conveyor_layout_local_blocks");
  return guarded([&] {
    require(layout != nullptr, "conveyor_layout_local_blocks: layout is NULL");
    *result = static_cast<int64_t>(layout->l.blocks_of(rank).size());
  });
}

void conveyor_layout_free(conveyor_layout layout) { delete layout; }

void conveyor_transform_init(conveyor_transform* t) {
  if (t) *t = conveyor_transform{nullptr, nullptr, nullptr, 0, 1.0, 0.0, 0.0, 0.0, CONVEYOR_FLOAT64};
}

void conveyor_redistribute_options_init(conveyor_redistribute_options* options) {
  const rd::plan_options d;
  if (options) {
    *options = conveyor_redistribute_options{static_cast<int>(d.transport), static_cast<int>(d.relabel),
                                             d.intra_node_cost, d.ranks_per_node, d.chunk_bytes};
  }
}

int conveyor_redistribute_plan_create(const conveyor_transform* transforms, size_t count, MPI_Comm comm,
                                      const conveyor_redistribute_options* options,
                                      conveyor_redistribute_plan* result) {
  if (result) *result = nullptr;
  return guarded([&] {
    // The conversion is the front end's part of the plan's collective call.
    conveyor::collective_call call("redistribute::plan", comm);
    auto out = std::make_unique<conveyor_redistribute_plan_s>();
    std::vector<rd::transform> batch(count);
    rd::plan_options o;
    call.check([&] {
      require(result != nullptr, "result pointer is NULL");
      require(transforms || count == 0, "transforms is NULL");
      for (std::size_t i = 0; i < count; ++i) {
        const conveyor_transform& c = transforms[i];
        rd::transform& t = batch[i];
        if (c.src) t.src = &c.src->l;
        if (c.dst) t.dst = &c.dst->l;
        if (c.perm && c.src) t.perm.assign(c.perm, c.perm + c.src->l.ndim());
        t.conjugate = c.conjugate != 0;
        t.alpha = c.alpha;
        t.beta = c.beta;
        t.alpha_imag = c.alpha_imag;
        t.beta_imag = c.beta_imag;
        t.type = to_dtype(c.type);
      }
      if (options) {
        o.transport = static_cast<rd::transport>(options->transport);
        o.relabel = static_cast<rd::relabeling>(options->relabel);
        o.intra_node_cost = options->intra_node_cost;
        o.ranks_per_node = options->ranks_per_node;
        o.chunk_bytes = options->chunk_bytes;
      }
    });
    call.finish_front_end();
    out->p = std::make_unique<rd::plan>(batch, comm, o);
    *result = out.release();
  });
}

int conveyor_redistribute_plan_execute(conveyor_redistribute_plan plan) {
  return guarded([&] {
    require(plan != nullptr, "conveyor_redistribute_plan_execute: plan is NULL");
    plan->p->execute();
  });
}

int conveyor_redistribute_plan_transport(conveyor_redistribute_plan plan, int* result) {
  if (!result) return null_result("conveyor_redistribute_plan_transport");
  return guarded([&] {
    require(plan != nullptr, "conveyor_redistribute_plan_transport: plan is NULL");
    *result = static_cast<int>(plan->p->transport());
  });
}

namespace {

// Copies one of a plan's vectors (`what` of the plan) to the caller's array of
// `capacity` entries.
template <class T>
int copy_out(const char* fn, conveyor_redistribute_plan plan, T* out, size_t capacity,
             const std::vector<T>& (rd::plan::*what)() const, const char* needed) {
  return guarded([&] {
    require(plan && out, (std::string(fn) + ": plan or output array is NULL").c_str());
    const std::vector<T>& v = (plan->p.get()->*what)();
    require(capacity >= v.size(), (std::string(fn) + ": capacity below " + needed).c_str());
    std::copy(v.begin(), v.end(), out);
  });
}

}  // namespace

int conveyor_redistribute_plan_volume(conveyor_redistribute_plan plan, int64_t* matrix, size_t capacity) {
  return copy_out<std::int64_t>("conveyor_redistribute_plan_volume", plan, matrix, capacity, &rd::plan::volume,
                                "P * P");
}

int conveyor_redistribute_plan_sigma(conveyor_redistribute_plan plan, int* sigma, size_t capacity) {
  return copy_out<int>("conveyor_redistribute_plan_sigma", plan, sigma, capacity, &rd::plan::sigma, "P");
}

int conveyor_redistribute_plan_relabeled_destination(conveyor_redistribute_plan plan, size_t k,
                                                     conveyor_layout* result) {
  if (!result) return null_result("conveyor_redistribute_plan_relabeled_destination");
  return guarded([&] {
    require(plan != nullptr, "conveyor_redistribute_plan_relabeled_destination: plan is NULL");
    try {
      *result = wrap(plan->p->relabeled_destination(k));
    } catch (const std::out_of_range&) {
      throw conveyor::error(conveyor::errc::invalid_argument,
                            "conveyor_redistribute_plan_relabeled_destination: no transform " + std::to_string(k));
    }
  });
}

void conveyor_redistribute_plan_free(conveyor_redistribute_plan plan) { delete plan; }

// The deprecated names (conveyor/c/redistribute.h): the same calls.
int conveyor_redistribution_create(const conveyor_transform* transforms, size_t count, MPI_Comm comm,
                                   const conveyor_redistribute_options* options, conveyor_redistribute_plan* result) {
  return conveyor_redistribute_plan_create(transforms, count, comm, options, result);
}
int conveyor_redistribution_execute(conveyor_redistribute_plan plan) {
  return conveyor_redistribute_plan_execute(plan);
}
int conveyor_redistribution_transport(conveyor_redistribute_plan plan, int* result) {
  return conveyor_redistribute_plan_transport(plan, result);
}
int conveyor_redistribution_volume(conveyor_redistribute_plan plan, int64_t* matrix, size_t capacity) {
  return conveyor_redistribute_plan_volume(plan, matrix, capacity);
}
int conveyor_redistribution_sigma(conveyor_redistribute_plan plan, int* sigma, size_t capacity) {
  return conveyor_redistribute_plan_sigma(plan, sigma, capacity);
}
int conveyor_redistribution_relabeled_destination(conveyor_redistribute_plan plan, size_t k, conveyor_layout* result) {
  return conveyor_redistribute_plan_relabeled_destination(plan, k, result);
}
void conveyor_redistribution_free(conveyor_redistribute_plan plan) { conveyor_redistribute_plan_free(plan); }
