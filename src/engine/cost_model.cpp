// The roofline cost model. Every quantity is per device: the instance's tokens are spread
// evenly over its `dp` attention ranks, each rank's work is split over its `tp` devices, and
// with expert parallelism the routed experts are spread over all tp*dp devices. A component
// takes max(compute time, memory time); EP all-to-all overlaps the layer's compute (two
// micro-batches, as DeepSeek and CloudMatrix run it); TP all-reduce does not. Formulas and the
// sources of the constants: docs/sim-model.md.
#include "omni/engine/cost_model.hpp"

#include <algorithm>
#include <cmath>

namespace omni::engine {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kGpuMemoryUtilization = 0.9;  // vLLM's --gpu-memory-utilization default
constexpr double kActivationReserve = 0.05;    // of HBM: activations, graphs, fragmentation
constexpr double kLmHeadBytesPerParam = 2.0;   // lm_head and embeddings stay in BF16

// The work of one layer (or one component of it), per device.
struct Work {
  double flops = 0;
  double bytes = 0;
};

// Tokens moving through one step, for the whole instance.
struct Load {
  double tokens = 0;  // prefill + decode query tokens
  double prefill_tokens = 0;
  double prefill_context = 0;  // Σ context before each prefill chunk
  double prefill_pairs = 0;    // Σ causal query-key pairs of the prefill chunks
  double decode_seqs = 0;
  double decode_queries = 0;  // decode tokens incl. MTP drafts
  double decode_context = 0;  // Σ context of the decode sequences
  double sampled = 0;         // tokens through lm_head
};

Load load_of(const StepShape& s, std::uint32_t num_spec) {
  Load l;
  l.prefill_tokens = s.prefill_tokens;
  l.prefill_context = static_cast<double>(s.prefill_context_tokens);
  l.prefill_pairs = static_cast<double>(s.prefill_attention_pairs);
  if (l.prefill_pairs == 0 && s.prefill_tokens > 0) {
    // Not given: assume prefill_seqs chunks of equal size, each after an equal share of the
    // context (one chunk when prefill_seqs is 0).
    const double n = s.prefill_tokens;
    const double chunks = std::max(1.0, static_cast<double>(s.prefill_seqs));
    l.prefill_pairs = n / chunks * l.prefill_context + n * (n / chunks + 1) / 2;
  }
  l.decode_seqs = s.decode_seqs;
  l.decode_queries = s.decode_query_tokens > 0
                         ? s.decode_query_tokens
                         : static_cast<double>(s.decode_seqs) * (1.0 + num_spec);
  l.decode_context = static_cast<double>(s.decode_context_tokens);
  l.tokens = l.prefill_tokens + l.decode_queries;
  const double prefill_samples =
      s.prefill_seqs > 0 ? s.prefill_seqs : (s.prefill_tokens > 0 ? 1.0 : 0.0);
  l.sampled = l.decode_queries + prefill_samples;
  return l;
}

}  // namespace

// ---- ModelProfile ------------------------------------------------------------------------

double ModelProfile::kv_bytes_per_token() const {
  const double per_layer = attention == AttentionKind::kMla
                               ? static_cast<double>(kv_lora_rank + rope_dim)
                               : 2.0 * num_kv_heads * head_dim;
  return per_layer * kv_bytes_per_elem * num_layers;
}

double ModelProfile::attention_params_per_layer() const {
  const double h = hidden_size;
  const double heads = num_heads;
  if (attention == AttentionKind::kGqa) {
    return h * (heads + 2.0 * num_kv_heads) * head_dim + heads * head_dim * h;
  }
  const double qk = static_cast<double>(nope_dim) + rope_dim;
  const double q = q_lora_rank > 0 ? h * q_lora_rank + static_cast<double>(q_lora_rank) * heads * qk
                                   : h * heads * qk;
  const double kv_a = h * (static_cast<double>(kv_lora_rank) + rope_dim);
  const double kv_b =
      static_cast<double>(kv_lora_rank) * heads * (static_cast<double>(nope_dim) + v_head_dim);
  const double o = heads * v_head_dim * h;
  return q + kv_a + kv_b + o;
}

double ModelProfile::expert_params() const { return 3.0 * hidden_size * expert_intermediate; }

double ModelProfile::total_params() const {
  const double moe_layers = num_layers - num_dense_layers;
  const double ffn_dense = 3.0 * hidden_size * dense_intermediate;
  const double ffn_moe = expert_params() * (static_cast<double>(num_experts) + num_shared_experts) +
                         static_cast<double>(hidden_size) * num_experts;
  return num_layers * attention_params_per_layer() + num_dense_layers * ffn_dense +
         moe_layers * ffn_moe + 2.0 * vocab_size * hidden_size;
}

