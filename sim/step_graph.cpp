#include "sim/step_graph.h"

#include <algorithm>
#include <cmath>
#include <istream>
#include <limits>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/binary_io.h"

namespace lowband::sim {

namespace {

void check_rank(int rank, int ranks, const char* what) {
  if (rank < 0 || rank >= ranks)
    throw std::invalid_argument(std::string("StepGraph: ") + what + " " + std::to_string(rank) +
                                " is outside 0.." + std::to_string(ranks - 1));
}

void check_deps(DepSpan deps, size_t next_id) {
  for (TaskId dep : deps)
    if (dep < 0 || static_cast<size_t>(dep) >= next_id)
      throw std::invalid_argument("StepGraph: task " + std::to_string(next_id) + " depends on task " +
                                  std::to_string(dep) + ", which is not an earlier task");
}

}  // namespace

bool operator==(DepSpan a, DepSpan b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); }

StepGraph::StepGraph(int ranks) : ranks_(ranks) { dep_begin_.push_back(0); }

uint16_t StepGraph::intern(std::string_view kind_tag) {
  // A handful of distinct tags per graph: a scan beats hashing; and runs of
  // tasks share one (a collective's transfers), so the last one first.
  if (last_tag_ < tag_names_.size() && tag_names_[last_tag_] == kind_tag) return last_tag_;
  for (size_t i = 0; i < tag_names_.size(); ++i)
    if (tag_names_[i] == kind_tag) return last_tag_ = static_cast<uint16_t>(i);
  if (tag_names_.size() > std::numeric_limits<uint16_t>::max())
    throw std::invalid_argument("StepGraph: more than 65536 distinct kind tags");
  tag_names_.emplace_back(kind_tag);
  return last_tag_ = static_cast<uint16_t>(tag_names_.size() - 1);
}

TaskId StepGraph::add(Record record, DepSpan deps, std::string_view kind_tag) {
  check_deps(deps, records_.size());
  if (records_.size() >= static_cast<size_t>(std::numeric_limits<TaskId>::max()))
    throw std::invalid_argument("StepGraph: more tasks than a TaskId can number");
  if (deps_.size() + deps.size() > std::numeric_limits<uint32_t>::max())
    throw std::invalid_argument("StepGraph: more than 2^32 dependencies in one graph");
  record.tag = intern(kind_tag);
  // deps may view this graph's own storage (a task's deps passed on): copy first.
  const bool aliased = !deps.empty() && deps.begin() >= deps_.data() && deps.begin() < deps_.data() + deps_.size();
  if (aliased) {
    const std::vector<TaskId> copy = deps.to_vector();
    deps_.append(copy.data(), copy.data() + copy.size());
  } else {
    deps_.append(deps.begin(), deps.end());
  }
  dep_begin_.push_back(static_cast<uint32_t>(deps_.size()));
  records_.push_back(record);
  return static_cast<TaskId>(records_.size() - 1);
}

TaskId StepGraph::add_compute(int rank, double seconds, DepSpan deps, std::string_view kind_tag) {
  check_rank(rank, ranks_, "rank");
  if (!(seconds >= 0) || !std::isfinite(seconds))
    throw std::invalid_argument("StepGraph: compute seconds must be finite and >= 0, got " +
                                std::to_string(seconds));
  Record r;
  r.kind = TaskKind::compute;
  r.rank = rank;
  r.amount = seconds;
  return add(r, deps, kind_tag);
}

TaskId StepGraph::add_transfer(int src, int dst, double bytes, DepSpan deps, std::string_view kind_tag) {
  check_rank(src, ranks_, "source rank");
  check_rank(dst, ranks_, "destination rank");
  if (!(bytes >= 0) || !std::isfinite(bytes))
    throw std::invalid_argument("StepGraph: transfer bytes must be finite and >= 0, got " + std::to_string(bytes));
  Record r;
  r.kind = TaskKind::transfer;
  r.rank = src;
  r.peer = dst;
  r.amount = bytes;
  return add(r, deps, kind_tag);
}

Task StepGraph::task(TaskId id) const {
  const Record& r = records_[static_cast<size_t>(id)];
  const bool compute = r.kind == TaskKind::compute;
  return Task{r.kind, r.rank, r.peer, compute ? r.amount : 0.0, compute ? 0.0 : r.amount, tag_names_[r.tag], deps(id)};
}

std::vector<TaskId> StepGraph::step_ends() const {
  const auto tag = std::find(tag_names_.begin(), tag_names_.end(), kStepEndTag);
  if (tag == tag_names_.end()) return {};
  const uint16_t t = uint16_t(tag - tag_names_.begin());
  std::vector<TaskId> ends;
  for (size_t i = 0; i < records_.size(); ++i)
    if (records_[i].tag == t) ends.push_back(TaskId(i));
  return ends;
}

StepGraph StepGraph::steps_part(int first, int last) const {
  const std::vector<TaskId> ends = step_ends();
  if (first < 0 || last < first || last > int(ends.size()))
    throw std::out_of_range("StepGraph::steps_part: steps " + std::to_string(first) + ".." + std::to_string(last) +
                            " of " + std::to_string(ends.size() + 1));
  // Step k: the tasks strictly between ends[k - 1] and ends[k] (the end tasks are the window's).
  const TaskId lo = first == 0 ? 0 : ends[size_t(first - 1)] + 1;
  const TaskId hi = last == int(ends.size()) ? TaskId(records_.size()) : ends[size_t(last)];  // exclusive
  StepGraph part(ranks_);
  std::vector<TaskId> deps;
  for (TaskId id = lo; id < hi; ++id) {
    deps.clear();
    for (TaskId d : this->deps(id))
      if (d >= lo) deps.push_back(d - lo);
    const Record& r = records_[size_t(id)];
    part.add(r, deps, tag_names_[r.tag]);
  }
  return part;
}

