"""The sharding planner (emberrec.distributed.planner) on TorchRec's own planner test cases,
and against the installed TorchRec itself.

The enumerator cases (8 ranks, 4 per host, batch 256, four tables with min_partition and
pooling-factor constraints) carry TorchRec's expected shard sizes, offsets and storage. Where
TorchRec's perf model changed since 0.2 (proposer sequences, which of row-wise and table-wise
wins), the expected values are those of TorchRec 1.9, whose formulas emberrec follows. The
parity test runs TorchRec's planner (planner_reference.py) in another interpreter
(EMBER_TORCHREC_PYTHON, else EMBER_BENCH_TORCH_PYTHON; skipped where none has torchrec) on the
cases of CASES and compares every sharding option's shards, storage and perf, and the plans."""
import json
import logging
import math
import os
import pathlib
import subprocess
import sys

import pytest

import ember.nn as nn
from emberrec.distributed.embedding import EmbeddingCollectionSharder
from emberrec.distributed.embedding_types import EmbeddingComputeKernel
from emberrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
from emberrec.distributed.model_parallel import DistributedModelParallel
from emberrec.distributed.planner import EmbeddingShardingPlanner, ParameterConstraints, Topology
from emberrec.distributed.planner.enumerators import EmbeddingEnumerator
from emberrec.distributed.planner.partitioners import GreedyPerfPartitioner
from emberrec.distributed.planner.proposers import (
    GreedyProposer, GridSearchProposer, UniformProposer, proposers_to_proposals_list)
from emberrec.distributed.planner.storage_reservations import HeuristicalStorageReservation
from emberrec.distributed.planner.types import PlannerError, PlannerErrorType, Storage
from emberrec.distributed.types import CacheParams, ShardingPlan
from emberrec.modules.embedding_configs import EmbeddingBagConfig, EmbeddingConfig
from emberrec.modules.embedding_modules import EmbeddingBagCollection, EmbeddingCollection

HERE = pathlib.Path(__file__).resolve().parent


def bag_tables(configs):
    return [EmbeddingBagConfig(num_embeddings=rows, embedding_dim=dim, name=f"table_{i}", feature_names=[f"feature_{i}"])
            for i, (rows, dim) in enumerate(configs)]


class OnlySharder(EmbeddingBagCollectionSharder):
    """An EBC sharder offering only the given sharding types and kernels (TorchRec's tests' TWSharder, ...)."""

    def __init__(self, sharding_types, compute_kernels):
        super().__init__()
        self._types, self._kernels = sharding_types, compute_kernels

    def sharding_types(self, compute_device_type):
        return self._types

    def compute_kernels(self, sharding_type, compute_device_type):
        return self._kernels


# ---- the enumerator: TorchRec's test_enumerators setUp and expected values ----

ENUM_CONSTRAINTS = {
    "table_0": ParameterConstraints(min_partition=20),
    "table_1": ParameterConstraints(min_partition=20, pooling_factors=[1, 3, 5]),
    "table_2": ParameterConstraints(min_partition=20, pooling_factors=[8, 2]),
    "table_3": ParameterConstraints(min_partition=40, pooling_factors=[2, 1, 3, 7]),
}
ENUM_TABLES = [(100 + i * 10, 20 + i * 20) for i in range(4)]

EXPECTED_RW_SIZES = [[[13, 20]] * 7 + [[9, 20]], [[14, 40]] * 7 + [[12, 40]], [[15, 60]] * 8,
                     [[17, 80]] * 7 + [[11, 80]]]
EXPECTED_RW_OFFSETS = [[[13 * r, 0] for r in range(8)], [[14 * r, 0] for r in range(8)],
                       [[15 * r, 0] for r in range(8)], [[17 * r, 0] for r in range(8)]]
EXPECTED_RW_STORAGE = [[166928] * 7 + [166608], [1003712] * 7 + [1003392], [1007120] * 8, [2653504] * 7 + [2651584]]


def cache_state(rows):
    return math.ceil(rows * (4 + 0.2 * 16))