// ---- validation --------------------------------------------------------------------------

Status validate_layout(const ModelProfile& model, const ParallelLayout& layout) {
  if (layout.tp == 0 || layout.dp == 0) {
    return make_error(ErrorCode::kInvalidArgument, "layout: tp and dp must be positive");
  }
  if (model.num_heads % layout.tp != 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "layout: num_heads (" + std::to_string(model.num_heads) +
                          ") is not divisible by tensor-parallel size " +
                          std::to_string(layout.tp));
  }
  if (layout.ep && model.num_experts == 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "layout: expert parallelism on a model without experts");
  }
  return ok_status();
}

// ---- CostModel ---------------------------------------------------------------------------

CostModel::CostModel(ModelProfile model, HardwareProfile hw, ParallelLayout layout, MtpConfig mtp)
    : model_(std::move(model)), hw_(std::move(hw)), layout_(layout), mtp_(mtp) {
  layout_.tp = std::max(layout_.tp, 1u);
  layout_.dp = std::max(layout_.dp, 1u);
}

namespace {

// The pieces of the model a step needs, precomputed per call (cheap: a few dozen flops).
class StepCalculator {
 public:
  StepCalculator(const ModelProfile& m, const HardwareProfile& hw, const ParallelLayout& layout)
      : m_(m),
        hw_(hw),
        tp_(layout.tp),
        dp_(layout.dp),
        devices_(layout.devices()),
        ep_(layout.ep && m.num_experts > 0) {
    const double gemm_peak =
        (m.bytes_per_param <= 1.0 && hw.fp8_tflops > 0) ? hw.fp8_tflops : hw.dense_tflops;
    gemm_flops_per_s_ = gemm_peak * 1e12 * hw.mfu;
    const double attn_mfu = hw.attention_mfu > 0 ? hw.attention_mfu : hw.mfu;
    attn_flops_per_s_ = hw.dense_tflops * 1e12 * attn_mfu;
    nodes_ = std::ceil(devices_ / std::max(hw.devices_per_node, 1u));
    hbm_bytes_per_s_ = hw.hbm_tbps * 1e12 * hw.mbu;
    scaleout_bytes_per_s_ = hw.interconnect_gbps * 1e9 / 8.0 * hw.comm_efficiency;
    scaleup_bytes_per_s_ = hw.scaleup_gbps * 1e9 / 8.0 * hw.comm_efficiency;
  }

  double gemm(const Work& w) const {
    return std::max(w.flops / gemm_flops_per_s_, w.bytes / hbm_bytes_per_s_);
  }
  double attn_core(const Work& w) const {
    return std::max(w.flops / attn_flops_per_s_, w.bytes / hbm_bytes_per_s_);
  }

  // Projections and attention over the KV cache, one layer.
  double attention(const Load& l) const {
    const double rank_tokens = l.tokens / dp_;
    Work linear{2.0 * m_.attention_params_per_layer() * rank_tokens / tp_,
                m_.attention_params_per_layer() * m_.bytes_per_param / tp_};
    Work core;
    const double heads = m_.num_heads;
    double kv_per_token = 0;  // bytes of one token's KV, one layer, per device
    if (m_.attention == AttentionKind::kMla) {
      const double latent = static_cast<double>(m_.kv_lora_rank) + m_.rope_dim;
      // Prefill, normal form: the context's latent KV is expanded by kv_b, then MHA with
      // qk dim nope+rope and v dim v_head_dim.
      linear.flops += 2.0 * m_.kv_lora_rank * heads *
                      (static_cast<double>(m_.nope_dim) + m_.v_head_dim) * l.prefill_context / dp_ /
                      tp_;
      core.flops += 2.0 * heads * (static_cast<double>(m_.nope_dim) + m_.rope_dim + m_.v_head_dim) *
                    l.prefill_pairs / dp_ / tp_;
      // Decode, weight-absorbed form: MQA over the latent (scores on kv_lora+rope, values on
      // kv_lora), FlashMLA's 2 * h * (576 + 512) flops per query per cached token.
      const double queries_per_seq = l.decode_seqs > 0 ? l.decode_queries / l.decode_seqs : 0;
      core.flops +=
          2.0 * heads * (latent + m_.kv_lora_rank) * queries_per_seq * l.decode_context / dp_ / tp_;
      kv_per_token = latent * m_.kv_bytes_per_elem;  // the latent is replicated over TP
    } else {
      const double hd = m_.head_dim;
      const double queries_per_seq = l.decode_seqs > 0 ? l.decode_queries / l.decode_seqs : 0;
      core.flops +=
          4.0 * heads * hd * (l.prefill_pairs + queries_per_seq * l.decode_context) / dp_ / tp_;
      const double kv_shards = std::min<double>(tp_, m_.num_kv_heads);
      kv_per_token = 2.0 * m_.num_kv_heads * hd * m_.kv_bytes_per_elem / kv_shards;
    }
    core.bytes = kv_per_token * (l.decode_context + l.prefill_context + l.tokens) / dp_;
    return gemm(linear) + attn_core(core);
  }

