// SPDX-License-Identifier: BSD-3-Clause
/* The C API used from C99: the header must compile as C and the calls must work. */
#include <conveyor/conveyor.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define CHECK(cond)                                                                                        \
  do {                                                                                                     \
    if (!(cond)) {                                                                                         \
      fprintf(stderr, "%s:%d: CHECK failed: %s (%s)\n", __FILE__, __LINE__, #cond, conveyor_last_error()); \
      return 1;                                                                                            \
    }                                                                                                      \
  } while (0)

int main(void) {
  int8_t a[37], b[37];
  for (int i = 0; i < 37; ++i) {
    a[i] = (int8_t)(100 + i);
    b[i] = (int8_t)100;
  }
  CHECK(conveyor_reduce_local(a, b, 37, CONVEYOR_INT8, CONVEYOR_SUM) == CONVEYOR_SUCCESS);
  for (int i = 0; i < 37; ++i) CHECK(b[i] == (int8_t)(uint8_t)(200 + i)); /* wraps */
  CHECK(conveyor_reduce_local(a, b, 37, CONVEYOR_INT8, CONVEYOR_MIN) == CONVEYOR_SUCCESS);
  CHECK(conveyor_reduce(a, b, b, 0, CONVEYOR_FLOAT64, CONVEYOR_LAND) == CONVEYOR_ERR_UNSUPPORTED);
  CHECK(strlen(conveyor_last_error()) > 0);
  CHECK(conveyor_dtype_size(CONVEYOR_COMPLEX64) == 8);
  {
    /* Layouts need no MPI until a plan is made. */
    const int64_t shape[2] = {6, 4};
    const int grid[2] = {2, 1};
    double local[12];
    int64_t blocks = -1;
    conveyor_layout l = NULL;
    conveyor_transform t;
    conveyor_redistribute_options o;
    CHECK(conveyor_layout_cartesian(2, shape, grid, local, 0, NULL, &l) == CONVEYOR_SUCCESS);
    CHECK(conveyor_layout_local_blocks(l, 1, &blocks) == CONVEYOR_SUCCESS && blocks == 1);
    CHECK(conveyor_layout_local_blocks(l, 2, &blocks) == CONVEYOR_SUCCESS && blocks == 0);
    conveyor_layout_free(l);
    conveyor_transform_init(&t);
    CHECK(t.alpha == 1.0 && t.beta == 0.0 && t.type == CONVEYOR_FLOAT64 && t.perm == NULL);
    conveyor_redistribute_options_init(&o);
    CHECK(o.transport == CONVEYOR_TRANSPORT_AUTO && o.relabel == CONVEYOR_RELABEL_NONE);
  }
  printf("C API: version %s, SIMD target %s\n", conveyor_version(), conveyor_simd_target());
  return 0;
}
