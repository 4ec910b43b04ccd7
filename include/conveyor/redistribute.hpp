// SPDX-License-Identifier: BSD-3-Clause
// The Redistribute engine: move an N-D array (1 <= N <= 8 dimensions) between two
// layouts over the ranks of a communicator, transforming it on the way:
//
//     dst = alpha * op(src) + beta * dst,   op = an axis permutation (a transpose
//                                            in 2-D), optionally conjugated.
//
// A layout is a global shape, per-dimension split points that cut it into a grid
// of blocks, the owner rank of every block, and where each rank keeps its own
// blocks (a pointer and per-dimension strides per block, so row-major,
// column-major, padded and leading-dimension storage are all expressible).
// Cartesian block distributions (the tensor paper's) and 2-D block-cyclic ones
// (ScaLAPACK's) compute owners and local positions by formula: no rank stores a
// table of all blocks. An array with a zero extent has no blocks; plans over it
// move nothing (and are still collective).
//
// plan() computes the grid overlay, the package each rank sends to each other
// rank, and the communication-volume matrix; a plan is built once and executed
// many times. docs/algorithms.md ("Redistribute") has the steps and costs.
#pragma once

#include <mpi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "conveyor/types.hpp"

namespace conveyor::redistribute {

inline constexpr int max_dims = 8;

namespace detail {
struct layout_access;  // the engine's own view of a layout's formulas (internal)
}

/// How a block's elements sit in memory: its first element is `offset` elements
/// past `data`, and `strides` are the distances, in elements, between neighbours
/// along each dimension.
struct block_storage {
  void* data = nullptr;
  std::int64_t offset = 0;
  std::array<std::int64_t, max_dims> strides{};
};

/// The split points of one dimension: block k covers [start(k), start(k+1)).
/// Either explicit points, or regular blocks of `size` after a first block of
/// `first` (ScaLAPACK's blocking with an offset), stored in O(1).
class CONVEYOR_API axis_splits {
 public:
  /// Points {0, ..., extent}, strictly increasing (empty blocks are not allowed);
  /// {0} alone is an empty dimension with no blocks.
  static axis_splits explicit_points(std::vector<std::int64_t> points);
  /// Blocks of `size`, the first one `first` long (first > 0; 0 means `size`),
  /// covering `extent` (0: no blocks).
  static axis_splits regular(std::int64_t extent, std::int64_t size, std::int64_t first = 0);

  std::int64_t extent() const { return extent_; }
  std::int64_t count() const;                // number of blocks
  std::int64_t start(std::int64_t k) const;  // first index of block k (start(count()) = extent)
  std::int64_t length(std::int64_t k) const { return start(k + 1) - start(k); }  // indices in block k
  std::int64_t block_of(std::int64_t x) const;  // the block containing index x < extent

 private:
  std::int64_t extent_ = 0, size_ = 0, first_ = 0;
  std::vector<std::int64_t> points_;  // empty for regular splits
};

/// Block coordinates: one block index per dimension.
using block_index = std::array<std::int64_t, max_dims>;

class CONVEYOR_API layout {
 public:
  /// Fully custom: shape from the splits; owners[i] for the blocks in row-major
  /// order of block coordinates; each rank then describes its own blocks with
  /// set_storage (every block it owns, exactly once).
  static layout custom(std::vector<axis_splits> splits, std::vector<int> owners);

  /// The tensor paper's Cartesian distribution: dimension d is cut into grid[d]
  /// near-equal blocks (the first shape[d] % grid[d] one longer: the same rule as
  /// sinkhorn::balanced_rows and outer_rows, so their row blocks are Cartesian
  /// layouts with grid {P, 1}); the block at grid coordinates c belongs to the rank whose
  /// row-major rank in the grid is c (column-major if `column_major_ranks`). Each
  /// rank holds one block, stored row-major and contiguous at `local` unless
  /// `local_strides` say otherwise (set_storage may also be used).
  static layout cartesian(std::vector<std::int64_t> shape, std::vector<int> grid, void* local,
                          bool column_major_ranks = false, std::vector<std::int64_t> local_strides = {});