EXPECTED_UVM_CACHING_RW_STORAGE = [
    [(166096 + cache_state(13), 1040)] * 7 + [(166032 + cache_state(9), 720)],
    [(1001920 + cache_state(14), 2240)] * 7 + [(1001856 + cache_state(12), 1920)],
    [(1004240 + cache_state(15), 3600)] * 8,
    [(2649152 + cache_state(17), 5440)] * 7 + [(2648768 + cache_state(11), 3520)],
]
EXPECTED_TWRW_SIZES = [[[25, 20]] * 4, [[28, 40]] * 3 + [[26, 40]], [[30, 60]] * 4, [[33, 80]] * 3 + [[31, 80]]]
EXPECTED_TWRW_OFFSETS = [[[25 * r, 0] for r in range(4)], [[28 * r, 0] for r in range(4)],
                         [[30 * r, 0] for r in range(4)], [[33 * r, 0] for r in range(4)]]
EXPECTED_TWRW_STORAGE = [[169936] * 4, [1024384] * 3 + [1024064], [1031200] * 4, [2685248] * 3 + [2684608]]
EXPECTED_CW_SIZES = [[[100, 20]], [[110, 20]] * 2, [[120, 20]] * 3, [[130, 40]] * 2]
EXPECTED_CW_OFFSETS = [[[0, 0]], [[0, 0], [0, 20]], [[0, 0], [0, 20], [0, 40]], [[0, 0], [0, 40]]]
EXPECTED_CW_STORAGE = [[188224], [647776] * 2, [501120] * 3, [1544512] * 2]


@pytest.fixture(scope="module")
def enumerator_model():
    return EmbeddingBagCollection(bag_tables(ENUM_TABLES))


def enumerate_with(model, sharding_type, kernel, constraints=ENUM_CONSTRAINTS):
    enumerator = EmbeddingEnumerator(Topology(world_size=8, compute_device="cuda", local_world_size=4),
                                     batch_size=256, constraints=constraints)
    return enumerator.enumerate(model, [OnlySharder([sharding_type], [kernel])])


def hbm_only(values):
    return [Storage(hbm=v, ddr=0) for v in values]


@pytest.mark.parametrize("sharding_type, kernel, sizes, offsets, storages", [
    ("row_wise", "fused", EXPECTED_RW_SIZES, EXPECTED_RW_OFFSETS, [hbm_only(s) for s in EXPECTED_RW_STORAGE]),
    ("row_wise", "fused_uvm_caching", EXPECTED_RW_SIZES, EXPECTED_RW_OFFSETS,
     [[Storage(hbm=h, ddr=d) for h, d in s] for s in EXPECTED_UVM_CACHING_RW_STORAGE]),
    ("table_row_wise", "fused", EXPECTED_TWRW_SIZES, EXPECTED_TWRW_OFFSETS, [hbm_only(s) for s in EXPECTED_TWRW_STORAGE]),
    ("column_wise", "fused", EXPECTED_CW_SIZES, EXPECTED_CW_OFFSETS, [hbm_only(s) for s in EXPECTED_CW_STORAGE]),
    ("table_column_wise", "fused", EXPECTED_CW_SIZES, EXPECTED_CW_OFFSETS, [hbm_only(s) for s in EXPECTED_CW_STORAGE]),
])
def test_enumerator_shards_and_storage(enumerator_model, sharding_type, kernel, sizes, offsets, storages):
    options = enumerate_with(enumerator_model, sharding_type, kernel)
    assert [o.name for o in options] == [f"table_{i}" for i in range(4)]
    for option, want_sizes, want_offsets, want_storage in zip(options, sizes, offsets, storages):
        assert option.sharding_type == sharding_type and option.compute_kernel == kernel
        assert [s.size for s in option.shards] == want_sizes
        assert [s.offset for s in option.shards] == want_offsets
        assert [s.storage for s in option.shards] == want_storage


