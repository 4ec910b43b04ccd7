// SPDX-License-Identifier: BSD-3-Clause
// The tune file: format/parse round trip and clear errors on bad input.
#include <gtest/gtest.h>

#include "conveyor/collectives.hpp"

namespace conveyor {
namespace {

TEST(CostModel, FormatParseRoundTrip) {
  cost_model m;
  m.intra_alpha = 1.5e-6;
  m.inter_beta = 8e-9;
  m.gamma = 4e-11;
  m.copy_beta = 3e-10;
  m.segment_bytes = 65536;
  m.window = 3;
  m.intra_piece_bytes = 12288;
  m.inter_piece_bytes = 0;
  const cost_model back = parse_cost_model(format_cost_model(m));
  EXPECT_DOUBLE_EQ(back.intra_alpha, m.intra_alpha);
  EXPECT_DOUBLE_EQ(back.inter_beta, m.inter_beta);
  EXPECT_DOUBLE_EQ(back.gamma, m.gamma);
  EXPECT_DOUBLE_EQ(back.copy_beta, m.copy_beta);
  EXPECT_EQ(back.segment_bytes, m.segment_bytes);
  EXPECT_EQ(back.window, m.window);
  EXPECT_EQ(back.intra_piece_bytes, m.intra_piece_bytes);
  EXPECT_EQ(back.inter_piece_bytes, m.inter_piece_bytes);
  EXPECT_DOUBLE_EQ(back.inter_alpha, cost_model{}.inter_alpha);  // untouched keys keep defaults
}

TEST(CostModel, BadFilesAreRejectedWithTheLine) {
  const auto message = [](const std::string& text) {
    try {
      parse_cost_model(text);
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("gamma 1e-11\nbogus 3\n").find("line 2"), std::string::npos);
  EXPECT_NE(message("intra_alpha -1\n").find("non-negative"), std::string::npos);
  EXPECT_NE(message("window\n").find("line 1"), std::string::npos);
  EXPECT_EQ(parse_cost_model("# only a comment\n\n").window, cost_model{}.window);
}

}  // namespace
}  // namespace conveyor
