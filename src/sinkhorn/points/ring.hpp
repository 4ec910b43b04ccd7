// SPDX-License-Identifier: BSD-3-Clause
// Internal: the ring that carries one side of a point-cloud problem round the
// ranks, so that every rank meets every block of the other side's points.
//
// A block is one rank's share of a side: per_point elements for each of its count
// points, laid out as the caller likes (the solver: the potentials, then the
// points transposed, dim x count; applying a plan adds the values carried). Step s of P: rank r works on the block of
// rank (r + s) mod P while it sends that block to rank r - 1 and receives the next
// one from rank r + 1; after P steps every block has passed every rank once.
// Bytes per rank and pass: (P - 1) / P of the side's per_point N elements; the
// transfer of step s + 1 overlaps the work of step s (MPI allows reading a send
// buffer while it is in flight). Memory: two blocks of the largest share.
//
// Gathered instead (exchange::gather): one MPI_Allgatherv of every block per
// pass, then the same work on the same blocks in the same order: the same bits,
// in ~log2 P message latencies instead of P - 1, but not overlapped and with the
// whole side in memory. exchange::automatic runs a side's first pass by ring,
// times it, and chooses from then on (points/exchange_table.hpp).
#pragma once

#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "conveyor/contract.hpp"
#include "runtime/context.hpp"
#include "sinkhorn/run_context.hpp"

namespace conveyor::sinkhorn::detail {

template <class T>
class block_ring {
 public:
  /// counts[q]: the points of rank q's block; per_point: the elements of each;
  /// gathered: one allgather per pass instead of the ring's steps.
  block_ring(MPI_Comm comm, int rank, std::vector<std::size_t> counts, std::size_t per_point, bool gathered = false)
      : comm_(comm),
        rank_(rank),
        size_(static_cast<int>(counts.size())),
        counts_(std::move(counts)),
        per_point_(per_point),
        gathered_(gathered && size_ > 1) {
    conveyor::detail::check_mpi(MPI_Type_contiguous(static_cast<int>(per_point), mpi_type(), &point_type_),
                                "MPI_Type_contiguous");
    conveyor::detail::check_mpi(MPI_Type_commit(&point_type_), "MPI_Type_commit");
    if (gathered_) {
      std::size_t total = 0;
      for (std::size_t c : counts_) {
        firsts_.push_back(static_cast<int>(total));
        total += c;
      }
      buffers_[0].resize(total * per_point);
    } else if (size_ > 1) {
      const std::size_t largest = *std::max_element(counts_.begin(), counts_.end());
      for (auto& b : buffers_) b.resize(largest * per_point);
    }
  }
  ~block_ring() { MPI_Type_free(&point_type_); }
  block_ring(const block_ring&) = delete;
  block_ring& operator=(const block_ring&) = delete;

  /// work(block, count, owner) for each of the P blocks, this rank's `home` first
  /// (then the blocks of ranks rank + 1, rank + 2, ... mod P, in either mode).
  template <class Work>
  void circulate(const T* home, Work&& work) {
    const double start = now();
    work_seconds_ = 0;
    if (gathered_) {
      gather(home);
    }
    const T* current = home;
    for (int step = 0; step < size_; ++step) {
      const int owner = (rank_ + step) % size_;
      T* next = nullptr;
      if (step + 1 < size_) {
        const int next_owner = (rank_ + step + 1) % size_;
        if (gathered_) {
          next =
              buffers_[0].data() + static_cast<std::size_t>(firsts_[static_cast<std::size_t>(next_owner)]) * per_point_;
        } else {
          next = buffers_[static_cast<std::size_t>(step % 2)].data();
          post(next, counts_[static_cast<std::size_t>(next_owner)], current, counts_[static_cast<std::size_t>(owner)]);
        }
      }
      const double t0 = now();
      work(current, counts_[static_cast<std::size_t>(owner)], owner);
      work_seconds_ += now() - t0;
      conveyor::detail::check_mpi(MPI_Waitall(pending_, requests_, MPI_STATUSES_IGNORE), "MPI_Waitall");
      pending_ = 0;
      current = next;
    }
    pass_seconds_ = now() - start;
  }

  /// The last circulate(): its whole time and the part spent in work (this rank).
  double pass_seconds() const { return pass_seconds_; }
  double work_seconds() const { return work_seconds_; }

  /// work(first_row, end_row, thread) over the rows [0, n) of the current block's
  /// work: in slabs (at least 64 rows a thread, at most 8 slabs), each slab's rows
  /// shared among nt OpenMP threads, the transfer in flight polled between slabs.
  template <class Work>
  void in_slabs(std::size_t n, int nt, Work&& work) {
    const std::size_t slab = std::max<std::size_t>(64 * static_cast<std::size_t>(nt), (n + 7) / 8);
    for (std::size_t lo = 0; lo < n; lo += slab) {
      const std::size_t hi = std::min(n, lo + slab);
#pragma omp parallel num_threads(nt)
      {
        const int tid = omp_get_thread_num();
        const auto [r0, r1] = share(hi - lo, tid, nt);
        if (r1 > r0) work(lo + r0, lo + r1, tid);
      }
      progress();
    }
  }

  /// Lets MPI move the block in flight (call between slabs of work).
  void progress() {
    if (pending_ == 0) return;
    int done = 0;
    conveyor::detail::check_mpi(MPI_Testall(pending_, requests_, &done, MPI_STATUSES_IGNORE), "MPI_Testall");
    if (done) pending_ = 0;
  }

 private:
  static MPI_Datatype mpi_type() { return sizeof(T) == 4 ? MPI_FLOAT : MPI_DOUBLE; }

  // Every rank's block into buffers_[0], in rank order (counts in points).
  void gather(const T* home) {
    std::vector<int> counts(counts_.size());
    for (std::size_t q = 0; q < counts_.size(); ++q) counts[q] = static_cast<int>(counts_[q]);
    conveyor::detail::check_mpi(MPI_Allgatherv(home, counts[static_cast<std::size_t>(rank_)], point_type_,
                                               buffers_[0].data(), counts.data(), firsts_.data(), point_type_, comm_),
                                "MPI_Allgatherv");
  }

  void post(T* into, std::size_t into_count, const T* from, std::size_t from_count) {
    constexpr int kTag = 7301;
    const int right = (rank_ + 1) % size_, left = (rank_ + size_ - 1) % size_;
    conveyor::detail::check_mpi(
        MPI_Irecv(into, static_cast<int>(into_count), point_type_, right, kTag, comm_, &requests_[0]), "MPI_Irecv");
    conveyor::detail::check_mpi(
        MPI_Isend(from, static_cast<int>(from_count), point_type_, left, kTag, comm_, &requests_[1]), "MPI_Isend");
    pending_ = 2;
  }

  MPI_Comm comm_;
  int rank_, size_;
  std::vector<std::size_t> counts_;
  std::size_t per_point_;
  bool gathered_;
  std::vector<int> firsts_;  // gathered: each rank's first point in buffers_[0]
  double pass_seconds_ = 0, work_seconds_ = 0;
  MPI_Datatype point_type_ = MPI_DATATYPE_NULL;
  std::vector<T> buffers_[2];
  MPI_Request requests_[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  int pending_ = 0;
};

}  // namespace conveyor::sinkhorn::detail
