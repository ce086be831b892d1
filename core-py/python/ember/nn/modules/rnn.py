"""RNN, LSTM and GRU (multi-layer, bidirectional, batch_first, inter-layer dropout, LSTM
projections) and their single-step cells, composed from Ember ops so autograd runs through
them. Parameter names and gate orders are PyTorch's (LSTM: i, f, g, o; GRU: r, z, n)."""
import math
import numbers
import warnings
from functools import partial

import ember
from ember.nn import functional as F
from ember.nn import init
from ember.nn.modules.module import Module, _place
from ember.nn.parameter import Parameter
from ember.nn.utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _rnn_step(nonlinearity):
    act = ember.tanh if nonlinearity == "tanh" else F.relu

    def step(x_proj, h, w_hh, b_hh):
        return act(x_proj + F.linear(h, w_hh, b_hh))

    return step


def _gru_step(x_proj, h, w_hh, b_hh):
    r_i, z_i, n_i = x_proj.chunk(3, -1)
    r_h, z_h, n_h = F.linear(h, w_hh, b_hh).chunk(3, -1)
    r = ember.sigmoid(r_i + r_h)
    z = ember.sigmoid(z_i + z_h)
    n = ember.tanh(n_i + r * n_h)
    return n + z * (h - n)


def _lstm_step(x_proj, state, w_hh, b_hh, w_hr=None):
    h, c = state
    i, f, g, o = (x_proj + F.linear(h, w_hh, b_hh)).chunk(4, -1)
    c = ember.sigmoid(f) * c + ember.sigmoid(i) * ember.tanh(g)
    h = ember.sigmoid(o) * ember.tanh(c)
    if w_hr is not None:
        h = F.linear(h, w_hr)
    return h, c


def _rows(state, start, stop):
    """Rows start:stop of a hidden state (a tensor, or LSTM's (h, c))."""
    if isinstance(state, tuple):
        return tuple(s[start:stop] for s in state)
    return state[start:stop]


def _join(states):
    """Hidden states concatenated along the batch."""
    if len(states) == 1:
        return states[0]
    if isinstance(states[0], tuple):
        return tuple(ember.cat(parts) for parts in zip(*states))
    return ember.cat(states)


def _size(state):
    return (state[0] if isinstance(state, tuple) else state).shape[0]


def _hidden(state):
    return state[0] if isinstance(state, tuple) else state


