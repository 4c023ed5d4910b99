#pragma once
// The typed, validated form of one scenario file (one experiment). The reference
// for every key, its unit and default is scenarios/README.md.
#include <cstdint>
#include <optional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/words.h"
#include "sim/collectives.h"
#include "sim/device_profile.h"
#include "sim/network.h"

namespace lowband {

struct ModelConfig {
  int layers = 0;
  int d_model = 0;
  int heads = 0;
  int kv_heads = 0;            // grouped-query attention when < heads
  int ffn_hidden = 0;          // SwiGLU hidden size
  int vocab = 0;
  int64_t seq_len = 0;         // tokens per sequence (the context length)
  int bytes_per_element = 2;   // of activations and gradients on the wire
  bool tie_embeddings = false;

  int head_dim() const { return d_model / heads; }
  int d_kv() const { return kv_heads * head_dim(); }
  double parameters() const;   // total parameter count
};

enum class CpSplit { contiguous, zigzag };
const Words<CpSplit>& cp_split_words();
// The order in which a pipeline stage runs its microbatches' forwards (F) and
// backwards (B) within a step (runtime/parallel/pipeline/schedule.h).
enum class PipelineSchedule { gpipe, one_f_one_b };
const Words<PipelineSchedule>& pipeline_schedule_words();
enum class CpExchange { ring, all_gather };
const Words<CpExchange>& cp_exchange_words();

// One data-parallel replica of a heterogeneous layout (parallel.replicas): its
// own pipeline and context degrees, the network nodes of its ranks (stage-major,
// then context rank) and whether its pipeline boundaries compress.
struct ReplicaConfig {
  int pipeline = 1;
  int context = 1;
  std::vector<int> nodes;
  bool compress_boundaries = false;
};

// How data-parallel replicas keep their weights together (parallel.data_sync;
// runtime/sync/outer_sync.h):
//  - all_reduce: gradients summed over the replicas every step (the reference);
//  - diloco: inner_steps local steps, then the pseudo-gradient Δ = θ_start − θ
//    averaged over the replicas (all-reduce) and applied by outer Nesterov SGD;
//  - sparseloco: as diloco, but each replica sends the top-k entries per chunk
//    of e ← β·e + Δ, 2-bit quantised, with error feedback; outer plain SGD.
enum class DataSyncMethod { all_reduce, diloco, sparseloco };
const Words<DataSyncMethod>& data_sync_method_words();
const char* data_sync_method_name(DataSyncMethod m);  // as parallel.data_sync.method spells it
// sparseloco: a coordinate's aggregate is the sum of the replicas' decoded values
// over all replicas (all) or over the replicas whose message holds it (chosen).
enum class SparseAverage { all, chosen };
const Words<SparseAverage>& sparse_average_words();
// sparseloco: how the replicas' messages meet (the numbers are the same, only
// the traffic differs): a ring all-gather between the ranks, or each message
// uploaded once to a relay node (an object store) that sends it on to the
// others (sim::relay_all_gather).
enum class DataSyncExchange { all_gather, relay };
const Words<DataSyncExchange>& data_sync_exchange_words();

struct DataSyncConfig {
  DataSyncMethod method = DataSyncMethod::all_reduce;
  int inner_steps = 30;         // H: local steps between outer steps
  double outer_lr = 0.7;        // diloco 0.7, sparseloco 1.0 unless given
  double outer_momentum = 0.9;  // diloco: Nesterov momentum of the outer SGD
  int topk_per_chunk = 64;      // sparseloco: entries kept per chunk
  int chunk = 4096;             // sparseloco: elements per chunk (a square; 2-D tensors in sqrt x sqrt tiles)
  int value_bits = 2;           // sparseloco: 1..8 (2^bits bins), or 32 (float32 values, no quantisation)
  double error_decay = 0.95;    // sparseloco: β of the error feedback
  SparseAverage average = SparseAverage::all;
  DataSyncExchange exchange = DataSyncExchange::all_gather;  // sparseloco
  // exchange relay: the network node of the relay, one no rank runs on (loading
  // resolves it to network.nodes - 1 unless given); -1 otherwise.
  int relay_node = -1;
  // Outer syncs that run beside the inner steps (diloco, sparseloco;
  // sync/outer_sync.h): the exchange issued after step t is merged after step
  // t + delay_steps (τ, 0..inner_steps; 0: the replicas wait for it). The merge
  // leaves a replica's weights at local_weight·θ_local + (1 − local_weight)·θ_global
  // (Streaming DiLoCo's mixing; 0: the global weights, as DiLoCo). eager (diloco,
  // τ = H): the outer step takes the replica's own fresh Δ in place of its stale
  // one in the average that arrived (Kale et al. 2025).
  int delay_steps = 0;
  double local_weight = 0;
  bool eager = false;
  // Streaming DiLoCo (Douillard et al. 2025): the model in `fragments` runs of
  // layers (the embedding with the first, the head with the last), fragment f
  // synced every H steps at offset f·H/F, each with its own outer state
  // (sync/sync_period.h). 1: the whole model at once.
  int fragments = 1;
  // diloco: Δ on the wire at 1..8 bits (pack.h: each tensor's 2^bits bins, the
  // messages all-gathered; Streaming DiLoCo's low-bit outer gradients), or 32:
  // float32, all-reduced.
  int outer_gradient_bits = 32;
  // Partial participation (diloco; sync/participation.h): a round closes
  // deadline_seconds after the first replica is ready (< 0: no deadline) or when
  // `quorum` replicas are (0: no quorum), whichever comes first; a replica not
  // ready by then is dropped from the round. Neither: every round waits for all.
  double deadline_seconds = -1;
  int quorum = 0;
  bool partial_participation() const { return deadline_seconds >= 0 || quorum > 0; }
};

struct ParallelConfig {
  int context = 1;   // context-parallel degree P
  int pipeline = 1;  // pipeline stages
  // Layers of each stage, first to last (empty: model.layers / pipeline each).
  std::vector<int> stage_layers;
  int microbatches = 1;  // per step, each batch_size / microbatches sequences
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  int data = 1;      // data-parallel replicas (layout_trainer.h)
  CpSplit split = CpSplit::zigzag;
  CpExchange exchange = CpExchange::ring;
  bool overlap = true;  // overlap K/V transfers with attention on blocks already received
  // How every all-reduce (gradient sync, loss) moves its bytes (sim/collectives.h).
  sim::AllReduceAlgorithm all_reduce = sim::AllReduceAlgorithm::ring;
  // The network node of each rank (rank order: replica, stage, context rank);
  // empty: rank r on node r. runtime/parallel/layout.h reads it.
  std::vector<int> placement;
  // Replicas that differ (empty: `data` identical replicas of pipeline x context).
  std::vector<ReplicaConfig> replicas;
  DataSyncConfig data_sync;  // across the replicas (read by the data-parallel trainer)
  // Every replica's pipeline x context ranks (replicas of different shapes summed).
  int ranks() const {
    if (replicas.empty()) return context * pipeline * data;
    int n = 0;
    for (const ReplicaConfig& r : replicas) n += r.pipeline * r.context;
    return n;
  }
  // Layers [first, first + count) of `stage` (stage_layers, or the even split).
  int stage_first_layer(int stage, int layers) const;
  int stage_layer_count(int stage, int layers) const;
  int node_of(int rank) const { return placement.empty() ? rank : placement[size_t(rank)]; }
};

// drop: nothing crosses, receivers attend to zeros (the comparisons' floor).
enum class CompressionMethod { none, mos, topk, quantize, drop };
const Words<CompressionMethod>& compression_method_words();

// MoS rotation of U0: learned theta = psi(chunk mean) + b (the method), fixed
// theta = 0 (U0 alone), or a random theta per chunk (not learned): the ablations.
enum class MosRotation { learned, fixed, random };
const Words<MosRotation>& mos_rotation_words();

// Where MoS takes K's subspace: before RoPE (the K projection's output, as the
// paper factorises it; receivers re-apply RoPE at the sender's positions) or
// after it (RoPE spreads each frequency pair over 2 dimensions: far higher rank).
enum class KFrame { pre_rope, post_rope };
const Words<KFrame>& k_frame_words();

// What the owner of a K/V block attends to (compression.owner_kv): its exact K/V
// (only the wire is compressed; receivers see the reconstruction), or the same
// reconstruction its receivers decode, as the MoS paper constrains the K/V
// projections (every rank attends to Ẑ, gradients through the codec): the
// default for mos, exact for topk and quantize (default_owner_kv).
enum class OwnerKv { exact, reconstructed };
const Words<OwnerKv>& owner_kv_words();
OwnerKv default_owner_kv(CompressionMethod method);

// How the weights stay equal across context-parallel ranks (runtime/parallel/
// sync/replica_sync.h): all_reduce sums the gradients; sparse averages a random slice of
// weights that drift apart; sparse_grad, topk_grad, sparse_update and lowrank_grad
// exchange a compressed part of an error-feedback buffer and apply the same aggregate on every
// rank, so the weights never drift.
enum class WeightSync { all_reduce, sparse, sparse_grad, topk_grad, sparse_update, lowrank_grad };
const Words<WeightSync>& weight_sync_words();
const char* weight_sync_name(WeightSync w);

// What crosses a pipeline stage boundary (compression.boundary):
//  - none: the residual stream x, d values per token;
//  - subspace: Uᵀ(x − E_fixed[token]) and the token id, k + 1 values per token,
//    exact because every layer before the last boundary keeps its output
//    projections in span(U) (Protocol Models); the gradient back is Uᵀ·∂L/∂x;
//  - lowrank: Uᵀx without the constraint (the residual outside span(U) is lost);
//  - topk / quantize: lossy baselines on x and on ∂L/∂x.
enum class BoundaryMethod { none, subspace, lowrank, embedding_residual, topk, quantize };
const Words<BoundaryMethod>& boundary_method_words();

struct BoundaryConfig {
  BoundaryMethod method = BoundaryMethod::none;
  int rank = 0;                // subspace / lowrank / embedding_residual: k, the basis' columns (1..d_model)
  double topk_fraction = 0.1;  // topk: fraction of each token's values kept
  int quantize_bits = 8;       // quantize: 4 or 8
  int quantize_block = 64;     // quantize: values per absmax scale
};

struct CompressionConfig {
  CompressionMethod method = CompressionMethod::none;
  // MoS: per head, the rank r kept for K and for V (r = head_dim * (1 - ratio)).
  double k_ratio = 0;          // fraction removed, e.g. 0.98
  double v_ratio = 0;
  int k_rank_set = 0;          // an explicit rank instead of a ratio (0: use the ratio)
  int v_rank_set = 0;
  int warmup_steps = 500;      // uncompressed steps first (mos: then U0 is fitted); parse: 0 for the baselines
  WeightSync weight_sync = WeightSync::all_reduce;
  double sync_fraction = 0.05; // sparse*: fraction of each tensor sent per sync; topk_grad: k / 4096 per chunk
  int sync_every = 1;          // sparse: steps between syncs (the others sync every step)
  int sync_value_bits = 2;     // topk_grad: 1..8 (2^bits bins), or 32 (float32 values)
  // mos ablations: how U0 rotates, and whether U0 comes from the warm-up's
  // activations (false: random orthonormal U0, compressed from step 0).
  MosRotation rotation = MosRotation::learned;
  int rotation_params = 1;     // mos: m, rotation generators per key (θ ∈ ℝᵐ per block and head)
  bool warm_start = true;
  KFrame k_frame = KFrame::pre_rope;
  // false: the final transformer block's K/V cross uncompressed, as in the MoS
  // paper (mos's default; parse resolves true for topk, quantize and drop); true
  // compresses every layer (what runs recorded before the key existed did:
  // upgrade_recorded_scenario).
  bool compress_final_layer = false;
  // mos: validation refuses U₀ fitted before the learning-rate warm-up ends
  // (0 < warmup_steps < training.lr_warmup_steps) unless this opt-in is set.
  bool fit_during_lr_warmup = false;
  OwnerKv owner_kv = OwnerKv::exact;  // mos, topk, quantize (parse: default_owner_kv)
  double topk_fraction = 0.1;  // topk: fraction of each K/V block's entries kept
  int quantize_bits = 4;       // quantize: 4 or 8 bits per value
  int quantize_block = 64;     // quantize: values per absmax scale

