"""The symbolic ``me``: ``df.select(b=me["a"] + 1)`` and ``df.where(me["a"] > 2)`` record an
expression on ``me`` that the frame evaluates against itself."""
from __future__ import annotations

import operator


class Expression:
    """A recorded operation; ``evaluate(env)`` replays it with ``me`` bound to a frame."""

    def evaluate(self, env):
        raise NotImplementedError  # every concrete expression overrides this

    def __getitem__(self, key):
        return _Call(operator.getitem, (self, key))

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Method(self, name)

    def __bool__(self):
        raise TypeError("an expression on `me` has no truth value; combine conditions with & and |")


def _binary(op):
    return lambda self, other: _Call(op, (self, other))


def _reflected(op):
    return lambda self, other: _Call(op, (other, self))


for _name, _op in {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow,
    "and": operator.and_, "or": operator.or_, "xor": operator.xor,
}.items():
    setattr(Expression, f"__{_name}__", _binary(_op))
    setattr(Expression, f"__r{_name}__", _reflected(_op))
for _name, _op in {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge}.items():
    setattr(Expression, f"__{_name}__", _binary(_op))
for _name, _op in {"neg": operator.neg, "pos": operator.pos, "invert": operator.invert}.items():
    setattr(Expression, f"__{_name}__", lambda self, op=_op: _Call(op, (self,)))
Expression.__hash__ = object.__hash__


class Var(Expression):
    def __init__(self, name):
        object.__setattr__(self, "_name", name)

    def evaluate(self, env):
        return env[self._name]

    def __repr__(self):
        return self._name


class _Call(Expression):
    def __init__(self, func, args, kwargs=None):
        object.__setattr__(self, "_func", func)
        object.__setattr__(self, "_args", args)
        object.__setattr__(self, "_kwargs", kwargs or {})

    def evaluate(self, env):
        args = [eval_expression(a, env) for a in self._args]
        kwargs = {k: eval_expression(v, env) for k, v in self._kwargs.items()}
        return self._func(*args, **kwargs)


class _Method(Expression):
    def __init__(self, target, name):
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_name", name)

    def evaluate(self, env):
        return getattr(eval_expression(self._target, env), self._name)

    def __call__(self, *args, **kwargs):
        return _Call(lambda method, *a, **k: method(*a, **k), (self, *args), kwargs)


def eval_expression(value, env):
    """``value`` with every expression in it evaluated (other values pass through)."""
    if isinstance(value, Expression):
        return value.evaluate(env)
    if isinstance(value, (list, tuple)):
        return type(value)(eval_expression(v, env) for v in value)
    return value


me = Var("me")
