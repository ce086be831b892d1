"""Runs the planner cases of test_planner.py in TorchRec itself, in an interpreter that has it:
`python planner_reference.py cases.json results.json`. Each case describes tables, a module
kind, a topology and constraints (see test_planner.py); the result holds TorchRec's search space
(every sharding option's shards with their storage and perf) and its plan, or the PlannerError
type. This script imports neither ember nor emberrec."""
import json
import logging
import sys
import warnings

import torch
from torchrec.distributed.embedding import EmbeddingCollectionSharder
from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
from torchrec.distributed.planner import EmbeddingShardingPlanner, ParameterConstraints, Topology
from torchrec.distributed.planner.enumerators import EmbeddingEnumerator
from torchrec.distributed.planner.proposers import GreedyProposer, GridSearchProposer, UniformProposer
from torchrec.distributed.planner.types import PlannerError
from torchrec.distributed.types import CacheParams
from torchrec.modules.embedding_configs import EmbeddingBagConfig, EmbeddingConfig
from torchrec.modules.embedding_modules import EmbeddingBagCollection, EmbeddingCollection

PROPOSERS = {"grid": GridSearchProposer, "greedy": GreedyProposer, "uniform": UniformProposer}


class Wrapped(torch.nn.Module):
    """An embedding collection beside a dense layer (whose storage the reservation keeps)."""

    def __init__(self, sparse, dense_shape):
        super().__init__()
        self.dense = torch.nn.Linear(*dense_shape, device="meta")
        self.sparse = sparse


def build_module(case):
    meta = torch.device("meta")
    if case["module"] == "ec":
        tables = [EmbeddingConfig(num_embeddings=t["rows"], embedding_dim=t["dim"], name=t["name"],
                                  feature_names=t["features"]) for t in case["tables"]]
        module = EmbeddingCollection(tables, device=meta)
    else:
        tables = [EmbeddingBagConfig(num_embeddings=t["rows"], embedding_dim=t["dim"], name=t["name"],
                                     feature_names=t["features"]) for t in case["tables"]]
        module = EmbeddingBagCollection(tables, is_weighted=case["module"] == "weighted_ebc", device=meta)
    if case.get("dense"):
        module = Wrapped(module, case["dense"])
    return module


def constraints_of(case):
    constraints = {}
    for name, spec in case.get("constraints", {}).items():
        spec = dict(spec)
        load_factor = spec.pop("cache_load_factor", None)
        if load_factor is not None:
            spec["cache_params"] = CacheParams(load_factor=load_factor)
        constraints[name] = ParameterConstraints(**spec)
    return constraints or None


def describe_options(options):
    return [[o.fqn, o.sharding_type, o.compute_kernel,
             [[s.size, s.offset, s.storage.hbm, s.storage.ddr, s.perf.fwd_compute, s.perf.fwd_comms,
               s.perf.bwd_compute, s.perf.bwd_comms] for s in o.shards]] for o in options]


def describe_plan(plan):
    return {f"{path}.{name}": {"sharding_type": p.sharding_type, "compute_kernel": p.compute_kernel, "ranks": p.ranks,
                               "shards": [[m.shard_offsets, m.shard_sizes, str(m.placement)]
                                          for m in (p.sharding_spec.shards if p.sharding_spec else [])]}
            for path, module_plan in plan.plan.items() for name, p in module_plan.items()}


def run_case(case):
    topology = Topology(**case["topology"])
    module = build_module(case)
    sharders = [EmbeddingCollectionSharder() if case["module"] == "ec" else EmbeddingBagCollectionSharder()]
    constraints = constraints_of(case)
    batch_size = case.get("batch_size", 512)
    enumerator = EmbeddingEnumerator(topology=topology, batch_size=batch_size, constraints=constraints)
    result = {"options": describe_options(enumerator.enumerate(module, sharders))}
    proposer = [PROPOSERS[name]() for name in case["proposers"]] if case.get("proposers") else None
    planner = EmbeddingShardingPlanner(topology=topology, batch_size=batch_size, constraints=constraints,
                                       proposer=proposer, debug=False)
    try:
        result["plan"] = describe_plan(planner.plan(module, sharders))
        result["num_proposals"] = planner._num_proposals
    except PlannerError as error:
        result["error"] = error.error_type.name
    return result


def main(cases_path, results_path):
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    with open(cases_path) as f:
        cases = json.load(f)
    results = {name: run_case(case) for name, case in cases.items()}
    with open(results_path, "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
