// SPDX-License-Identifier: BSD-3-Clause
// The C API's library-wide calls (conveyor/c/common.h): version, errors, node
// memory, the SIMD target.
#include <string>

#include "capi/guarded.hpp"
#include "conveyor/node_memory.hpp"
#include "conveyor/simd.hpp"
#include "conveyor/version.hpp"

namespace conveyor::capi {
thread_local std::string last_error;
}  // namespace conveyor::capi

using namespace conveyor::capi;

extern "C" {

const char* conveyor_version(void) { return CONVEYOR_VERSION_STRING; }

const char* conveyor_last_error(void) { return last_error.c_str(); }

size_t conveyor_dtype_size(conveyor_dtype t) {
  size_t size = 0;
  guarded([&] { size = conveyor::dtype_size(to_dtype(t)); });
  return size;
}

int conveyor_node_alloc(size_t bytes, void** result) {
  if (!result) return null_result("conveyor_node_alloc");
  return guarded([&] { *result = conveyor::node_alloc(bytes); });
}

void conveyor_node_free(void* p) { conveyor::node_free(p); }

int conveyor_note_shared_window(MPI_Win win, int* noted) {
  if (!noted) return null_result("conveyor_note_shared_window");
  return guarded([&] { *noted = conveyor::note_shared_window(win) ? 1 : 0; });
}

void conveyor_forget_shared_window(MPI_Win win) { conveyor::forget_shared_window(win); }

const char* conveyor_simd_target(void) {
  static thread_local std::string name;
  if (guarded([&] { name = conveyor::simd_targets().active; }) != CONVEYOR_SUCCESS) name.clear();
  return name.c_str();
}

int conveyor_set_simd_target(const char* name) {
  return guarded([&] { conveyor::set_simd_target(name ? name : ""); });
}

}  // extern "C"
