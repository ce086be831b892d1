"""Forker and Demultiplexer: one source, several children, with a bounded shared buffer.

Both buffer the samples that a fast child has pulled and a slow one has not yet read. The buffer
holds at most `buffer_size` samples (-1: unbounded); past that, a clear BufferError names the
lagging child instead of letting memory grow without limit.
"""
import collections

from emberdata.datapipes._base import IterDataPipe, check_callable, check_datapipe, check_int, functional_datapipe


def _check_buffer_size(buffer_size, name):
    if isinstance(buffer_size, bool) or not isinstance(buffer_size, int) or (buffer_size < 1 and buffer_size != -1):
        raise ValueError(f"{name}: buffer_size must be a positive int or -1 (unbounded), got {buffer_size!r}")
    return buffer_size


class _ChildDataPipe(IterDataPipe):
    """Child `instance_id` of a Forker/Demultiplexer; iterating every child again starts a new pass."""

    def __init__(self, main_datapipe, instance_id):
        self.main_datapipe = main_datapipe
        self.instance_id = instance_id

    def __iter__(self):
        epoch = self.main_datapipe.join(self.instance_id)
        while True:
            found, value = self.main_datapipe.next_for(self.instance_id, epoch)
            if not found:
                return
            yield value

    def __len__(self):
        return self.main_datapipe.child_len(self.instance_id)


class _SplitterBase(IterDataPipe):
    """Shared by Forker and Demultiplexer: the source iterator and the pass (epoch) bookkeeping."""

    def __init__(self, datapipe, num_instances, buffer_size):
        self.main_datapipe = datapipe
        self.num_instances = num_instances
        self.buffer_size = buffer_size
        self._epoch = 0
        self._joined = set()
        self._it = None

    def __getstate__(self):
        state = super().__getstate__()
        state.update(_it=None, _joined=set(), _epoch=0)  # a running iterator can't cross processes
        return state

    def join(self, instance_id):
        """A child starts iterating: a child that already took part in this pass starts a new one."""
        if self._it is None or instance_id in self._joined:
            self._epoch += 1
            self._joined = set()
            self._it = iter(self.main_datapipe)
            self.reset_buffers()
        self._joined.add(instance_id)
        return self._epoch

    def check_epoch(self, epoch):
        if epoch != self._epoch:
            raise RuntimeError(
                f"{type(self).__name__}: this child's iterator is stale, a new pass over the source started; "
                "create new iterators for every child"
            )

    def check_room(self, buffered, instance_id):
        if self.buffer_size != -1 and buffered > self.buffer_size:
            raise BufferError(
                f"{type(self).__name__}: buffer_size={self.buffer_size} exceeded; child {instance_id} "
                f"or another child is more than {self.buffer_size} samples behind. Iterate the children "
                "more evenly or raise buffer_size"
            )


class _ForkerMain(_SplitterBase):
    def reset_buffers(self):
        self._buffer = collections.deque()
        self._start = 0  # the source index of self._buffer[0]
        self._positions = [0] * self.num_instances
        self._done = False

    def next_for(self, instance_id, epoch):
        self.check_epoch(epoch)
        pos = self._positions[instance_id]
        if pos - self._start == len(self._buffer):
            if self._done:
                return False, None
            try:
                value = next(self._it)
            except StopIteration:
                self._done = True
                return False, None
            self._buffer.append(value)
            self.check_room(len(self._buffer), instance_id)
        value = self._buffer[pos - self._start]
        self._positions[instance_id] = pos + 1
        # Drop what every child has read (children that never started count as at 0).
        lowest = min(self._positions)
        while self._start < lowest:
            self._buffer.popleft()
            self._start += 1
        return True, value

    def child_len(self, instance_id):
        return len(self.main_datapipe)


@functional_datapipe("fork")
class Forker(IterDataPipe):
    """`num_instances` children that each yield every sample of the source."""

    def __new__(cls, datapipe, num_instances, buffer_size=1000):
        check_datapipe(datapipe, "Forker: datapipe")
        check_int(num_instances, "Forker: num_instances", minimum=1)
        _check_buffer_size(buffer_size, "Forker")
        if num_instances == 1:
            return datapipe
        main = _ForkerMain(datapipe, num_instances, buffer_size)
        return [_ChildDataPipe(main, i) for i in range(num_instances)]


class _DemuxMain(_SplitterBase):
    def __init__(self, datapipe, num_instances, classifier_fn, drop_none, buffer_size):
        super().__init__(datapipe, num_instances, buffer_size)
        self.classifier_fn = classifier_fn
        self.drop_none = drop_none

    def reset_buffers(self):
        self._buffers = [collections.deque() for _ in range(self.num_instances)]
        self._buffered = 0
        self._done = False

    def _classify(self, value):
        target = self.classifier_fn(value)
        if target is None and self.drop_none:
            return None
        if isinstance(target, bool) or not isinstance(target, int) or not 0 <= target < self.num_instances:
            raise ValueError(f"Demultiplexer: classifier_fn must return an int in [0, {self.num_instances}), got {target!r}")
        return target

    def next_for(self, instance_id, epoch):
        self.check_epoch(epoch)
        own = self._buffers[instance_id]
        while not own:
            if self._done:
                return False, None
            try:
                value = next(self._it)
            except StopIteration:
                self._done = True
                return False, None
            target = self._classify(value)
            if target is None:
                continue
            self._buffers[target].append(value)
            self._buffered += 1
            self.check_room(self._buffered, target)
        self._buffered -= 1
        return True, own.popleft()

    def child_len(self, instance_id):
        raise TypeError("Demultiplexer children have no valid length (it depends on classifier_fn)")


@functional_datapipe("demux")
class Demultiplexer(IterDataPipe):
    """`num_instances` children; `classifier_fn(sample)` picks the child each sample goes to."""

    def __new__(cls, datapipe, num_instances, classifier_fn, drop_none=False, buffer_size=1000):
        check_datapipe(datapipe, "Demultiplexer: datapipe")
        check_int(num_instances, "Demultiplexer: num_instances", minimum=1)
        check_callable(classifier_fn, "Demultiplexer: classifier_fn")
        _check_buffer_size(buffer_size, "Demultiplexer")
        main = _DemuxMain(datapipe, num_instances, classifier_fn, drop_none, buffer_size)
        return [_ChildDataPipe(main, i) for i in range(num_instances)]
