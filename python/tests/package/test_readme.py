"""README.md's examples are the real thing: every recipe is run by a test,
and the command-line example prints what the README shows through the
wheel's `semmap` console script. (The C++ example is checked against
examples/quickstart.cc by ctest's docs_lint, with the rest of the documents'
blocks: tests/check_docs.py.)"""

from __future__ import annotations

import re
import shlex
import subprocess

from conftest import REPO, recipes

# Each recipe and the test that runs it (test_recipes.py, test_export.py).
RECIPE_TESTS = {
    "quantize-all-but-one-module": "test_recipes.py::test_quantize_all_but_one_module",
    "nodes-per-layer": "test_recipes.py::test_nodes_per_layer",
    "attention-of-layer": "test_recipes.py::test_attention_of_layer",
    "no-manifest": "test_recipes.py::test_no_manifest",
    "export-and-map": "test_export.py::test_readme_recipe_export_and_map",
    "one-file-after-quantization": "test_recipes.py::test_one_file_after_quantization",
    "which-module-hurts-accuracy": "test_recipes.py::test_which_module_hurts_accuracy",
}

README = (REPO / "README.md").read_text()


def test_every_recipe_has_a_test():
    assert set(recipes()) == set(RECIPE_TESTS)
    for test in RECIPE_TESTS.values():
        module, name = test.split("::")
        assert f"def {name}(" in (REPO / "python" / "tests" / "package" / module).read_text(), test


def test_the_command_line_example_prints_what_the_readme_shows(semmap_tool):
    command, shown = re.search(r"```sh\n# example: cli\n(.*?)```\n\n<!-- doctest: output -->\n```\n(.*?)```", README, re.S).groups()
    argv = shlex.split(command.replace("\\\n", " "))
    assert argv[0] == "semmap"
    out = subprocess.run([semmap_tool, *argv[1:]], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout == shown
