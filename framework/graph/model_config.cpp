#include "framework/graph/model_config.h"

#include "framework/core/error.h"

namespace tr {

void sequence_input(ModelConfig& m, int64_t seq_len, int vocab) {
  TR_USER_CHECK(seq_len >= 1 && seq_len < (int64_t(1) << 24), "sequence length ", seq_len, " is outside [1, 2^24)");
  m.seq_len = seq_len;
  m.in_height = 1;
  m.in_width = int(seq_len + 1);
  m.in_channels = 4;  // the bytes of an int32 token
  m.classes = vocab;
}

std::string optimizer_name(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::Sgd: return "sgd";
    case OptimizerKind::Lars: return "lars";
    case OptimizerKind::AdamW: return "adamw";
  }
  return "?";
}

OptimizerKind parse_optimizer(const std::string& s) {
  if (s == "sgd") return OptimizerKind::Sgd;
  if (s == "lars") return OptimizerKind::Lars;
  if (s == "adamw") return OptimizerKind::AdamW;
  throw UserError(cat("unknown optimizer '", s, "' (expected sgd, lars or adamw)"));
}

std::string bn_sync_name(BnSync s) { return s == BnSync::Batch ? "batch" : "running"; }

BnSync parse_bn_sync(const std::string& s) {
  if (s == "batch") return BnSync::Batch;
  if (s == "running") return BnSync::Running;
  throw UserError(cat("unknown BN sync '", s, "' (expected batch or running)"));
}

}  // namespace tr
