"""semmap.types: the types of the documents MappedModel.tree(), MappedModel.sidecar() and
semmap.diff() return: plain dicts and lists, with the keys (in the same,
sorted, order) and values of `semmap tree --json`, `semmap sidecar` and
`semmap diff --json`. docs/sidecar.md and schema/sidecar.schema.json
describe each field. Keys named like a Python keyword ("class") make the
functional TypedDict syntax necessary.
"""

from __future__ import annotations

from typing import Dict, List, Optional, TypedDict

__all__ = [
    "Diff", "DiffModule", "DiffNode", "DiffSide", "FusionGroup", "MovedNode",
    "Sidecar", "SidecarManifest", "SidecarModel", "SidecarNode", "SidecarRootBinding",
    "SidecarSummary", "Tree", "TreeModule",
]

# -- the module tree (semmap tree --json, the sidecar's "tree") -------------
TreeModule = TypedDict(
    "TreeModule",
    {
        "children": List[str],  # child paths shown in this view
        "class": str,
        "depth": int,  # root = 0
        "folded": List[str],  # library leaves merged into this module (model-specific view)
        "op_types": Dict[str, int],  # own nodes by op type ("com.microsoft.Attention")
        "own_nodes": int,
        "own_parameters": int,
        "parent": Optional[str],  # None for the root
        "path": str,  # "" for the root
        "qualified_class": str,
        "subtree_nodes": int,
        "subtree_op_types": Dict[str, int],
        "subtree_parameters": int,
    },
)


class _TreeBase(TypedDict):
    modules: List[TreeModule]  # pre-order, root first
    unmapped_nodes: int
    view: str  # "full" or "model_specific"


class Tree(_TreeBase, total=False):
    # present (False) only when the subtree op-type histograms were left empty
    subtree_op_types_complete: bool


# -- the sidecar (semmap sidecar) -------------------------------------------
_SidecarNodeFields = TypedDict(
    "_SidecarNodeFields",
    {
        "category": str,
        "class": str,
        "confidence": float,
        "domain": str,
        "evidence": str,
        "id": str,
        "module": Optional[str],  # None when unmapped
        "name": str,
        "op_type": str,
        "qualified_class": str,
        "strategy": str,
        "subgraph": int,
    },
)


class SidecarNode(_SidecarNodeFields, total=False):
    origins: List[str]  # present only for a node doing several modules' work


class SidecarModel(TypedDict):
    ir_version: int
    nodes: int
    opset: int
    path: Optional[str]
    producer_name: str
    producer_version: str


class SidecarManifest(TypedDict):
    model_class: str
    modules: int
    path: Optional[str]
    qualified_class: str


class SidecarRootBinding(TypedDict):
    root: str
    wrapper: str


class SidecarSummary(TypedDict):
    mapped: int
    strategies: Dict[str, int]
    unmapped: int


class Sidecar(TypedDict):
    format: str  # "semmap.sidecar"
    generator: Dict[str, str]  # {"semmap": version}
    manifest: Optional[SidecarManifest]  # None without a manifest
    model: SidecarModel
    nodes: List[SidecarNode]
    root_binding: SidecarRootBinding
    schema_version: int
    summary: SidecarSummary
    tree: Tree


# -- the diff (semmap diff --json) --------------------------------------------
class DiffSide(TypedDict):
    model_class: str
    nodes: int


class DiffNode(TypedDict):
    confidence: float
    key: str  # the name when unique and non-empty, else "<op_type>-><first output>"
    module: Optional[str]
    name: str
    op_type: str


DiffModule = TypedDict(
    "DiffModule",
    {
        "class": str,
        "op_types": Dict[str, Dict[str, int]],  # {"a": {op: count}, "b": {...}}
        "own": Dict[str, int],  # {"a": count, "b": count}
        "path": str,
        "subtree": Dict[str, int],
    },
)


class MovedNode(TypedDict):
    key: str
    module_a: Optional[str]
    module_b: Optional[str]
    op_type: str


class FusionGroup(TypedDict):
    fused: List[DiffNode]  # only in B, in B's order
    module: Optional[str]  # None for B-only nodes without a module
    replaced: List[DiffNode]  # only in A, in A's order


class Diff(TypedDict):
    a: DiffSide
    b: DiffSide
    common_nodes: int
    format: str  # "semmap.diff"
    fusions: List[FusionGroup]
    module_overlap: float
    modules: List[DiffModule]
    moved: List[MovedNode]
    removed: List[DiffNode]
