// SPDX-License-Identifier: BSD-3-Clause
// Symbol visibility: the library is built with hidden visibility and exports
// exactly what carries CONVEYOR_API.
#pragma once

#if defined(_WIN32)
#if defined(CONVEYOR_BUILDING_LIBRARY)
#define CONVEYOR_API __declspec(dllexport)
#else
#define CONVEYOR_API
#endif
#else
#define CONVEYOR_API __attribute__((visibility("default")))
#endif