@pytest.mark.parametrize("sharding_type, kernel", [("data_parallel", "dense"), ("table_wise", "fused")])
def test_enumerator_dp_and_tw_storage_is_weights_plus_io(enumerator_model, sharding_type, kernel):
    for option in enumerate_with(enumerator_model, sharding_type, kernel):
        rows, dim = option.tensor.shape
        factors = ENUM_CONSTRAINTS[option.name].pooling_factors
        ids = sum(256 * f for f in factors)  # each id 8 bytes, each pooled output dim floats
        pooled = sum(256 * min(1.0, f) for f in factors)
        ranks = 1 if sharding_type == "data_parallel" else 8
        want = rows * dim * 4 + math.ceil(ids * ranks * 8) + math.ceil(pooled * ranks * dim * 4)
        assert option.num_shards == (8 if sharding_type == "data_parallel" else 1)
        assert all(s.size == [rows, dim] and s.offset == [0, 0] for s in option.shards)
        assert all(s.storage == Storage(hbm=want, ddr=0) for s in option.shards)


def test_enumerator_filters_by_constraints(enumerator_model):
    constraint = ParameterConstraints(sharding_types=["table_row_wise", "column_wise"],
                                      compute_kernels=["fused_uvm", "dense"])
    all_types = ["data_parallel", "table_wise", "row_wise", "table_row_wise", "column_wise", "table_column_wise"]
    sharder = OnlySharder(all_types, ["dense", "fused", "fused_uvm", "fused_uvm_caching", "quant"])
    enumerator = EmbeddingEnumerator(Topology(world_size=8, compute_device="cuda", local_world_size=4), batch_size=256,
                                     constraints={f"table_{i}": constraint for i in range(4)})
    options = enumerator.enumerate(enumerator_model, [sharder])
    assert len(options) == 4 * 2 * 2
    assert {o.sharding_type for o in options} == {"table_row_wise", "column_wise"}
    assert {o.compute_kernel for o in options} == {"fused_uvm", "dense"}


def test_sharders_offer_torchrecs_types_and_kernels():
    sharder = EmbeddingBagCollectionSharder()
    assert sharder.sharding_types("cpu") == ["data_parallel", "table_wise", "column_wise", "table_column_wise"]
    assert sharder.sharding_types("cuda")[-2:] == ["row_wise", "table_row_wise"]
    assert sharder.compute_kernels("table_wise", "cuda") == ["fused", "fused_uvm", "fused_uvm_caching"]
    assert sharder.compute_kernels("data_parallel", "cpu") == ["dense"]
    assert EmbeddingCollectionSharder().sharding_types("cuda") == ["data_parallel", "table_wise", "column_wise", "row_wise"]
    assert EmbeddingComputeKernel("fused_uvm_caching") is EmbeddingComputeKernel.FUSED_UVM_CACHING


# ---- estimates: one 100 x 10 table, 2 ranks of one host, batch 512 (TorchRec 1.9's values) ----

EXPECTED_PERF = {  # (fwd_compute, fwd_comms, bwd_compute, bwd_comms) of shard 0, and its (hbm, ddr)
    ("data_parallel", "dense"): ((9.356002212235228e-05, 0, 0.00018712004424470456, 0.000225593945387348), (28576, 0)),
    ("table_wise", "fused"): ((0.000327460077428233, 6.357828776041667e-05, 0.000654920154856466,
                               6.357828776041667e-05), (53152, 0)),
    ("table_wise", "fused_uvm"): ((0.09179115295410156, 6.357828776041667e-05, 0.18358230590820312,
                                   6.357828776041667e-05), (49152, 4000)),
    ("table_wise", "fused_uvm_caching"): ((0.01432837509527439, 6.357828776041667e-05, 0.02865675019054878,
                                           6.357828776041667e-05), (50672, 4000)),
    ("row_wise", "fused"): ((6.804365245261984e-05, 6.357828776041667e-05, 0.0001360873049052397,
                             0.00016798276699240525), (47056, 0)),
    ("row_wise", "fused_uvm_caching"): ((0.0029773246951219513, 6.357828776041667e-05, 0.0059546493902439025,
                                         0.004631910866838161), (45816, 2000)),
    ("table_row_wise", "fused_uvm"): ((0.019073486328125, 6.357828776041667e-05, 0.03814697265625,
                                       0.029329458872477215), (45056, 2000)),
}


