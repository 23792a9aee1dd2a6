"""Render the console blocks of README.md and docs/ by running the program.

    python scripts/render_console.py                 # rerun every block, rewrite the drifted ones
    python scripts/render_console.py --check         # exit 1 if a block differs from the program
    python scripts/render_console.py docs/guide/ensembles.md --force   # rewrite these blocks

A block is marked by an HTML comment holding its script; what follows it up to its end
marker is generated:

    <!-- console
    $ zoo run digits-char digits --steps 50 --quiet
    $ zoo predict {run} "1 2 3"
    -->
    ```console
    (generated: each $ command and what it printed)
    ```
    <!-- end console -->

``<!-- output`` instead of ``<!-- console`` inserts only what the commands print, unfenced
(a markdown table from ``--format markdown``). In a script:

- ``$ COMMAND`` runs and shows a command (bash, in the block's scratch folder, ``zoo`` the
  one of this Python); ``{run}`` is the latest run id printed so far, ``{run1}``,
  ``{run2}``, ... the first, second, ... distinct one; ``$REPO`` is the repository;
- ``setup: COMMAND`` runs a command without showing it or its output; ``unset: NAME``
  leaves a variable out of the environment of the commands after it;
- after a command, ``keep: SPEC`` shows only those lines of its output (``...`` for a gap),
  ``drop: REGEX`` leaves out the lines that match (ones that depend on the machine, such as
  a note on the git tree), ``vary: SPEC`` marks shown lines whose text is free (text a
  model samples), ``exit: N`` the exit code it must end with (default 0), and
  ``shown-as: TEXT`` what the block shows as the command (where the command run does
  what a user does by hand, such as pressing Ctrl-C once the run has started). SPEC is a comma-separated list
  of lines or ranges ``A..B``; an end is a line number (negative: from the end, ``-1`` the
  last) or ``/REGEX/`` (the first line that matches) with an optional ``+N`` or ``-N``,
  and ``B`` may be ``+N``, N lines after ``A``.

Each block runs in its own scratch folder (so ``./runs`` is a fresh ZOO_HOME) with
OMP_NUM_THREADS=1, no GPU, and on x86 torch's kernels held at AVX2 (the same figures on an
AVX2-only CPU as on one with AVX-512 or AMX; precision "auto" is fp32 there). Blocks are compared with timing figures, run ids and content
hashes masked, and figures with a decimal point within 2% (they may differ in the last
digits from one CPU to another); a block is rewritten only when it differs so.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import difflib
import os
import platform
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
START = re.compile(r"^<!-- (console|output)\n(.*?)^-->\n", re.MULTILINE | re.DOTALL)
RUN_ID = re.compile(r"\b\d{8}-\d{6}-[0-9a-f]{4}\b")
# content hashes (cache keys, study names): they change with the code
HASH = re.compile(r"\b(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b")
# timing figures: "7.5 s", "0.03 s", "2 min", and the values of timing metrics
TIMINGS = [
    re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?= ?(?:s|ms|min|h)\b)"),
    re.compile(r"(?<=\btokens_per_s)(\s+)\S+"),
    re.compile(r"(?<=\bsamples_per_s)(\s+)\S+"),
    re.compile(r"(?<=\btrain_time)(\s+)\S+"),
    re.compile(r"(?<=\bduration)(\s+)\S+"),
    # progress lines: "tokens/s 47,881  elapsed 2s  eta 1m23s"
    re.compile(r"(?<=\btokens/s)(\s+)\S+"),
    re.compile(r"(?<=\belapsed)(\s+)\S+"),
    re.compile(r"(?<=\beta)(\s+)\S+"),
]
NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")
SPACES = re.compile(r" {2,}")
RTOL = 0.02
TIMEOUT = 900  # seconds for one block


@dataclass
class Command:
    text: str
    shown: bool = True
    keep: str = ""
    drop: str = ""
    vary: str = ""
    exit: int = 0
    unset: str = ""  # not a command: leave this variable out of the environment from here on
    shown_as: str = ""  # what the block shows for the command, when that differs


@dataclass
class Block:
    path: Path
    kind: str  # console | output
    script: str
    start: int  # offsets of the generated text in the file
    end: int
    source: str = field(repr=False, default="")  # the file's text when the block was read
    commands: list[Command] = field(default_factory=list)

    @property
    def name(self) -> str:
        line = self.source[: self.start].count("\n") + 1
        return f"{self.path.relative_to(REPO)}:{line}"


@dataclass
class Rendered:
    text: str
    free: set[int]  # indices of lines whose text may differ (sampled text)


def parse_script(script: str) -> list[Command]:
    commands: list[Command] = []
    for line in script.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("$ "):
            commands.append(Command(line[2:].strip()))
        elif line.startswith("setup:"):
            commands.append(Command(line[6:].strip(), shown=False))
        elif line.startswith("unset:"):
            commands.append(Command("", shown=False, unset=line[6:].strip()))
        elif line.split(":")[0] in ("keep", "drop", "vary", "exit", "shown-as") and commands:
            key, value = (part.strip() for part in line.split(":", 1))
            value = int(value) if key == "exit" else value
            setattr(commands[-1], key.replace("-", "_"), value)
        else:
            raise ValueError(f"not a command or option: {line!r}")
    if not any(c.shown for c in commands):
        raise ValueError("a block shows no command")
    return commands


def find_blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    blocks: list[Block] = []
    for match in START.finditer(text):
        if in_fence(text, match.start()) or any(b.start <= match.start() < b.end for b in blocks):
            continue  # a marker shown as an example, not a block
        kind = match.group(1)
        end_marker = f"<!-- end {kind} -->"
        end = text.find(end_marker, match.end())
        if end < 0:
            raise ValueError(f"{path}: a {kind} block without {end_marker!r}")
        block = Block(path, kind, match.group(2), match.end(), end, source=text)
        block.commands = parse_script(block.script)
        blocks.append(block)
    return blocks


def in_fence(text: str, offset: int) -> bool:
    """Whether ``offset`` lies inside a fenced code block."""
    return len(re.findall(r"^```", text[:offset], re.MULTILINE)) % 2 == 1


def documents() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def all_blocks(paths: list[Path] | None = None) -> list[Block]:
    return [block for path in paths or documents() for block in find_blocks(path)]


# -- choosing lines ---------------------------------------------------------------------


def line_index(end: str, lines: list[str], after: int = 0) -> int:
    """A 0-based line index from ``3``, ``-1``, ``/REGEX/`` or ``/REGEX/+2``."""
    match = re.fullmatch(r"/(.*)/([+-]\d+)?", end)
    if not match:
        number = int(end)
        return number - 1 if number > 0 else len(lines) + number
    pattern = re.compile(match.group(1))
    for i in range(after, len(lines)):
        if pattern.search(lines[i]):
            return i + int(match.group(2) or 0)
    raise ValueError(f"no line matches {match.group(1)!r}")


def chosen(spec: str, lines: list[str]) -> list[int]:
    """The line indices a SPEC names, in order."""
    picked: list[int] = []
    for item in filter(None, (part.strip() for part in spec.split(","))):
        first, _, last = item.partition("..")
        a = line_index(first, lines)
        if last.startswith("+"):
            b = a + int(last)
        else:
            b = line_index(last, lines, after=a) if last else a
        picked += [i for i in range(max(a, 0), min(b, len(lines) - 1) + 1) if i not in picked]
    return sorted(picked)


def shown_lines(command: Command, output: str) -> tuple[list[str], set[int]]:
    """The lines of a command's output the block shows (gaps as ``...``), and which of
    them are free text."""
    lines = output.rstrip("\n").split("\n") if output.strip() else []
    if command.drop:
        dropped = re.compile(command.drop)
        lines = [line for line in lines if not dropped.search(line)]
    keep = chosen(command.keep, lines) if command.keep else list(range(len(lines)))
    shown: list[str] = []
    previous = -1
    for i in keep:
        if i > previous + 1:
            shown.append(gap(lines[previous + 1]))
        shown.append(lines[i])
        previous = i
    if keep and previous < len(lines) - 1:
        shown.append(gap(lines[previous + 1]))
    free = set(chosen(command.vary, shown)) if command.vary else set()
    return shown, free


def gap(line: str) -> str:
    return " " * (len(line) - len(line.lstrip())) + "..."


# -- running ----------------------------------------------------------------------------


def environment(scratch: Path, datasets: list | None = None) -> dict[str, str]:
    """What a block's commands run with: this Python and its zoo first on the PATH, one thread,
    no GPU, a fresh ./runs, no ZOO_ variables but the dataset mirrors (ZOO_DATASETS, or
    ``datasets``)."""
    bin_dir = scratch / ".bin"
    bin_dir.mkdir()
    for name, command in (("zoo", f'"{sys.executable}" -m zoo'), ("python", sys.executable)):
        shim = bin_dir / name
        shim.write_text(f'#!/bin/sh\nexec {command} "$@"\n', encoding="utf-8")
        shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZOO_") or k == "ZOO_DATASETS"}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        REPO=str(REPO),
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        CUDA_VISIBLE_DEVICES="",
        PYTHONUNBUFFERED="1",  # stdout and stderr interleave as on a terminal
        PYTHONHASHSEED="0",
        COLUMNS="100",
        TZ="UTC",
    )
    if platform.machine().lower() in ("x86_64", "amd64"):
        # Every x86 CPU zoo's figures come from has AVX2: held there, torch, oneDNN and MKL run the
        # same kernels on an AVX2-only CPU and on one with AVX-512 or AMX, and precision
        # "auto" is fp32 on both (zoo.train.precision), so a block prints the same figures.
        from zoo.core.machine import AVX2_HOLD

        env.update(AVX2_HOLD)
    if datasets is not None:
        env["ZOO_DATASETS"] = os.pathsep.join(map(str, datasets))
    return env


def substitute(command: str, ids: list[str], latest: str) -> str:
    def replace(match):
        number = match.group(1)
        if not ids or (number and int(number) > len(ids)):
            raise ValueError(f"{command}: {match.group(0)} names no run id printed before it")
        return ids[int(number) - 1] if number else latest

    return re.sub(r"\{run(\d*)\}", replace, command)


def render(block: Block, datasets: list | None = None) -> Rendered:
    """Run the block's script in a scratch folder and return what the block shows."""
    lines: list[str] = []
    free: set[int] = set()
    ids: list[str] = []
    latest = ""
    with tempfile.TemporaryDirectory(prefix="zoo-docs-") as folder:
        scratch = Path(folder)
        env = environment(scratch, datasets)
        for command in block.commands:
            if command.unset:
                env.pop(command.unset, None)
                continue
            text = substitute(command.text, ids, latest)
            result = subprocess.run(
                ["bash", "-c", text],
                cwd=scratch,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
                timeout=TIMEOUT,
            )
            output = result.stdout.replace(f"{scratch}/", "")  # paths as the user's: runs/...
            if result.returncode != command.exit:
                raise RuntimeError(
                    f"{block.name}: `{text}` exited {result.returncode}, not {command.exit}:\n"
                    + output[-3000:]
                )
            for run_id in RUN_ID.findall(output):
                latest = run_id
                if run_id not in ids:
                    ids.append(run_id)
            if not command.shown:
                continue
            if block.kind == "console":
                lines.append(f"$ {substitute(command.shown_as, ids, latest) or text}")
            shown, vary = shown_lines(command, output)
            free |= {len(lines) + i for i in vary}
            lines += shown
    body = "\n".join(lines) + "\n"
    if block.kind == "console":
        return Rendered(f"```console\n{body}```\n", {i + 1 for i in free})
    return Rendered("\n" + body + "\n", {i + 1 for i in free})  # blank lines: a markdown block


