// SPDX-License-Identifier: BSD-3-Clause
// What every file of the C API shares: `guarded` runs a call's C++ body and
// turns its exception into a status code plus this thread's message
// (conveyor_last_error), and the C integers become the C++ enums.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "conveyor/c/common.h"
#include "conveyor/types.hpp"

namespace conveyor::capi {

// This thread's last failure (src/capi/library.cpp).
extern thread_local std::string last_error;

template <class F>
int guarded(F&& body) noexcept {
  try {
    body();
    return CONVEYOR_SUCCESS;
  } catch (const conveyor::error& e) {
    last_error = e.what();
    return static_cast<int>(e.code());
  } catch (const std::bad_alloc&) {
    last_error = "conveyor: out of memory";
    return CONVEYOR_ERR_INTERNAL;
  } catch (const std::exception& e) {
    last_error = std::string("conveyor: internal: ") + e.what();
    return CONVEYOR_ERR_INTERNAL;
  } catch (...) {
    last_error = "conveyor: unknown error";
    return CONVEYOR_ERR_INTERNAL;
  }
}

inline int null_result(const char* fn) {
  last_error = std::string("conveyor: ") + fn + ": result pointer is NULL";
  return CONVEYOR_ERR_INVALID_ARGUMENT;
}

// conveyor::dtype and conveyor::op have int as their fixed underlying type, so every
// int converts without undefined behaviour; the C++ API then rejects bad values.
inline conveyor::dtype to_dtype(conveyor_dtype t) { return static_cast<conveyor::dtype>(t); }
inline conveyor::op to_op(conveyor_op o) { return static_cast<conveyor::op>(o); }

}  // namespace conveyor::capi
