// SPDX-License-Identifier: BSD-3-Clause
/* Conveyor C API of Sinkhorn: matrix scaling, entropic OT dense and between point clouds, barycenters
 * (conveyor/sinkhorn*.hpp).
 * Conventions (status codes, conveyor_last_error) in conveyor/c/common.h.
 */
#ifndef CONVEYOR_C_SINKHORN_H
#define CONVEYOR_C_SINKHORN_H

#include "conveyor/c/collectives.h" /* the allreduce algorithm constants its options name */
#include "conveyor/c/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Sinkhorn: matrix scaling and entropic OT (conveyor/sinkhorn.hpp) ---- */

#define CONVEYOR_C_SINKHORN_(suffix, cpp, name) CONVEYOR_SINKHORN_##suffix,
enum { CONVEYOR_SINKHORN_VARIANT_LIST(CONVEYOR_C_SINKHORN_) }; /* CONVEYOR_SINKHORN_FUSED, _TYPICAL, _C2R, _BLOCKED */
enum {
  CONVEYOR_SINKHORN_STATUS_LIST(CONVEYOR_C_SINKHORN_)
}; /* CONVEYOR_SINKHORN_CONVERGED, _MAX_ITER, _NUMERICAL_FAILURE */
enum { CONVEYOR_SINKHORN_NORM_LIST(CONVEYOR_C_SINKHORN_) };     /* CONVEYOR_SINKHORN_L1, _L2 */
enum { CONVEYOR_SINKHORN_REG_TYPE_LIST(CONVEYOR_C_SINKHORN_) }; /* CONVEYOR_SINKHORN_KL, _ENTROPY */
enum { CONVEYOR_SINKHORN_STOP_LIST(CONVEYOR_C_SINKHORN_) };     /* CONVEYOR_SINKHORN_STOP_MARGINAL, _STOP_CHANGE */

typedef struct conveyor_sinkhorn_options {
  int variant; /* CONVEYOR_SINKHORN_* */
  double tol;  /* on the column-marginal error (in `norm`) */
  int max_iter;
  int threads;             /* OpenMP threads per rank; 0: automatic */
  int log_domain;          /* OT only: iterate on the log scalings */
  int overlap;             /* in-place variants: scale columns as their sums arrive */
  size_t mc, nc, mr, nr;   /* blocking of the blocked variant */
  const double* init_u;    /* warm start (this rank's rows; log domain: log u) or NULL */
  const double* init_v;    /* warm start (all columns; log domain: log v) or NULL */
  int allreduce_algorithm; /* CONVEYOR_ALLREDUCE_* for the column sums */
  int ranks_per_node;      /* of the column-sum allreduce; 0: real nodes */
  int norm;                /* CONVEYOR_SINKHORN_L1 (default) or _L2 (POT's) */
  int check_every;         /* test convergence on iterations 1, 1 + check_every, ... */
  int columns_first;       /* begin with a column update from init_u (POT's order) */
  double reg_m_rows;       /* OT, unbalanced: KL penalty on the row marginal; INFINITY: a constraint */
  double reg_m_cols;       /* the same for the column marginal */
  int reg_type;            /* CONVEYOR_SINKHORN_KL (default) or _ENTROPY */
  int stop;                /* CONVEYOR_SINKHORN_STOP_MARGINAL (default) or _STOP_CHANGE */
} conveyor_sinkhorn_options;

typedef struct conveyor_sinkhorn_info {
  int status; /* CONVEYOR_SINKHORN_CONVERGED, ... */
  int iterations;
  double error;   /* column-marginal error of the result (options' norm) */
  double cost;    /* OT: <P, C> over all ranks; scaling: 0 */
  double seconds; /* the whole call on this rank */
} conveyor_sinkhorn_info;

/* The defaults of conveyor::sinkhorn::options. */
CONVEYOR_C_API void conveyor_sinkhorn_options_init(conveyor_sinkhorn_options* options);

/* Matrix scaling of this rank's rows of A (float32 or float64, row stride ld).
 * in_place non-zero: A becomes diag(u) A diag(v) (any variant); zero: A is only
 * read (fused only). u (rows) and v (cols) receive the scaling and may be NULL.
 * Collective over comm; every rank gets the same error. options/info may be NULL. */
CONVEYOR_C_API int conveyor_sinkhorn_scale(conveyor_dtype t, void* A, size_t rows, size_t cols, size_t ld,
                                           const void* r, const void* c, MPI_Comm comm, int in_place,
                                           const conveyor_sinkhorn_options* options, void* u, void* v,
                                           conveyor_sinkhorn_info* info);

/* Entropic OT on this rank's rows of the cost matrix C. log_u (rows), log_v (cols)
 * receive the log scalings (the dual potentials divided by eps, f / eps and g / eps,
 * as conveyor_sinkhorn_points returns) and plan (rows x cols, stride plan_ld, 0:
 * cols) the plan rows; each may be NULL. */
CONVEYOR_C_API int conveyor_sinkhorn_transport(conveyor_dtype t, const void* C, size_t rows, size_t cols, size_t ld,
                                               const void* a, const void* b, double eps, MPI_Comm comm,
                                               const conveyor_sinkhorn_options* options, void* log_u, void* log_v,
                                               void* plan, size_t plan_ld, conveyor_sinkhorn_info* info);

/* ---- Sinkhorn between point clouds (conveyor/sinkhorn_points.hpp) ---- */

