from typing import Any

import semmap._strategy
import semmap.types


CONFIDENT_FLOOR: float = 0.9

class Mapping:
    """
    The answer for one ONNX node: its module, class, category, how sure the mapper is (confidence in [0, 1]; 0 exactly when unmapped) and why (strategy, evidence). Holds a reference to its MappedModel.
    """

    @property
    def node(self) -> str:
        """
        The node's id: its name when that is non-empty and unique, else '<name>#<index>' (what `semmap` prints and the sidecar's keys).
        """

    @property
    def index(self) -> int:
        """The node's position in the graph's traversal order."""

    @property
    def name(self) -> str:
        """The node's name in the file (may be empty or repeated)."""

    @property
    def op_type(self) -> str:
        """The ONNX op type ('MatMul')."""

    @property
    def domain(self) -> str:
        r"""The op's domain (\'\' for the default ONNX domain)."""

    @property
    def module(self) -> str | None:
        r"""
        The dotted module path ('bert.encoder.layer.0.attention.self.query'); \'\' for the root, None for an unmapped node.
        """

    @property
    def class_name(self) -> str:
        r"""
        The module's class ('Linear'); \'\' when unmapped or without a manifest.
        """

    @property
    def qualified_class(self) -> str:
        """The module's qualified class ('torch.nn.modules.linear.Linear')."""

    @property
    def category(self) -> str:
        r"""
        The module's semantic category ('attention', 'projection', ...; \'\' when no rule matches).
        """

    @property
    def confidence(self) -> float:
        """In [0, 1]; 0 exactly when unmapped."""

    @property
    def strategy(self) -> semmap._strategy.Strategy:
        """
        How the module was found: a semmap.Strategy, which equals its name as a string ('exact_scope', 'exporter_metadata', 'tensor_names', 'scope_prefix', 'op_rule', 'neighbourhood', 'structure', 'reference' or 'unmapped').
        """

    @property
    def evidence(self) -> str:
        """A short human-readable reason."""

    @property
    def origins(self) -> list[str]:
        """
        For a node doing several modules' work (a Conv with its BatchNorm folded in, an ONNX Runtime fusion), their module paths in manifest order; [] otherwise. `module` stays the one primary answer.
        """

    @property
    def mapped(self) -> bool:
        """True when the node has a module."""

    @property
    def confident(self) -> bool:
        """Mapped with confidence >= CONFIDENT_FLOOR (0.9)."""

    def as_dict(self) -> dict[str, Any]:
        """
        The fields as a dict: node, op_type, module, class_name, qualified_class, category, confidence, strategy, evidence, origins.
        """

    def __eq__(self, arg: object, /) -> bool: ...

    def __hash__(self) -> int: ...

    def __repr__(self) -> str: ...

class MappingIterator:
    def __iter__(self) -> MappingIterator: ...

    def __next__(self) -> Mapping: ...

class Model:
    """A mapped ONNX model (see semmap.MappedModel)."""

    @staticmethod
    def load(model: bytes, manifest: bytes = '', reference: bytes = '', rules: bytes = '', allow_manifest_mismatch: bool = False, use_record: bool = True) -> Model:
        r"""Loads and maps; \'\' means none. The GIL is released meanwhile."""

    def __len__(self) -> int: ...

    def __iter__(self) -> MappingIterator: ...

    def mapping(self, index: int) -> Mapping: ...

    def module_for(self, node: str) -> Mapping: ...

    def has_node(self, node: str) -> bool: ...

    def nodes_of_module(self, path: str, subtree: bool) -> list[str]: ...

    def nodes_of_layer(self, index: int, container: str | None) -> list[str]: ...

    def nodes_of_class(self, cls: str) -> list[str]: ...

    def nodes_matching(self, pattern: str) -> list[str]: ...

    def nodes_of_category(self, category: str) -> list[str]: ...

    def nodes_below(self, threshold: float) -> list[str]: ...

    def layer_containers(self) -> list[tuple[str, int]]: ...

    def tree(self, model_specific: bool) -> semmap.types.Tree:
        """The module tree (`semmap tree --json`) as dicts and lists."""

    def sidecar_json(self, model_specific: bool) -> str:
        """
        The sidecar document as the JSON text `semmap sidecar --compact` writes (semmap.types.Sidecar once parsed).
        """

    def write_sidecar(self, output: bytes, model_specific: bool, allow_overwrite: bool) -> None: ...

    def annotate(self, output: bytes, allow_overwrite: bool, write_namespace: bool, overwrite_namespace: bool, doc_string: bool, scoped_names: bool, min_confidence: float) -> dict[str, int | bytes]: ...

    def embed(self, target: bytes, output: bytes, allow_overwrite: bool) -> str:
        """
        Writes `target` (this model's file when empty) with this model's record; the result as JSON (`semmap embed --json`).
        """

    def write_report(self, output: bytes, allow_overwrite: bool, numerics: bytes) -> None: ...

    def columns(self) -> dict[str, list[Any]]: ...

    @property
    def model_path(self) -> bytes: ...

    @property
    def manifest_path(self) -> bytes: ...

    @property
    def reference_path(self) -> bytes: ...

    @property
    def rules_path(self) -> bytes: ...

    @property
    def has_manifest(self) -> bool: ...

    @property
    def model_class(self) -> str: ...

    @property
    def module_count(self) -> int: ...

    @property
    def mapped_count(self) -> int: ...

    @property
    def strategy_counts(self) -> dict[semmap._strategy.Strategy, int]: ...

    @property
    def manifest_fit_json(self) -> str: ...

    @property
    def provenance_json(self) -> str: ...

    @property
    def graph_kind(self) -> str: ...

    @property
    def reference_check_json(self) -> str: ...

    @property
    def producer(self) -> tuple[str, str]: ...

    @property
    def opset(self) -> int: ...

def diff(a: Model, b: Model, all_modules: bool, min_module_overlap: float, require_same_model_class: bool) -> semmap.types.Diff:
    """
    The diff of two models (`semmap diff --json`) as dicts and lists; ValueError when they look unrelated.
    """
