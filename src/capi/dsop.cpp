// SPDX-License-Identifier: BSD-3-Clause
// The C API of the distributed sum of outer products (conveyor/c/dsop.h).
#include "capi/guarded.hpp"
#include "conveyor/c/dsop.h"
#include "conveyor/dsop.hpp"

using namespace conveyor::capi;

void conveyor_outer_options_init(conveyor_outer_options* options) {
  if (options)
    *options = conveyor_outer_options{CONVEYOR_OUTER_AUTO, CONVEYOR_ROW_MAJOR, 0, CONVEYOR_ALLREDUCE_AUTO, 0};
}

int conveyor_outer_sum(const void* a, size_t N, const void* b, size_t M, void* G, size_t G_count, conveyor_dtype t,
                       MPI_Comm comm, const conveyor_outer_options* options, conveyor_outer_report* report) {
  return guarded([&] {
    conveyor::outer_options o;
    if (options) {
      o.algorithm = static_cast<conveyor::outer_algorithm>(options->algorithm);
      o.order = static_cast<conveyor::matrix_order>(options->order);
      o.distributed = options->distributed != 0;
      o.allreduce.algorithm = static_cast<conveyor::allreduce_algorithm>(options->allreduce_algorithm);
      o.allreduce.ranks_per_node = options->ranks_per_node;
    }
    const conveyor::outer_report r = conveyor::outer_sum(a, N, b, M, G, G_count, to_dtype(t), comm, o);
    if (report) *report = {static_cast<int>(r.algorithm), r.first_row, r.rows, r.predicted_seconds};
  });
}
