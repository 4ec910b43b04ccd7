// SPDX-License-Identifier: BSD-3-Clause
#include "redistribute/datatype_packing.hpp"

#include <mutex>
#include <string>

#include "conveyor/types.hpp"

namespace conveyor::redistribute::detail {
namespace {

// One private communicator, one copy at a time: two threads sending to self with
// the same tag could otherwise receive each other's data (MPI_THREAD_MULTIPLE).
std::mutex g_lock;
MPI_Comm g_self = MPI_COMM_NULL;
int g_keyval = MPI_KEYVAL_INVALID;

// Called by MPI_Finalize (an attribute on MPI_COMM_SELF), before MPI goes away.
int free_at_finalize(MPI_Comm, int, void*, void*) {
  std::lock_guard<std::mutex> hold(g_lock);
  if (g_self != MPI_COMM_NULL) PMPI_Comm_free(&g_self);
  return MPI_SUCCESS;
}

MPI_Comm self_comm() {
  if (g_self == MPI_COMM_NULL) {
    if (PMPI_Comm_dup(MPI_COMM_SELF, &g_self) != MPI_SUCCESS) throw error(errc::mpi, "MPI_Comm_dup failed");
    PMPI_Comm_set_errhandler(g_self, MPI_ERRORS_RETURN);
    if (g_keyval == MPI_KEYVAL_INVALID &&
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_at_finalize, &g_keyval, nullptr) == MPI_SUCCESS) {
      PMPI_Comm_set_attr(MPI_COMM_SELF, g_keyval, nullptr);
    }
  }
  return g_self;
}

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int n = 0;
  PMPI_Error_string(rc, text, &n);
  throw error(errc::mpi, std::string(what) + ": " + text);
}

}  // namespace

void pack_items(const void* buf, int count, MPI_Datatype type, void* out, int bytes) {
  std::lock_guard<std::mutex> hold(g_lock);
  check(PMPI_Sendrecv(buf, count, type, 0, 0, out, bytes, MPI_PACKED, 0, 0, self_comm(), MPI_STATUS_IGNORE),
        "packing items of a datatype not read");
}

void unpack_items(const void* in, int bytes, void* buf, int count, MPI_Datatype type) {
  std::lock_guard<std::mutex> hold(g_lock);
  check(PMPI_Sendrecv(in, bytes, MPI_PACKED, 0, 0, buf, count, type, 0, 0, self_comm(), MPI_STATUS_IGNORE),
        "unpacking items of a datatype not read");
}

}  // namespace conveyor::redistribute::detail