def test_perf_and_storage_estimates():
    model = EmbeddingBagCollection([EmbeddingBagConfig(num_embeddings=100, embedding_dim=10, name="t",
                                                       feature_names=["f"])])
    options = EmbeddingEnumerator(Topology(world_size=2, compute_device="cuda"), batch_size=512).enumerate(
        model, [EmbeddingBagCollectionSharder()])
    got = {(o.sharding_type, o.compute_kernel): o.shards[0] for o in options}
    for key, (perf, storage) in EXPECTED_PERF.items():
        shard = got[key]
        assert [shard.perf.fwd_compute, shard.perf.fwd_comms, shard.perf.bwd_compute,
                shard.perf.bwd_comms] == pytest.approx(perf, rel=1e-12), key
        assert shard.storage == Storage(*storage), key


# ---- proposers: TorchRec's test_proposers cases ----

def proposal_names(proposal):
    ordered = sorted(proposal, key=lambda o: (max(s.perf.total for s in o.shards), o.name))
    return [(o.name, o.sharding_type, o.compute_kernel) for o in ordered]


def search_space(configs):
    enumerator = EmbeddingEnumerator(Topology(world_size=2, compute_device="cuda"), batch_size=512)
    return enumerator.enumerate(EmbeddingBagCollection(bag_tables(configs)), [EmbeddingBagCollectionSharder()])


def test_greedy_proposer_two_tables():
    proposer = GreedyProposer()
    proposer.load(search_space([(100, 10), (100, 10)]))
    got = []
    for _ in range(5):
        got.append(proposal_names(proposer.propose()))
        proposer.feedback(partitionable=True)
    rw, twrw, dp = ("row_wise", "fused"), ("table_row_wise", "fused"), ("data_parallel", "dense")
    assert got == [[("table_0",) + rw, ("table_1",) + rw], [("table_0",) + twrw, ("table_1",) + rw],
                   [("table_1",) + rw, ("table_0",) + dp], [("table_1",) + twrw, ("table_0",) + dp],
                   [("table_0",) + dp, ("table_1",) + dp]]


def test_uniform_proposer_three_tables():
    proposer = UniformProposer()
    proposer.load(search_space([(100 * i, 10 * i) for i in range(1, 4)]))
    got = []
    proposal = proposer.propose()
    while proposal:
        got.append(proposal_names(proposal))
        proposer.feedback(partitionable=True)
        proposal = proposer.propose()
    kinds = [("data_parallel", "dense"), ("table_wise", "fused"), ("column_wise", "fused"),
             ("table_column_wise", "fused"), ("row_wise", "fused"), ("table_row_wise", "fused")]
    assert got == [[(f"table_{i}",) + kind for i in range(3)] for kind in kinds]


def test_grid_search_proposes_every_combination_once():
    space = search_space([(100, 10), (50, 8)])
    per_table = len(space) // 2
    proposals = proposers_to_proposals_list([GridSearchProposer(), UniformProposer()], space)
    assert len(proposals) == per_table ** 2  # the uniform ones are among them
    assert GridSearchProposer(max_proposals=per_table).propose() is None


# ---- partitioner ----

def test_partitioner_balances_table_wise_tables_by_perf():
    options = [o for o in search_space([(100, 10)] * 4) if o.sharding_type == "table_wise" and o.compute_kernel == "fused"]
    topology = Topology(world_size=2, compute_device="cuda")
    placed = GreedyPerfPartitioner().partition(options, topology)
    assert sorted(o.shards[0].rank for o in placed) == [0, 0, 1, 1]


def test_partitioner_raises_planner_error_when_a_shard_fits_nowhere():
    options = [o for o in search_space([(100, 10)]) if o.sharding_type == "table_wise" and o.compute_kernel == "fused"]
    with pytest.raises(PlannerError, match="Device partition failed") as error:
        GreedyPerfPartitioner().partition(options, Topology(world_size=2, compute_device="cuda", hbm_cap=1000))
    assert error.value.error_type == PlannerErrorType.PARTITION


# ---- the planner: TorchRec's test_planners cases ----

TW_OR_RW = OnlySharder(["row_wise", "table_wise"], ["fused"])