class RNNBase(Module):
    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        ember._device.check(device)
        self._check(mode, hidden_size, num_layers, dropout, proj_size)
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        num_directions = 2 if bidirectional else 1
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
                shapes = [("weight_ih", (gate_size, layer_input)), ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                for name, shape in shapes:
                    setattr(self, name + suffix, Parameter(ember.empty(*shape, dtype=dtype)))
                    self._flat_weights_names.append(name + suffix)
        self.reset_parameters()
        _place(self, device)

    @staticmethod
    def _check(mode, hidden_size, num_layers, dropout, proj_size):
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"dropout option adds dropout after all but last recurrent layer, so non-zero dropout expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}", stacklevel=3)
        if not isinstance(hidden_size, int) or isinstance(hidden_size, bool):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")

    def reset_parameters(self):
        """Every weight and bias U(±1/√hidden_size), as PyTorch initialises recurrent layers."""
        std = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -std, std)

    def flatten_parameters(self):
        """No-op: Ember keeps no fused weight buffer."""

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    @property
    def all_weights(self):
        return [[getattr(self, n) for n in self._flat_weights_names if n.endswith(s)] for s in self._suffixes()]

    def _suffixes(self):
        return [f"_l{layer}" + ("_reverse" if d else "") for layer in range(self.num_layers) for d in range(2 if self.bidirectional else 1)]

    def _weights(self, suffix):
        get = lambda name: getattr(self, name + suffix) if name + suffix in self._parameters else None  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"), get("weight_hr")

    # ---- running the layers ----

    def _prepare(self, input):
        if not isinstance(input, ember.Tensor):
            raise TypeError(f"{type(self).__name__}: expected input to be a Tensor or a PackedSequence, got {type(input).__name__}")
        if input.ndim not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.ndim}D instead")
        batched = input.ndim == 3
        if not batched:
            input = input.unsqueeze(1)
        elif self.batch_first:
            input = input.transpose(0, 1)
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got {input.shape[-1]}")
        return input, batched

    def _prepare_packed(self, input):
        data = input.data
        if data.ndim != 2:
            raise RuntimeError(f"input must have 2 dimensions, got {data.ndim}")
        if data.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got {data.shape[-1]}")
        return data

    @staticmethod
    def _permute_hidden(hx, permutation):
        """The hidden state with its batch axis reordered (packing sorts the batch)."""
        if hx is None or permutation is None:
            return hx
        if isinstance(hx, (tuple, list)):
            return tuple(h.index_select(1, permutation) for h in hx)
        return hx.index_select(1, permutation)

    def _initial_state(self, hx, batch, dtype, size, batched, name="hx"):
        layers = self.num_layers * (2 if self.bidirectional else 1)
        if hx is None:
            return ember.zeros((layers, batch, size), dtype=dtype)
        if not batched:
            if hx.ndim != 2:
                raise RuntimeError(f"For unbatched 2-D input, {name} should also be 2-D but got {hx.ndim}-D tensor")
            hx = hx.unsqueeze(1)
        elif hx.ndim != 3:
            raise RuntimeError(f"For batched 3-D input, {name} should also be 3-D but got {hx.ndim}-D tensor")
        if tuple(hx.shape) != (layers, batch, size):
            raise RuntimeError(f"Expected hidden size {(layers, batch, size)}, got {list(hx.shape)}")
        return hx

    def _run_direction(self, x, state, suffix, reverse):
        """One layer in one direction over the whole sequence: the input projection for every
        step is one matrix product; the recurrence does one small product per step."""
        w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(suffix)
        x_proj = F.linear(x, w_ih, b_ih)
        steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
        outputs = [None] * x.shape[0]
        for t in steps:
            state = self._cell(x_proj[t], state, w_hh, b_hh, w_hr)
            outputs[t] = _hidden(state)
        return ember.stack(outputs), state

    def _run_direction_packed(self, batch_sizes, data, state, suffix, reverse):
        """One layer in one direction over a packed batch: step t updates only the first
        `batch_sizes[t]` sequences (the ones still running), so each sequence's final state
        is the one at its own last step."""
        w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(suffix)
        chunks = F.linear(data, w_ih, b_ih).split(batch_sizes)
        outputs = [None] * len(chunks)
        if reverse:
            # Sequences join as the walk goes back in time, each from its initial state.
            current = _rows(state, 0, batch_sizes[-1])
            for t in range(len(chunks) - 1, -1, -1):
                running = _size(current)
                if batch_sizes[t] > running:
                    current = _join([current, _rows(state, running, batch_sizes[t])])
                current = self._cell(chunks[t], current, w_hh, b_hh, w_hr)
                outputs[t] = _hidden(current)
            return ember.cat(outputs), current
        finished, current = [], state
        for t, chunk in enumerate(chunks):
            running = _size(current)
            if batch_sizes[t] < running:
                # Sequences that ended keep their last state.
                finished.append(_rows(current, batch_sizes[t], running))
                current = _rows(current, 0, batch_sizes[t])
            current = self._cell(chunk, current, w_hh, b_hh, w_hr)
            outputs[t] = _hidden(current)
        return ember.cat(outputs), _join([current] + finished[::-1])

    def forward(self, input, hx=None):
        """Padded or packed input; the layer-specific parts are the initial and final states."""
        if isinstance(input, PackedSequence):
            x, batched = self._prepare_packed(input), True
            sizes = input.batch_sizes.tolist()
            batch, run_direction = sizes[0], partial(self._run_direction_packed, sizes)
            hx = self._permute_hidden(hx, input.sorted_indices)
        else:
            (x, batched), run_direction = self._prepare(input), self._run_direction
            batch = x.shape[1]
        out, finals = self._run(x, self._initial_states(hx, batch, x.dtype, batched), run_direction)
        hidden = self._final_states(finals, batched)
        if isinstance(input, PackedSequence):
            packed = PackedSequence(out, input.batch_sizes, input.sorted_indices, input.unsorted_indices)
            return packed, self._permute_hidden(hidden, input.unsorted_indices)
        return self._finish(out, batched), hidden

    def _initial_states(self, hx, batch, dtype, batched):
        """One initial hidden state per layer and direction (RNN, GRU)."""
        return list(self._initial_state(hx, batch, dtype, self.hidden_size, batched).unbind(0))

    def _final_states(self, finals, batched):
        h_n = ember.stack(finals)
        return h_n if batched else h_n.squeeze(1)

    def _run(self, x, states, run_direction):
        """All layers; `states[k]` is layer-direction k's initial state; returns the last
        layer's output and the final state of each layer-direction."""
        directions = 2 if self.bidirectional else 1
        finals = []
        for layer in range(self.num_layers):
            outs = []
            for d in range(directions):
                k = layer * directions + d
                out, final = run_direction(x, states[k], f"_l{layer}" + ("_reverse" if d else ""), d == 1)
                outs.append(out)
                finals.append(final)
            x = outs[0] if directions == 1 else ember.cat(outs, dim=-1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, finals

    def _finish(self, output, batched):
        if not batched:
            return output.squeeze(1)
        return output.transpose(0, 1) if self.batch_first else output


class RNN(RNNBase):
    """Elman RNN: h' = tanh(W_ih x + b_ih + W_hh h + b_hh) (or relu)."""

    def __init__(self, *args, nonlinearity="tanh", **kwargs):
        if len(args) > 3:
            args, nonlinearity = args[:3] + args[4:], args[3]
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)
        self.nonlinearity = nonlinearity

    def _cell(self, x_proj, h, w_hh, b_hh, w_hr):
        return _rnn_step(self.nonlinearity)(x_proj, h, w_hh, b_hh)


