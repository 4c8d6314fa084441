"""The workbench's structure, read off its source with ``ast``: no mixins, no
import cycle among its modules, no attribute probing, no backend switches
outside the table sources, and both table sources fulfil their contract."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "synth_core.workbench"
#: the workbench's modules: its package, and the two flat modules beside it
EXTRA = {"synth_core.disk_table": ROOT / "synth_core" / "disk_table.py",
         "synth_core.session_registry": ROOT / "synth_core" / "session_registry.py"}
#: bases a class may have besides its one real base
NEUTRAL_BASES = {"object", "Protocol"}


def workbench_modules() -> dict[str, Path]:
    """Dotted module name -> source file, for every workbench module."""
    folder = ROOT / "synth_core" / "workbench"
    mods = {(PACKAGE if p.stem == "__init__" else f"{PACKAGE}.{p.stem}"): p
            for p in sorted(folder.glob("*.py"))}
    return {**mods, **EXTRA}


def _base_name(node: ast.expr) -> str:
    """``Protocol`` for ``Protocol``, ``typing.Protocol`` and ``Protocol[T]``."""
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ast.unparse(node)


def classes_with_several_bases(source: str) -> list[str]:
    """Classes of ``source`` with more than one base besides object/Protocol."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            real = [b for b in node.bases if _base_name(b) not in NEUTRAL_BASES]
            if len(real) > 1:
                out.append(f"{node.name}({', '.join(map(ast.unparse, real))})")
    return out


def _is_package(module: str, path: Path) -> bool:
    return path.name == "__init__.py"


def imported_modules(module: str, path: Path, source: str, known: set[str]) -> set[str]:
    """Every module ``source`` imports (at any depth of the file: top level,
    functions, ``TYPE_CHECKING`` blocks), as dotted names. ``from X import
    name`` counts ``X.name`` when that is a module of ``known``, else ``X``."""
    package = module if _is_package(module, path) else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            subs = {f"{target}.{alias.name}" for alias in node.names}
            out |= subs & known
            if subs - known:
                out.add(target)
    return out