# -- comparing --------------------------------------------------------------------------


def masked(line: str) -> str:
    line = RUN_ID.sub("RUN_ID", line)
    line = HASH.sub("HASH", line)
    for pattern in TIMINGS:
        line = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + "T", line)
    return line


def close(a: str, b: str) -> bool:
    """Two figures as printed: integers exactly, decimals within RTOL."""
    if ("." in a or "e" in a) != ("." in b or "e" in b):
        return False
    if "." not in a and "e" not in a:
        return a == b
    x, y = float(a.replace(",", "")), float(b.replace(",", ""))
    return abs(x - y) <= RTOL * max(abs(x), abs(y)) + 1e-12


def same_line(old: str, new: str) -> bool:
    old, new = masked(old), masked(new)
    # a table pads its columns to its figures' widths: a figure a digit longer moves the
    # spaces after it, so runs of spaces compare as one
    if SPACES.sub(" ", NUMBER.sub("#", old)) != SPACES.sub(" ", NUMBER.sub("#", new)):
        return False
    return all(close(a, b) for a, b in zip(NUMBER.findall(old), NUMBER.findall(new)))


def same(old: str, new: Rendered) -> bool:
    """Whether a block's current text shows what the program prints now."""
    old_lines, new_lines = old.split("\n"), new.text.split("\n")
    if len(old_lines) != len(new_lines):
        return False
    return all(
        i in new.free or same_line(a, b) for i, (a, b) in enumerate(zip(old_lines, new_lines))
    )


