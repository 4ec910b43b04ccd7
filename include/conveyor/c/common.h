// SPDX-License-Identifier: BSD-3-Clause
/* Conveyor C API: what every engine's C header shares (status codes, the
 * dtype and op constants, errors, the version, node memory, the SIMD target).
 * Include conveyor/conveyor.h for the whole API.
 *
 * Every function returns a conveyor_status (CONVEYOR_SUCCESS = 0) unless stated
 * otherwise. After a failure, conveyor_last_error() returns a message describing
 * it; the message belongs to the calling thread and stays valid until that thread's
 * next failing Conveyor call. Enum values equal those of the C++ API.
 */
#ifndef CONVEYOR_C_COMMON_H
#define CONVEYOR_C_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "conveyor/enums.h"

#if defined(_WIN32)
#define CONVEYOR_C_API
#else
#define CONVEYOR_C_API __attribute__((visibility("default")))
#endif

/* A deprecated name: it works, and the compiler warns with `message`. */
#if defined(__GNUC__) || defined(__clang__)
#define CONVEYOR_C_DEPRECATED(message) __attribute__((deprecated(message)))
#else
#define CONVEYOR_C_DEPRECATED(message)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The type names are ints, not enums: a C caller may pass any int, and an
 * out-of-range value must be an error, not undefined behaviour in the C++ side. */
typedef int conveyor_dtype; /* one of the CONVEYOR_<type> values */
typedef int conveyor_op;    /* one of the CONVEYOR_<op> values */
typedef int conveyor_status;

/* C constants from the lists of conveyor/enums.h: CONVEYOR_<SUFFIX>, numbered from 0. */
#define CONVEYOR_C_PLAIN_(suffix, cpp, name) CONVEYOR_##suffix,
enum { CONVEYOR_DTYPE_LIST(CONVEYOR_C_PLAIN_) }; /* CONVEYOR_INT8 ... CONVEYOR_COMPLEX128 */
enum { CONVEYOR_OP_LIST(CONVEYOR_C_PLAIN_) };    /* CONVEYOR_SUM ... CONVEYOR_LOGADDEXP */

enum {
  CONVEYOR_SUCCESS = 0,
  CONVEYOR_ERR_INVALID_ARGUMENT = 1,
  CONVEYOR_ERR_UNSUPPORTED = 2,
  CONVEYOR_ERR_MPI = 3,
  CONVEYOR_ERR_INTERNAL = 4,
  CONVEYOR_ERR_INVALID_TYPE = 5 /* an unsupported or mismatched dtype */
};

/* Library version, e.g. "0.1.0". Never fails. */
CONVEYOR_C_API const char* conveyor_version(void);

/* Message of this thread's last failure ("" if none). Never fails. */
CONVEYOR_C_API const char* conveyor_last_error(void);

/* Bytes per element, or 0 for an unknown dtype. */
CONVEYOR_C_API size_t conveyor_dtype_size(conveyor_dtype t);

/* Node memory (conveyor/node_memory.hpp): `bytes` bytes the node's other ranks
 * can map, zeroed, in *result; a Redistribute plan whose destinations (or
 * sources) lie in it copies each byte once (the one_copy transport). Not
 * collective. Free with conveyor_node_free (null: nothing). */
CONVEYOR_C_API int conveyor_node_alloc(size_t bytes, void** result);
CONVEYOR_C_API void conveyor_node_free(void* p);
/* An MPI_Win_allocate_shared window's segment as node memory (conveyor::note_shared_window;
 * libconveyor_mpi notes every window it sees created): *noted is 1 if it is one shared
 * file mapping, now noted, else 0. Forget it before MPI_Win_free. Not collective. */
CONVEYOR_C_API int conveyor_note_shared_window(MPI_Win win, int* noted);
CONVEYOR_C_API void conveyor_forget_shared_window(MPI_Win win);

/* Name of the SIMD target the reduction kernels use now, e.g. "AVX3". Never fails;
 * returns "" if it cannot be determined. Valid until the next call. */
CONVEYOR_C_API const char* conveyor_simd_target(void);

/* Forces the kernels onto a named SIMD target; NULL or "" restores the best one. */
CONVEYOR_C_API int conveyor_set_simd_target(const char* name);

#ifdef __cplusplus
}
#endif

#endif /* CONVEYOR_C_COMMON_H */
