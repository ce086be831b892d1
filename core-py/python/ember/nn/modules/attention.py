"""MultiheadAttention, with PyTorch's parameter names, initialisation, mask conventions and
(L, N, E) / batch_first layouts."""
import math

import ember
from ember.nn import functional as F
from ember.nn import init
from ember.nn.modules.linear import Linear
from ember.nn.modules.module import Module, _place
from ember.nn.parameter import Parameter

__all__ = ["MultiheadAttention"]


class NonDynamicallyQuantizableLinear(Linear):
    """The output projection's class name in PyTorch (kept so reprs and checks agree)."""


def _additive_mask(mask, name, dtype):
    """A bool mask (True = may not attend) as 0 / -inf to add to the scores; float masks as is."""
    if mask is None:
        return None
    if mask.dtype == ember.bool:
        return ember.zeros(tuple(mask.shape), dtype=dtype).masked_fill(mask, float("-inf"))
    if not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask._to_dtype(dtype) if mask.dtype != dtype else mask


class MultiheadAttention(Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        super().__init__()
        ember._device.check(device)
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and num_heads={num_heads} instead")
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads, self.dropout, self.batch_first = num_heads, dropout, batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(ember.empty(embed_dim, embed_dim, dtype=dtype))
            self.k_proj_weight = Parameter(ember.empty(embed_dim, self.kdim, dtype=dtype))
            self.v_proj_weight = Parameter(ember.empty(embed_dim, self.vdim, dtype=dtype))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(ember.empty(3 * embed_dim, embed_dim, dtype=dtype))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(ember.empty(3 * embed_dim, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, dtype=dtype)
        if add_bias_kv:
            self.bias_k = Parameter(ember.empty(1, 1, embed_dim, dtype=dtype))
            self.bias_v = Parameter(ember.empty(1, 1, embed_dim, dtype=dtype))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()
        _place(self, device)

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def _project(self, query, key, value):
        e = self.embed_dim
        if self._qkv_same_embed_dim:
            w_q, w_k, w_v = self.in_proj_weight[:e], self.in_proj_weight[e:2 * e], self.in_proj_weight[2 * e:]
        else:
            w_q, w_k, w_v = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        b = self.in_proj_bias
        b_q, b_k, b_v = (None, None, None) if b is None else (b[:e], b[e:2 * e], b[2 * e:])
        return F.linear(query, w_q, b_q), F.linear(key, w_k, b_k), F.linear(value, w_v, b_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        """Returns (output, weights): output shaped like `query`; weights (N, L, S) averaged over
        heads, or (N, heads, L, S), or None when `need_weights` is False. A bool mask marks the
        positions that may NOT be attended to; a float mask is added to the scores."""
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module method `generate_square_subsequent_mask` to create this mask.")
        batched = query.ndim == 3
        if self.batch_first and batched:
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        if not batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        out, weights = self._attend(query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights)
        if not batched:
            out = out.squeeze(1)
            weights = None if weights is None else weights.squeeze(0)
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, weights

    def _attend(self, query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights):
        tgt_len, bsz, _ = query.shape
        heads, hd = self.num_heads, self.head_dim
        dtype = query.dtype
        attn_mask = _additive_mask(attn_mask, "attn_mask", dtype)
        key_padding_mask = _additive_mask(key_padding_mask, "key_padding_mask", dtype)
        if attn_mask is not None and attn_mask.ndim == 2:
            attn_mask = attn_mask.unsqueeze(0)
        q, k, v = self._project(query, key, value)
        if self.bias_k is not None:
            k = ember.cat([k, self.bias_k.expand(1, bsz, self.embed_dim)])
            v = ember.cat([v, self.bias_v.expand(1, bsz, self.embed_dim)])
            attn_mask = None if attn_mask is None else F.pad(attn_mask, (0, 1))
            key_padding_mask = None if key_padding_mask is None else F.pad(key_padding_mask, (0, 1))
        q = q.reshape(tgt_len, bsz * heads, hd).transpose(0, 1)
        k = k.reshape(k.shape[0], bsz * heads, hd).transpose(0, 1)
        v = v.reshape(v.shape[0], bsz * heads, hd).transpose(0, 1)
        if self.add_zero_attn:
            k = ember.cat([k, ember.zeros((bsz * heads, 1, hd), dtype=dtype)], dim=1)
            v = ember.cat([v, ember.zeros((bsz * heads, 1, hd), dtype=dtype)], dim=1)
            attn_mask = None if attn_mask is None else F.pad(attn_mask, (0, 1))
            key_padding_mask = None if key_padding_mask is None else F.pad(key_padding_mask, (0, 1))
        src_len = k.shape[1]
        if key_padding_mask is not None:
            if tuple(key_padding_mask.shape) != (bsz, src_len):
                raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got {tuple(key_padding_mask.shape)}")
            kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(bsz, heads, 1, src_len).reshape(bsz * heads, 1, src_len)
            attn_mask = kpm if attn_mask is None else attn_mask + kpm
        scores = ember.bmm(q * (1.0 / math.sqrt(hd)), k.transpose(1, 2))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = F.softmax(scores, -1)
        if self.training and self.dropout > 0.0:
            weights = F.dropout(weights, self.dropout)
        out = ember.bmm(weights, v).transpose(0, 1).reshape(tgt_len * bsz, self.embed_dim)
        out = self.out_proj(out).reshape(tgt_len, bsz, self.embed_dim)
        if not need_weights:
            return out, None
        weights = weights.reshape(bsz, heads, tgt_len, src_len)
        return out, weights.mean(dim=1) if average_attn_weights else weights
