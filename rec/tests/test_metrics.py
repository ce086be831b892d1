"""emberrec.metrics against NumPy versions of TorchRec's formulas, windows and keys."""
import numpy as np
import pytest

import ember
from emberrec.metrics import (
    DefaultTaskInfo, MetricsConfig, RecMetricDef, RecMetricEnum, RecMetricModule, RecTaskInfo, ThroughputDef,
    generate_metric_module)
from emberrec.metrics.auc import AUCMetric
from emberrec.metrics.ctr import CTRMetric
from emberrec.metrics.mse import MSEMetric
from emberrec.metrics.ne import NEMetric
from emberrec.metrics.throughput import ThroughputMetric

BATCH = 8


def batches(seed, n=5):
    rng = np.random.default_rng(seed)
    return [(rng.random(BATCH), (rng.random(BATCH) > 0.6).astype(np.float64), rng.random(BATCH) + 0.5) for _ in range(n)]


def ne_ref(p, l, w):
    p = np.clip(p, 1e-12, 1 - 1e-12)
    ce = np.sum(-w * l * np.log2(p) - w * (1 - l) * np.log2(1 - p))
    mean = np.clip(np.sum(w * l) / np.sum(w), 1e-12, 1 - 1e-12)
    norm = -np.sum(w * l) * np.log2(mean) - np.sum(w * (1 - l)) * np.log2(1 - mean)
    return ce / norm


def auc_ref(p, l, w):
    order = np.argsort(-p, kind="stable")
    fp, tp = np.cumsum(w[order] * (1 - l[order])), np.cumsum(w[order] * l[order])
    return 0.5 if fp[-1] * tp[-1] == 0 else np.trapezoid(tp, fp) / fp[-1] / tp[-1]


def joined(parts):
    return [np.concatenate(x) for x in zip(*parts)]


def feed(metric, data):
    for p, l, w in data:
        metric.update(predictions=ember.from_numpy(p), labels=ember.from_numpy(l), weights=ember.from_numpy(w))


def test_ne_ctr_mse_lifetime_and_window_values_and_keys():
    data = batches(0)
    window = 3 * BATCH  # the last three batches
    ne = NEMetric(world_size=1, my_rank=0, batch_size=BATCH, tasks=[DefaultTaskInfo], window_size=window)
    ctr = CTRMetric(world_size=1, my_rank=0, batch_size=BATCH, tasks=[DefaultTaskInfo], window_size=window)
    mse = MSEMetric(world_size=1, my_rank=0, batch_size=BATCH, tasks=[DefaultTaskInfo], window_size=window)
    for metric in (ne, ctr, mse):
        feed(metric, data)
    everything, last = joined(data), joined(data[-3:])
    got = {**ne.compute(), **ctr.compute(), **mse.compute()}
    want = {
        "ne-DefaultTask|lifetime_ne": ne_ref(*everything), "ne-DefaultTask|window_ne": ne_ref(*last),
        "ctr-DefaultTask|lifetime_ctr": np.sum(everything[1] * everything[2]) / np.sum(everything[2]),
        "ctr-DefaultTask|window_ctr": np.sum(last[1] * last[2]) / np.sum(last[2]),
        "mse-DefaultTask|lifetime_mse": np.sum(everything[2] * (everything[1] - everything[0]) ** 2) / np.sum(everything[2]),
        "mse-DefaultTask|window_mse": np.sum(last[2] * (last[1] - last[0]) ** 2) / np.sum(last[2]),
    }
    want["mse-DefaultTask|lifetime_rmse"] = np.sqrt(want["mse-DefaultTask|lifetime_mse"])
    want["mse-DefaultTask|window_rmse"] = np.sqrt(want["mse-DefaultTask|window_mse"])
    assert set(got) == set(want)
    for key, value in want.items():
        assert got[key].dtype == ember.float64 and got[key].shape == (1,)
        assert got[key].item() == pytest.approx(value, rel=1e-9), key


def test_auc_keeps_the_last_window_samples():
    data = batches(1)
    auc = AUCMetric(world_size=1, my_rank=0, batch_size=BATCH, tasks=[DefaultTaskInfo], window_size=20)
    feed(auc, data)
    p, l, w = (x[-20:] for x in joined(data))
    assert auc.compute()["auc-DefaultTask|window_auc"].item() == pytest.approx(auc_ref(p, l, w), rel=1e-9)
    perfect = AUCMetric(world_size=1, my_rank=0, batch_size=4, tasks=[DefaultTaskInfo], window_size=4)
    feed(perfect, [(np.array([0.9, 0.8, 0.2, 0.1]), np.array([1.0, 1.0, 0.0, 0.0]), np.ones(4))])
    assert perfect.compute()["auc-DefaultTask|window_auc"].item() == 1.0
    one_class = AUCMetric(world_size=1, my_rank=0, batch_size=4, tasks=[DefaultTaskInfo], window_size=4)
    feed(one_class, [(np.array([0.9, 0.8, 0.2, 0.1]), np.ones(4), np.ones(4))])
    assert one_class.compute()["auc-DefaultTask|window_auc"].item() == 0.5


