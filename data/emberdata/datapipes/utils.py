"""StreamWrapper: the file-like objects file DataPipes yield, closed when no longer referenced."""


class StreamWrapper:
    """Wraps a stream; attribute access goes to the stream, and it is closed on garbage collection."""

    def __init__(self, file_obj):
        self.file_obj = file_obj

    def __getattr__(self, name):
        if name == "file_obj":
            raise AttributeError(name)
        return getattr(self.file_obj, name)

    def __iter__(self):
        yield from self.file_obj

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.file_obj.close()

    def __del__(self):
        try:
            self.file_obj.close()
        except Exception:  # closing during interpreter shutdown may find modules gone
            pass

    def __repr__(self):
        return f"StreamWrapper<{self.file_obj!r}>"
