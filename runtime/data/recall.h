#pragma once
// Keyed recall: a generated, byte-level task whose answers only remote K/V carry
// (training.data_source "recall"; issue 24). Each sequence is one record of
// seq_len + 1 bytes, generated from (seed, stream, index):
//
//   pairs:   a3 q7 Z0 ...   every key (letters) once, with its value (digits)
//   queries: q7 a3 q7 b1 ...  keys drawn uniformly, back to back, each with its
//            value again, to the end ('.' where no whole query fits)
//
// The pairs sit in the block of positions that the first context rank holds
// (both splits start it at position 0); a query's value tokens are the answer
// targets. Values are fresh random digits in every record, so an answer is
// predictable only from an earlier copy of its pair. It is "remote" where the
// rank predicting it holds no whole earlier copy (only remote K/V carry it),
// "local" where it does (a control that any codec should keep; the queries
// also give the model dense signal to learn the lookup with). Chance is 1 / 10
// per answer token. Form "fused" writes each pair as one byte (128 + key·10 +
// value, 12 keys a..l) so that one attention hop answers a query; "text" as
// letters and digits, which needs an induction head (two hops).
#include <cstdint>
#include <vector>

#include "runtime/data/batch.h"
#include "runtime/scenario/recall_shape.h"

namespace lowband::data {

// What each target is: not an answer, an answer only remote K/V carry, or an
// answer whose pair the predicting rank holds itself.
enum class AnswerKind : uint8_t { none = 0, remote = 1, local = 2 };

struct RecallBatch {
  Batch batch;
  std::vector<AnswerKind> answer;  // (batch_size, seq_len), per target
};

// Streams: training batches and validation sequences never share a record.
enum class RecallStream : uint64_t { train = 1, validation = 2 };

// Sequences first_index .. first_index + batch_size - 1 of the stream; a pure
// function of its arguments.
RecallBatch recall_batch(const RecallShape& shape, uint64_t seed, RecallStream stream, uint64_t first_index,
                         int batch_size);

// The one record (seq_len + 1 tokens) and its answer kinds (seq_len, per target).
void recall_record(const RecallShape& shape, uint64_t seed, RecallStream stream, uint64_t index,
                   std::vector<int32_t>& tokens, std::vector<AnswerKind>& answer);

}  // namespace lowband::data
