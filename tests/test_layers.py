"""synth_core's modules form layers; every import goes down (or sideways), never up.

The layer table (:data:`LAYERS`, the one place it is written) lists every
module of synth_core, lowest layer first. A table passed to
``Synthesizer.run`` crosses the data layers top to bottom, once each::

    11 package     synth_core (the facade: ``from synth_core import Synthesizer``)
    10 apps        cli, disk_table, the workbench package (a session composed of a table
                   source, the public-information choice and the compare, what-if and
                   budget services)
     9 services    runner, whatif, experiments, audit (privacy audits of the mechanisms),
                   explain, side_by_side (notes on a run's numbers; real, public, synthetic)
     8 api         api (Synthesizer: configure, prepare the inputs, dispatch, report)
     7 mechanisms  engine, conditional, pattern_model, mechanisms.*, uncertainty, report, budget,
                   notebook (live progress, Altair figures, the repeat notebook),
                   run_time (the run-time model)
     6 inputs      backends.inputs (the backend chosen by name, public data handled once),
                   backends (the package's re-exports)
     5 backend     backends.memory, backends.duckdb_backend, backends.spark_backend,
                   backends.counting (what the two engine backends share)
     4 contract    backends.base (the Backend and MarginalCounter protocols, FlagSummary)
     3 tables      tables (loading files, public rows, column checks), backends.encoding,
                   schema_infer (a schema proposed for review)
     2 schema      schema (the domain: encoding and decoding values)
     1 counts      marginals, workload, privacy, model, evaluate, size_filter
     0 foundation  errors, version, heap, runtime (process settings a run applies), inference,
                   jax_oracle (the compiled fit's implicit oracle), charts, session_registry, palette (shared colours), display (HTML views)

A module may import modules of its own layer or of lower layers, never of a
higher one, and the imports (module-level and inside functions alike) form
no cycle. The engine and the mechanisms sit above the input path: the engine
reads the private data through ``MarginalCounter`` and imports no backend.
The backends are imported by name (``backends.inputs.REGISTRY``), so a run on
the memory backend never imports DuckDB or Spark.

:data:`ALLOWED` lists tolerated exceptions, one reason each; it is empty.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "synth_core"

#: layer -> modules (names relative to synth_core; "" is the package itself)
LAYERS: dict[int, tuple[str, ...]] = {
    0: ("errors", "version", "heap", "runtime", "inference", "jax_oracle", "charts",
        "session_registry", "palette", "display"),
    1: ("marginals", "workload", "privacy", "model", "evaluate", "size_filter"),
    2: ("schema",),
    3: ("tables", "backends.encoding", "schema_infer"),
    4: ("backends.base",),
    5: ("backends.memory", "backends.duckdb_backend", "backends.spark_backend",
        "backends.counting"),
    6: ("backends.inputs", "backends"),
    7: ("engine", "conditional", "pattern_model", "mechanisms", "mechanisms.base", "mechanisms.aim", "mechanisms.gem",
        "mechanisms.jam_pgm", "mechanisms.mwem_pgm", "mechanisms.pmw_pub",
        "mechanisms.mst", "mechanisms.privbayes", "mechanisms.independent",
        "mechanisms.public_only", "mechanisms.pretrain_cache", "mechanisms.query_release",
        "mechanisms.vertical",
        "mechanisms.vjam_pgm", "uncertainty", "report", "budget", "notebook",
        "run_time"),
    8: ("api",),
    9: ("runner", "whatif", "experiments", "audit", "explain", "side_by_side"),
    10: ("cli", "cli_parser", "cli_whatif", "disk_table", "workbench", "workbench.background", "workbench.budget",
         "workbench.catalog", "workbench.command", "workbench.compare", "workbench.disk",
         "workbench.domain", "workbench.guide", "workbench.memory", "workbench.public",
         "workbench.runs",
         "workbench.session", "workbench.source", "workbench.uploads", "workbench.what_if"),
    11: ("",),
}

#: (importer, imported) -> why the edge is tolerated for now (modules under other work)
ALLOWED: dict[tuple[str, str], str] = {}


def layer_of() -> dict[str, int]:
    """Module name -> its layer, from :data:`LAYERS`."""
    return {m: layer for layer, mods in LAYERS.items() for m in mods}


def module_files() -> dict[str, Path]:
    """Every module of synth_core by name relative to the package ("" for the package)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The synth_core modules that module ``name`` imports, anywhere in its body.

    ``from X import y`` counts as an import of ``X.y`` when that is a module,
    else of ``X``; relative imports are resolved against the module's package.
    """
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    package = [p for p in package if p]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            elif (node.module or "").split(".")[0] == "synth_core":
                target = node.module[len("synth_core."):] if "." in node.module else ""
            else:
                continue
            for alias in node.names:
                full = f"{target}.{alias.name}" if target else alias.name
                found.add(full if full in known else target)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "synth_core" or alias.name.startswith("synth_core."):
                    found.add(alias.name[len("synth_core."):] if "." in alias.name else "")
    return {m for m in found if m in known and m != name}


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    return {name: imports(name, path, set(files)) for name, path in files.items()}


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    layers = layer_of()
    return [f"{a} (layer {layers[a]}) imports {b} (layer {layers[b]})"
            for a, targets in sorted(graph.items()) for b in sorted(targets)
            if layers[b] > layers[a] and (a, b) not in ALLOWED]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected part with more than one module."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                out.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def allowed_graph() -> dict[str, set[str]]:
    """The import graph without the tolerated edges of :data:`ALLOWED`."""
    return {a: {b for b in targets if (a, b) not in ALLOWED}
            for a, targets in import_graph().items()}


def test_every_module_is_in_exactly_one_layer():
    listed = [m for mods in LAYERS.values() for m in mods]
    assert len(listed) == len(set(listed)), "a module is listed in two layers"
    assert set(listed) == set(module_files()), (
        f"not in LAYERS: {sorted(set(module_files()) - set(listed))}; "
        f"no such module: {sorted(set(listed) - set(module_files()))}")


def test_no_import_climbs_to_a_higher_layer():
    assert upward_imports(allowed_graph()) == []


def test_imports_form_no_cycle():
    assert cycles(allowed_graph()) == []


def test_every_allowed_exception_still_exists():
    """An exception that is gone leaves the list (it only shrinks)."""
    graph = import_graph()
    assert [edge for edge in ALLOWED if edge[1] not in graph[edge[0]]] == []


def test_the_checks_find_a_climb_and_a_cycle():
    graph = {m: set(t) for m, t in allowed_graph().items()}
    graph["schema"].add("api")
    assert upward_imports(graph) == ["schema (layer 2) imports api (layer 8)"]
    assert any({"schema", "api"} <= set(c) for c in cycles(graph))


def test_imports_inside_functions_count(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text("def f():\n    from .api import Synthesizer\n    from . import privacy\n")
    assert imports("schema", path, set(module_files())) == {"api", "privacy"}


def test_backends_are_registered_below_the_input_layer():
    from synth_core.backends.inputs import REGISTRY

    layers = layer_of()
    for module, _ in REGISTRY.values():
        assert layers[f"backends.{module}"] < layers["backends.inputs"]


def test_a_memory_run_imports_neither_duckdb_nor_spark():
    code = (
        "import sys, pandas as pd\n"
        "from synth_core import Synthesizer\n"
        "data = pd.DataFrame({'a': [0, 1, 1, 0] * 10, 'b': ['x', 'y', 'y', 'y'] * 10,"
        " 'c': [1, 2, 3, 4, 5] * 8, 'p': ['no'] * 30 + ['yes'] * 10})\n"
        "Synthesizer('jam-pgm', epsilon=1.0, seed=0, rounds=1, fit_iters=5,"
        " final_fit_iters=5).fit(data, public_flag='p')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('duckdb', 'pyspark')"
        " or m.startswith(('synth_core.backends.duckdb', 'synth_core.backends.spark'))))\n")
    env = {**os.environ, "PYTHONPATH": str(PACKAGE.parent)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_the_architecture_doc_names_every_module_of_the_layer_table():
    """docs/architecture.md's layer table is the map a reader uses: every module
    of :data:`LAYERS` is in it, as ``name``, as its file path, or under its
    package (``mechanisms/``, ``workbench/``)."""
    import re
    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = "\n".join(line for line in doc.splitlines() if line.startswith("| "))
    named = set(re.findall(r"`([^`]+)`", table))
    missing = []
    for module in layer_of():
        if not module:
            continue
        path = module.replace(".", "/")
        spellings = {module, path + ".py", path + "/__init__.py", module.split(".")[0] + "/"}
        if not spellings & named:
            missing.append(module)
    assert missing == []
