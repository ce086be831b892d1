"""DataLoader2 (TorchData 0.4) with Ember's checkpointing: `state_dict`/`load_state_dict`.

Each epoch's shuffle seed is derived from one base seed (drawn from ember's default generator at
construction) and the epoch number, so a run is reproducible under `ember.manual_seed`, and a
state dict of `(base seed, epoch, samples yielded)` is enough to resume exactly where it stopped:
the epoch is replayed with the same seed and the samples already seen are skipped.
"""
from emberdata._seed import derived_seeds, draw_seed
from emberdata.datapipes._base import IterDataPipe, MapDataPipe
from emberdata.datapipes.graph_settings import apply_shuffle_seed
from emberdata.dataloader2.reading_service import ReadingServiceInterface

_STATE_KEYS = ("base_seed", "epoch", "num_yielded")


class DataLoader2:
    """Iterates `datapipe` (after `datapipe_adapter_fn`) through `reading_service` (None: in this process)."""

    def __init__(self, datapipe, datapipe_adapter_fn=None, reading_service=None):
        if not isinstance(datapipe, (IterDataPipe, MapDataPipe)):
            raise TypeError(f"DataLoader2: datapipe must be an IterDataPipe or MapDataPipe, got {type(datapipe).__name__}")
        if reading_service is not None and not isinstance(reading_service, ReadingServiceInterface):
            raise TypeError(f"DataLoader2: reading_service must be a ReadingServiceInterface, got {type(reading_service).__name__}")
        for fn in _as_list(datapipe_adapter_fn):
            if not callable(fn):
                raise TypeError(f"DataLoader2: datapipe_adapter_fn must be callable(s), got {type(fn).__name__}")
            datapipe = fn(datapipe)
        if isinstance(datapipe, MapDataPipe):
            datapipe = datapipe.to_iter_datapipe()
        self.datapipe = datapipe
        self.reading_service = reading_service
        self._adapted = None
        self._base_seed = draw_seed()
        self._epoch = 0  # epochs started so far
        self._num_yielded = 0
        self._resume_from = 0
        self._terminated = False
        self._active = None

    def _epoch_seed(self, epoch):
        return derived_seeds(self._base_seed, epoch)[-1]

    def __iter__(self):
        if self._terminated:
            raise RuntimeError("Cannot iterate over the DataLoader2 as it has already been shut down")
        if self._adapted is None:
            self._adapted = self.reading_service.initialize(self.datapipe) if self.reading_service else self.datapipe
        if self._resume_from == 0:
            self._epoch += 1
        self._seed_epoch(self._epoch_seed(self._epoch))
        skip, self._resume_from = self._resume_from, 0
        self._num_yielded = 0
        self._active = object()
        return self._iterate(self._active, skip)

    def _seed_epoch(self, seed):
        service = self.reading_service
        if callable(getattr(service, "initialize_epoch", None)):
            service.initialize_epoch(seed)
        elif isinstance(self._adapted, (IterDataPipe, MapDataPipe)):
            apply_shuffle_seed(self._adapted, seed)
        if service is not None:
            service.initialize_iteration()

    def _iterate(self, token, skip):
        for sample in self._adapted:
            if self._active is not token:
                raise RuntimeError("DataLoader2: this iterator is stale; a newer one was created with iter()")
            self._num_yielded += 1
            if self._num_yielded > skip:
                yield sample
        if self.reading_service is not None:
            self.reading_service.finalize_iteration()

    def state_dict(self):
        """Where iteration stands: resume with `load_state_dict` on a DataLoader2 built the same way."""
        return {"base_seed": self._base_seed, "epoch": self._epoch, "num_yielded": self._num_yielded}

    def load_state_dict(self, state):
        """The next `iter()` continues the saved epoch after its last yielded sample."""
        if not isinstance(state, dict) or set(state) != set(_STATE_KEYS):
            raise ValueError(f"DataLoader2.load_state_dict: expected a dict with keys {_STATE_KEYS}, got {state!r}")
        self._base_seed = int(state["base_seed"])
        self._epoch = int(state["epoch"])
        self._resume_from = int(state["num_yielded"])
        if self._resume_from and self._epoch == 0:
            raise ValueError("DataLoader2.load_state_dict: num_yielded > 0 needs epoch >= 1")

    def shutdown(self):
        if not self._terminated:
            self._terminated = True
            if self.reading_service is not None:
                self.reading_service.finalize()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()

    def __del__(self):
        try:
            self.shutdown()
        except Exception:  # during interpreter shutdown the workers may already be gone
            pass


def _as_list(fn):
    if fn is None:
        return []
    return list(fn) if isinstance(fn, (list, tuple)) else [fn]