def current(block: Block) -> str:
    return block.source[block.start : block.end]


def key(block: Block) -> str:
    return block.kind + "\n" + block.script


def render_all(
    blocks: list[Block], jobs: int, datasets: list | None = None
) -> dict[str, Rendered | Exception]:
    """Every block's rendering, or why it failed, by script (blocks with the same script
    run once), ``jobs`` blocks at a time."""
    scripts = {key(block): block for block in blocks}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(jobs, 1)) as pool:
        futures = {k: pool.submit(render, block, datasets) for k, block in scripts.items()}
        return {k: future.exception() or future.result() for k, future in futures.items()}


def write(blocks: list[Block], renderings: dict[str, Rendered | Exception]) -> None:
    """Put each block's rendering in its file, unless the file changed while the blocks ran."""
    for path in sorted({block.path for block in blocks}):
        text = path.read_text(encoding="utf-8")
        mine = sorted((b for b in blocks if b.path == path), key=lambda b: -b.start)
        if text != mine[0].source:
            print(f"not written: {path.relative_to(REPO)} changed meanwhile", file=sys.stderr)
            continue
        for block in mine:  # from the end, so the offsets stay right
            text = text[: block.start] + renderings[key(block)].text + text[block.end :]
        path.write_text(text, encoding="utf-8")


