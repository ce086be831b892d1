"""Proposers, as TorchRec's `torchrec.distributed.planner.proposers`: each proposes plans
(one sharding option per table) in its own order; the planner partitions each and keeps the
best. Options are ranked by their perf estimate: the slowest shard's (`use_depth`, the
critical path) or the sum over shards."""
import itertools
import logging

from emberrec.distributed.planner.types import Proposer
from emberrec.distributed.planner.utils import prod

__all__ = ["GreedyProposer", "UniformProposer", "GridSearchProposer", "proposers_to_proposals_list"]

logger = logging.getLogger(__name__)

MAX_PROPOSALS = int(1e4)


def _sharding_option_score(sharding_option, use_depth=True):
    perfs = [shard.perf.total for shard in sharding_option.shards]
    return max(perfs) if use_depth else sum(perfs)


def _group_by_fqn(search_space, use_depth=True):
    """{table fqn: its options, best score first}, tables in the order first seen."""
    by_fqn = {}
    for option in search_space:
        by_fqn.setdefault(option.fqn, []).append(option)
    for options in by_fqn.values():
        options.sort(key=lambda option: _sharding_option_score(option, use_depth))
    return by_fqn


class GreedyProposer(Proposer):
    """Starts from every table's best-scored option; after each proposal moves the table
    whose current option takes the most storage to its next option. With `threshold`, stops
    after that many proposals in a row fail to improve on the best perf."""

    def __init__(self, use_depth=True, threshold=None):
        self._use_depth = use_depth
        self._threshold = threshold if threshold else None
        self._sharding_options_by_fqn = {}
        self._current_proposal = {}
        self._best_perf_rating = float("inf")
        self._num_inferior_perf = 0

    def load(self, search_space, enumerator=None):
        self._sharding_options_by_fqn = _group_by_fqn(search_space, self._use_depth)
        self._current_proposal = {fqn: 0 for fqn in self._sharding_options_by_fqn}

    def propose(self):
        if not self._current_proposal:
            return None
        return [self._sharding_options_by_fqn[fqn][index] for fqn, index in self._current_proposal.items()]

    def feedback(self, partitionable, plan=None, perf_rating=None, storage_constraint=None):
        if self._threshold and perf_rating:
            self._num_inferior_perf += 1
            if perf_rating < self._best_perf_rating:
                self._best_perf_rating = perf_rating
                self._num_inferior_perf = 0
            if self._num_inferior_perf > self._threshold:
                self._current_proposal = {}
                return
        largest_fqn, largest_storage = None, (0, 0, 0, 0)
        for fqn, options in self._sharding_options_by_fqn.items():
            index = self._current_proposal[fqn]
            if index + 1 < len(options):
                shards = options[index].shards
                storage = (max(s.storage.hbm for s in shards), sum(s.storage.hbm for s in shards),
                           max(s.storage.ddr for s in shards), sum(s.storage.ddr for s in shards))
                if storage > largest_storage:
                    largest_fqn, largest_storage = fqn, storage
        if largest_fqn is None:
            self._current_proposal = {}
        else:
            self._current_proposal[largest_fqn] += 1


class UniformProposer(Proposer):
    """One proposal per sharding type that every table offers: each table's best-scored
    option of that type."""

    def __init__(self, use_depth=True):
        self._use_depth = use_depth
        self._grouped_sharding_options = []
        self._proposal_index = 0

    def load(self, search_space, enumerator=None):
        self._grouped_sharding_options, self._proposal_index = [], 0
        all_fqns = {option.fqn for option in search_space}
        by_type = {}
        for option in search_space:
            by_type.setdefault(option.sharding_type, []).append(option)
        for options in by_type.values():
            by_fqn = _group_by_fqn(options, self._use_depth)
            if by_fqn.keys() == all_fqns:
                self._grouped_sharding_options.append([ranked[0] for ranked in by_fqn.values()])

    def propose(self):
        if self._proposal_index < len(self._grouped_sharding_options):
            return self._grouped_sharding_options[self._proposal_index]
        return None

    def feedback(self, partitionable, plan=None, perf_rating=None, storage_constraint=None):
        self._proposal_index += 1


class GridSearchProposer(Proposer):
    """Every combination of the tables' options, unless there are more than `max_proposals`
    (then none: the other proposers do the search)."""

    def __init__(self, max_proposals=MAX_PROPOSALS):
        self._max_proposals = max_proposals
        self._sharding_options_by_fqn = {}
        self._proposal_index = 0
        self._proposals = []

    def load(self, search_space, enumerator=None):
        self._proposal_index, self._proposals = 0, []
        self._sharding_options_by_fqn = _group_by_fqn(search_space)
        total = prod(len(options) for options in self._sharding_options_by_fqn.values())
        if total > self._max_proposals:
            logger.info(f"Skipping grid search proposer as there are too many proposals.\n"
                        f"Total proposals to search: {f'{total:.2e}' if total > 1e6 else total}\nMax proposals allowed: {self._max_proposals}\n")
            return
        self._proposals = list(itertools.product(*(range(len(o)) for o in self._sharding_options_by_fqn.values())))

    def propose(self):
        if self._proposal_index < len(self._proposals):
            indices = self._proposals[self._proposal_index]
            return [options[i] for i, options in zip(indices, self._sharding_options_by_fqn.values())]
        return None

    def feedback(self, partitionable, plan=None, perf_rating=None, storage_constraint=None):
        self._proposal_index += 1


def proposers_to_proposals_list(proposers_list, search_space):
    """Every distinct proposal of proposers whose sequence does not depend on feedback."""
    proposals, seen = [], set()
    for proposer in proposers_list:
        proposer.load(search_space=search_space)
    for proposer in proposers_list:
        proposal = proposer.propose()
        while proposal:
            key = tuple(sorted(map(hash, proposal)))
            proposer.feedback(partitionable=True)
            if key not in seen:
                proposals.append(proposal)
                seen.add(key)
            proposal = proposer.propose()
    return proposals
