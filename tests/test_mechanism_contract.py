"""The mechanism contract (synth_core/mechanisms/base.py): every mechanism's declared
option table is its constructor, its declared capabilities are what its runs do,
and synth_core never asks a mechanism with hasattr / a defaulted getattr."""

from __future__ import annotations

import ast
import inspect
import warnings
from pathlib import Path

import pytest

from synth_core import Synthesizer
from synth_core.api import RunWarning
from synth_core.engine import Engine
from synth_core.errors import ConfigError
from synth_core.mechanisms import (BOUNDED, MECHANISMS, NO, PGM_MODEL, PUBLIC_ROWS, QUERY_ANSWERS,
                                   REQUIRED, UNBOUNDED, Option, make_mechanism)
from synth_core.mechanisms.query_release import QueryReleaseLoop

ROOT = Path(__file__).resolve().parent.parent
WORKLOAD = "all-2way"
TINY_GEM = dict(hidden=(16, 16), noise_dim=8, batch=100, inner_steps=5, threads=1,
                pretrain_max_steps=3)
#: a few cheap rounds of each mechanism (its own options; public columns where it uses them)
SMALL = {
    "aim": dict(rounds=5, conditional=True),
    "jam-pgm": dict(rounds=2),
    "vjam-pgm": dict(rounds=2),
    "mwem-pgm": dict(rounds=2),
    "pmw-pub": dict(rounds=2),
    "vpmw": dict(rounds=2, support_size=500),
    "gem": dict(rounds=2, **TINY_GEM),
    "gem-pub": dict(rounds=2, **TINY_GEM),
    "vgem-pub": dict(rounds=2, **TINY_GEM),
    "public-only": {},
    "mst": {},
    "privbayes-pgm": dict(degree=2),
    "independent": {},
}
PUBLIC_COLUMNS = ["sex"]


def test_every_mechanism_has_small_settings_here():
    assert set(SMALL) == set(MECHANISMS)


def synthesizer(name: str, neighbours: str = "bounded", **extra) -> Synthesizer:
    options = {**SMALL[name], **extra}
    return Synthesizer(name, epsilon=2.0, workload=WORKLOAD, neighbours=neighbours, seed=0,
                       fit_iters=30, final_fit_iters=30, **options)


def run(name, private, public, schema, neighbours="bounded", public_columns=(), **extra):
    synth = synthesizer(name, neighbours, **extra)
    list(synth.run(private, public, schema=schema, public_columns=public_columns))
    return synth


def columns_for(name: str) -> list[str]:
    return PUBLIC_COLUMNS if MECHANISMS[name].capabilities.public_columns != NO else []


# -- options as data --------------------------------------------------------------------


def _parameters(cls):
    """The constructor's parameters (none for a class without a constructor)."""
    if cls.__init__ is object.__init__:
        return []
    return list(inspect.signature(cls.__init__).parameters.values())


def _keyword_parameters(cls) -> list[tuple[str, object]]:
    params = _parameters(cls)
    return [(p.name, p.default) for p in params
            if p.name != "self" and p.kind is not inspect.Parameter.VAR_KEYWORD]


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_option_table_is_the_constructor(name):
    cls = MECHANISMS[name]
    declared = [(o.name, o.default) for o in cls.options]
    params = _parameters(cls)
    explicit = _keyword_parameters(cls)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        # it passes the rest on to the class it extends: those are its options too
        base = next(b for b in cls.__mro__[1:] if "__init__" in vars(b))
        explicit += [(o.name, o.default) for o in base.options
                     if o.name not in dict(explicit)]
        assert [(o.name, o.default) for o in base.options] == _keyword_parameters(base)
    assert declared == explicit
    for opt in cls.options:
        assert opt.type in (int, float, bool, str, tuple) and opt.help
        assert opt.default is None or isinstance(opt.default, opt.type), opt


def test_every_mechanism_has_its_own_title():
    """Pages and reports name a mechanism by its title: each declares one of its own."""
    titles = {name: cls.title for name, cls in MECHANISMS.items()}
    assert all(titles.values()), [n for n, t in titles.items() if not t]
    assert len(set(titles.values())) == len(titles)


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_every_declared_option_is_accepted_and_others_are_refused(name):
    cls = MECHANISMS[name]
    options = cls.option_defaults()
    if cls.capabilities.public_columns == REQUIRED:
        options["public_columns"] = PUBLIC_COLUMNS
    assert isinstance(make_mechanism(name, **options), cls)
    with pytest.raises(ConfigError) as err:
        make_mechanism(name, colour="red")
    text = str(err.value)
    assert f"{name} has no option 'colour'" in text
    for opt in cls.options:
        assert opt.name in text
    if not cls.options:
        assert "Its options: none" in text


def test_option_values_are_read_as_declared():
    flag = Option("x", bool, False, "on/off")
    assert flag.parse("true") is True and flag.parse("0") is False
    with pytest.raises(ConfigError, match="on/off"):
        flag.parse("maybe")
    assert Option("n", int, 1, "count").parse("7") == 7
    with pytest.raises(ConfigError, match="integer"):
        Option("n", int, 1, "count").parse("7.5")
    assert Option("h", tuple, (), "widths").parse("64,32") == (64, 32)
    assert Option("c", tuple, (), "columns").parse("a, b") == ("a", "b")


