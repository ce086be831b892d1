"""TorchRec's cross networks (DCN): `CrossNet`, `LowRankCrossNet`, `VectorCrossNet`,
`LowRankMixtureCrossNet`, with TorchRec's parameter shapes and names (`kernels.<layer>`,
`W_kernels.<layer>`, `U_kernels.<layer>`, `bias.<layer>` of shape (in_features, 1) but
LowRankCrossNet's (in_features,), `gates.<k>`), so that checkpoints load both ways; checked
against TorchRec 1.9 by tests/test_torchrec_parity.py. Inputs are (batch, in_features);
outputs the same shape. The experts of the mixture run as one batched matrix product rather
than a loop."""
import ember
import ember.nn as nn
import ember.nn.functional as F

__all__ = ["CrossNet", "LowRankCrossNet", "VectorCrossNet", "LowRankMixtureCrossNet"]


def _check_positive(value, name):
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")


def _xavier(*shape):
    return nn.Parameter(nn.init.xavier_normal_(ember.empty(*shape)))


def _biases(num_layers, in_features):
    return nn.ParameterList([nn.Parameter(ember.zeros(in_features, 1)) for _ in range(num_layers)])


def _check_input(input, in_features):
    if not isinstance(input, ember.Tensor) or input.dim() != 2 or input.shape[1] != in_features:
        shape = tuple(input.shape) if isinstance(input, ember.Tensor) else type(input).__name__
        raise ValueError(f"input must be a (batch, {in_features}) tensor, got {shape}")
    return input.unsqueeze(2)  # (B, N, 1)


class CrossNet(nn.Module):
    """DCN-v2 with full-rank kernels: x_{l+1} = x_0 * (W_l x_l + b_l) + x_l."""

    def __init__(self, in_features, num_layers):
        super().__init__()
        _check_positive(in_features, "in_features")
        _check_positive(num_layers, "num_layers")
        self._in_features, self._num_layers = in_features, num_layers
        self.kernels = nn.ParameterList([_xavier(in_features, in_features) for _ in range(num_layers)])
        self.bias = _biases(num_layers, in_features)

    def forward(self, input):
        x_0 = x_l = _check_input(input, self._in_features)
        for kernel, bias in zip(self.kernels, self.bias):
            x_l = x_0 * (ember.matmul(kernel, x_l) + bias) + x_l
        return x_l.squeeze(2)


class LowRankCrossNet(nn.Module):
    """DCN-v2 with kernels factored as W_l (N, r) V_l (r, N): x_{l+1} = x_0 * (W_l V_l x_l + b_l) + x_l."""

    def __init__(self, in_features, num_layers, low_rank=1):
        super().__init__()
        _check_positive(in_features, "in_features")
        _check_positive(num_layers, "num_layers")
        _check_positive(low_rank, "low_rank")
        self._in_features, self._num_layers, self._low_rank = in_features, num_layers, low_rank
        self.W_kernels = nn.ParameterList([_xavier(in_features, low_rank) for _ in range(num_layers)])
        self.V_kernels = nn.ParameterList([_xavier(low_rank, in_features) for _ in range(num_layers)])
        # (in_features,) as current TorchRec's (its other cross nets keep (in_features, 1))
        self.bias = nn.ParameterList([nn.Parameter(ember.zeros(in_features)) for _ in range(num_layers)])

    def forward(self, input):
        x_0 = x_l = _check_input(input, self._in_features).squeeze(2)
        for w, v, bias in zip(self.W_kernels, self.V_kernels, self.bias):
            x_l = x_0 * (F.linear(F.linear(x_l, v), w) + bias) + x_l
        return x_l


class VectorCrossNet(nn.Module):
    """DCN-v1: x_{l+1} = x_0 (w_l . x_l) + b_l + x_l, with a vector kernel w_l (N, 1)."""

    def __init__(self, in_features, num_layers):
        super().__init__()
        _check_positive(in_features, "in_features")
        _check_positive(num_layers, "num_layers")
        self._in_features, self._num_layers = in_features, num_layers
        self.kernels = nn.ParameterList([_xavier(in_features, 1) for _ in range(num_layers)])
        self.bias = _biases(num_layers, in_features)

    def forward(self, input):
        x_0 = x_l = _check_input(input, self._in_features)
        for kernel, bias in zip(self.kernels, self.bias):
            dot = ember.matmul(x_l.transpose(1, 2), kernel)  # (B, 1, 1)
            x_l = ember.matmul(x_0, dot) + bias + x_l
        return x_l.squeeze(2)


class LowRankMixtureCrossNet(nn.Module):
    """DCN-v2 with a mixture of `num_experts` low-rank experts per layer,
    expert_k = x_0 * (U_k g(C_k g(V_k x_l)) + b_l), mixed by softmax gates over x_l
    (no gates for one expert): x_{l+1} = sum_k gate_k expert_k + x_l."""

    def __init__(self, in_features, num_layers, num_experts=1, low_rank=1, activation=ember.relu):
        super().__init__()
        _check_positive(in_features, "in_features")
        _check_positive(num_layers, "num_layers")
        _check_positive(num_experts, "num_experts")
        _check_positive(low_rank, "low_rank")
        if not callable(activation):
            raise TypeError(f"activation must be callable, got {activation!r}")
        self._in_features, self._num_layers = in_features, num_layers
        self._num_experts, self._low_rank = num_experts, low_rank
        self.U_kernels = nn.ParameterList([_xavier(num_experts, in_features, low_rank) for _ in range(num_layers)])
        self.V_kernels = nn.ParameterList([_xavier(num_experts, low_rank, in_features) for _ in range(num_layers)])
        self.bias = _biases(num_layers, in_features)
        self.gates = nn.ModuleList([nn.Linear(in_features, 1, bias=False) for _ in range(num_experts)]) \
            if num_experts > 1 else None
        self._activation = activation
        self.C_kernels = nn.ParameterList([_xavier(num_experts, low_rank, low_rank) for _ in range(num_layers)])

    def forward(self, input):
        x_0 = x_l = _check_input(input, self._in_features)
        x_0_experts = x_0.unsqueeze(1)  # (B, 1, N, 1): broadcast over the experts
        for u, v, c, bias in zip(self.U_kernels, self.V_kernels, self.C_kernels, self.bias):
            experts = ember.matmul(v, x_l.unsqueeze(1))                          # (B, K, r, 1)
            experts = ember.matmul(c, self._activation(experts))                # (B, K, r, 1)
            experts = ember.matmul(u, self._activation(experts))                # (B, K, N, 1)
            experts = (x_0_experts * (experts + bias)).squeeze(3).transpose(1, 2)  # (B, N, K)
            if self.gates is None:
                x_l = experts + x_l
            else:
                gate_weights = ember.cat([gate.weight for gate in self.gates])   # (K, N)
                gating = ember.softmax(ember.matmul(x_l.squeeze(2), gate_weights.t()), 1)  # (B, K)
                x_l = ember.matmul(experts, gating.unsqueeze(2)) + x_l
        return x_l.squeeze(2)