  /// ScaLAPACK's 2-D block-cyclic distribution: the M x N submatrix at global
  /// offset (row_offset, col_offset) (ScaLAPACK's ia-1, ja-1) of a matrix cut into
  /// mb x nb blocks over a prow x pcol process grid, global block (0,0) on process
  /// (rsrc, csrc), process (r, c) being rank r * pcol + c (row-major grid) or
  /// c * prow + r (column-major). Each rank's blocks live in its local column-major
  /// array `local` with leading dimension lld, as ScaLAPACK stores them.
  /// `rank_of_grid` (optional) maps grid coordinates to ranks of the communicator
  /// (BLACS contexts over other process sets; -1: not in the communicator) and
  /// overrides the grid order. `imb` / `inb` (optional, 0 = mb / nb): the sizes of
  /// the whole matrix's first row and column block (PBLAS's 11-integer descriptors,
  /// DTYPE 2); row_offset / col_offset count from the whole matrix's first element.
  struct block_cyclic_params {
    std::int64_t M = 0, N = 0, mb = 1, nb = 1;
    std::int64_t imb = 0, inb = 0;
    int prow = 1, pcol = 1;
    bool row_major_grid = true;
    int rsrc = 0, csrc = 0;
    std::int64_t row_offset = 0, col_offset = 0;
    void* local = nullptr;
    std::int64_t lld = 1;
    std::function<int(int, int)> rank_of_grid;
  };
  static layout block_cyclic(const block_cyclic_params& p);

  /// Describes where this rank keeps block `b` (custom layouts; overrides otherwise).
  void set_storage(const block_index& b, void* data, const std::vector<std::int64_t>& strides);

  int ndim() const { return static_cast<int>(splits_.size()); }
  std::int64_t extent(int d) const { return splits_[static_cast<std::size_t>(d)].extent(); }
  const axis_splits& splits(int d) const { return splits_[static_cast<std::size_t>(d)]; }
  std::int64_t blocks() const;              // total number of blocks
  int owner(const block_index& b) const;    // rank owning block b
  std::pair<int, int> owner_range() const;  // smallest and largest owner
  /// This rank's blocks (rank given), in row-major order of block coordinates.
  std::vector<block_index> blocks_of(int rank) const;
  /// The shape of `rank`'s local array: per dimension, the summed extents of the
  /// distinct block rows (columns, ...) it holds. A Cartesian layout's block; a
  /// block-cyclic layout's ScaLAPACK local matrix (NUMROC rows x NUMROC columns);
  /// zeros for a rank without blocks.
  std::vector<std::int64_t> local_shape(int rank) const;
  /// Where block b (owned by this rank) is stored; throws if it was never described.
  block_storage storage(const block_index& b) const;

  /// Why this rank's storage descriptions are invalid for elements of
  /// `element_bytes` (empty if they are fine): a described block this rank does not
  /// own; blocks that overlap in memory, each other or themselves (exact, from the
  /// sorted byte runs of every block, up to 2^24 runs per rank); block-cyclic lld
  /// below the local rows. plan() checks this on every rank.
  std::string storage_problem(std::size_t element_bytes, int rank) const;

  /// A copy whose owners are relabeled: block of rank r now belongs to sigma[r].
  /// Storage descriptions are dropped (the new owners describe theirs).
  layout relabeled(const std::vector<int>& sigma) const;

  struct impl;

