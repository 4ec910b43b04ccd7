// SPDX-License-Identifier: BSD-3-Clause
// Reading row blocks of a 2-D NumPy .npy file (format versions 1-3, little-endian
// float32/float64, C order). Written here because the format is a few lines of
// header parsing and no Debian C++ library reads it; every field is validated and
// the data size is checked against the file length before anything is read.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace conveyor::tool {

struct npy_header {
  std::size_t rows = 0, cols = 0;
  std::size_t item_size = 0;  // 4 (float32) or 8 (float64)
  std::size_t data_offset = 0;
};

/// Parses and validates the header of `path`; throws conveyor::error with the
/// reason (not .npy, unsupported dtype or order, not 2-D, size vs file length).
npy_header read_npy_header(const std::string& path);

/// Rows [first, first + count) of the matrix, as float64 or float32 (T must match
/// the file's dtype).
template <class T>
std::vector<T> read_npy_rows(const std::string& path, const npy_header& h, std::size_t first, std::size_t count);

}  // namespace conveyor::tool