def test_module_with_two_tasks_checkpoints_and_resets():
    tasks = [RecTaskInfo(name="click", label_name="click_label", prediction_name="click_pred", weight_name="click_w"),
             RecTaskInfo(name="like", label_name="like_label", prediction_name="like_pred", weight_name="like_w")]
    config = MetricsConfig(rec_tasks=tasks, rec_metrics={
        RecMetricEnum.NE: RecMetricDef(rec_task_indices=[0, 1], window_size=100),
        RecMetricEnum.CALIBRATION: RecMetricDef(rec_tasks=[tasks[1]], window_size=100)}, compute_interval_steps=2)
    module = generate_metric_module(RecMetricModule, config, batch_size=BATCH, world_size=1, my_rank=0,
                                    state_metrics_mapping={}, device="cpu")
    data = batches(2, 4)
    for p, l, w in data:
        module.update({"click_pred": ember.from_numpy(p), "click_label": ember.from_numpy(l), "click_w": ember.from_numpy(w),
                       "like_pred": ember.from_numpy(1 - p), "like_label": ember.from_numpy(1 - l),
                       "like_w": ember.from_numpy(w)})
    assert module.should_compute()
    got = module.compute()
    p, l, w = joined(data)
    assert got["ne-click|lifetime_ne"].item() == pytest.approx(ne_ref(p, l, w), rel=1e-9)
    assert got["ne-like|lifetime_ne"].item() == pytest.approx(ne_ref(1 - p, 1 - l, w), rel=1e-9)
    assert got["calibration-like|window_calibration"].item() == pytest.approx(np.sum((1 - p) * w) / np.sum((1 - l) * w))
    assert "calibration-click|lifetime_calibration" not in got

    state = module.state_dict()
    assert "rec_metrics.rec_metrics.0._metrics_computations.1.cross_entropy_sum" in state
    restored = generate_metric_module(RecMetricModule, config, batch_size=BATCH, world_size=1, my_rank=0,
                                      state_metrics_mapping={}, device="cpu")
    restored.load_state_dict(state)
    assert restored.compute()["ne-click|lifetime_ne"].item() == pytest.approx(ne_ref(p, l, w), rel=1e-9)
    module.reset()
    assert module.compute()["calibration-like|lifetime_calibration"].item() == 0.0


def test_throughput_counts_examples_after_warmup():
    throughput = ThroughputMetric(batch_size=16, world_size=1, window_seconds=100, warmup_steps=2)
    for _ in range(2):
        throughput.update()
    assert set(throughput.compute()) == {"throughput-throughput|total_examples"}
    for _ in range(3):
        throughput.update()
    out = throughput.compute()
    assert out["throughput-throughput|total_examples"].item() == 80
    assert out["throughput-throughput|lifetime_throughput"].item() > 0
    assert out["throughput-throughput|window_throughput"].item() > 0
    with pytest.raises(ValueError, match="window_seconds"):
        ThroughputMetric(batch_size=1, world_size=1, window_seconds=0)
    module = generate_metric_module(RecMetricModule, MetricsConfig(throughput_metric=ThroughputDef(warmup_steps=1)),
                                    batch_size=4, world_size=1, my_rank=0, state_metrics_mapping={})
    module.update({})
    assert module.compute()["throughput-throughput|total_examples"].item() == 4


def test_bad_inputs_raise_and_change_nothing():
    ne = NEMetric(world_size=1, my_rank=0, batch_size=4, tasks=[DefaultTaskInfo], window_size=8)
    with pytest.raises(ValueError, match="as many values"):
        ne.update(predictions=ember.rand(4), labels=ember.rand(3), weights=None)
    with pytest.raises(TypeError, match="ember.Tensor"):
        ne.update(predictions=[0.5], labels=ember.rand(1), weights=None)
    assert ne._metrics_computations[0].weighted_num_samples.item() == 0.0
    with pytest.raises(ValueError, match="Local window size must be larger than batch size"):
        NEMetric(world_size=1, my_rank=0, batch_size=16, tasks=[DefaultTaskInfo], window_size=8)
    with pytest.raises(NotImplementedError, match="world_size"):
        NEMetric(world_size=2, my_rank=0, batch_size=4, tasks=[DefaultTaskInfo], window_size=8)
    module = RecMetricModule(batch_size=4, world_size=1, rec_tasks=[DefaultTaskInfo],
                             rec_metrics=generate_metric_module(RecMetricModule, MetricsConfig(
                                 rec_tasks=[DefaultTaskInfo], rec_metrics={RecMetricEnum.CTR: RecMetricDef(
                                     rec_tasks=[DefaultTaskInfo], window_size=8)}), 4, 1, 0, {}).rec_metrics)
    with pytest.raises(ValueError, match="'weight'"):
        module.update({"prediction": ember.rand(4), "label": ember.rand(4)})
    with pytest.raises(ValueError, match="rec_task_indices"):
        MetricsConfig(rec_tasks=[], rec_metrics={RecMetricEnum.NE: RecMetricDef(rec_task_indices=[0])})