 private:
  friend struct detail::layout_access;
  std::vector<axis_splits> splits_;
  std::shared_ptr<impl> impl_;  // owner formula or table, local storage
};

/// automatic (a measured cost model's choice, reported by the plan), datatype (the
/// tensor paper's baseline), packed, pipelined, one_sided, alltoallv: described in
/// conveyor/enums.h and docs/algorithms.md.
CONVEYOR_DECLARE_ENUM(transport, CONVEYOR_TRANSPORT_LIST, transport_name, parse_transport);

/// One transport, as the table of transports describes it
/// (src/redistribute/transport_table.hpp: one file and one row each).
struct transport_info {
  redistribute::transport transport;
  std::string_view name;  // the setting's and Python's name ("packed", ...)
  const char* summary;    // how it moves the packages
  bool modeled;           // `automatic`'s cost model chooses among it
};
/// Every transport but `automatic`, in the table's order: what `conveyor info`
/// lists, and the tests' case lists.
CONVEYOR_API const std::vector<transport_info>& transports();

/// none, greedy, optimal.
CONVEYOR_DECLARE_ENUM(relabeling, CONVEYOR_RELABELING_LIST, relabeling_name, parse_relabeling);

/// One relabeling, as their table describes it (src/redistribute/relabel.cpp).
struct relabeling_info {
  relabeling mode;
  std::string_view name;  // Python's name ("greedy", ...)
  const char* summary;    // how it chooses sigma
};
/// Every relabeling, in the enum's order: what `conveyor info` lists, and the
/// tests' case lists.
CONVEYOR_API const std::vector<relabeling_info>& relabelings();

/// One transform of a (batched) plan: dst = alpha * op(src) + beta * dst.
struct transform {
  const layout* src = nullptr;
  const layout* dst = nullptr;
  /// dst axis k is src axis perm[k]; empty: identity. {1, 0} is a 2-D transpose.
  std::vector<int> perm;
  bool conjugate = false;
  double alpha = 1, beta = 0;
  /// Imaginary parts of alpha and beta (complex dtypes only).
  double alpha_imag = 0, beta_imag = 0;
  dtype type = dtype::float64;
};

struct plan_options {
  /// The transport (automatic: the cost model's choice; CONVEYOR_REDISTRIBUTE_TRANSPORT
  /// overrides automatic). C: conveyor_redistribute_options.transport; Python: transport=.
  redistribute::transport transport = redistribute::transport::automatic;
  relabeling relabel = relabeling::none;
  /// Moves between ranks of one node cost `intra_node_cost` per byte relative to
  /// moves between nodes (1: no topology). Nodes come from MPI_COMM_TYPE_SHARED or
  /// ranks_per_node, as in allreduce (the one_sided transport also uses
  /// them to decide which peers it reaches through shared memory).
  double intra_node_cost = 1.0;
  int ranks_per_node = 0;
  std::size_t chunk_bytes = std::size_t{8} << 20;  // pipelined transport
};

class CONVEYOR_API plan {
 public:
  /// Collective over `comm`. For a single transform and for batches. The plan keeps
  /// its own copies of the layouts (the arrays they describe stay the caller's):
  /// the caller's layout objects may be freed, or given other storage, afterwards.
  plan(const transform& t, MPI_Comm comm, const plan_options& options = {});
  plan(const std::vector<transform>& batch, MPI_Comm comm, const plan_options& options = {});
  ~plan();
  plan(plan&&) noexcept;
  plan& operator=(plan&&) noexcept;

  /// Runs the transforms with the buffers the layouts describe. Collective.
  void execute();

  redistribute::transport transport() const;  // the transport that runs (auto resolved)
  /// automatic plans: the cost model's seconds for transport t (slowest rank;
  /// model from current_cost_model(), i.e. defaults or `conveyor tune`); else 0.
  double predicted_seconds(redistribute::transport t) const;
  /// Bytes rank i sends to rank j (i != j: over MPI; i == j: local copies), every rank.
  const std::vector<std::int64_t>& volume() const;  // row-major P x P
  std::int64_t remote_bytes() const;                // sum of volume off the diagonal
  /// The relabeling the options asked for: destination blocks of rank r go to
  /// sigma[r] in relabeled_destination(k); identity for relabeling::none.
  const std::vector<int>& sigma() const;
  /// Bytes sent between ranks if the destination layouts were relabeled by sigma().
  std::int64_t relabeled_remote_bytes() const;
  layout relabeled_destination(std::size_t k = 0) const;

  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

/// The exact linear-assignment solver behind relabeling::optimal (Jonker-Volgenant
/// style shortest augmenting paths, O(n^3)): the permutation sigma maximizing
/// sum_i gain[i * n + sigma[i]]. Exposed for tests and tools.
CONVEYOR_API std::vector<int> max_weight_assignment(const std::vector<double>& gain, int n);

}  // namespace conveyor::redistribute
