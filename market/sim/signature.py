"""The market's parameters as tools that sweep them see them: the model's signature, and which
can be swept with which scalar types.

Mesa's ``batch_run``, the batch grid (:mod:`market.runs.grid`), IDEs and the
API reference read the model's keywords from its ``__init__`` signature; the
model takes them as ``**kwargs`` checked in one place
(:func:`market.sim.params.check`), so the signature is made here from the
declarations (:mod:`market.sim.declared`): every parameter by name, with its
annotation and default.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from market.sim.declared import PARAMETERS
from market.sim.params import Distribution

#: the keywords every Mesa model takes besides its own: a seed (an integer) and a generator
MESA_PARAMETERS: dict[str, tuple[tuple[type, ...] | None, Any]] = {
    "seed": ((int,), None),
    "rng": (None, None),
}
#: how the model runs, not what it models: the same tables either way (market.sim.engine)
ENGINE_PARAMETERS: dict[str, tuple[tuple[type, ...] | None, Any]] = {
    "engine": ((str,), "auto"),
}



#: the scalar type a grid may sweep, by kind of parameter (None: not a scalar)
SCALAR_TYPES: dict[str, tuple[type, ...]] = {
    "int": (int,), "float": (float,), "flag": (bool,), "choice": (str,), "dist": (str,),
    "text": (str,), "file": (str,),
}


def model_parameters(cls: type | None = None) -> dict[str, tuple[tuple[type, ...] | None, Any]]:
    """Parameter name -> (allowed scalar types, default), of the market or of ``cls.__init__``.

    Types come from the annotations (the scalar members ``int``, ``float``,
    ``bool``, ``str`` of a union), else from the default's type; ``()``
    means "any scalar" (no annotation, no default) and ``None`` "not a
    scalar" (ranges, mappings, callables), which a grid cannot sweep.
    ``cls``: another model class (its keywords); by default the market's own.
    """
    if cls is None:
        out = {d.name: (SCALAR_TYPES.get(d.kind), d.default) for d in PARAMETERS}
        return {**out, **ENGINE_PARAMETERS, **MESA_PARAMETERS}
    sig = inspect.signature(cls.__init__)
    try:
        hints = typing.get_type_hints(cls.__init__)
    except Exception:  # unresolvable annotations: fall back on defaults
        hints = {}
    out: dict[str, tuple[tuple[type, ...] | None, Any]] = {}
    for name, p in sig.parameters.items():
        if name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        default = None if p.default is p.empty else p.default
        out[name] = (_scalar_types(hints.get(name), default), default)
    return out


#: the annotation of each kind of parameter, as the model's signature shows it
ANNOTATIONS: dict[str, Any] = {
    "int": int, "float": float, "flag": bool, "choice": str, "dist": Distribution,
    "mix": Mapping[str, float] | None, "range": tuple[float, float],
    "mapping": Mapping[str, Mapping[str, Any]] | None, "text": str, "file": str,
}


def signature(model_init: Callable[..., None]) -> inspect.Signature:
    """The signature of a model ``__init__`` that takes the parameters as ``**kwargs``: every
    declared parameter by name, with its annotation and default, then the keyword-only
    ones ``model_init`` states itself (``engine``, ``seed``, ``rng``). What ``inspect``,
    IDEs, Mesa's ``batch_run`` and the docs read."""
    own = inspect.signature(model_init).parameters
    kw = inspect.Parameter.KEYWORD_ONLY
    declared = []
    for d in PARAMETERS:
        hint = ANNOTATIONS[d.kind]
        if d.optional and d.kind in ("int", "float"):
            hint = hint | None
        declared.append(inspect.Parameter(d.name, kw, default=d.default, annotation=hint))
    rest = [q for q in own.values() if q.kind == kw]
    return inspect.Signature([own["self"], *declared, *rest], return_annotation=None)


def declare_signature(model_init: Callable[..., None]) -> Callable[..., None]:
    """Decorator: ``model_init`` shows :func:`signature` (and its annotations) to tools."""
    sig = signature(model_init)
    model_init.__signature__ = sig  # type: ignore[attr-defined]
    model_init.__annotations__ = {n: q.annotation for n, q in sig.parameters.items()
                                  if q.annotation is not q.empty}
    return model_init


def _scalar_types(hint: Any, default: Any) -> tuple[type, ...] | None:
    scalars = (bool, int, float, str)
    if hint is not None:
        args = typing.get_args(hint) if _is_union(hint) else (hint,)
        found = tuple(a for a in args if a in scalars)
        return found or None
    if default is None:
        return ()
    return (type(default),) if type(default) in scalars else None


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


__all__ = ["ANNOTATIONS", "ENGINE_PARAMETERS", "MESA_PARAMETERS", "SCALAR_TYPES",
           "declare_signature", "model_parameters", "signature"]
