#pragma once
// Collectives as schedules of transfers appended to a StepGraph, and their
// closed-form alpha-beta times.
//
// Sizes: total_bytes S is the whole buffer of one rank.
//  all-gather:      each of the p ranks owns S/p and ends with all S.
//  reduce-scatter:  each rank holds S and ends with its reduced S/p.
//  all-reduce:      each rank holds S and ends with the reduced S
//                   (ring reduce-scatter, then ring all-gather; or direct: every
//                   rank sends block j of S/p to rank j at once, and rank j, once
//                   it holds every block j, sends the sum to every rank at once —
//                   two all-to-alls: 2 latencies instead of 2(p-1), the same bytes).
//  all-to-all:      each rank holds S in p blocks of S/p; block j goes to rank j
//                   (direct: all p-1 sends start at once).
//  point-to-point:  ranks[0] sends S to ranks[1].
//  incast:          ranks[1..p-1] each send S to ranks[0], all at once (many-to-one).
//  relay all-gather: as all-gather, through a relay node that is none of the ranks
//                   (an object store): each rank uploads its S/p to the relay once,
//                   and the relay sends each message on to the p-1 other ranks as
//                   soon as that message's upload is done.
// Rings go ranks[0] -> ranks[1] -> ... -> ranks[p-1] -> ranks[0]; in round k each
// rank sends one S/p chunk to its successor once it has received the previous
// round's chunk and its own previous send is done (one message in flight per rank).
//
// `after` holds the start dependencies: empty (none), or one list per participant.
// Each function returns, per participant, one TaskId (a zero-second compute on
// that rank) that finishes when the rank's part is done. Bad arguments throw
// std::invalid_argument.
#include <string>
#include <vector>

#include "sim/network.h"
#include "sim/step_graph.h"

namespace lowband::sim {

enum class Collective { all_gather, reduce_scatter, all_reduce, all_to_all, p2p, incast };
const char* to_string(Collective collective);
// How an all-reduce moves its bytes (parallel.all_reduce): the same bytes per rank
// either way; ring takes 2(p-1) latencies on one link per rank, direct 2 latencies
// on every link at once. Both sum each element in ring order (comm/communicator.h).
enum class AllReduceAlgorithm { ring, direct };
const Words<AllReduceAlgorithm>& all_reduce_algorithm_words();  // as parallel.all_reduce spells them
const char* to_string(AllReduceAlgorithm algorithm);
using RankDeps = std::vector<std::vector<TaskId>>;

std::vector<TaskId> ring_all_gather(StepGraph& graph, const std::vector<int>& ranks, double total_bytes,
                                    const RankDeps& after, const std::string& kind_tag);
std::vector<TaskId> ring_reduce_scatter(StepGraph& graph, const std::vector<int>& ranks, double total_bytes,
                                        const RankDeps& after, const std::string& kind_tag);
std::vector<TaskId> ring_all_reduce(StepGraph& graph, const std::vector<int>& ranks, double total_bytes,
                                    const RankDeps& after, const std::string& kind_tag);
std::vector<TaskId> all_to_all(StepGraph& graph, const std::vector<int>& ranks, double total_bytes,
                               const RankDeps& after, const std::string& kind_tag);
std::vector<TaskId> direct_all_reduce(StepGraph& graph, const std::vector<int>& ranks, double total_bytes,
                                      const RankDeps& after, const std::string& kind_tag);
std::vector<TaskId> all_reduce(StepGraph& graph, AllReduceAlgorithm algorithm, const std::vector<int>& ranks,
                               double total_bytes, const RankDeps& after, const std::string& kind_tag);
// ranks must hold exactly two ranks: the source, then the destination.
std::vector<TaskId> point_to_point(StepGraph& graph, const std::vector<int>& ranks, double total_bytes,
                                   const RankDeps& after, const std::string& kind_tag);
std::vector<TaskId> incast(StepGraph& graph, const std::vector<int>& ranks, double total_bytes, const RankDeps& after,
                           const std::string& kind_tag);
// `relay` must not be one of `ranks`; the relay's fan-out starts from the upload
// alone (it has no `after` of its own).
std::vector<TaskId> relay_all_gather(StepGraph& graph, const std::vector<int>& ranks, int relay, double total_bytes,
                                     const RankDeps& after, const std::string& kind_tag);
// Dispatches on `collective` to one of the above.
std::vector<TaskId> append_collective(StepGraph& graph, Collective collective, const std::vector<int>& ranks,
                                      double total_bytes, const RankDeps& after, const std::string& kind_tag);

// Closed forms on a path of bandwidth B (bytes/s) and latency L (s) per transfer,
// each transfer alone on its links:
//   ring all-gather, ring reduce-scatter:  (p-1) * (S/(p*B) + L)
//   ring all-reduce:                       2 (p-1) * (S/(p*B) + L)
//   all-to-all, flows_per_link flows sharing each link:  L + flows_per_link * S/(p*B)
//   direct all-reduce, the same:           2 (L + flows_per_link * S/(p*B))
//     (a star: p-1 flows share each access link; a full mesh: one each)
//   point-to-point:                        L + S/B
//   incast, flows_per_link senders sharing the receiver's link:  L + flows_per_link * S/B
double ring_all_gather_seconds(int p, double total_bytes, double bandwidth_bytes_per_s, double latency_s);
double ring_reduce_scatter_seconds(int p, double total_bytes, double bandwidth_bytes_per_s, double latency_s);
double ring_all_reduce_seconds(int p, double total_bytes, double bandwidth_bytes_per_s, double latency_s);
double all_to_all_seconds(int p, double total_bytes, double bandwidth_bytes_per_s, double latency_s,
                          int flows_per_link);
double direct_all_reduce_seconds(int p, double total_bytes, double bandwidth_bytes_per_s, double latency_s,
                                 int flows_per_link);
double point_to_point_seconds(double total_bytes, double bandwidth_bytes_per_s, double latency_s);
// Relay all-gather on a star, every rank's access link uploading at U and
// downloading at D, the relay's link taking in at relay_in and sending at
// relay_out, latency_s the path latency (rank's link + relay's link). The p
// uploads of S/p run at once and share the relay's download; then every rank
// downloads the p-1 other messages at once, which share its download, and all
// p(p-1) share the relay's upload:
//   2 latency + (S/p) / min(U, relay_in/p) + (p-1)(S/p) / min(D, relay_out/p)
double relay_all_gather_seconds(int p, double total_bytes, double upload_bytes_per_s, double download_bytes_per_s,
                                double relay_in_bytes_per_s, double relay_out_bytes_per_s, double latency_s);

// The closed-form time of `collective` over p ranks on `network` where one exists:
// star or full_mesh without overrides (a star path crosses two access links: latency
// 2L, bandwidth B; an all-to-all or incast on a star puts p-1 flows on a link).
// Model ideal: the forms above. Model tcp (sim/tcp_model.h): point-to-point and ring
// rounds as tcp_message_seconds on each rank's connection (fresh connections pay
// their startup in the first rounds), incast with warm connections as
// L + S / min(B * 1448/1514 / flows, the message rate of S alone). NaN otherwise.
double expected_seconds(Collective collective, const NetworkSpec& network, int p, double total_bytes);

// nccl-tests' bus bandwidth factor: all-reduce 2(p-1)/p; all-gather, reduce-scatter
// and all-to-all (p-1)/p; point-to-point 1; incast p-1 (the receiver's link carries
// (p-1) S).
double bus_bandwidth_factor(Collective collective, int p);

}  // namespace lowband::sim
