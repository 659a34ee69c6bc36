"""Record each module's forward signature: what its first call ran, in order.

One eager forward pass (``model.eval()``, ``torch.no_grad()``) runs under a
:class:`torch.overrides.TorchFunctionMode` that sees every torch function,
tensor method and operator, with a forward pre-hook and a forward hook on
every module keeping a stack of the modules running. Each op is charged to
the module on top of the stack (the one whose own code ran it); each module
call is an event of its caller. Only the first call of a module is recorded;
its callers record every call. See ``docs/manifest.md``, "Forward signatures".
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

import torch
from torch.overrides import TorchFunctionMode

#: Example inputs: keyword arguments of ``forward`` (a mapping of name to
#: tensor), or positional ones (a tuple or list, or a single tensor).
Inputs = Union[Mapping[str, torch.Tensor], Sequence[torch.Tensor], torch.Tensor]

#: A module recording more events than this in its first call gets no
#: signature at all (never a truncated one).
MAX_EVENTS = 10_000

# Op names. An op is named after ``func.__name__``; the operators' dunders and
# their reflected and in-place forms name the op they compute (``a + b``,
# ``b + a`` and ``a += b`` are all "add"); any other in-place method ``foo_``
# is "foo". Names starting with "_" not listed here are internals (property
# getters are "__get__", "_get_tracing_state", ...) and dropped, as are the
# calls of NO_COMPUTE, which read metadata and compute nothing.
DUNDER_OPS: dict[str, str] = {
    **dict.fromkeys(("__add__", "__radd__", "__iadd__"), "add"),
    **dict.fromkeys(("__sub__", "__rsub__", "__isub__"), "sub"),
    **dict.fromkeys(("__mul__", "__rmul__", "__imul__"), "mul"),
    **dict.fromkeys(("__truediv__", "__rtruediv__", "__itruediv__", "__div__", "__rdiv__", "__idiv__"), "div"),
    **dict.fromkeys(("__floordiv__", "__rfloordiv__", "__ifloordiv__"), "floor_divide"),
    **dict.fromkeys(("__mod__", "__rmod__", "__imod__"), "remainder"),
    **dict.fromkeys(("__matmul__", "__rmatmul__"), "matmul"),
    **dict.fromkeys(("__pow__", "__rpow__", "__ipow__"), "pow"),
    "__neg__": "neg",
    "__pos__": "positive",
    "__abs__": "abs",
    "__getitem__": "getitem",
    "__setitem__": "setitem",
    **dict.fromkeys(("__and__", "__rand__", "__iand__"), "bitwise_and"),
    **dict.fromkeys(("__or__", "__ror__", "__ior__"), "bitwise_or"),
    **dict.fromkeys(("__xor__", "__rxor__", "__ixor__"), "bitwise_xor"),
    "__invert__": "bitwise_not",
    **dict.fromkeys(("__lshift__", "__rlshift__", "__ilshift__"), "bitwise_left_shift"),
    **dict.fromkeys(("__rshift__", "__rrshift__", "__irshift__"), "bitwise_right_shift"),
    "__eq__": "eq",
    "__ne__": "ne",
    "__lt__": "lt",
    "__le__": "le",
    "__gt__": "gt",
    "__ge__": "ge",
}
RENAMED_OPS: dict[str, str] = {"rsub": "sub"}
NO_COMPUTE: frozenset[str] = frozenset({
    "size", "dim", "ndimension", "numel", "nelement", "stride", "storage_offset", "element_size",
    "data_ptr", "get_device", "is_floating_point", "is_contiguous", "is_complex", "requires_grad_",
})


def op_name(func: Any) -> str | None:
    """The normalised name of the op ``func`` computes, or None for a call that computes nothing."""
    name = getattr(func, "__name__", None)
    if not isinstance(name, str) or not name:
        return None
    if name in DUNDER_OPS:
        return DUNDER_OPS[name]
    if name.startswith("_") or name in NO_COMPUTE:
        return None
    name = RENAMED_OPS.get(name, name)
    return name[:-1] if name.endswith("_") else name


def split_inputs(inputs: Inputs) -> tuple[tuple[torch.Tensor, ...], dict[str, torch.Tensor]]:
    """(positional, keyword) arguments of ``forward`` from :data:`Inputs`."""
    if isinstance(inputs, torch.Tensor):
        return (inputs,), {}
    if isinstance(inputs, Mapping):
        return (), dict(inputs)
    if isinstance(inputs, (tuple, list)):
        return tuple(inputs), {}
    raise TypeError(
        f"inputs must be a dict of keyword arguments, a tuple of positional ones or a tensor, "
        f"not {type(inputs).__name__}"
    )


@dataclass
class _Frame:
    """A running module: its path, its own tensors by id, and the events of its first call (or None)."""

    path: str
    own: dict[int, str]
    events: list[dict[str, Any]] | None


class _Recorder(TorchFunctionMode):
    """The stack of running modules and the signatures recorded so far (None: over the bound)."""

    def __init__(self, paths: dict[int, str], own: dict[int, dict[int, str]]) -> None:
        super().__init__()
        self.paths = paths  # id(module) -> manifest path
        self.own = own  # id(module) -> {id(tensor): local name}
        self.signatures: dict[str, list[dict[str, Any]] | None] = {}
        self.stack: list[_Frame] = []

    def _add(self, frame: _Frame, event: dict[str, Any]) -> None:
        if frame.events is None:
            return
        if len(frame.events) >= MAX_EVENTS:
            frame.events = None
            self.signatures[frame.path] = None  # over the bound: no signature
            return
        frame.events.append(event)

    def enter(self, module: torch.nn.Module, *_: Any) -> None:
        path = self.paths[id(module)]
        # A module called while it runs (recursion): the signatures from its
        # running call up would hold a cycle of calls, which readers refuse.
        # They are left out, like those over the bound.
        for k, frame in enumerate(self.stack):
            if frame.path == path:
                for running in self.stack[k:]:
                    running.events = None
                    if running.path in self.signatures:
                        self.signatures[running.path] = None
                break
        if self.stack:
            self._add(self.stack[-1], {"call": path})
        events: list[dict[str, Any]] | None = None
        if path not in self.signatures:
            events = self.signatures[path] = []
        self.stack.append(_Frame(path, self.own[id(module)], events))

    def leave(self, module: torch.nn.Module, *_: Any) -> None:
        # also called when the forward raised (always_call), which the model may catch
        path = self.paths[id(module)]
        while self.stack and self.stack.pop().path != path:
            pass

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if self.stack and self.stack[-1].events is not None:
            name = op_name(func)
            if name is not None:
                frame = self.stack[-1]
                event: dict[str, Any] = {"op": name}
                reads = _reads(frame.own, args, kwargs) if frame.own else []
                if reads:
                    event["reads"] = reads
                self._add(frame, event)
        return func(*args, **kwargs)


def _reads(own: dict[int, str], args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[str]:
    """Local names of the module's own tensors among the arguments (and in lists or tuples among them)."""
    names: list[str] = []
    for arg in (*args, *kwargs.values()):
        for value in arg if isinstance(arg, (list, tuple)) else (arg,):
            name = own.get(id(value)) if isinstance(value, torch.Tensor) else None
            if name is not None and name not in names:
                names.append(name)
    return names


