"""Advanced indexing on top of the gather/scatter kernels (the indexing family)."""


def advanced_get(view, advanced):
    raise NotImplementedError("indexing with tensors, lists or bool masks is not built yet (indexing family of the core issue)")


def advanced_set(view, advanced, value):
    raise NotImplementedError("assigning through tensor, list or bool-mask indices is not built yet (indexing family of the core issue)")