  // Routed + shared experts and the router, one MoE layer.
  double moe(const Load& l) const {
    const double e = m_.num_experts;
    const double k = m_.experts_per_token;
    const double expert_bytes = m_.expert_params() * m_.bytes_per_param;
    const double rank_tokens = l.tokens / dp_;
    Work routed;
    if (ep_) {
      // Every device holds E/D experts and receives its share of all ranks' tokens.
      const double hit = 1.0 - std::pow(1.0 - k / e, l.tokens);
      routed.flops = 2.0 * m_.expert_params() * l.tokens * k / devices_;
      routed.bytes = e / devices_ * hit * expert_bytes;
    } else {
      const double hit = 1.0 - std::pow(1.0 - k / e, rank_tokens);
      routed.flops = 2.0 * m_.expert_params() * rank_tokens * k / tp_;
      routed.bytes = e * hit * expert_bytes / tp_;
    }
    const double shared_params = m_.expert_params() * m_.num_shared_experts;
    Work shared{2.0 * shared_params * rank_tokens / tp_, shared_params * m_.bytes_per_param / tp_};
    Work gate{2.0 * m_.hidden_size * e * rank_tokens / tp_, m_.hidden_size * e * 4.0 / tp_};
    return gemm(routed) + gemm(shared) + gemm(gate);
  }

  double dense_ffn(const Load& l) const {
    const double params = 3.0 * m_.hidden_size * m_.dense_intermediate;
    return gemm(Work{2.0 * params * l.tokens / dp_ / tp_, params * m_.bytes_per_param / tp_});
  }

  // EP dispatch (8-bit when the model is) + combine (BF16). Within one scale-up domain every
  // routed copy crosses the scale-up links; across nodes a token is sent once to each remote
  // node holding one of its experts (DeepEP forwards inside the node), so the scale-out bytes
  // follow the expected number of distinct remote nodes among its top-k.
  double ep_all_to_all(const Load& l) const {
    if (!ep_ || devices_ <= 1) return 0;
    const double bytes_per_copy = m_.hidden_size * (std::min(m_.bytes_per_param, 2.0) + 2.0);
    const double tokens_per_device = l.tokens / devices_;
    const double k = m_.experts_per_token;
    if (nodes_ <= 1) {
      if (scaleup_bytes_per_s_ <= 0) return 0;
      const double remote = (devices_ - 1.0) / devices_;
      return tokens_per_device * k * remote * bytes_per_copy / scaleup_bytes_per_s_;
    }
    if (scaleout_bytes_per_s_ <= 0) return 0;
    const double remote_nodes = (nodes_ - 1.0) * (1.0 - std::pow(1.0 - 1.0 / nodes_, k));
    return tokens_per_device * remote_nodes * bytes_per_copy / scaleout_bytes_per_s_;
  }

  // Ring all-reduce of the hidden states after attention and after the FFN.
  double tp_all_reduce(const Load& l) const {
    if (tp_ <= 1 || scaleup_bytes_per_s_ <= 0) return 0;
    const double bytes = 2.0 * (tp_ - 1.0) / tp_ * (l.tokens / dp_) * m_.hidden_size * 2.0;
    return 2.0 * bytes / scaleup_bytes_per_s_;
  }

  double lm_head(double sampled) const {
    const double params = static_cast<double>(m_.hidden_size) * m_.vocab_size;
    return gemm(Work{2.0 * params * sampled / dp_ / tp_, params * kLmHeadBytesPerParam / tp_});
  }

