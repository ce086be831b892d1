"""Grad mode, per thread as in PyTorch: `no_grad`, `enable_grad`, `set_grad_enabled` and
`inference_mode` work as context managers and as decorators."""
import functools
import inspect

from ember import _C

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled"]

is_grad_enabled = _C.is_grad_enabled
is_inference_mode_enabled = _C.is_inference_mode_enabled


class _DecoratorContextManager:
    """A context manager that also decorates functions (and generator functions), entering a
    fresh copy of itself around every call."""

    def __call__(self, func):
        if inspect.isclass(func):
            raise RuntimeError(f"{type(self).__name__} cannot decorate a class")
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def generator(*args, **kwargs):
                gen = func(*args, **kwargs)
                with self.clone():
                    value = gen.send(None)
                while True:
                    try:
                        sent = yield value
                    except GeneratorExit:
                        gen.close()
                        raise
                    except BaseException as e:
                        with self.clone():
                            value = gen.throw(e)
                    else:
                        with self.clone():
                            try:
                                value = gen.send(sent)
                            except StopIteration as stop:
                                return stop.value
            return generator

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return wrapper

    def clone(self):
        return type(self)()


class no_grad(_DecoratorContextManager):
    """Ops inside record no graph: results do not require grad (PyTorch's `torch.no_grad`)."""

    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)


class enable_grad(_DecoratorContextManager):
    """Turns recording back on inside `no_grad`."""

    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(True)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)


class set_grad_enabled(_DecoratorContextManager):
    """`set_grad_enabled(mode)` sets grad mode at once (as a function call) and, used with
    `with`, restores the previous mode on exit."""

    def __init__(self, mode):
        self.prev = _C.is_grad_enabled()
        self.mode = bool(mode)
        _C._set_grad_enabled(self.mode)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)

    def clone(self):
        return type(self)(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like `no_grad` (and as cheap). Ember differs from PyTorch in that tensors made inside are
    ordinary tensors afterwards: using them in autograd later is not an error."""

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def __enter__(self):
        self.prev = (_C.is_grad_enabled(), _C.is_inference_mode_enabled())
        if self.mode:
            _C._set_grad_enabled(False)
        _C._set_inference_mode(self.mode)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev[0])
        _C._set_inference_mode(self.prev[1])

    def clone(self):
        return type(self)(self.mode)

    def __call__(self, func):
        if isinstance(func, bool):  # @inference_mode(False) was spelled @inference_mode(mode)
            return type(self)(func)
        return super().__call__(func)