@pytest.mark.parametrize("num_tables, num_proposals", [(4, 16), (3, 8)])
def test_planner_tw_or_rw(num_tables, num_proposals):
    # TorchRec 0.2 put these tables table-wise; TorchRec 1.9's estimates make row-wise faster
    planner = EmbeddingShardingPlanner(topology=Topology(world_size=2, compute_device="cuda"))
    plan = planner.plan(EmbeddingBagCollection(bag_tables([(100, 10)] * num_tables)), [TW_OR_RW])
    assert {name: p.ranks for name, p in plan.plan[""].items()} == {f"table_{i}": [0, 1] for i in range(num_tables)}
    assert planner._num_proposals == num_proposals


def test_planner_never_fit_raises_planner_error():
    planner = EmbeddingShardingPlanner(topology=Topology(world_size=2, compute_device="cuda", hbm_cap=2 * 1024 ** 2))
    with pytest.raises(PlannerError, match="^Unable to find a plan for this model because of insufficient storage"):
        planner.plan(EmbeddingBagCollection(bag_tables([(1000, 100)] * 10)), [TW_OR_RW])
    assert planner._num_proposals == 1024


def test_planner_refuses_dense_kernel_outside_data_parallel():
    planner = EmbeddingShardingPlanner(topology=Topology(world_size=2, compute_device="cuda"))
    with pytest.raises(PlannerError, match="DENSE kernel requires DATA_PARALLEL"):
        planner.plan(EmbeddingBagCollection(bag_tables([(100, 10)])), [OnlySharder(["table_wise"], ["dense"])])


def test_storage_reservation_too_large_raises():
    module = EmbeddingBagCollection(bag_tables([(100, 10)]))
    reservation = HeuristicalStorageReservation(percentage=0.15, dense_tensor_estimate=10 ** 9)
    with pytest.raises(PlannerError, match="negative available hbm storage") as error:
        reservation.reserve(Topology(world_size=2, compute_device="cuda", hbm_cap=10 ** 8), 512, module,
                            [EmbeddingBagCollectionSharder()])
    assert error.value.error_type == PlannerErrorType.INSUFFICIENT_STORAGE


def test_plan_describes_shards_and_placements():
    planner = EmbeddingShardingPlanner(topology=Topology(world_size=4, compute_device="cuda", local_world_size=2),
                                       constraints={"table_0": ParameterConstraints(sharding_types=["row_wise"])})
    plan = planner.plan(EmbeddingBagCollection(bag_tables([(10, 8), (20, 8)])), [EmbeddingBagCollectionSharder()])
    sharding = plan.get_plan_for_module("")["table_0"]
    assert sharding.sharding_type == "row_wise" and sharding.ranks == [0, 1, 2, 3]
    assert [(m.shard_offsets, m.shard_sizes, m.placement) for m in sharding.sharding_spec.shards] == [
        ([0, 0], [3, 8], "rank:0/cuda:0"), ([3, 0], [3, 8], "rank:1/cuda:1"), ([6, 0], [3, 8], "rank:2/cuda:0"),
        ([9, 0], [1, 8], "rank:3/cuda:1")]
    assert "| sharding type | compute kernel | ranks" in str(plan)


def test_cpu_topology_plans_in_host_memory():
    planner = EmbeddingShardingPlanner(topology=Topology(world_size=3, compute_device="cpu"))
    plan = planner.plan(EmbeddingBagCollection(bag_tables([(100, 16), (50, 8)])))
    for sharding in plan.plan[""].values():
        assert sharding.sharding_type in ("table_wise", "column_wise", "table_column_wise", "data_parallel")
    assert all(s.storage.hbm == 0 and s.storage.ddr > 0 for o in planner._best_plan for s in o.shards)


def test_embedding_collection_and_nested_module_paths():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.dense = nn.Linear(4, 4)
            self.sparse = EmbeddingCollection([EmbeddingConfig(num_embeddings=40, embedding_dim=8, name="products",
                                                               feature_names=["item"])])

    plan = EmbeddingShardingPlanner(topology=Topology(world_size=2, compute_device="cuda")).plan(Model())
    assert list(plan.plan) == ["sparse"] and list(plan.plan["sparse"]) == ["products"]