  // Adds one layer (dense or MoE) to `b`.
  void add_layer(const Load& l, bool is_moe, StepBreakdown& b) const {
    const double attn = attention(l);
    const double ffn = is_moe ? moe(l) : dense_ffn(l);
    const double a2a = is_moe ? ep_all_to_all(l) : 0.0;
    b.attention += attn;
    b.ffn += ffn;
    b.comm += std::max(0.0, a2a - (attn + ffn)) + tp_all_reduce(l);
  }

 private:
  const ModelProfile& m_;
  const HardwareProfile& hw_;
  double tp_, dp_, devices_;
  bool ep_;
  double nodes_ = 1;
  double gemm_flops_per_s_ = 1, attn_flops_per_s_ = 1, hbm_bytes_per_s_ = 1;
  double scaleout_bytes_per_s_ = 0, scaleup_bytes_per_s_ = 0;
};

}  // namespace

StepBreakdown CostModel::breakdown(const StepShape& shape) const {
  StepBreakdown b;
  const Load l = load_of(shape, mtp_.num_speculative_tokens);
  if (l.tokens <= 0) return b;
  const StepCalculator calc(model_, hw_, layout_);
  b.overhead = hw_.step_overhead_s;
  const bool has_moe = model_.num_experts > 0;
  const std::uint32_t dense_layers = has_moe ? model_.num_dense_layers : model_.num_layers;
  StepBreakdown one_dense, one_moe;
  if (dense_layers > 0) calc.add_layer(l, false, one_dense);
  if (model_.num_layers > dense_layers) calc.add_layer(l, true, one_moe);
  const double moe_layers = model_.num_layers - dense_layers;
  b.attention = dense_layers * one_dense.attention + moe_layers * one_moe.attention;
  b.ffn = dense_layers * one_dense.ffn + moe_layers * one_moe.ffn;
  b.comm = dense_layers * one_dense.comm + moe_layers * one_moe.comm;
  b.lm_head = calc.lm_head(l.sampled);
  // MTP drafting: each draft runs the MTP module (one layer + the shared lm_head) on one token
  // per decode sequence.
  const std::uint32_t drafts = model_.num_mtp_layers > 0 ? mtp_.num_speculative_tokens : 0;
  if (drafts > 0 && l.decode_seqs > 0) {
    Load draft;
    draft.decode_seqs = l.decode_seqs;
    draft.decode_queries = l.decode_seqs;
    draft.decode_context = l.decode_context;
    draft.tokens = l.decode_seqs;
    StepBreakdown one;
    calc.add_layer(draft, has_moe, one);
    b.mtp = drafts * (one.attention + one.ffn + one.comm + calc.lm_head(l.decode_seqs));
  }
  return b;
}

double CostModel::step_seconds(const StepShape& shape) const { return breakdown(shape).total(); }

std::uint64_t CostModel::kv_capacity_tokens() const {
  const ModelProfile& m = model_;
  const double tp = layout_.tp, devices = layout_.devices();
  const bool has_moe = m.num_experts > 0;
  const double dense_layers = has_moe ? m.num_dense_layers : m.num_layers;
  const double moe_layers = m.num_layers - dense_layers + (has_moe ? m.num_mtp_layers : 0);
  const double bpp = m.bytes_per_param;
  double weights = (m.num_layers + m.num_mtp_layers) * m.attention_params_per_layer() * bpp / tp;
  weights += dense_layers * 3.0 * m.hidden_size * m.dense_intermediate * bpp / tp;
  const double experts = m.expert_params() * m.num_experts * bpp;
  weights += moe_layers * ((layout_.ep ? experts / devices : experts / tp) +
                           m.expert_params() * m.num_shared_experts * bpp / tp);
  weights += 2.0 * m.vocab_size * static_cast<double>(m.hidden_size) * kLmHeadBytesPerParam / tp;
  const double hbm = hw_.hbm_gib * kGiB;
  const double free_bytes = hbm * (kGpuMemoryUtilization - kActivationReserve) - weights;
  if (free_bytes <= 0) return 0;
  double kv_per_token = m.kv_bytes_per_token();  // MLA: the latent is replicated over TP
  if (m.attention == AttentionKind::kGqa) kv_per_token /= std::min<double>(tp, m.num_kv_heads);
  return static_cast<std::uint64_t>(layout_.dp * free_bytes / kv_per_token);
}

double CostModel::kv_transfer_seconds(std::uint64_t tokens, double link_gbps) const {
  if (!(link_gbps > 0)) return 0.0;
  return static_cast<double>(tokens) * model_.kv_bytes_per_token() / (link_gbps * 1e9 / 8.0);
}

}  // namespace omni::engine
