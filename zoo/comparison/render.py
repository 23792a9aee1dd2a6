"""Comparison tables as text, markdown, csv, json, html or latex."""

from __future__ import annotations

import io
import json
import math

from zoo.comparison.labels import row_text
from zoo.comparison.significance import BOTH
from zoo.comparison.stats import NO_VARIANCE, ONE_SEED, percent
from zoo.comparison.table import Comparison, describe
from zoo.errors import UnknownNameError, ZooError

FORMATS = ("table", "markdown", "csv", "json", "html", "latex")


# -- display -------------------------------------------------------------------------
def decimals(value: float, spread: float | None = None) -> int:
    """Decimals that show about four significant digits of `value` and two of `spread` (a
    standard deviation or an interval's width), whichever needs more: 0.000127 ± 0.0000208
    keeps its digits, 0.7655 ± 0.0108 four decimals."""
    wanted = [0]
    for reference, digits in ((value, 4), (spread, 2)):
        if isinstance(reference, (int, float)) and math.isfinite(reference) and reference != 0:
            wanted.append(digits - 1 - math.floor(math.log10(abs(reference))))
    if len(wanted) == 1:
        return 4
    return min(10, max(wanted))


def number(value: float, like: float | None = None, spread: float | None = None) -> str:
    """`value` with the decimals of `like` (default itself) and `spread`; thousands get
    separators."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    reference = like if like is not None and not math.isnan(like) else value
    places = decimals(reference, spread)
    if abs(reference) >= 1000 and places == 0:
        return f"{value:,.0f}"
    return f"{value:.{places}f}"


def mean_std_text(mean: float, std: float, n: int) -> str:
    """'0.7655 ± 0.0108 (n=3)': both at the precision the spread allows; no ± for n=1."""
    if n > 1 and not math.isnan(std):
        return f"{number(mean, spread=std)} ± {number(std, mean, spread=std)} (n={n})"
    return f"{number(mean)} (n={n})"


def cell_text(cell) -> str:
    return mean_std_text(cell["mean"], cell["std"], cell["n"])


def diff_text(cell) -> str:
    """'+0.0200 [-0.0048, 0.0448] †', or the difference and why there is no test."""
    if cell.get("baseline") is None or math.isnan(cell["diff"]):
        return "-"
    width = cell["ci_high"] - cell["ci_low"]

    def shown(value):
        return number(value, cell["mean"], width if width > 0 else None)

    text = ("+" if cell["diff"] >= 0 else "") + shown(cell["diff"])
    if cell.get("test") not in (None, "Welch", BOTH) or math.isnan(cell["ci_low"]):
        return text + f" ({cell.get('test') or ONE_SEED})"
    low, high = shown(cell["ci_low"]), shown(cell["ci_high"])
    return text + f" [{low}, {high}]" + (" †" if cell["significant"] is True else "")


def column_label(comparison: Comparison, cell) -> str:
    """'shakespeare', or 'emotion [test_accuracy]' when the table mixes metrics."""
    table = comparison.cells
    pairs = comparison.metric_pairs
    label = " / ".join(str(cell[k]) for k in comparison.columns)
    if len(pairs) > 1:
        mixed_tasks = table["metric"].nunique() < len(pairs)
        label += f" [{cell['task']} {cell['metric']}]" if mixed_tasks else f" [{cell['metric']}]"
    return label


def row_label(comparison: Comparison, cell) -> str:
    """'decoder-char', or 'decoder-char (steps=100)' when its runs differ in settings."""
    return row_text(cell, comparison.rows)


def layout(comparison: Comparison):
    """Header and rows of display cells: (text, emphasis) pairs, row labels first."""
    cells = [cell for _, cell in comparison.cells.iterrows()]
    from zoo.core.kinds import natural_key

    columns = sorted({column_label(comparison, c) for c in cells}, key=natural_key)
    rows = list(dict.fromkeys(row_label(comparison, c) for c in cells))
    at: dict = {}
    for cell in cells:
        key = (row_label(comparison, cell), column_label(comparison, cell))
        if key in at:  # labels tell configurations apart (zoo.comparison.labels)
            raise ZooError(f"two cells of the comparison print at one place {key}: a bug in zoo")
        at[key] = cell
    header = [" / ".join(comparison.rows)]
    for label in columns:
        header.append(label)
        if comparison.baseline is not None:
            header.append(f"{label} Δ vs {comparison.baseline}")
    body = []
    for row in rows:
        line = [(row, False)]
        for column in columns:
            cell = at.get((row, column))
            line.append((cell_text(cell), bool(cell["best"])) if cell is not None else ("-", False))
            if comparison.baseline is not None:
                line.append((diff_text(cell) if cell is not None else "-", False))
        body.append(line)
    return header, body


def legend(comparison: Comparison, best_mark: str) -> list[str]:
    """One line per task and metric of the table (each column's own unit, direction and
    split), the baseline's marks, then the notes."""
    table = comparison.cells
    pairs = table[["task", "metric", "better"]].drop_duplicates(["task", "metric"])
    lines = []
    mixed_tasks = table["metric"].nunique() < len(pairs)  # as column_label names them
    # --pool averages every run of a row: n counts runs, several per seed where the row
    # pools configurations
    counted = (
        "mean ± std over the pooled runs (n runs: each configuration at each seed once)"
        if comparison.pooled
        else "mean ± std over seeds (n distinct seeds)"
    )
    for _, pair in pairs.iterrows():
        name = f"{pair['task']} {pair['metric']}" if mixed_tasks else pair["metric"]
        where = f"[{name}] " if len(pairs) > 1 else ""
        lines.append(
            f"{where}{describe(pair['metric'], pair['better'], pair['task'])}{_split(pair)}: "
            f"{counted}; {best_mark} best in its column, told "
            f"apart from every other row (Welch tests at {percent(comparison.level)} with "
            "Hsu's df, min n - 1; Holm-adjusted)"
        )
    if comparison.baseline is not None:
        lines.append(
            f"Δ: difference to {comparison.baseline} with its {percent(comparison.level)} "
            "Welch interval over seeds (Hsu's df); "
            f"† differs at {percent(comparison.level)} after Holm's adjustment over the "
            "column's comparisons; "
            f"'{ONE_SEED}': a side has one seed; '{NO_VARIANCE}': both sides are constant "
            "over seeds, so nothing is tested"
            + (
                "; where the examples are counted, the interval spans the bootstrap's too "
                "(and with no seed variance, it is the bootstrap's)"
                if comparison.examples_counted
                else ""
            )
        )
    if comparison.examples_counted:
        lines.append(
            f"Counted: seed-to-seed variance and, for {', '.join(comparison.examples_counted)}"
            ", the evaluation set's sampling noise (a bootstrap over seeds and the examples, "
            "paired by example; a mark needs it and the Welch test; --seeds-only leaves it "
            "out), in the marks and in the power note's detectable difference alike; "
            "elsewhere seeds only"
        )
    else:
        lines.append(
            "Only seed-to-seed variance is counted: the sampling noise of the evaluation set "
            "is not (see the statistics page of the docs)"
        )
    return lines + comparison.notes