class GRU(RNNBase):
    def __init__(self, *args, **kwargs):
        super().__init__("GRU", *args, **kwargs)

    def _cell(self, x_proj, h, w_hh, b_hh, w_hr):
        return _gru_step(x_proj, h, w_hh, b_hh)


class LSTM(RNNBase):
    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def _cell(self, x_proj, state, w_hh, b_hh, w_hr):
        return _lstm_step(x_proj, state, w_hh, b_hh, w_hr)

    def _initial_states(self, hx, batch, dtype, batched):
        """One (h, c) pair per layer and direction."""
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        if hx is None:
            h0 = self._initial_state(None, batch, dtype, real_hidden, batched)
            c0 = self._initial_state(None, batch, dtype, self.hidden_size, batched)
        else:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise RuntimeError("LSTM expects hx to be a tuple (h_0, c_0)")
            h0 = self._initial_state(hx[0], batch, dtype, real_hidden, batched, "h0")
            c0 = self._initial_state(hx[1], batch, dtype, self.hidden_size, batched, "c0")
        return list(zip(h0.unbind(0), c0.unbind(0)))

    def _final_states(self, finals, batched):
        h_n, c_n = ember.stack([f[0] for f in finals]), ember.stack([f[1] for f in finals])
        if not batched:
            h_n, c_n = h_n.squeeze(1), c_n.squeeze(1)
        return h_n, c_n


class _CellBase(Module):
    _gates = 1

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__()
        ember._device.check(device)
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(ember.empty(self._gates * hidden_size, input_size, dtype=dtype))
        self.weight_hh = Parameter(ember.empty(self._gates * hidden_size, hidden_size, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(ember.empty(self._gates * hidden_size, dtype=dtype))
            self.bias_hh = Parameter(ember.empty(self._gates * hidden_size, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()
        _place(self, device)

    reset_parameters = RNNBase.reset_parameters

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _batch(self, input, hx):
        if input.ndim not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        if hx is None:
            hx = ember.zeros((x.shape[0], self.hidden_size), dtype=x.dtype)
        elif not batched:
            hx = hx.unsqueeze(0)
        return x, hx, batched


class RNNCell(_CellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, device, dtype)
        self.nonlinearity = nonlinearity
        _place(self, device)

    def forward(self, input, hx=None):
        x, h, batched = self._batch(input, hx)
        h = _rnn_step(self.nonlinearity)(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh)
        return h if batched else h.squeeze(0)


class GRUCell(_CellBase):
    _gates = 3

    def forward(self, input, hx=None):
        x, h, batched = self._batch(input, hx)
        h = _gru_step(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh)
        return h if batched else h.squeeze(0)


class LSTMCell(_CellBase):
    _gates = 4

    def forward(self, input, hx=None):
        h0 = None if hx is None else hx[0]
        x, h, batched = self._batch(input, h0)
        c = ember.zeros_like(h) if hx is None else (hx[1] if batched else hx[1].unsqueeze(0))
        h, c = _lstm_step(F.linear(x, self.weight_ih, self.bias_ih), (h, c), self.weight_hh, self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))