def import_graph(modules: dict[str, str], paths: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the workbench modules it imports (edges only among ``modules``)."""
    known = set(modules)
    return {m: {t for t in imported_modules(m, paths[m], src, known) if t in known and t != m}
            for m, src in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (its modules in order, first repeated at the
    end), or None (depth-first search with the three colours)."""
    state: dict[str, int] = {}        # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def _sources() -> tuple[dict[str, str], dict[str, Path]]:
    paths = workbench_modules()
    return {m: p.read_text(encoding="utf-8") for m, p in paths.items()}, paths


# ---------------------------------------------------------------- the checks work


def test_the_checks_see_a_mixin_and_a_cycle():
    assert classes_with_several_bases("class A(B, C):\n    pass\n") == ["A(B, C)"]
    assert classes_with_several_bases(
        "import typing\nclass P(Q, typing.Protocol): ...\nclass R(Protocol[T]): ...\n"
        "class S(object, T): ...\n") == []
    mods = {"synth_core.workbench": "from .a import X\n",
            "synth_core.workbench.a": "def f():\n    from synth_core.workbench import b, Workbench\n",
            "synth_core.workbench.b": "from . import a\n",
            "synth_core.workbench.c": "from .a import f\n"}
    paths = {m: Path(("__init__" if m == PACKAGE else m.rpartition(".")[2]) + ".py")
             for m in mods}
    graph = import_graph(mods, paths)
    assert graph["synth_core.workbench.a"] == {"synth_core.workbench.b", "synth_core.workbench"}
    assert graph["synth_core.workbench.b"] == {"synth_core.workbench.a"}
    assert find_cycle(graph)[0] == find_cycle(graph)[-1]
    del mods["synth_core.workbench.b"]
    mods["synth_core.workbench.a"] = "import os\n"
    assert find_cycle(import_graph(mods, paths)) is None


# ---------------------------------------------------------------- the workbench


def test_every_workbench_module_is_checked():
    names = set(workbench_modules())
    assert {"synth_core.workbench.session", "synth_core.workbench.source",
            "synth_core.workbench.public", "synth_core.disk_table"} <= names


def test_no_workbench_class_is_built_from_mixins():
    sources, _ = _sources()
    found = {m: bad for m, src in sources.items() if (bad := classes_with_several_bases(src))}
    assert not found, f"classes with more than one base: {found}"


def test_the_workbench_modules_import_each_other_without_cycles():
    sources, paths = _sources()
    graph = import_graph(sources, paths)
    assert graph["synth_core.workbench.session"], "the session imports its parts"
    assert find_cycle(graph) is None, f"import cycle: {' -> '.join(find_cycle(graph))}"


def test_no_attribute_probing_and_no_backend_switch_outside_the_sources():
    """No ``hasattr``/``getattr(self, ...)``/``__dict__``; ``out_of_core`` is a
    fact the sources state for the pages, never a condition the workbench tests."""
    sources, _ = _sources()
    for module, src in sources.items():
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id != "hasattr", f"{module}: hasattr"
                if node.func.id == "getattr" and node.args:
                    assert ast.unparse(node.args[0]) != "self", f"{module}: getattr(self, ...)"
            if isinstance(node, ast.Attribute):
                assert node.attr != "__dict__", f"{module}: __dict__"
            if isinstance(node, (ast.If, ast.IfExp, ast.While, ast.Assert)):
                tested = {n.attr for n in ast.walk(node.test) if isinstance(n, ast.Attribute)}
                assert "out_of_core" not in tested, f"{module}: a switch on out_of_core"


def _contract(protocol) -> set[str]:
    """The members a table source promises: annotations and methods/properties
    of the protocol and its protocol bases."""
    names = set()
    for cls in protocol.__mro__:
        if cls.__module__.startswith(PACKAGE):
            names |= set(getattr(cls, "__annotations__", {}))
            names |= {n for n, v in vars(cls).items() if not n.startswith("_")
                      and (inspect.isfunction(v) or isinstance(v, property))}
    return names


@pytest.mark.parametrize("name", ["MemoryTable", "DuckDBSource"])
def test_both_table_sources_fulfil_the_contract(name):
    from synth_core.workbench.disk import DuckDBSource
    from synth_core.workbench.memory import MemoryTable
    from synth_core.workbench.source import TableSource
    cls = {"MemoryTable": MemoryTable, "DuckDBSource": DuckDBSource}[name]
    contract = _contract(TableSource)
    assert {"run_data", "cli_data_args", "check_fits", "public_rows", "n_rows"} <= contract
    fields = set(getattr(cls, "__dataclass_fields__", {}))
    for member in sorted(contract):
        own = next((c for c in cls.__mro__ if member in vars(c)), None)
        assert member in fields or (own is not None and own.__module__ != TableSource.__module__
                                    and not own.__name__.endswith("Reader")), \
            f"{name} does not implement {member}"
        promised = next(c for c in TableSource.__mro__ if member in vars(c)
                        or member in getattr(c, "__annotations__", {}))
        if inspect.isfunction(vars(promised).get(member)):
            want = list(inspect.signature(vars(promised)[member]).parameters)
            got = list(inspect.signature(getattr(cls, member)).parameters)
            assert got == want, f"{name}.{member}{got} differs from the contract {want}"


def test_the_workbench_docstring_lists_the_surface_the_pages_call():
    """Every ``wb.NAME`` (and ``wb.PART.NAME``) the pages use is written down in
    the Workbench docstring, and every public member of Workbench is either in
    it or nowhere (no surface kept by accident)."""
    import re

    from synth_core.workbench import Workbench
    doc = Workbench.__doc__
    documented = set(re.findall(r"``([a-z_][a-z_.]*)(?:\(\))?``", doc))
    used = set()
    for page in [ROOT / "app.py", *sorted((ROOT / "app_pages").glob("*.py"))]:
        for match in re.finditer(r"\bwb\.([a-z_]+)(?:\.([a-z_]+))?", page.read_text()):
            first, second = match.groups()
            part = f"{first}.{second}"
            used.add(part if first in {"public", "domain", "compare", "whatif"} and second
                     else first)
    missing = sorted(n for n in used if n not in documented)
    assert not missing, f"pages call {missing}, not in the Workbench docstring"
    members = {m for m in dir(Workbench) if not m.startswith("_")}
    fields = set(vars(Workbench()))
    undocumented = sorted(m for m in members | {f for f in fields if not f.startswith("_")}
                          if m not in documented)
    assert not undocumented, f"Workbench members outside its documented surface: {undocumented}"