class _SharedPatch:
    """An attribute replaced while at least one pass needs it.

    Passes on several threads share one patch, undone when the last ends
    (each saving and restoring its own could leave it patched for good).
    """

    def __init__(self, owner: Any, name: str, replacement: Any) -> None:
        self._owner, self._name, self._replacement = owner, name, replacement
        self._lock = threading.Lock()
        self._users = 0
        self._saved: Any = None

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._users == 0:
                self._saved = getattr(self._owner, self._name)
                setattr(self._owner, self._name, self._replacement(self._saved))
            self._users += 1
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                if self._users == 0:
                    setattr(self._owner, self._name, self._saved)


#: ``torch.jit.is_tracing()`` reports True, as while an exporter traces.
#: Libraries take another path under tracing (transformers builds its
#: attention masks instead of leaving them to the attention kernel); the
#: signature should record the path the export captured. Only the public
#: query changes: torch's own module calls and hooks read the tracer's
#: state directly and run as they would.
_as_traced = _SharedPatch(torch.jit, "is_tracing", lambda _saved: lambda: True)


def _autocast_meta_as_cpu(autocast: Any) -> Any:
    class Autocast(autocast):  # type: ignore[misc, valid-type]
        def __init__(self, device_type: str, *args: Any, **kwargs: Any) -> None:
            super().__init__("cpu" if device_type == "meta" else device_type, *args, **kwargs)

    return Autocast


#: ``torch.autocast(device_type="meta")`` is read as the CPU's. Models open
#: an autocast region on their input's device (transformers' rotary
#: embeddings: ``enabled=False``, to compute in float32); older torch
#: releases have no autocast state for the meta device and raise. Entered
#: only for a pass on meta tensors, where no autocast changes anything.
_meta_autocast = _SharedPatch(torch, "autocast", _autocast_meta_as_cpu)


def _on_meta(model: torch.nn.Module) -> bool:
    return any(t.device.type == "meta" for t in itertools.chain(model.parameters(), model.buffers()))


def record_signatures(
    model: torch.nn.Module, args: Sequence[Any], kwargs: Mapping[str, Any]
) -> dict[str, list[dict[str, Any]]]:
    """Run ``model(*args, **kwargs)`` once and return the signature of every module that ran, by path.

    The pass runs as an exporter's tracing would (``torch.jit.is_tracing()``
    true); if the model cannot run so, it runs plainly. A module recording
    more than :data:`MAX_EVENTS` events is left out, and so is every module
    running when one of them is called again (recursion would record a
    cycle of calls). The model's training
    flags, its hooks and the global random state are as before the call;
    raises what the forward raises.
    """
    with _meta_autocast() if _on_meta(model) else contextlib.nullcontext():
        try:
            with _as_traced():
                return _record(model, args, kwargs)
        except Exception:  # noqa: BLE001 - a path only tracing takes; the plain pass decides
            return _record(model, args, kwargs)


def _record(
    model: torch.nn.Module, args: Sequence[Any], kwargs: Mapping[str, Any]
) -> dict[str, list[dict[str, Any]]]:
    named = list(model.named_modules())
    paths = {id(m): p for p, m in named}
    own = {
        id(m): {
            **{id(t): n for n, t in m.named_buffers(recurse=False) if t is not None},
            **{id(t): n for n, t in m.named_parameters(recurse=False)},
        }
        for _, m in named
    }
    recorder = _Recorder(paths, own)
    training = [(m, m.training) for _, m in named]
    handles = []
    try:
        for _, m in named:
            handles.append(m.register_forward_pre_hook(recorder.enter))
            handles.append(m.register_forward_hook(recorder.leave, always_call=True))
        model.eval()
        with torch.random.fork_rng(devices=[]), torch.no_grad(), recorder:
            model(*args, **kwargs)
    finally:
        for handle in handles:
            handle.remove()
        for m, flag in training:
            m.training = flag
    return {p: events for p, events in recorder.signatures.items() if events is not None}
