class Size(tuple):
    """`ember.Size`: a tuple of dims, as `tensor.shape` returns."""

    def __repr__(self):
        return f"ember.Size([{', '.join(str(d) for d in self)}])"

    def numel(self):
        n = 1
        for d in self:
            n *= d
        return n

    def __getitem__(self, key):
        r = super().__getitem__(key)
        return Size(r) if isinstance(key, slice) else r
