// SPDX-License-Identifier: BSD-3-Clause
/* Every enumeration of Conveyor's interfaces, listed once. The C constants
 * (conveyor.h: CONVEYOR_<prefix><SUFFIX>), the C++ enum classes (the headers conveyor/<engine>.hpp),
 * their names (the *_name and parse_* functions) and the strings the Python package
 * accepts are all generated from these lists, so the three interfaces cannot
 * drift apart. Each list calls X(SUFFIX, cpp_enumerator, "name") in value order,
 * from 0. C and C++. */
#ifndef CONVEYOR_ENUMS_H
#define CONVEYOR_ENUMS_H

/* (The X-macro lists keep their hand-made rows.) */
/* clang-format off */

/* Element types (C: CONVEYOR_INT8, ...). */
#define CONVEYOR_DTYPE_LIST(X)                                                                       \
  X(INT8, int8, "int8") X(INT16, int16, "int16") X(INT32, int32, "int32") X(INT64, int64, "int64") \
  X(UINT8, uint8, "uint8") X(UINT16, uint16, "uint16") X(UINT32, uint32, "uint32")                  \
  X(UINT64, uint64, "uint64") X(FLOAT16, float16, "float16") X(BFLOAT16, bfloat16, "bfloat16")      \
  X(FLOAT32, float32, "float32") X(FLOAT64, float64, "float64") X(COMPLEX64, complex64, "complex64") \
  X(COMPLEX128, complex128, "complex128")

/* Reduction operations, MPI semantics (C: CONVEYOR_SUM, ...). band/bor/bxor:
 * bitwise, land/lor/lxor: logical (result 0 or 1); both integer types only.
 * logaddexp: log(exp(a) + exp(b)) on real floating types, the log-sum-exp of
 * partial log-sum-exps (NumPy's np.logaddexp); no MPI equivalent. */
#define CONVEYOR_OP_LIST(X)                                                                  \
  X(SUM, sum, "sum") X(PROD, prod, "prod") X(MIN, min, "min") X(MAX, max, "max")             \
  X(BAND, band, "band") X(BOR, bor, "bor") X(BXOR, bxor, "bxor") X(LAND, land, "land")       \
  X(LOR, lor, "lor") X(LXOR, lxor, "lxor") X(LOGADDEXP, logaddexp, "logaddexp")

/* Allreduce algorithms (C: CONVEYOR_ALLREDUCE_AUTO, ...):
 *   automatic           chosen by the cost model (docs/algorithms.md)
 *   ring                segmented, pipelined ring: reduce-scatter + allgather
 *   recursive_doubling  log2(P) full-vector exchanges; small messages
 *   rabenseifner        recursive-halving reduce-scatter + recursive-doubling allgather
 *   hierarchical        node-aware: intra-node reduce-scatter, inter-node ring,
 *                       intra-node allgather, pipelined
 *   mpi                 the MPI library's own MPI_Allreduce (through PMPI_Allreduce),
 *                       on Conveyor's private communicator
 *   shared_memory       ranks of one node reduce through one shared segment (rank-ordered
 *                       fold, no messages); small messages; recursive doubling when the
 *                       ranks span several nodes */
#define CONVEYOR_ALLREDUCE_ALGORITHM_LIST(X)                                                  \
  X(AUTO, automatic, "auto") X(RING, ring, "ring")                                            \
  X(RECURSIVE_DOUBLING, recursive_doubling, "recursive_doubling")                             \
  X(RABENSEIFNER, rabenseifner, "rabenseifner") X(HIERARCHICAL, hierarchical, "hierarchical") \
  X(MPI, mpi, "mpi") X(SHARED_MEMORY, shared_memory, "shared_memory")

/* How one Sinkhorn iteration walks the matrix (C: CONVEYOR_SINKHORN_FUSED, ...):
 *   fused    default: never writes A, one read of A per iteration
 *   typical  the paper's Algorithm 1: row pass, then a column-strided column pass (in place)
 *   c2r      Algorithm 2: column sums and column scaling in row order (in place)
 *   blocked  Algorithm 3: c2r with mc x nc blocks and an mr x nr micro-kernel (in place) */
#define CONVEYOR_SINKHORN_VARIANT_LIST(X) \
  X(FUSED, fused, "fused") X(TYPICAL, typical, "typical") X(C2R, c2r, "c2r") X(BLOCKED, blocked, "blocked")

/* How a Sinkhorn solve ended (C: CONVEYOR_SINKHORN_CONVERGED, ...):
 *   converged          error <= tol
 *   max_iter           max_iter iterations without reaching tol
 *   numerical_failure  a scaling factor or column sum became 0, Inf or NaN; the
 *                      last good iterate is kept */
#define CONVEYOR_SINKHORN_STATUS_LIST(X) \
  X(CONVERGED, converged, "converged") X(MAX_ITER, max_iter, "max_iter") X(NUMERICAL_FAILURE, numerical_failure, "numerical_failure")

/* The norm of a Sinkhorn solve's column-marginal error (C: CONVEYOR_SINKHORN_L1, ...):
 *   l1  sum_j |colsum_j - c_j| (default)
 *   l2  sqrt(sum_j (colsum_j - c_j)^2): POT's stopping rule */