def test_stats_table_is_logged(caplog):
    planner = EmbeddingShardingPlanner(topology=Topology(world_size=2, compute_device="cuda"), debug=True)
    with caplog.at_level(logging.INFO, logger="emberrec.distributed.planner.stats"):
        planner.plan(EmbeddingBagCollection(bag_tables([(100, 10)] * 2)))
    lines = [r.getMessage() for r in caplog.records if r.name == "emberrec.distributed.planner.stats"]
    assert "--- Planner Statistics ---" in lines[1]
    assert any("Rank" in line and "HBM (GB)" in line and "Perf (ms)" in line for line in lines)
    assert any("Parameter Info:" in line for line in lines) and any("Batch Size: 512" in line for line in lines)
    assert lines[0] == "#" * len(lines[0]) and all(len(line) == len(lines[0]) for line in lines)


def test_collective_plan_within_one_process():
    planner = EmbeddingShardingPlanner(topology=Topology(world_size=2, compute_device="cuda"), stats=[])
    module = EmbeddingBagCollection(bag_tables([(100, 10)]))
    assert isinstance(planner.collective_plan(module), ShardingPlan)
    with pytest.raises(NotImplementedError, match="process group"):
        planner.collective_plan(module, pg=object())


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="world_size"):
        Topology(world_size=0, compute_device="cuda")
    with pytest.raises(ValueError, match="unsupported compute device"):
        Topology(world_size=2, compute_device="tpu")
    with pytest.raises(ValueError, match="unknown sharding type"):
        ParameterConstraints(sharding_types=["diagonal_wise"])
    with pytest.raises(ValueError, match="unknown compute kernel"):
        ParameterConstraints(compute_kernels=["magic"])
    with pytest.raises(ValueError, match="num_poolings"):
        ParameterConstraints(pooling_factors=[1.0, 2.0], num_poolings=[1.0])
    with pytest.raises(ValueError, match="load_factor"):
        CacheParams(load_factor=1.5)
    assert ParameterConstraints(caching_ratio=0.25).cache_params == CacheParams(load_factor=0.25)
    with pytest.raises(TypeError, match="topology"):
        EmbeddingShardingPlanner(topology=None)
    planner = EmbeddingShardingPlanner(topology=Topology(world_size=2, compute_device="cuda"),
                                       constraints={"no_such_table": ParameterConstraints()})
    with pytest.raises(ValueError, match="no_such_table"):
        planner.plan(EmbeddingBagCollection(bag_tables([(100, 10)])))
    with pytest.raises(NotImplementedError, match="DistributedModelParallel"):
        DistributedModelParallel(EmbeddingBagCollection(bag_tables([(100, 10)])))
    with pytest.raises(NotImplementedError, match="cannot run"):
        EmbeddingBagCollectionSharder().shard(None, None, None)


# ---- parity with the installed TorchRec ----

