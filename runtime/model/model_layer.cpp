// One decoder layer, forward and backward, split around the attention step so
// that the attention can be computed elsewhere (AttentionProvider, or a
// context-parallel trainer). Shapes: n rows, d = d_model, dkv = kv_heads·head_dim,
// f = ffn_hidden; weights W (out, in), y = x Wᵀ.
#include <algorithm>
#include <string>

#include "common/error.h"
#include "runtime/model/model.h"

namespace lowband::model {

using kernels::Backend;
using kernels::Trans;

namespace {

// y (n, out) = x (n, in) · Wᵀ, W (out, in)
void linear(const Backend& k, int64_t n, int64_t out, int64_t in, const float* x, const float* W, float* y) {
  k.matmul(Trans::no, Trans::yes, n, out, in, 1.0f, x, in, W, in, 0.0f, y, out);
}

// dW (out, in) += dyᵀ (out, n) · x (n, in)
void linear_dweight(const Backend& k, int64_t n, int64_t out, int64_t in, const float* dy, const float* x, float* dW) {
  k.matmul(Trans::yes, Trans::no, out, in, n, 1.0f, dy, out, x, in, 1.0f, dW, in);
}

// dx (n, in) = beta · dx + dy (n, out) · W (out, in)
void linear_dinput(const Backend& k, int64_t n, int64_t out, int64_t in, const float* dy, const float* W, float beta,
                   float* dx) {
  k.matmul(Trans::no, Trans::no, n, in, out, 1.0f, dy, out, W, in, beta, dx, in);
}

}  // namespace

void Model::check_layer(int l, const char* phase) const {
  if (!layout_.has_layer(l) || ws_.rows == 0)
    throw InputError("layer", std::string(phase) + "(" + std::to_string(l) +
                                  "): not a layer of this model's stage, or called before begin()");
}

void Model::layer_forward_qkv(int l) {
  check_layer(l, "layer_forward_qkv");
  const ModelConfig& c = config();
  const LayerOffsets& o = layout_.layer(l);
  LayerActivations& a = act(l);
  const int64_t n = ws_.rows, d = c.d_model, dkv = c.d_kv();
  k_->rmsnorm_forward(a.x, w(o.attn_norm), n, d, options_.norm_eps, a.xn1, a.rstd1);
  linear(*k_, n, d, d, a.xn1, w(o.wq), a.q);
  linear(*k_, n, dkv, d, a.xn1, w(o.wk), a.k);
  linear(*k_, n, dkv, d, a.xn1, w(o.wv), a.v);
  k_->rope_forward(a.q, ws_.positions_dev.data(), n, c.heads, c.head_dim(), a.q, options_.rope_theta);
  k_->rope_forward(a.k, ws_.positions_dev.data(), n, c.kv_heads, c.head_dim(), a.k, options_.rope_theta);
}

void Model::layer_forward_post_attention(int l) {
  check_layer(l, "layer_forward_post_attention");
  const ModelConfig& c = config();
  const LayerOffsets& o = layout_.layer(l);
  LayerActivations& a = act(l);
  const int64_t n = ws_.rows, d = c.d_model, f = c.ffn_hidden;
  // x1 = x + att · woᵀ
  k_->copy(a.x1, a.x, size_t(n * d) * sizeof(float));
  k_->matmul(Trans::no, Trans::yes, n, d, d, 1.0f, a.att, d, w(o.wo), d, 1.0f, a.x1, d);
  k_->rmsnorm_forward(a.x1, w(o.mlp_norm), n, d, options_.norm_eps, a.xn2, a.rstd2);
  linear(*k_, n, f, d, a.xn2, w(o.w_gate), a.gate);
  linear(*k_, n, f, d, a.xn2, w(o.w_up), a.up);
  k_->swiglu_forward(a.gate, a.up, n, f, a.h);
  // next residual = x1 + h · w_downᵀ
  float* out = l + 1 < layout_.end_layer() ? act(l + 1).x : ws_.x_final;
  k_->copy(out, a.x1, size_t(n * d) * sizeof(float));
  k_->matmul(Trans::no, Trans::yes, n, d, f, 1.0f, a.h, f, w(o.w_down), f, 1.0f, out, d);
}

// In: dres = dL/d(layer output). Out: dres = dL/dx1, datt = dL/d att.
void Model::layer_backward_post_attention(int l) {
  check_layer(l, "layer_backward_post_attention");
  const ModelConfig& c = config();
  const LayerOffsets& o = layout_.layer(l);
  LayerActivations& a = act(l);
  const int64_t n = ws_.rows, d = c.d_model, f = c.ffn_hidden;
  // MLP: out = x1 + h · w_downᵀ
  linear_dinput(*k_, n, d, f, ws_.dres, w(o.w_down), 0.0f, ws_.dh);
  linear_dweight(*k_, n, d, f, ws_.dres, a.h, g(o.w_down));
  float* dgate = a.gate;  // in place: gate and up are not needed after this
  float* dup = a.up;
  k_->swiglu_backward(ws_.dh, a.gate, a.up, n, f, dgate, dup);
  linear_dweight(*k_, n, f, d, dgate, a.xn2, g(o.w_gate));
  linear_dweight(*k_, n, f, d, dup, a.xn2, g(o.w_up));
  linear_dinput(*k_, n, f, d, dgate, w(o.w_gate), 0.0f, ws_.dxn);
  linear_dinput(*k_, n, f, d, dup, w(o.w_up), 1.0f, ws_.dxn);
  k_->rmsnorm_backward(ws_.dxn, a.x1, w(o.mlp_norm), a.rstd2, n, d, ws_.dxn, g(o.mlp_norm));
  k_->add_inplace(ws_.dres, ws_.dxn, n * d);
  // attention output projection: x1 = x + att · woᵀ
  linear_dinput(*k_, n, d, d, ws_.dres, w(o.wo), 0.0f, ws_.datt);
  linear_dweight(*k_, n, d, d, ws_.dres, a.att, g(o.wo));
}

// In: dres = dL/dx1, dq/dk/dv = dL/d(q, k after RoPE; v). Out: dres = dL/dx.
void Model::layer_backward_qkv(int l) {
  check_layer(l, "layer_backward_qkv");
  const ModelConfig& c = config();
  const LayerOffsets& o = layout_.layer(l);
  LayerActivations& a = act(l);
  const int64_t n = ws_.rows, d = c.d_model, dkv = c.d_kv();
  k_->rope_backward(ws_.dq, ws_.positions_dev.data(), n, c.heads, c.head_dim(), ws_.dq, options_.rope_theta);
  k_->rope_backward(ws_.dk, ws_.positions_dev.data(), n, c.kv_heads, c.head_dim(), ws_.dk, options_.rope_theta);
  linear_dweight(*k_, n, d, d, ws_.dq, a.xn1, g(o.wq));
  linear_dweight(*k_, n, dkv, d, ws_.dk, a.xn1, g(o.wk));
  linear_dweight(*k_, n, dkv, d, ws_.dv, a.xn1, g(o.wv));
  linear_dinput(*k_, n, d, d, ws_.dq, w(o.wq), 0.0f, ws_.dxn);
  linear_dinput(*k_, n, dkv, d, ws_.dk, w(o.wk), 1.0f, ws_.dxn);
  linear_dinput(*k_, n, dkv, d, ws_.dv, w(o.wv), 1.0f, ws_.dxn);
  k_->rmsnorm_backward(ws_.dxn, a.x, w(o.attn_norm), a.rstd1, n, d, ws_.dxn, g(o.attn_norm));
  k_->add_inplace(ws_.dres, ws_.dxn, n * d);
}

}  // namespace lowband::model
