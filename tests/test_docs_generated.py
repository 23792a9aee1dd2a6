"""What the docs show zoo printing is what zoo prints: the command reference is rendered
from the parser, and every console block of README.md and docs/ that shows output is
rerun (scripts/render_console.py) and compared with the program as it is now."""

from __future__ import annotations

import importlib.util
import os
import re
import sys

import pytest
from conftest import REPO

FIX = "run python scripts/render_docs.py"


def script(name: str):
    path = REPO / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


console = script("render_console")
commands = script("render_commands")


# -- the command reference --------------------------------------------------------------


def test_the_command_reference_is_rendered_from_the_parser():
    assert commands.PAGE.read_text(encoding="utf-8") == commands.rendered(), FIX


def test_the_command_reference_names_every_command_and_option():
    """The check above would pass vacuously if the renderer left things out."""
    page = commands.PAGE.read_text(encoding="utf-8")
    listed = commands.subcommands(commands.parser())
    assert {"run", "tune", "ensemble", "rm", "export", "verify"} <= {name for name, *_ in listed}
    for name, _, parser in listed:
        assert f"## zoo {name}\n" in page
        section = page.split(f"## zoo {name}\n", 1)[1].split("\n## ", 1)[0]
        for action in parser._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help", "--debug"):
                    assert f"`{option}" in section or f", {option}" in section, (name, option)
    assert "\\|" not in page  # a literal backslash in mkdocs' tables


# -- figures and what the prose says of them -------------------------------------------


def test_every_figure_in_the_readme_carries_its_notes():
    """A table rendered into README.md keeps its record's description (precision, recipe),
    notes and provenance beside it."""
    render = script("render_benchmarks")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split(render.README_START, 1)[1].split(render.README_END, 1)[0]
    shown = [
        record
        for record in render.load_results()
        if any(
            t.get("readme") or (record["name"] in render.README_RECORDS and t.get("main"))
            for t in render.tables_of(record)
        )
    ]
    assert any(record.get("notes") or record.get("provenance") for record in shown)  # not vacuous
    for record in shown:
        for text in [record.get("about"), *(record.get("notes") or []), record.get("provenance")]:
            if text:
                assert text in section, (record["name"], text)


def prose() -> str:
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    return "\n".join(path.read_text(encoding="utf-8") for path in pages)


def test_no_page_calls_a_model_the_strongest_or_the_best():
    """Superlatives are what a table beside them must show; the tables show figures."""
    claims = re.findall(
        r"[^.\n]*\b(?:strongest|best (?:classifier|model|architecture|tokenizer))\b[^.\n]*",
        prose() + (REPO / "registry.toml").read_text(encoding="utf-8"),
        flags=re.IGNORECASE,
    )
    assert not claims, claims


def test_the_ensemble_presets_are_described_as_the_figures_show_them():
    """README.md's presets table says whether each ensemble preset beats its best member on
    test; the ensemble weights benchmark (fitted rule against each member, over seeds) must
    bear that out, whichever way the figures go."""
    import json

    records = sorted((REPO / "benchmarks/results").glob("ensemble_weights*.json"))
    assert records
    readme = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    for path in records:
        record = json.loads(path.read_text(encoding="utf-8"))
        preset = re.match(r"`([^`]+)`'s members", record["about"]).group(1)
        below = []
        for table in record["tables"]:
            test = {r["rule"]: float(r["test"].split()[0]) for r in table["rows"] if "rule" in r}
            if "fitted (zoo)" in test:
                best = max(v for rule, v in test.items() if rule.endswith(" alone"))
                below.append(test["fitted (zoo)"] < best)
        assert below, path.name
        line = next(line for line in readme if line.startswith(f"| `{preset}` |"))
        assert ("does not beat" in line) == any(below), (preset, line)


# -- console blocks: the comparison ----------------------------------------------------


def rendered(text: str, free=()) -> object:
    return console.Rendered(text, set(free))


def test_timing_figures_and_run_ids_are_masked_and_nothing_else():
    old = "run 20261126-032351-95a5  decoder-char  915,456 parameters  7.5 s\n  val_bpc  3.742\n"
    same = "run 20261127-101010-0a0b  decoder-char  915,456 parameters  61.2 s\n  val_bpc  3.742\n"
    assert console.same(old, rendered(same))
    assert console.same("  tokens_per_s     9,481\n", rendered("  tokens_per_s     12,002\n"))
    assert console.same("trained in 0.03 s\n", rendered("trained in 1.5 s\n"))
    assert console.same("study tune-x-31c89d26\n", rendered("study tune-x-0a1b2c3d\n"))
    assert not console.same(old, rendered(same.replace("decoder-char", "decoder-bpe")))
    assert not console.same(old, rendered(same.replace("915,456", "915,457")))
    assert not console.same(old, rendered(same + "one more line\n"))
    assert not console.same("  steps   30\n", rendered("  steps   31\n"))