GB = 1024 ** 3
CASES = {
    "cuda_two_ranks": {"module": "ebc", "topology": {"world_size": 2, "compute_device": "cuda"},
                       "tables": [{"name": f"t{i}", "rows": 100 + 10 * i, "dim": 64 * (i + 1), "features": [f"f{i}"]}
                                  for i in range(4)]},
    "two_hosts_constrained": {
        "module": "ebc", "batch_size": 1024,
        "topology": {"world_size": 4, "compute_device": "cuda", "local_world_size": 2, "hbm_cap": GB // 2},
        "tables": [{"name": "rw", "rows": 5_000, "dim": 64, "features": ["a"]},
                   {"name": "twrw", "rows": 3_001, "dim": 32, "features": ["b", "c"]},
                   {"name": "cw", "rows": 2_000, "dim": 256, "features": ["d"]},
                   {"name": "twcw", "rows": 1_000, "dim": 512, "features": ["e"]},
                   {"name": "dp", "rows": 64, "dim": 16, "features": ["g"]},
                   {"name": "cached", "rows": 4_000, "dim": 96, "features": ["h"]},
                   {"name": "free", "rows": 7_000, "dim": 48, "features": ["i"]}],
        "constraints": {"rw": {"sharding_types": ["row_wise"], "compute_kernels": ["fused", "fused_uvm"],
                               "pooling_factors": [12.5]},
                        "twrw": {"sharding_types": ["table_row_wise"], "pooling_factors": [3.0, 0.5],
                                 "num_poolings": [1.0, 2.0], "batch_sizes": [256, 512]},
                        "cw": {"sharding_types": ["column_wise"], "min_partition": 64},
                        "twcw": {"sharding_types": ["table_column_wise"]},
                        "dp": {"sharding_types": ["data_parallel"]},
                        "cached": {"sharding_types": ["table_wise", "row_wise"],
                                   "compute_kernels": ["fused_uvm_caching"], "cache_load_factor": 0.3},
                        "free": {"sharding_types": ["table_wise", "row_wise", "column_wise"],
                                 "pooling_factors": [4.0]}}},
    "cpu_three_ranks": {"module": "ebc", "topology": {"world_size": 3, "compute_device": "cpu"},
                        "tables": [{"name": f"t{i}", "rows": 500 * (i + 1), "dim": 32 * (i + 1), "features": [f"f{i}"]}
                                   for i in range(5)]},
    "weighted": {"module": "weighted_ebc", "topology": {"world_size": 2, "compute_device": "cuda"},
                 "tables": [{"name": "w0", "rows": 300, "dim": 16, "features": ["x"]},
                            {"name": "w1", "rows": 900, "dim": 128, "features": ["y", "z"]}],
                 "constraints": {"w1": {"pooling_factors": [2.0, 5.0]}}},
    "sequence_ec": {"module": "ec", "topology": {"world_size": 4, "compute_device": "cuda", "local_world_size": 2},
                    "tables": [{"name": f"s{i}", "rows": 1000 * (i + 1), "dim": 64, "features": [f"q{i}"]}
                               for i in range(3)]},
    "dense_and_tight_hbm": {"module": "ebc", "dense": [256, 1024],
                            "topology": {"world_size": 2, "compute_device": "cuda", "hbm_cap": 12 * 1024 ** 2},
                            "tables": [{"name": f"big{i}", "rows": 8_000, "dim": 128, "features": [f"b{i}"]}
                                       for i in range(3)]},
    "greedy_only": {"module": "ebc", "proposers": ["greedy", "uniform"],
                    "topology": {"world_size": 8, "compute_device": "cuda", "local_world_size": 4},
                    "tables": [{"name": f"t{i}", "rows": 1000 * (i + 1), "dim": 8 * (i + 1), "features": [f"f{i}"]}
                               for i in range(12)]},
    "out_of_memory": {"module": "ebc",
                      "topology": {"world_size": 2, "compute_device": "cuda", "hbm_cap": 1024 ** 2,
                                   "ddr_cap": 1024 ** 2},
                      "tables": [{"name": f"t{i}", "rows": 5_000, "dim": 64, "features": [f"f{i}"]} for i in range(2)]},
}

PROPOSERS = {"grid": GridSearchProposer, "greedy": GreedyProposer, "uniform": UniformProposer}


def build_module(case):
    if case["module"] == "ec":
        module = EmbeddingCollection([EmbeddingConfig(num_embeddings=t["rows"], embedding_dim=t["dim"], name=t["name"],
                                                      feature_names=t["features"]) for t in case["tables"]])
    else:
        module = EmbeddingBagCollection([EmbeddingBagConfig(num_embeddings=t["rows"], embedding_dim=t["dim"],
                                                            name=t["name"], feature_names=t["features"])
                                         for t in case["tables"]], is_weighted=case["module"] == "weighted_ebc")
    if not case.get("dense"):
        return module

    class Wrapped(nn.Module):
        def __init__(self):
            super().__init__()
            self.dense = nn.Linear(*case["dense"])
            self.sparse = module

    return Wrapped()


def constraints_of(case):
    constraints = {}
    for name, spec in case.get("constraints", {}).items():
        spec = dict(spec)
        load_factor = spec.pop("cache_load_factor", None)
        if load_factor is not None:
            spec["cache_params"] = CacheParams(load_factor=load_factor)
        constraints[name] = ParameterConstraints(**spec)
    return constraints or None


def run_case(case):
    topology = Topology(**case["topology"])
    module = build_module(case)
    sharders = [EmbeddingCollectionSharder() if case["module"] == "ec" else EmbeddingBagCollectionSharder()]
    constraints = constraints_of(case)
    batch_size = case.get("batch_size", 512)
    options = EmbeddingEnumerator(topology, batch_size=batch_size, constraints=constraints).enumerate(module, sharders)
    result = {"options": [[o.fqn, o.sharding_type, o.compute_kernel,
                           [[s.size, s.offset, s.storage.hbm, s.storage.ddr, s.perf.fwd_compute, s.perf.fwd_comms,
                             s.perf.bwd_compute, s.perf.bwd_comms] for s in o.shards]] for o in options]}
    proposer = [PROPOSERS[name]() for name in case["proposers"]] if case.get("proposers") else None
    planner = EmbeddingShardingPlanner(topology=topology, batch_size=batch_size, constraints=constraints,
                                       proposer=proposer, stats=[])
    try:
        plan = planner.plan(module, sharders)
    except PlannerError as error:
        result["error"] = error.error_type.name
        return result
    result["plan"] = {f"{path}.{name}": {"sharding_type": p.sharding_type, "compute_kernel": p.compute_kernel,
                                         "ranks": p.ranks,
                                         "shards": [[m.shard_offsets, m.shard_sizes, m.placement]
                                                    for m in (p.sharding_spec.shards if p.sharding_spec else [])]}
                      for path, module_plan in plan.plan.items() for name, p in module_plan.items()}
    result["num_proposals"] = planner._num_proposals
    return result


def torchrec_python():
    for python in (os.environ.get("EMBER_TORCHREC_PYTHON"), os.environ.get("EMBER_BENCH_TORCH_PYTHON"), sys.executable):
        if python and subprocess.run([python, "-c", "import torchrec"], capture_output=True).returncode == 0:
            return python
    return None


@pytest.fixture(scope="module")
def both_results(tmp_path_factory):
    """(ours, TorchRec's) per case; ours are computed while TorchRec's interpreter runs."""
    python = torchrec_python()
    if python is None:
        pytest.skip("no interpreter with torchrec (set EMBER_TORCHREC_PYTHON)")
    folder = tmp_path_factory.mktemp("planner")
    (folder / "cases.json").write_text(json.dumps(CASES))
    reference = subprocess.Popen([python, str(HERE / "planner_reference.py"), str(folder / "cases.json"),
                                  str(folder / "results.json")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ours = {name: run_case(case) for name, case in CASES.items()}
    _, stderr = reference.communicate()
    assert reference.returncode == 0, stderr[-3000:]
    return ours, json.loads((folder / "results.json").read_text())


@pytest.mark.parametrize("name", list(CASES))
def test_plans_match_torchrec(both_results, name):
    got, want = both_results[0][name], both_results[1][name]
    assert len(got["options"]) == len(want["options"])
    for ours, theirs in zip(got["options"], want["options"]):
        assert ours[:3] == theirs[:3]
        for shard, their_shard in zip(ours[3], theirs[3]):
            assert shard[:4] == their_shard[:4], (ours[:3], shard[:4], their_shard[:4])
            assert shard[4:] == pytest.approx(their_shard[4:], rel=1e-9, abs=1e-15), ours[:3]
    assert got.get("error") == want.get("error")
    assert got.get("plan") == want.get("plan")
    assert got.get("num_proposals") == want.get("num_proposals")


PLANNER_SCRIPT = """
import torchrec
from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
from torchrec.distributed.planner import EmbeddingShardingPlanner, ParameterConstraints, Topology

ebc = torchrec.EmbeddingBagCollection(tables=[
    torchrec.EmbeddingBagConfig(name="t1", embedding_dim=16, num_embeddings=100, feature_names=["f1"])])
planner = EmbeddingShardingPlanner(topology=Topology(world_size=2, compute_device="cuda"),
                                   constraints={"t1": ParameterConstraints(sharding_types=["column_wise"])})
plan = planner.plan(ebc, [EmbeddingBagCollectionSharder()])
print(plan.plan[""]["t1"].sharding_type, plan.plan[""]["t1"].ranks)
"""


def test_torchrec_planner_script_runs_under_ember_compat(tmp_path):
    script = tmp_path / "plan_script.py"
    script.write_text(PLANNER_SCRIPT)
    done = subprocess.run([sys.executable, "-m", "ember.compat", str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2] == "column_wise [0]"
