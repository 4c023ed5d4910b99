#include "runtime/data/bpe.h"

#include <functional>
#include <limits>
#include <queue>
#include <tuple>

namespace lowband::data {

void bpe_merge_by_rounds(std::vector<TokenId>& word, const BpeMergeTable& merges) {
  std::vector<TokenId> merged;
  while (word.size() > 1) {
    // The adjacent pair with the lowest merge rank...
    uint32_t best_rank = std::numeric_limits<uint32_t>::max();
    TokenId left = 0, right = 0, result = 0;
    for (size_t i = 0; i + 1 < word.size(); ++i) {
      const auto it = merges.find(bpe_pair_key(word[i], word[i + 1]));
      if (it != merges.end() && it->second.rank < best_rank) {
        best_rank = it->second.rank;
        left = word[i], right = word[i + 1], result = it->second.merged;
      }
    }
    if (best_rank == std::numeric_limits<uint32_t>::max()) break;
    // ...is merged at every occurrence, left to right.
    merged.clear();
    for (size_t i = 0; i < word.size(); ++i) {
      if (i + 1 < word.size() && word[i] == left && word[i + 1] == right) {
        merged.push_back(result);
        ++i;
      } else {
        merged.push_back(word[i]);
      }
    }
    word.swap(merged);
  }
}

void bpe_merge_with_heap(std::vector<TokenId>& word, const BpeMergeTable& merges) {
  const int n = static_cast<int>(word.size());
  if (n < 2) return;
  // The symbols form a linked list over their first byte's position; a merge
  // keeps the left symbol and unlinks the right one.
  std::vector<int> prev(n), next(n);
  std::vector<char> alive(n, 1);
  for (int i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    uint32_t rank;
    int pos;  // the left symbol
    TokenId left, right, merged;
    bool operator>(const Candidate& o) const { return std::tie(rank, pos) > std::tie(o.rank, o.pos); }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  const auto push = [&](int p) {
    const int q = next[p];
    if (q < 0) return;
    const auto it = merges.find(bpe_pair_key(word[p], word[q]));
    if (it != merges.end()) heap.push({it->second.rank, p, word[p], word[q], it->second.merged});
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    const int q = next[c.pos];
    // Stale: either symbol has been merged away or changed since the push.
    if (!alive[c.pos] || q < 0 || word[c.pos] != c.left || word[q] != c.right) continue;
    word[c.pos] = c.merged;
    alive[q] = 0;
    next[c.pos] = next[q];
    if (next[q] >= 0) prev[next[q]] = c.pos;
    if (prev[c.pos] >= 0) push(prev[c.pos]);
    push(c.pos);
  }
  size_t out = 0;
  for (int p = 0; p >= 0; p = next[p]) word[out++] = word[p];  // position 0 always survives
  word.resize(out);
}

}  // namespace lowband::data
