// SPDX-License-Identifier: BSD-3-Clause
/* Test support for oversubscribed MPICH (ch4:ucx): LD_PRELOADed by CTest.
 *
 * With more ranks than cores, a rank waiting in MPICH's progress loop spins for a
 * whole scheduler slice before the rank it waits for can run (the times, before
 * and after: docs/testing.md, "The figures behind the suite's choices"). MPICH
 * 4.0's ch4 device has no setting that yields (MPIR_CVAR_POLLS_BEFORE_YIELD is
 * ch3-only), so we wrap the UCX progress call it makes on every spin and yield
 * the CPU when it found nothing to do. Open MPI needs none of this:
 * mpi_yield_when_idle.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>

typedef struct ucp_worker* ucp_worker_h;

unsigned ucp_worker_progress(ucp_worker_h worker) {
  static unsigned (*real)(ucp_worker_h) = 0;
  if (!real) {
    real = (unsigned (*)(ucp_worker_h))dlsym(RTLD_NEXT, "ucp_worker_progress");
    if (!real) {
      /* MPICH loaded with RTLD_LOCAL (e.g. by mpi4py inside Python): UCX is not
       * in the global scope RTLD_NEXT searches; ask the loaded library itself. */
      void* ucp = dlopen("libucp.so.0", RTLD_LAZY | RTLD_NOLOAD);
      if (ucp) real = (unsigned (*)(ucp_worker_h))dlsym(ucp, "ucp_worker_progress");
    }
    if (!real) return 0;
  }
  const unsigned progressed = real(worker);
  if (progressed == 0) sched_yield();
  return progressed;
}