def _split(pair) -> str:
    """Which split a figure is on: a test figure reports, it does not choose."""
    metric = str(pair["metric"])
    if metric.startswith("test_"):
        return ", test split: report it, never choose by it (zoo tune chooses on validation)"
    if metric.startswith("val_"):
        return ", validation split"
    return ""


def render(comparison: Comparison, fmt: str = "table") -> str:
    if fmt not in FORMATS:
        raise UnknownNameError("format", fmt, FORMATS)
    if fmt == "csv":
        return comparison.cells.to_csv(index=False)
    if fmt == "json":
        return (
            json.dumps([_jsonable(r) for r in comparison.cells.to_dict("records")], indent=1) + "\n"
        )
    header, body = layout(comparison)
    return {"table": _text, "markdown": _markdown, "html": _html, "latex": _latex}[fmt](
        comparison, header, body
    )


def _jsonable(record: dict) -> dict:
    out = {}
    for key, value in record.items():
        if isinstance(value, float) and not math.isfinite(value):
            value = None
        elif hasattr(value, "item"):  # numpy scalars
            value = value.item()
        out[key] = value
    return out


def _text(comparison, header, body) -> str:
    rows = [header] + [[text + (" *" if best else "") for text, best in line] for line in body]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for n, row in enumerate(rows):
        lines.append(
            "  ".join(
                v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(row, widths))
            ).rstrip()
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines + [""] + legend(comparison, "*")) + "\n"


def _markdown(comparison, header, body) -> str:
    def escape(text: str) -> str:
        return text.replace("|", "\\|")

    lines = [
        "| " + " | ".join(escape(h) for h in header) + " |",
        "| " + " | ".join(["---"] + ["---:"] * (len(header) - 1)) + " |",
    ]
    for line in body:
        lines.append(
            "| " + " | ".join(f"**{escape(t)}**" if best else escape(t) for t, best in line) + " |"
        )
    return "\n".join(lines + [""] + [f"{note}  " for note in legend(comparison, "bold:")]) + "\n"


def _html(comparison, header, body) -> str:
    from html import escape

    out = io.StringIO()
    out.write(
        '<table class="zoo-compare">\n<caption>'
        + "<br>".join(escape(n) for n in legend(comparison, "bold:"))
        + "</caption>\n"
    )
    out.write(
        "<thead><tr>"
        + "".join(f"<th>{escape(h)}</th>" for h in header)
        + "</tr></thead>\n<tbody>\n"
    )
    for line in body:
        cells = [f"<th>{escape(line[0][0])}</th>"]
        cells += [
            f"<td><strong>{escape(t)}</strong></td>" if best else f"<td>{escape(t)}</td>"
            for t, best in line[1:]
        ]
        out.write("<tr>" + "".join(cells) + "</tr>\n")
    out.write("</tbody>\n</table>\n")
    return out.getvalue()


_LATEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\^{}",
    "±": r"$\pm$",
    "Δ": r"$\Delta$",
    "†": r"$^\dagger$",
}


def _latex_escape(text: str) -> str:
    return "".join(_LATEX.get(ch, ch) for ch in text)


def _latex(comparison, header, body) -> str:
    lines = [
        r"\begin{table}",
        r"\centering",
        r"\begin{tabular}{l" + "r" * (len(header) - 1) + "}",
        r"\hline",
        " & ".join(_latex_escape(h) for h in header) + r" \\",
        r"\hline",
    ]
    for line in body:
        lines.append(
            " & ".join(
                r"\textbf{" + _latex_escape(t) + "}" if best else _latex_escape(t)
                for t, best in line
            )
            + r" \\"
        )
    lines += [
        r"\hline",
        r"\end{tabular}",
        r"\caption{" + _latex_escape(" ".join(legend(comparison, "bold:"))) + "}",
        r"\end{table}",
    ]
    return "\n".join(lines) + "\n"
