// SPDX-License-Identifier: BSD-3-Clause
// The C API of the collectives (conveyor/c/collectives.h).
#include <vector>

#include "capi/guarded.hpp"
#include "conveyor/c/collectives.h"
#include "conveyor/collectives.hpp"
#include "conveyor/contract.hpp"

using namespace conveyor::capi;

extern "C" {

void conveyor_allreduce_options_init(conveyor_allreduce_options* options) {
  if (options) *options = conveyor_allreduce_options{CONVEYOR_ALLREDUCE_AUTO, 0, 0, 0, 0, nullptr, nullptr};
}

int conveyor_allreduce(const void* send, void* recv, size_t count, conveyor_dtype t, conveyor_op o, MPI_Comm comm,
                       const conveyor_allreduce_options* options, conveyor_allreduce_report* report) {
  return guarded([&] {
    conveyor::allreduce_options opt;
    if (options) {
      opt.algorithm = static_cast<conveyor::allreduce_algorithm>(options->algorithm);
      opt.segment_bytes = options->segment_bytes;
      opt.ranks_per_node = options->ranks_per_node;
      opt.deterministic = options->deterministic != 0;
      opt.validate = options->validate != 0;
      if (options->on_chunk) {
        opt.on_chunk = [cb = options->on_chunk, data = options->user_data](std::size_t off, std::size_t n) {
          cb(off, n, data);
        };
      }
    }
    const conveyor::allreduce_report r = conveyor::allreduce(send, recv, count, to_dtype(t), to_op(o), comm, opt);
    if (report) {
      *report = conveyor_allreduce_report{static_cast<int>(r.algorithm), r.segment_bytes, r.nodes, r.predicted_seconds};
    }
  });
}

namespace {
// counts[0..P) of comm as a vector, converted inside the call's local checks.
std::vector<std::size_t> counts_of(conveyor::collective_call& call, const size_t* counts) {
  std::vector<std::size_t> v;
  call.check([&] {
    if (!counts) throw conveyor::error(conveyor::errc::invalid_argument, "counts is NULL");
    v.assign(counts, counts + call.size());
  });
  return v;
}
}  // namespace

int conveyor_reduce_scatter(const void* send, void* recv, const size_t* counts, conveyor_dtype t, conveyor_op o,
                            MPI_Comm comm, int validate) {
  return guarded([&] {
    conveyor::collective_call call("reduce_scatter", comm);
    const auto v = counts_of(call, counts);
    call.finish_front_end(validate != 0);
    conveyor::reduce_scatter(send, recv, v, to_dtype(t), to_op(o), comm, validate != 0);
  });
}

int conveyor_allgatherv(const void* send, void* recv, const size_t* counts, conveyor_dtype t, MPI_Comm comm,
                        int validate) {
  return guarded([&] {
    conveyor::collective_call call("allgatherv", comm);
    const auto v = counts_of(call, counts);
    call.finish_front_end(validate != 0);
    conveyor::allgatherv(send, recv, v, to_dtype(t), comm, validate != 0);
  });
}

}  // extern "C"
