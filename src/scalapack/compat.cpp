// The same drop-ins under ScaLAPACK's own Fortran symbols (pdgemr2d_, pdtran_, ...):
// library `conveyor_scalapack_compat`. Linked before ScaLAPACK (or preloaded), it
// makes an unchanged ScaLAPACK program use Conveyor for these routines; every other
// routine still comes from ScaLAPACK.
#define CONVEYOR_SCALAPACK_NAME(x) x##_
#define CONVEYOR_SCALAPACK_CNAME(x) x
#define CONVEYOR_SCALAPACK_EXPORT __attribute__((visibility("default")))
#include "scalapack/scalapack.cpp"  // NOLINT: one implementation, compiled under the second names