def stale(blocks: list[Block], renderings: dict, force: bool = False) -> list[Block]:
    """The blocks whose text differs from what the program printed."""
    return [b for b in blocks if force or not same(current(b), renderings[key(b)])]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("files", nargs="*", type=Path, help="these pages only")
    parser.add_argument("--check", action="store_true", help="exit 1 if a block has drifted")
    parser.add_argument("--force", action="store_true", help="rewrite every block")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="blocks at a time")
    args = parser.parse_args(argv)
    blocks = all_blocks([path.resolve() for path in args.files] or None)
    renderings = render_all(blocks, args.jobs)
    failed = [b for b in blocks if isinstance(renderings[key(b)], Exception)]
    for block in failed:
        print(f"failed: {block.name}: {renderings[key(block)]}", file=sys.stderr)
    blocks = [b for b in blocks if b not in failed]
    drifted = stale(blocks, renderings, args.force)
    for block in drifted:
        print(f"{'differs' if args.check else 'rendered'}: {block.name}")
        if args.check:
            new = renderings[key(block)].text
            diff = difflib.unified_diff(
                current(block).splitlines(), new.splitlines(), "docs", "program", lineterm=""
            )
            print("\n".join(diff))
    if not args.check:
        write(drifted, renderings)
    return 1 if failed or (args.check and drifted) else 0


if __name__ == "__main__":
    sys.exit(main())
