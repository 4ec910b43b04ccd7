// SPDX-License-Identifier: BSD-3-Clause
// The C API from C++: status codes, messages, and agreement with the C++ API.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "conveyor/conveyor.h"
#include "conveyor/node_memory.hpp"
#include "conveyor/reduce.hpp"

namespace {

TEST(CApi, ReduceLocalAndReduce) {
  std::vector<float> in = {1, 2, 3, 4, 5}, inout = {10, 20, 30, 40, 50}, out(5);
  ASSERT_EQ(conveyor_reduce_local(in.data(), inout.data(), 5, CONVEYOR_FLOAT32, CONVEYOR_SUM), CONVEYOR_SUCCESS);
  EXPECT_EQ(inout, (std::vector<float>{11, 22, 33, 44, 55}));
  ASSERT_EQ(conveyor_reduce(in.data(), inout.data(), out.data(), 5, CONVEYOR_FLOAT32, CONVEYOR_MAX), CONVEYOR_SUCCESS);
  EXPECT_EQ(out, inout);
}

TEST(CApi, ErrorsAreCodesWithMessages) {
  float x = 0, y = 0;
  EXPECT_EQ(conveyor_reduce_local(&x, &y, 1, CONVEYOR_FLOAT32, CONVEYOR_BXOR), CONVEYOR_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(conveyor_last_error()).find("bxor"), std::string::npos);
  EXPECT_EQ(conveyor_reduce_local(nullptr, &y, 1, CONVEYOR_FLOAT32, CONVEYOR_SUM), CONVEYOR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(conveyor_last_error()), "");
  EXPECT_EQ(conveyor_reduce_local(&x, &y, 1, static_cast<conveyor_dtype>(77), CONVEYOR_SUM),
            CONVEYOR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(conveyor_mpi_op(CONVEYOR_SUM, CONVEYOR_FLOAT32, nullptr), CONVEYOR_ERR_INVALID_ARGUMENT);
  // MPI is not initialized in this process.
  MPI_Op o;
  EXPECT_EQ(conveyor_mpi_op(CONVEYOR_SUM, CONVEYOR_FLOAT32, &o), CONVEYOR_ERR_MPI);
  EXPECT_NE(std::string(conveyor_last_error()).find("not initialized"), std::string::npos);
  EXPECT_EQ(conveyor_set_simd_target("bogus"), CONVEYOR_ERR_INVALID_ARGUMENT);
}

// Node memory through C and C++: zeroed, page-aligned, found by is_node_memory
// exactly over its bytes, freed once; other pointers are not node memory and
// node_free leaves them alone.
TEST(CApi, NodeMemory) {
  void* p = nullptr;
  ASSERT_EQ(conveyor_node_alloc(10000, &p), CONVEYOR_SUCCESS);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 4096, 0u);
  const auto* bytes = static_cast<const unsigned char*>(p);
  EXPECT_EQ(std::count(bytes, bytes + 10000, 0), 10000);
  EXPECT_TRUE(conveyor::is_node_memory(p, 10000));
  EXPECT_TRUE(conveyor::is_node_memory(bytes + 9999, 1));
  EXPECT_FALSE(conveyor::is_node_memory(bytes + 9999, 4096 * 2));  // runs past the allocation
  int on_stack = 0;
  EXPECT_FALSE(conveyor::is_node_memory(&on_stack, sizeof on_stack));
  EXPECT_FALSE(conveyor::node_free(&on_stack));
  EXPECT_FALSE(conveyor::node_free(nullptr));
  conveyor_node_free(p);
  EXPECT_FALSE(conveyor::is_node_memory(p, 1));
  void* empty = conveyor::node_alloc(0);  // a valid pointer to no bytes
  EXPECT_NE(empty, nullptr);
  EXPECT_TRUE(conveyor::node_free(empty));
  EXPECT_EQ(conveyor_node_alloc(1, nullptr), CONVEYOR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(conveyor_node_alloc(SIZE_MAX / 2, &p), CONVEYOR_ERR_INVALID_ARGUMENT);  // more than any machine has
  EXPECT_NE(std::string(conveyor_last_error()).find("node_alloc"), std::string::npos);
}

TEST(CApi, EnumsAndSizesMatchCxx) {
  EXPECT_EQ(static_cast<int>(conveyor::dtype::complex128), CONVEYOR_COMPLEX128);
  EXPECT_EQ(static_cast<int>(conveyor::op::lxor), CONVEYOR_LXOR);
  EXPECT_EQ(static_cast<int>(conveyor::op::logaddexp), CONVEYOR_LOGADDEXP);
  EXPECT_EQ(static_cast<int>(conveyor::errc::mpi), CONVEYOR_ERR_MPI);
  EXPECT_EQ(conveyor_dtype_size(CONVEYOR_BFLOAT16), 2u);
  EXPECT_EQ(conveyor_dtype_size(static_cast<conveyor_dtype>(-3)), 0u);
  EXPECT_STRNE(conveyor_version(), "");
  EXPECT_EQ(std::string(conveyor_simd_target()), conveyor::simd_targets().active);
}

}  // namespace