  BoundaryConfig boundary;      // pipeline stage boundaries

  int k_rank(int head_dim) const;
  int v_rank(int head_dim) const;
  // Whether layer `layer` of `layers` has its K/V compressed by the codec: all but
  // the final one unless compress_final_layer; none for none. The one place this is decided (the
  // codec, the compute costs and the summaries all ask here).
  bool kv_layer_compressed(int layer, int layers) const;
};

// Where `lowband run` takes compute seconds from: a steady clock around the
// kernels that ran here, or the device profile's roofline. automatic: measured
// when every rank's profile is "cpu" (the device that runs them), else profile.
enum class DeviceTiming { automatic, measured, profile };
const Words<DeviceTiming>& device_timing_words();  // automatic is "auto"

struct DeviceConfig {
  sim::DeviceProfile default_profile;
  std::vector<std::pair<int, sim::DeviceProfile>> node_profiles;  // per-node overrides
  sim::DType dtype = sim::DType::bf16;                            // compute precision
  DeviceTiming timing = DeviceTiming::automatic;                  // compute seconds of `lowband run`
  const sim::DeviceProfile& for_node(int node) const;
};

struct TrainingConfig {
  int steps = 100;
  int batch_size = 1;          // sequences per step
  double lr = 3e-4;
  int lr_warmup_steps = 0;
  double weight_decay = 0.01;
  double grad_clip = 1.0;
  uint64_t seed = 1;
  std::string data;            // text or .u16 file; empty: the built-in corpus
  std::string tokenizer = "byte";
  int eval_every = 0;
  double validation_fraction = 0.1;  // held-out tail of the token stream, in [0, 1)
  int eval_batches = 4;              // validation batches per evaluation
  int checkpoint_every = 100;        // steps between `lowband run` checkpoints (0: never)
  std::string backend = "cpu";       // which kernels train the model: "cpu" or "cuda"
  // "file": training.data; "recall": generated keyed-recall records (runtime/data/recall.h).
  std::string data_source = "file";
  int recall_pairs = 0;         // key→value pairs per sequence; 0: as many as fit
  int recall_key_tokens = 1;    // letters per key
  int recall_value_tokens = 1;  // digits per value
  std::string recall_form = "fused";  // a pair as one byte ("fused") or as letters and digits ("text")
};

struct Scenario;

// A small run standing in for a large one (the MoS paper's Figure 2 reproduction):
// `lowband run` trains this scenario's model for the loss curve but takes each
// step's simulated seconds from `estimate` of `scenario`, a larger model on its
// own network (runtime/train/projection.h). Null: no projection.
struct ProjectionConfig {
  std::shared_ptr<const Scenario> scenario;
};

struct Scenario {
  std::string name;
  std::string description;
  std::string source;          // the file it came from ("builtin:NAME" for built-ins)
  ModelConfig model;
  ParallelConfig parallel;
  CompressionConfig compression;
  sim::NetworkSpec network;
  DeviceConfig devices;
  TrainingConfig training;
  ProjectionConfig projection;
};

}  // namespace lowband
