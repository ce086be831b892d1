"""Pipeline schedules over one stage per rank. The batch is split into `n_microbatches` along
dim 0 (the first stage's inputs, the last stage's target); gradients are divided by the number of
micro-batches (`scale_grads`) so that a mean loss gives the full batch's gradient."""
import ember

__all__ = ["PipelineScheduleSingle", "Schedule1F1B", "ScheduleGPipe"]


class PipelineScheduleSingle:
    """A schedule driving one PipelineStage. `step(*args, target=None, losses=None)`: the first
    stage passes the batch, the last stage the target (and a list that receives each
    micro-batch's loss); the last stage gets the merged output back, the others None."""

    def __init__(self, stage, n_microbatches, loss_fn=None, args_chunk_spec=None, kwargs_chunk_spec=None,
                 output_merge_spec=None, scale_grads=True):
        if not isinstance(n_microbatches, int) or n_microbatches < 1:
            raise ValueError(f"n_microbatches must be a positive integer, but got {n_microbatches!r}")
        for name, value in (("args_chunk_spec", args_chunk_spec), ("kwargs_chunk_spec", kwargs_chunk_spec),
                            ("output_merge_spec", output_merge_spec)):
            if value is not None:
                raise NotImplementedError(f"{type(self).__name__}({name}=...) is not supported: micro-batches are "
                                          "split and merged along dim 0")
        self._stage, self._n_microbatches, self._loss_fn = stage, n_microbatches, loss_fn
        self.scale_grads = scale_grads

    def step(self, *args, target=None, losses=None, **kwargs):
        stage = self._stage
        if kwargs:
            raise NotImplementedError("pipeline schedules take the first stage's inputs positionally")
        if stage.is_first and len(args) != 1:
            raise ValueError(f"the first stage's step() takes the batch as one tensor, but got {len(args)} arguments")
        if stage.is_last and self._loss_fn is not None and target is None and ember.is_grad_enabled():
            raise ValueError("the last stage's step() needs target= to compute the loss")
        inputs = self._split(args[0], "input") if stage.is_first else [None] * self._n_microbatches
        targets = self._split(target, "target") if stage.is_last and target is not None else [None] * self._n_microbatches
        outputs = [None] * self._n_microbatches
        train = self._loss_fn is not None and ember.is_grad_enabled()

        def forward(k):
            outputs[k] = stage.forward_one_chunk(k, inputs[k])

        def backward(k):
            loss = None
            if stage.is_last:
                loss = self._loss_fn(outputs[k], targets[k])
                if losses is not None:
                    losses.append(loss.detach())
            stage.backward_one_chunk(k, loss)
        if train:
            self._run(forward, backward)
            if self.scale_grads:
                stage.scale_grads(self._n_microbatches)
        else:
            for k in range(self._n_microbatches):
                forward(k)
            stage._inputs.clear()
            stage._outputs.clear()
        stage._finish_sends()
        return ember.cat([o.detach() for o in outputs]) if stage.is_last else None

    def _split(self, batch, what):
        if not isinstance(batch, ember.Tensor) or batch.dim() == 0 or batch.shape[0] < self._n_microbatches:
            raise ValueError(f"the {what} must be a tensor with at least n_microbatches ({self._n_microbatches}) rows")
        return list(ember.tensor_split(batch, self._n_microbatches, 0))

    def _run(self, forward, backward):
        raise NotImplementedError


class ScheduleGPipe(PipelineScheduleSingle):
    """GPipe: every micro-batch's forward, then every micro-batch's backward."""

    def _run(self, forward, backward):
        for k in range(self._n_microbatches):
            forward(k)
        for k in range(self._n_microbatches):
            backward(k)


class Schedule1F1B(PipelineScheduleSingle):
    """1F1B: after a warm-up of forwards (fewer on later stages), each stage alternates one
    forward and one backward, so at most num_stages micro-batches are in flight."""

    def _run(self, forward, backward):
        stage, m = self._stage, self._n_microbatches
        warmup = min(stage.num_stages - stage.stage_index - 1, m)
        for k in range(warmup):
            forward(k)
        done_forward, done_backward = warmup, 0
        while done_forward < m:
            forward(done_forward)
            done_forward += 1
            backward(done_backward)
            done_backward += 1
        while done_backward < m:
            backward(done_backward)
            done_backward += 1