#define CONVEYOR_SINKHORN_NORM_LIST(X) X(L1, l1, "l1") X(L2, l2, "l2")

/* Unbalanced Sinkhorn: the plan's entropic term (POT's reg_type; C: CONVEYOR_SINKHORN_KL, ...):
 *   kl       KL(P | a b^T) (default, POT's)
 *   entropy  KL(P | 1)
 * The two give the same plan unless a marginal is penalized (reg_m finite). */
#define CONVEYOR_SINKHORN_REG_TYPE_LIST(X) X(KL, kl, "kl") X(ENTROPY, entropy, "entropy")

/* What a Sinkhorn solve's stopping test measures (C: CONVEYOR_SINKHORN_STOP_MARGINAL, ...):
 *   marginal  the marginal error, in the solve's norm (default)
 *   change    the relative change of the scalings u, v in one iteration,
 *             (max|du| / max(max|u|, max|u_prev|, 1) + the same for v) / 2:
 *             POT's rule for unbalanced OT, whose marginals are not targets */
#define CONVEYOR_SINKHORN_STOP_LIST(X) X(STOP_MARGINAL, marginal, "marginal") X(STOP_CHANGE, change, "change")

/* The ground cost between two points of a point-cloud OT problem
 * (C: CONVEYOR_POINTS_SQEUCLIDEAN, ...):
 *   sqeuclidean  ||x - y||^2 (default; POT's "sqeuclidean")
 *   euclidean    ||x - y||   (POT's "euclidean", p = 1) */
#define CONVEYOR_POINTS_METRIC_LIST(X) X(SQEUCLIDEAN, sqeuclidean, "sqeuclidean") X(EUCLIDEAN, euclidean, "euclidean")

/* How one side of a point-cloud problem reaches every rank (C: CONVEYOR_EXCHANGE_AUTO, ...):
 *   auto    the ring for each side's first pass, then the gather if the slowest
 *           rank's measured pass is longer than its measured compute plus the
 *           cost model's allgather of the side (and the side fits in 256 MiB)
 *   ring    P steps, each block sent on while the previous one is worked on
 *   gather  one allgather of the side per pass, then the same blocks in the same
 *           order (the same bits as the ring) */
#define CONVEYOR_POINTS_EXCHANGE_LIST(X) X(AUTO, automatic, "auto") X(RING, ring, "ring") X(GATHER, gather, "gather")

/* DSOP algorithms (C: CONVEYOR_OUTER_AUTO, ...); docs/algorithms.md. */
#define CONVEYOR_OUTER_ALGORITHM_LIST(X)                                              \
  X(AUTO, automatic, "auto") X(ALLGATHER, allgather, "allgather")                     \
  X(ALLREDUCE, allreduce, "allreduce") X(RING, ring, "ring")                          \
  X(GENERALIZED_RABENSEIFNER, generalized_rabenseifner, "generalized_rabenseifner")

/* Storage order of a matrix (C: CONVEYOR_ROW_MAJOR, CONVEYOR_COLUMN_MAJOR). */
#define CONVEYOR_MATRIX_ORDER_LIST(X) X(ROW_MAJOR, row_major, "row_major") X(COLUMN_MAJOR, column_major, "column_major")

/* Redistribute transports (C: CONVEYOR_TRANSPORT_AUTO, ...):
 *   automatic  chosen by a measured cost model, reported by the plan
 *   datatype   MPI_Type per block + non-blocking send/recv (the tensor paper's baseline)
 *   packed     one contiguous package per peer; unpack-and-transform as packages arrive
 *   pipelined  packages in chunks so packing overlaps sending
 *   one_sided  peers sharing my memory get their package packed straight into
 *              their segment of a shared window; others by MPI_Put
 *   alltoallv  packing + one MPI_Alltoallv
 *   one_copy   every rank on one node, sources in node memory (conveyor/node_memory.hpp):
 *              each receiver copies its pieces straight from the senders' sources */
#define CONVEYOR_TRANSPORT_LIST(X)                                                            \
  X(AUTO, automatic, "auto") X(DATATYPE, datatype, "datatype") X(PACKED, packed, "packed")    \
  X(PIPELINED, pipelined, "pipelined") X(ONE_SIDED, one_sided, "one_sided")                   \
  X(ALLTOALLV, alltoallv, "alltoallv") X(ONE_COPY, one_copy, "one_copy")

/* Process relabeling of a Redistribute destination (C: CONVEYOR_RELABEL_NONE, ...). */
#define CONVEYOR_RELABELING_LIST(X) X(NONE, none, "none") X(GREEDY, greedy, "greedy") X(OPTIMAL, optimal, "optimal")

/* Helpers to expand a list. */
#define CONVEYOR_ENUMERATOR_(suffix, cpp, name) cpp,  /* C++ enum class body */
#define CONVEYOR_NAME_(suffix, cpp, name) name,        /* the names, in value order */
#define CONVEYOR_COUNT_(suffix, cpp, name) +1          /* the number of values */

/* clang-format on */

#endif /* CONVEYOR_ENUMS_H */