StepGraph StepGraph::without_ranks(const std::vector<bool>& drop) const {
  const auto dropped = [&](int rank) { return rank >= 0 && size_t(rank) < drop.size() && drop[size_t(rank)]; };
  StepGraph out(ranks_);
  std::vector<TaskId> new_id(records_.size(), -1), deps;
  for (TaskId id = 0; id < TaskId(records_.size()); ++id) {
    const Record& r = records_[size_t(id)];
    if (dropped(r.rank) || (r.kind == TaskKind::transfer && dropped(r.peer))) continue;
    deps.clear();
    for (TaskId d : this->deps(id))
      if (new_id[size_t(d)] >= 0) deps.push_back(new_id[size_t(d)]);
    new_id[size_t(id)] = out.add(r, deps, tag_names_[r.tag]);
  }
  return out;
}

void StepGraph::append_per_rank(const StepGraph& next) {
  if (next.ranks() > ranks_) throw std::invalid_argument("StepGraph::append_per_rank: a graph of more ranks");
  std::vector<bool> awaited(records_.size(), false);
  for (size_t i = 0; i < deps_.size(); ++i) awaited[size_t(deps_[i])] = true;
  std::vector<std::vector<TaskId>> last(static_cast<size_t>(ranks_));  // per rank: its tasks no task waits for
  for (TaskId id = 0; id < TaskId(records_.size()); ++id) {
    if (awaited[size_t(id)]) continue;
    const Record& r = records_[size_t(id)];
    last[size_t(r.rank)].push_back(id);
    if (r.kind == TaskKind::transfer && r.peer != r.rank) last[size_t(r.peer)].push_back(id);
  }
  const TaskId offset = TaskId(records_.size());
  std::vector<TaskId> deps;
  for (TaskId id = 0; id < TaskId(next.size()); ++id) {
    const Record& r = next.records_[size_t(id)];
    deps.clear();
    for (TaskId d : next.deps(id)) deps.push_back(d + offset);
    if (deps.empty()) deps = last[size_t(r.rank)];
    add(r, deps, next.tag_names_[r.tag]);
  }
}

double StepGraph::bytes_sent(int rank, const std::string& kind_tag) const {
  double total = 0;
  for (const Record& r : records_)
    if (r.kind == TaskKind::transfer && r.rank == rank && r.peer != rank &&
        (kind_tag.empty() || tag_names_[r.tag] == kind_tag))
      total += r.amount;
  return total;
}

double StepGraph::compute_seconds(int rank) const {
  double total = 0;
  for (const Record& r : records_)
    if (r.kind == TaskKind::compute && r.rank == rank) total += r.amount;
  return total;
}

void StepGraph::write(std::ostream& out) const {
  binary::write_i64(out, ranks_);
  binary::write_u64(out, tag_names_.size());
  for (const std::string& tag : tag_names_) binary::write_string(out, tag);
  binary::write_array(out, records_.data(), records_.size());
  binary::write_array(out, dep_begin_.data(), dep_begin_.size());
  binary::write_array(out, deps_.data(), deps_.size());
}

namespace {

// Appends a stored array to `buf` as the bytes arrive (a damaged length cannot
// allocate far past the stream).
template <class T>
void read_into(std::istream& in, PodBuffer<T>& buf, const char* what) {
  const uint64_t n = binary::read_length(in, what);
  std::vector<T> chunk;
  for (uint64_t done = 0; done < n;) {
    chunk.resize(size_t(std::min<uint64_t>(uint64_t(1) << 20, n - done)));
    in.read(reinterpret_cast<char*>(chunk.data()), std::streamsize(chunk.size() * sizeof(T)));
    if (in.gcount() != std::streamsize(chunk.size() * sizeof(T)))
      throw binary::BinaryFormatError(std::string("ends inside ") + what);
    buf.append(chunk.data(), chunk.data() + chunk.size());
    done += chunk.size();
  }
}

}  // namespace

StepGraph StepGraph::read(std::istream& in) {
  StepGraph g(int(binary::read_i64(in, "a step graph's ranks")));
  const uint64_t tags = binary::read_length(in, "a step graph's tags");
  for (uint64_t i = 0; i < tags; ++i) g.tag_names_.push_back(binary::read_string(in, "a step graph's tag"));
  g.dep_begin_.clear();
  read_into(in, g.records_, "a step graph's tasks");
  read_into(in, g.dep_begin_, "a step graph's dependency offsets");
  read_into(in, g.deps_, "a step graph's dependencies");
  if (g.dep_begin_.size() != g.records_.size() + 1 || g.dep_begin_.back() != g.deps_.size())
    throw binary::BinaryFormatError("a step graph's dependency offsets do not match its tasks");
  for (const Record& r : g.records_)
    if (r.tag >= g.tag_names_.size()) throw binary::BinaryFormatError("a step graph's task has no tag");
  return g;
}

}  // namespace lowband::sim
