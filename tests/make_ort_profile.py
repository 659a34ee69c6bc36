"""Runs a model under ONNX Runtime with profiling on and writes the profile.

    make_ort_profile.py MODEL.onnx PROFILE.json [--optimized OUT.onnx] [--runs N]

Without --optimized every graph optimization is off, so the profile names
the file's own nodes; with it, the session optimizes (ORT_ENABLE_EXTENDED)
and saves the graph it runs to OUT.onnx. Inputs: int64 ones of shape
(2, 7), the fixtures' text inputs. For tests run with the project's .venv.
"""
import argparse
import shutil
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime as ort


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("profile")
    parser.add_argument("--optimized")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        options = ort.SessionOptions()
        options.enable_profiling = True
        options.log_severity_level = 3
        options.profile_file_prefix = str(Path(tmp) / "profile")
        if args.optimized:
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
            options.optimized_model_filepath = args.optimized
        else:
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        session = ort.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
        feeds = {i.name: np.ones((2, 7), np.int64) for i in session.get_inputs()}
        for _ in range(args.runs):
            session.run(None, feeds)
        shutil.move(session.end_profiling(), args.profile)


if __name__ == "__main__":
    main()
