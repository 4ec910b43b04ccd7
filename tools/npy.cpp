// SPDX-License-Identifier: BSD-3-Clause
#include "npy.hpp"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <regex>

#include "conveyor/types.hpp"

namespace conveyor::tool {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw error(errc::invalid_argument, path + ": " + why);
}

}  // namespace

npy_header read_npy_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail(path, "cannot open");
  const auto file_size = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0);
  unsigned char magic[8] = {};
  in.read(reinterpret_cast<char*>(magic), 8);
  if (!in || std::memcmp(magic, "\x93NUMPY", 6) != 0) fail(path, "not a .npy file (bad magic)");
  const int major = magic[6];
  if (major < 1 || major > 3) fail(path, "unsupported .npy version " + std::to_string(major));
  std::uint64_t header_len = 0;
  unsigned char len[4] = {};
  in.read(reinterpret_cast<char*>(len), major == 1 ? 2 : 4);
  if (!in) fail(path, "truncated header");
  header_len = major == 1 ? (len[0] | (len[1] << 8))
                          : (std::uint64_t{len[0]} | (std::uint64_t{len[1]} << 8) | (std::uint64_t{len[2]} << 16) |
                             (std::uint64_t{len[3]} << 24));
  const std::uint64_t data_offset = (major == 1 ? 10 : 12) + header_len;
  if (data_offset > file_size) fail(path, "header longer than the file");
  std::string dict(header_len, '\0');
  in.read(dict.data(), static_cast<std::streamsize>(header_len));
  if (!in) fail(path, "truncated header");

  std::smatch m;
  if (!std::regex_search(dict, m, std::regex(R"('descr'\s*:\s*'([^']*)')"))) fail(path, "header has no 'descr'");
  const std::string descr = m[1];
  npy_header h;
  if (descr == "<f8") h.item_size = 8;
  else if (descr == "<f4") h.item_size = 4;
  else fail(path, "dtype '" + descr + "' not supported (need little-endian float64 '<f8' or float32 '<f4')");
  if (!std::regex_search(dict, m, std::regex(R"('fortran_order'\s*:\s*(True|False))")))
    fail(path, "header has no 'fortran_order'");
  if (m[1] == "True") fail(path, "Fortran-ordered arrays are not supported (save with np.ascontiguousarray)");
  if (!std::regex_search(dict, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))"))) fail(path, "header has no 'shape'");
  std::vector<std::uint64_t> dims;
  const std::string shape = m[1];
  const std::regex number(R"(\d+)");
  for (auto it = std::sregex_iterator(shape.begin(), shape.end(), number); it != std::sregex_iterator(); ++it) {
    dims.push_back(std::stoull(it->str()));
  }
  if (dims.size() != 2) fail(path, "need a 2-D array, got shape (" + shape + ")");
  h.rows = static_cast<std::size_t>(dims[0]);
  h.cols = static_cast<std::size_t>(dims[1]);
  if (h.cols != 0 && dims[0] > (UINT64_MAX / h.item_size) / dims[1]) fail(path, "shape overflows");
  const std::uint64_t data_bytes = dims[0] * dims[1] * h.item_size;
  if (file_size - data_offset != data_bytes) {
    fail(path, "file holds " + std::to_string(file_size - data_offset) + " data bytes, shape (" + shape + ") of " +
                   descr + " needs " + std::to_string(data_bytes));
  }
  h.data_offset = static_cast<std::size_t>(data_offset);
  return h;
}

template <class T>
std::vector<T> read_npy_rows(const std::string& path, const npy_header& h, std::size_t first, std::size_t count) {
  if (sizeof(T) != h.item_size) fail(path, "element size mismatch");
  if (first + count > h.rows) fail(path, "rows out of range");
  std::vector<T> out(count * h.cols);
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(h.data_offset + first * h.cols * sizeof(T)));
  in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size() * sizeof(T)));
  if (!in && !out.empty()) fail(path, "short read");
  return out;
}

template std::vector<float> read_npy_rows(const std::string&, const npy_header&, std::size_t, std::size_t);
template std::vector<double> read_npy_rows(const std::string&, const npy_header&, std::size_t, std::size_t);

}  // namespace conveyor::tool