#define CONVEYOR_C_POINTS_(suffix, cpp, name) CONVEYOR_POINTS_##suffix,
enum { CONVEYOR_POINTS_METRIC_LIST(CONVEYOR_C_POINTS_) }; /* CONVEYOR_POINTS_SQEUCLIDEAN, _EUCLIDEAN */
#define CONVEYOR_C_EXCHANGE_(suffix, cpp, name) CONVEYOR_EXCHANGE_##suffix,
enum { CONVEYOR_POINTS_EXCHANGE_LIST(CONVEYOR_C_EXCHANGE_) }; /* CONVEYOR_EXCHANGE_AUTO, _RING, _GATHER */

typedef struct conveyor_points_options {
  int metric; /* CONVEYOR_POINTS_* */
  double tol; /* on the row-marginal error (in `norm`) */
  int max_iter;
  int norm;                 /* CONVEYOR_SINKHORN_L1 (default, POT's here) or _L2 */
  int check_every;          /* test convergence after iterations check_every, 2 check_every, ... */
  int threads;              /* OpenMP threads per rank; 0: automatic */
  const double* init_log_u; /* warm start (this rank's X points) or NULL; with init_log_v */
  const double* init_log_v; /* warm start (this rank's Y points) or NULL */
  double reg_m_rows;        /* unbalanced, as conveyor_sinkhorn_options */
  double reg_m_cols;
  int reg_type;
  int stop;
  double eps_scaling; /* eps-scaling factor in (0, 1), 0: off (points_options::eps_scaling) */
  int exchange;       /* CONVEYOR_EXCHANGE_AUTO (default), _RING or _GATHER */
} conveyor_points_options;

/* The defaults of conveyor::sinkhorn::points_options. */
CONVEYOR_C_API void conveyor_points_options_init(conveyor_points_options* options);

/* Entropic OT between this rank's n points X (n x dim, row-major) with weights a
 * and its m points Y with weights b (a or b NULL: uniform over all ranks' points),
 * float32 or float64. log_u (n) and log_v (m) receive the potentials (f / eps,
 * g / eps) and may be NULL; info->error is the row-marginal error. */
CONVEYOR_C_API int conveyor_sinkhorn_points(conveyor_dtype t, const void* X, size_t n, const void* Y, size_t m,
                                            size_t dim, const void* a, const void* b, double eps, MPI_Comm comm,
                                            const conveyor_points_options* options, void* log_u, void* log_v,
                                            conveyor_sinkhorn_info* info);

typedef struct conveyor_plan_apply_options {
  int metric;     /* CONVEYOR_POINTS_*: the solve's */
  int transpose;  /* 0: out = P V (a row per X point); 1: out = P^T V (a row per Y point) */
  int threads;    /* OpenMP threads per rank; 0: automatic */
  size_t batch;   /* independent problems stored one after another (1: one; conveyor/sinkhorn_points.hpp) */
  int cost_power; /* 0: the plan; 1: each entry times its cost; -1: divided by it (0 at cost 0) */
} conveyor_plan_apply_options;

/* The defaults of conveyor::sinkhorn::plan_apply_options. */
CONVEYOR_C_API void conveyor_plan_apply_options_init(conveyor_plan_apply_options* options);

/* The plan of a point-cloud solve (X, Y, log_u, log_v as conveyor_sinkhorn_points
 * took and gave them) applied to k values per point of the other side held by
 * this rank (V, row-major), without forming it: out (k per own point) =
 * P V, or P^T V with transpose. */
CONVEYOR_C_API int conveyor_apply_plan_points(conveyor_dtype t, const void* X, size_t n, const void* Y, size_t m,
                                              size_t dim, const void* log_u, const void* log_v, double eps,
                                              const void* V, size_t k, void* out, MPI_Comm comm,
                                              const conveyor_plan_apply_options* options);

/* ---- Fixed-support barycenter (conveyor/sinkhorn_barycenter.hpp) ---- */

typedef struct conveyor_barycenter_options {
  double tol; /* on sum_j std_k of the plans' column sums */
  int max_iter;
  int check_every; /* test convergence on iterations first_check, first_check + check_every, ... */
  int first_check;
  int log_domain;          /* iterate on log scalings */
  int threads;             /* OpenMP threads per rank; 0: automatic */
  int allreduce_algorithm; /* CONVEYOR_ALLREDUCE_* for the plans' column sums */
  int ranks_per_node;      /* of that allreduce; 0: real nodes */
} conveyor_barycenter_options;

/* The defaults of conveyor::sinkhorn::barycenter_options. */
CONVEYOR_C_API void conveyor_barycenter_options_init(conveyor_barycenter_options* options);

/* The entropic barycenter of the hists columns of A (dim x hists, row-major, the
 * same on every rank) with weights (hists values, NULL: uniform), under this
 * rank's rows of the dim x dim cost C (row stride ld). barycenter (dim values,
 * may be NULL) receives it on every rank; info->cost is 0. */
CONVEYOR_C_API int conveyor_sinkhorn_barycenter(conveyor_dtype t, const void* C, size_t rows, size_t dim, size_t ld,
                                                const void* A, size_t hists, const void* weights, double eps,
                                                MPI_Comm comm, const conveyor_barycenter_options* options,
                                                void* barycenter, conveyor_sinkhorn_info* info);

#ifdef __cplusplus
}
#endif

#endif /* CONVEYOR_C_SINKHORN_H */