# -- capabilities as data ---------------------------------------------------------------


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_public_columns_refused_exactly_when_declared_no(name, small_private, small_public,
                                                         small_schema):
    cls = MECHANISMS[name]
    if cls.capabilities.public_columns == NO:
        synth = synthesizer(name)
        with pytest.raises(ConfigError, match=f"{name} does not use public columns"):
            next(synth.run(small_private, small_public, schema=small_schema,
                           public_columns=PUBLIC_COLUMNS))
        with pytest.raises(ConfigError, match="does not use public columns"):
            make_mechanism(name, public_columns=PUBLIC_COLUMNS)
    else:
        options = {"conditional": True} if cls.capabilities.conditional else {}
        assert make_mechanism(name, public_columns=PUBLIC_COLUMNS, **options).name == name


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_conditional_generation_only_where_declared(name):
    cls = MECHANISMS[name]
    if cls.capabilities.conditional:
        mech = make_mechanism(name, conditional=True, public_columns=PUBLIC_COLUMNS)
        assert mech.conditional_on == tuple(PUBLIC_COLUMNS)
    else:
        with pytest.raises(ConfigError, match=f"{name} has no conditional generation"):
            make_mechanism(name, conditional=True)


@pytest.mark.parametrize("name", [n for n, c in MECHANISMS.items()
                                  if c.capabilities.public_columns == REQUIRED])
def test_required_public_columns_are_asked_for(name, small_private, small_schema):
    """Without them a mechanism built for public columns refuses the run or warns."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            synth = run(name, small_private, None, small_schema)
    except ConfigError as exc:
        assert "public columns" in str(exc)
    else:
        assert any("without public columns" in w for w in synth.result.report["warnings"])
        assert any(isinstance(w.message, RunWarning) for w in caught)


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_declared_capabilities_match_a_run(name, small_private, small_public, small_schema):
    caps = MECHANISMS[name].capabilities
    synth = run(name, small_private, small_public, small_schema,
                public_columns=columns_for(name))
    report, result = synth.result.report, synth.result
    # public rows: reported as used exactly when declared
    assert (report["public_information"]["rows"] is not None) == caps.public_rows
    # the loop and what the records come from
    if caps.releases == QUERY_ANSWERS:
        assert isinstance(synth.engine, QueryReleaseLoop)
        assert all("query" in m.to_json() for m in result.measurements)
    else:
        assert type(synth.engine) is Engine
    if caps.releases == PGM_MODEL:
        assert result.measurements and all("query" not in m.to_json() for m in result.measurements)
    if caps.releases == PUBLIC_ROWS:
        assert not result.measurements
    assert (result.ledger.spent == 0) == caps.zero_budget
    # conditional generation: the report's block and the kept public values
    if caps.conditional and synth.engine.mechanism.conditional_on:
        assert report["conditional_generation"]["conditioned_on"] == PUBLIC_COLUMNS
        assert sorted(result.synthetic["sex"]) == sorted(small_private["sex"])  # random order
    else:
        assert "conditional_generation" not in report
    assert report["privacy"]["selection"].startswith(synth.engine.mechanism.selection)


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_public_rows_needed_where_declared(name, small_private, small_schema):
    caps = MECHANISMS[name].capabilities
    if not caps.public_rows:
        return
    with pytest.raises(ConfigError, match="public rows"):
        run(name, small_private, None, small_schema, public_columns=columns_for(name))


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_neighbour_relations_as_declared(name, small_private, small_public, small_schema):
    caps = MECHANISMS[name].capabilities
    assert set(caps.neighbours) <= {BOUNDED, UNBOUNDED} and caps.neighbours
    extra = {"conditional": False} if caps.conditional else {}
    if UNBOUNDED in caps.neighbours:
        synth = run(name, small_private, small_public, small_schema, neighbours="unbounded",
                    **extra)
        assert synth.result.report["privacy"]["neighbours"] == "unbounded"
    else:
        with pytest.raises(ConfigError, match="bounded"):
            run(name, small_private, small_public, small_schema, neighbours="unbounded",
                public_columns=columns_for(name), **extra)


# -- no attribute probing of mechanisms in synth_core ----------------------------------


def _names_of_the_contract() -> set[str]:
    """Every attribute a mechanism class has beyond ``object``'s."""
    names = set()
    for cls in MECHANISMS.values():
        names |= set(dir(cls)) - set(dir(object))
    return names


def probing_calls(root: Path) -> list[str]:
    """``hasattr(x, ...)`` and three-argument ``getattr(x, name, default)`` calls in the
    package at ``root`` whose object is a mechanism: its source text names a mechanism
    (``mechanism``, ``MECHANISMS``) or the attribute is one of a mechanism class's."""
    contract = _names_of_the_contract()
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            probe = node.func.id == "hasattr" or (node.func.id == "getattr" and
                                                  len(node.args) == 3)
            if not probe or len(node.args) < 2:
                continue
            target = ast.unparse(node.args[0])
            attr = node.args[1].value if isinstance(node.args[1], ast.Constant) else None
            if "mechanism" in target.lower() or attr in contract:
                found.append(f"{path.relative_to(root.parent)}:{node.lineno}: "
                             f"{ast.unparse(node)}")
    return found


def test_synth_core_never_probes_a_mechanism():
    """What a run asks of a mechanism is declared on the base protocol (with a
    default), so no hasattr / getattr-with-default dispatch is needed."""
    assert probing_calls(ROOT / "synth_core") == []


def test_the_probe_check_finds_a_probe(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "m.py").write_text("def f(mechanism, cls):\n"
                                  "    a = getattr(mechanism, 'anything', None)\n"
                                  "    b = hasattr(cls, 'conditioning_report')\n"
                                  "    c = getattr(cls, 'unrelated', 0)\n"
                                  "    return getattr(mechanism, 'name')\n")
    found = probing_calls(package)
    assert [line.split(":")[1] for line in found] == ["2", "3"]
