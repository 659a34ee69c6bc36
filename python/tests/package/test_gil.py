"""semmap.load() releases the GIL while it reads and maps."""

from __future__ import annotations

import threading
import time

import onnx
from onnx import TensorProto, helper

import semmap


def write_chain(path, nodes: int) -> None:
    """A model of `nodes` Relu nodes in a chain, TorchScript-style scoped names."""
    graph_nodes = [
        helper.make_node("Relu", [f"v{i}"], [f"v{i + 1}"], name=f"/layers.{i % 64}/act/Relu_{i}")
        for i in range(nodes)
    ]
    graph = helper.make_graph(
        graph_nodes, "chain",
        [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info(f"v{nodes}", TensorProto.FLOAT, [1])],
    )
    onnx.save(helper.make_model(graph), str(path))


def test_other_threads_run_while_a_model_loads(tmp_path):
    # A model that takes long enough to load for the gaps below to tell: on
    # a fast machine 200,000 nodes load in under 0.05 s, so the chain doubles
    # until it does not (3.2M nodes at most).
    model = tmp_path / "chain.onnx"
    nodes = 200_000
    while True:
        write_chain(model, nodes)
        start = time.perf_counter()
        semmap.load(model)
        alone = time.perf_counter() - start
        if alone > 0.05 or nodes >= 3_200_000:
            break
        nodes *= 2
    assert alone > 0.05, f"the model loads too fast ({alone:.3f} s for {nodes} nodes) to tell"

    def longest_gap() -> float:
        done = threading.Event()
        loaded = []

        def load() -> None:
            loaded.append(semmap.load(model))
            done.set()

        worker = threading.Thread(target=load)
        wakeups = [time.perf_counter()]  # start() itself may wait for the GIL
        worker.start()
        while not done.is_set():
            wakeups.append(time.perf_counter())
            time.sleep(0.001)
        wakeups.append(time.perf_counter())  # when this thread saw the load end
        worker.join()
        assert len(loaded[0]) == nodes
        return max(b - a for a, b in zip(wakeups, wakeups[1:]))

    # Holding the GIL, the load would stall this thread for its whole length
    # every time; a busy machine may stall it once for its own reasons, so
    # the check passes when one of three loads leaves short gaps.
    gaps = []
    for _ in range(3):
        gaps.append(longest_gap())
        if gaps[-1] < 0.5 * alone:
            break
    assert min(gaps) < 0.5 * alone, (gaps, alone)


def test_threads_making_the_first_query_at_once(tmp_path):
    """One model, many threads whose first call is a query: the query index
    is built once, and every thread gets the same answers."""
    model = tmp_path / "chain.onnx"
    write_chain(model, 20_000)
    for _ in range(20):
        m = semmap.load(model)
        barrier = threading.Barrier(8)
        results: list[object] = []
        errors: list[BaseException] = []

        def ask(k: int) -> None:
            try:
                barrier.wait()
                results.append(m.layer(k % 4) if k % 2 else m.nodes("layers.3", subtree=True))
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=ask, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert len(results) == 8
        assert all(len(r) > 0 for r in results)
