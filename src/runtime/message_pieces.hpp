// SPDX-License-Identifier: BSD-3-Clause
// MPI counts are `int`: a transfer above 2^31 - 1 units goes as consecutive pieces.
// One helper for every engine (the collectives' schedules and blocking exchanges,
// the Redistribute transports and puts, DSOP's baseline allreduce), so the piece
// size and the order pieces are posted in are the same everywhere.
#pragma once

#include <algorithm>
#include <cstddef>

namespace conveyor::detail {

/// Bytes per piece: 2^30, so a piece's count always fits an int, for any unit up
/// to 2 bytes and with room to spare for larger ones counted in bytes.
inline constexpr std::size_t kMaxMessageBytes = std::size_t{1} << 30;

/// Calls piece(offset, count, index) for consecutive pieces of [0, total) of at
/// most `max_piece` units each, in order (so pieces with the same tag between two
/// ranks match in order). Nothing is called for total = 0.
template <class Piece>
void for_each_piece(std::size_t total, Piece&& piece, std::size_t max_piece = kMaxMessageBytes) {
  int index = 0;
  for (std::size_t off = 0; off < total; off += max_piece, ++index) {
    piece(off, static_cast<int>(std::min(max_piece, total - off)), index);
  }
}

}  // namespace conveyor::detail
