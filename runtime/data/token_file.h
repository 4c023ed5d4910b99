#pragma once
// Token files (.u16): the ids as raw little-endian uint16, nothing else, so that
// a run reads a corpus tokenized once by `lowband tokenize` without tokenizing it
// again (and numpy.fromfile(path, "<u2") reads it too).
#include <string>
#include <vector>

#include "runtime/data/tokenizer.h"

namespace lowband::data {

// InputError naming the file for a missing/unreadable file or an odd byte count.
std::vector<TokenId> read_tokens(const std::string& path);

// Writes atomically (a reader never sees half a file); InputError naming the
// file when it cannot be written.
void write_tokens(const std::string& path, const std::vector<TokenId>& ids);

// True when the path names a token file (ends in ".u16").
bool is_token_file(const std::string& path);

}  // namespace lowband::data