def test_decimal_figures_may_differ_in_their_last_digits_only():
    assert console.same("  val_bpc  3.742\n", rendered("  val_bpc  3.751\n"))  # 0.2%
    assert not console.same("  val_bpc  3.742\n", rendered("  val_bpc  3.942\n"))  # 5%
    assert not console.same("  val_bpc  3.742\n", rendered("  val_bpc  3742\n"))
    padded = "  test_ppl  15.109915845196523     15.109915845196523     same\n"
    wider = "  test_ppl  15.10991663689179      15.10991663689179      same\n"
    assert console.same(padded, rendered(wider))  # a column padded to its figures' width
    assert not console.same(padded, rendered(wider.replace("      same", "same")))


def test_free_lines_may_hold_any_text():
    block = rendered("--- sample 1 ---\nWothese\n", free=[1])
    assert console.same("--- sample 1 ---\nROMEO: hark\n", block)
    assert not console.same("--- sample 2 ---\nROMEO: hark\n", block)


def test_keep_shows_the_chosen_lines_with_gaps_marked():
    output = "run x\n  steps 30\n  loss 2.6\n  val_bpc 3.7\n  test_bpc 3.8\nsaved in runs/x\n"
    command = console.Command("zoo run", keep="1, /val_bpc/, -1")
    shown, free = console.shown_lines(command, output)
    assert shown == ["run x", "  ...", "  val_bpc 3.7", "  ...", "saved in runs/x"]
    command = console.Command("zoo run", keep="/steps/..+1", vary="1")
    shown, free = console.shown_lines(command, output)
    assert shown == ["...", "  steps 30", "  loss 2.6", "  ..."] and free == {0}


def test_a_script_is_parsed_into_commands_and_their_options():
    commands_ = console.parse_script("setup: cp a b\n$ zoo run x y\nexit: 2\nkeep: 1..2\n")
    assert [(c.text, c.shown, c.exit, c.keep) for c in commands_] == [
        ("cp a b", False, 0, ""),
        ("zoo run x y", True, 2, "1..2"),
    ]
    (shown,) = console.parse_script("$ sh -c 'zoo run x'\nshown-as: zoo run x  # Ctrl-C\n")
    assert shown.text == "sh -c 'zoo run x'" and shown.shown_as == "zoo run x  # Ctrl-C"
    with pytest.raises(ValueError):
        console.parse_script("zoo run x y\n")  # neither `$ ` nor an option
    assert console.substitute("zoo predict {run} {run1}", ["a", "b"], "b") == "zoo predict b a"


def fenced_blocks(text: str):
    """(language, body, offset) of every fenced block of a page."""
    for match in re.finditer(r"^```(\w*)\n(.*?)^```\n", text, re.MULTILINE | re.DOTALL):
        yield match.group(1), match.group(2), match.start()


def test_every_block_that_shows_output_is_generated():
    """A console block with more than `$ command` lines shows output, so it must be one
    the renderer writes; no block is left without a language."""
    unmarked = []
    for path in console.documents():
        text = path.read_text(encoding="utf-8")
        spans = [(b.start, b.end) for b in console.find_blocks(path)]
        for language, body, offset in fenced_blocks(text):
            line = text[:offset].count("\n") + 1
            generated = any(start <= offset < end for start, end in spans)
            shows_output = any(not row.startswith("$ ") for row in body.splitlines())
            if not language or (language == "console" and shows_output and not generated):
                unmarked.append(f"{path.relative_to(REPO)}:{line}")
    assert not unmarked, f"blocks neither generated nor commands only: {unmarked}"


# -- console blocks: rerun --------------------------------------------------------------

BLOCKS = console.all_blocks()


def selected_blocks(session) -> list:
    """The blocks of the tests this session runs."""
    names = {
        item.callspec.params["block"]
        for item in session.items
        if item.originalname == "test_a_console_block_shows_what_the_program_prints"
    }
    return [b for b in BLOCKS if b.name in names]


@pytest.fixture(scope="session")
def rerun(request):
    """Every selected block rerun once, as many at a time as there are cores (each runs on
    one thread), with the given dataset mirror."""
    done = {}

    def renderings(datasets):
        if not done:
            blocks = selected_blocks(request.session)
            done.update(console.render_all(blocks, jobs=os.cpu_count() or 1, datasets=datasets))
        return done

    return renderings


@pytest.mark.slow
@pytest.mark.parametrize("block", [b.name for b in BLOCKS])
def test_a_console_block_shows_what_the_program_prints(block, mirror, rerun):
    (found,) = [b for b in BLOCKS if b.name == block]
    result = rerun(mirror)[console.key(found)]
    if isinstance(result, Exception):
        raise result
    assert console.same(console.current(found), result), (
        f"{block} differs from what the program prints now; {FIX}:\n{result.text}"
    )
