"""`GradScaler`: loss scaling for mixed-precision training with PyTorch's API. The loss is
multiplied by a scale before backward so small float16/bfloat16 gradients do not flush to
zero; the gradients are divided by it before the optimizer step, which is skipped when any of
them overflowed (inf/NaN). The scale backs off after an overflow and grows after
`growth_interval` clean steps."""
import warnings
from collections import abc, defaultdict
from enum import Enum

import ember
from ember import _C

__all__ = ["OptState", "GradScaler"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled and not ember.cuda.is_available():
            warnings.warn("ember.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.", stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None  # made on the first scale(), on the outputs' device
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    def _check_scale_growth_tracker(self, funcname):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, device):
        self._scale = ember.full((), self._init_scale, dtype=_C.float32, device=device)
        self._growth_tracker = ember.full((), self._init_growth_tracker, dtype=_C.int32, device=device)

    def scale(self, outputs):
        """`outputs` (a tensor, or tensors nested in lists, tuples and other iterables) times the
        scale, which lives on the device of the first tensor scaled."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, _C.Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * ember._device.move(self._scale, outputs.device)
        if isinstance(outputs, abc.Iterable):
            scaled = map(self.scale, outputs)
            return type(outputs)(scaled) if isinstance(outputs, (list, tuple)) else scaled
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        """Multiplies every gradient by inv_scale in place and records on each gradient's device
        whether any of them held an inf or NaN (1.0 in that device's copy of found_inf), with
        no host sync; returns found_inf by device (empty without gradients)."""
        grads_by_device = defaultdict(list)
        with ember.no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    grad = param.grad
                    if grad is None:
                        continue
                    if not allow_fp16 and grad.dtype == _C.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    grads_by_device[grad.device].append(grad)
            found_inf_per_device = {}
            for device, grads in grads_by_device.items():
                found_inf_per_device[device] = ember._device.move(found_inf, device)
                _check_finite_and_unscale_(grads, found_inf_per_device[device], ember._device.move(inv_scale, device))
        return found_inf_per_device

    def unscale_(self, optimizer):
        """Divides the optimizer's gradients by the scale (once per update(); step() calls it
        when it was not called), so they can be clipped or inspected."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # the reciprocal in double, then rounded to float32, as PyTorch computes it (on the device)
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = ember.full((), 0.0, dtype=_C.float32, device=self._scale.device)
        optimizer_state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        optimizer_state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscales the gradients (unless unscale_ did) and runs optimizer.step(*args, **kwargs)
        unless one of them is inf or NaN; returns what the step returned (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(optimizer_state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        result = None
        # the one host sync of the iteration: whether to step
        if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
            result = optimizer.step(*args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        return result

    def update(self, new_scale=None):
        """Sets the scale for the next iteration: `new_scale` when given, else backed off after
        an overflow in any optimizer this iteration, or grown after growth_interval clean ones."""
        if not self._enabled:
            return
        scale, growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            self._set_scale(new_scale)
        else:
            found_infs = [ember._device.move(found_inf, scale.device) for state in self._per_optimizer_states.values()
                          for found_inf in state["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            found_inf_combined = found_infs[0]
            for found_inf in found_infs[1:]:
                found_inf_combined = found_inf_combined + found_inf
            _update_scale_(scale, growth_tracker, found_inf_combined, self._growth_factor, self._backoff_factor,
                           self._growth_interval)
        self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    def _set_scale(self, new_scale):
        if isinstance(new_scale, float):
            self._scale.fill_(new_scale)
            return
        reason = "new_scale should be a float or a 1-element ember.FloatTensor with requires_grad=False."
        if not isinstance(new_scale, _C.Tensor) or new_scale.numel() != 1 or new_scale.requires_grad:
            raise AssertionError(reason)
        self._scale.copy_(new_scale.reshape(()))

    def get_scale(self):
        """The current scale as a float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale.item()

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else self._growth_tracker.item()

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        """scale, growth_factor, backoff_factor, growth_interval and _growth_tracker (empty
        when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self):
        """Pickles between iterations only; the scale and tracker travel as numbers."""
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning of an iteration, or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)


def _check_finite_and_unscale_(grads, found_inf, inv_scale):
    """PyTorch's `_amp_foreach_non_finite_check_and_unscale_`, in ops on the gradients' device:
    found_inf becomes 1.0 if any gradient holds an inf or NaN, and every gradient is multiplied
    by inv_scale in place."""
    all_finite = ember.stack([ember.isfinite(g).all() for g in grads]).all()
    found_inf.copy_(ember.where(all_finite, found_inf, 1.0))
    for g in grads:
        g.mul_(inv_scale)


def _update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    """PyTorch's `_amp_update_scale_`, in ops on the scale's device (no host sync): backed off
    after an overflow (found_inf nonzero), grown after growth_interval clean steps; products
    taken in float64 and stored in float32; a grown scale that would overflow float32 is not
    taken (the tracker still restarts)."""
    overflow = found_inf != 0
    successful = growth_tracker + 1
    grow = (successful == growth_interval) & ~overflow
    wide = scale.double()
    grown = (wide * growth_factor).float()
    backed_off = (wide * backoff_factor).float()
    kept_or_grown = ember.where(grow & ember.isfinite(grown), grown, scale)
    scale.copy_(ember.where(overflow, backed_off, kept_or_grown))
    growth_tracker.copy_(ember.where(overflow | grow, 0, successful))
