"""semmap.Strategy: how semmap found a node's module."""

from __future__ import annotations

import enum


class Strategy(str, enum.Enum):
    """How semmap found a node's module (``Mapping.strategy``), first answer wins.

    String-valued: a member equals its name as a string and prints as it
    (``m.strategy == "exact_scope"``, ``f"{m.strategy}"`` is ``exact_scope``),
    so code written against the plain strings keeps working. The members are
    ``SEMMAP_STRATEGIES`` of the C++ header ``semmap/strategy.h``, in its
    order (ctest ``strategy_names`` compares them); docs/mapping.md explains
    each step.
    """

    UNMAPPED = "unmapped"  # nothing found; confidence 0
    EXACT_SCOPE = "exact_scope"  # every scope segment of the node name resolved
    EXPORTER_METADATA = "exporter_metadata"  # the dynamo exporter's module stack resolved
    TENSOR_NAMES = "tensor_names"  # parameters or scoped output names the node reads or writes
    SCOPE_PREFIX = "scope_prefix"  # a leading part of the scope resolved
    OP_RULE = "op_rule"  # an op-type rule of the rule file (quantize, cast: with their consumers)
    NEIGHBOURHOOD = "neighbourhood"  # inferred from producers and consumers
    STRUCTURE = "structure"  # the graph's structure: execution order, module order, repeated layers
    REFERENCE = "reference"  # carried over from the unprocessed export (reference=)

    def __str__(self) -> str:
        return self.value

    def __hash__(self) -> int:
        # as the string's, so a member and its name are one key of a dict or set
        # (Enum hashes the member's Python name)
        return str.__hash__(self)

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)
