"""``--where`` conditions, evaluated by zoo itself over a whitelist of syntax.

User text is data, never code: pandas' ``DataFrame.query`` would let a condition call
methods (``model.to_csv('x')`` writes a file). Here the text is parsed with ``ast`` and
only these nodes are evaluated: column names (``section.key`` for a setting's column of that
name, such as ``train.steps``), literals (numbers, strings, booleans, None,
and lists/tuples of them after ``in``), comparisons, ``in``/``not in``, ``and``/``or``/
``not`` and arithmetic. Anything else (attribute access, calls, subscripts, lambdas,
comprehensions, ``@`` variables) is refused, naming what was found.
"""

from __future__ import annotations

import ast
import math
import operator

from zoo.errors import UnknownNameError, ZooError

MAX_LENGTH = 2000  # characters: a condition is a line, not a program
MAX_DEPTH = 50  # nesting of the syntax tree

ARITHMETIC = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
COMPARISONS = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
LITERALS = (str, int, float, bool, type(None))


class _Refused(Exception):
    """The expression uses something outside the whitelist."""


def select(frame, text: str):
    """The rows of ``frame`` for which the condition ``text`` holds."""
    return frame[condition(frame, text)]


def condition(frame, text: str):
    """A boolean Series: the condition ``text`` evaluated row by row over ``frame``."""
    import pandas as pd

    tree = parse(text)
    try:
        value = _Evaluator(frame).visit(tree.body)
    except _Refused as exc:
        raise ZooError(f"where {text!r}: {exc}", option="where") from None
    except OverflowError:
        raise ZooError(f"where {text!r}: a number in it is too large", option="where") from None
    except (TypeError, ValueError, ArithmeticError) as exc:
        raise ZooError(
            f"where {text!r}: cannot evaluate it ({_first_line(exc)})", option="where"
        ) from None
    if not isinstance(value, pd.Series):
        value = pd.Series(value, index=frame.index)
    if value.dtype != bool:
        raise ZooError(
            f"where {text!r}: is not a condition (true or false for each run), "
            "e.g. \"architecture == 'decoder' and params < 1e6\"",
            option="where",
        )
    return value


def parse(text: str) -> ast.Expression:
    """Parse and check ``text`` against the whitelist, without evaluating anything."""
    if not isinstance(text, str) or not text.strip():
        raise ZooError(
            "where needs a condition, e.g. \"architecture == 'decoder'\"", option="where"
        )
    if len(text) > MAX_LENGTH:
        raise ZooError(
            f"where is {len(text)} characters long; at most {MAX_LENGTH}", option="where"
        )
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ZooError(
            f"where {text!r}: not a valid condition ({exc.msg})", option="where"
        ) from None
    except (RecursionError, MemoryError, ValueError):
        raise ZooError(
            f"where: the condition is nested too deeply (at most {MAX_DEPTH} levels)",
            option="where",
        ) from None
    try:
        _check(tree.body, 0)
    except _Refused as exc:
        raise ZooError(f"where {text!r}: {exc}", option="where") from None
    return tree


def _check(node: ast.AST, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise _Refused(f"nested too deeply (at most {MAX_DEPTH} levels)")
    if isinstance(node, ast.BoolOp):
        children = node.values
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub, ast.UAdd)):
        children = [node.operand]
    elif isinstance(node, ast.BinOp) and type(node.op) in ARITHMETIC:
        children = [node.left, node.right]
    elif isinstance(node, ast.Compare):
        children = [node.left]
        for op, right in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)):
                if not isinstance(right, (ast.List, ast.Tuple, ast.Set)):
                    raise _Refused("'in' takes a list of values, e.g. model in ['a', 'b']")
                for element in right.elts:
                    _literal(element)
            elif type(op) in COMPARISONS:
                children.append(right)
            else:
                raise _Refused(f"the comparison {_describe(op)} is not allowed")
    elif isinstance(node, ast.Name) or dotted_name(node):
        return
    elif isinstance(node, ast.Constant):
        _literal(node)
        return
    else:
        raise _Refused(
            f"{_describe(node)} is not allowed; use column names, literals, "
            "comparisons, in, and/or/not and arithmetic"
        )
    for child in children:
        _check(child, depth + 1)


def _literal(node: ast.AST):
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _literal(node.operand)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Refused("a sign goes before a number")
        return -value if isinstance(node.op, ast.USub) else value
    if not (isinstance(node, ast.Constant) and isinstance(node.value, LITERALS)):
        raise _Refused(
            f"{_describe(node)} is not a literal value (a number, a string, true/false or None)"
        )
    return node.value


def _describe(node: ast.AST) -> str:
    names = {
        ast.Attribute: "attribute access ('.')",
        ast.Call: "a function or method call",
        ast.Subscript: "indexing ('[...]')",
        ast.Lambda: "lambda",
        ast.NamedExpr: "assignment (':=')",
        ast.IfExp: "if/else",
        ast.Is: "'is'",
        ast.IsNot: "'is not'",
        ast.BitAnd: "'&' (write 'and')",
        ast.BitOr: "'|' (write 'or')",
        ast.Invert: "'~' (write 'not')",
    }
    for kind, name in names.items():
        if isinstance(node, kind):
            return name
    if isinstance(node, ast.BinOp):
        return _describe(node.op)
    if isinstance(node, ast.Constant):
        return f"the value {type(node.value).__name__}"
    return f"'{type(node).__name__}'"


def dotted_name(node: ast.AST) -> str | None:
    """'train.steps' for the attribute chain of plain names that reads so; else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not parts or not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


class _Evaluator:
    def __init__(self, frame):
        self.frame = frame

    def visit(self, node: ast.AST):
        name = node.id if isinstance(node, ast.Name) else dotted_name(node)
        if name is not None:
            if name not in self.frame.columns:
                columns = [str(c) for c in self.frame.columns if c != "settings"]
                raise _Refused(
                    UnknownNameError(  # model == decoder-char names columns decoder and char
                        "column",
                        name,
                        columns,
                        hint="a text value is quoted, as in model == 'decoder-char'; columns: "
                        + ", ".join(columns[:12])
                        + (", ..." if len(columns) > 12 else ""),
                    )
                )
            return _plain(self.frame[name])
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.BoolOp):
            values = [_mask(self.visit(v)) for v in node.values]
            combine = operator.and_ if isinstance(node.op, ast.And) else operator.or_
            result = values[0]
            for value in values[1:]:
                result = combine(result, value)
            return result
        if isinstance(node, ast.UnaryOp):
            operand = self.visit(node.operand)
            if isinstance(node.op, ast.Not):
                operand = _mask(operand)
                return (not operand) if isinstance(operand, bool) else ~operand
            return -operand if isinstance(node.op, ast.USub) else +operand
        if isinstance(node, ast.BinOp):
            return _arithmetic(type(node.op), self.visit(node.left), self.visit(node.right))
        if isinstance(node, ast.Compare):
            return self._compare(node)
        raise _Refused(f"{_describe(node)} is not allowed")  # _check already refused it

    def _compare(self, node: ast.Compare):
        result = None
        left = self.visit(node.left)
        if len(node.ops) > 1 and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            raise _Refused("'in' cannot be chained with other comparisons; join them with 'and'")
        for op, right_node in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)):
                values = [_literal(e) for e in getattr(right_node, "elts", ())]
                step = _series(left, self.frame).isin(values)
                step = ~step if isinstance(op, ast.NotIn) else step
                right = None
            else:
                right = self.visit(right_node)
                step = _compare(type(op), left, right, self.frame)
            result = step if result is None else result & step
            left = right
        return result


def _compare(op, left, right, frame):
    if right is None or left is None:  # "x == None": missing values
        if op not in (ast.Eq, ast.NotEq):
            raise _Refused("None can only be compared with == or !=")
        present = _series(right if left is None else left, frame).isna()
        return present if op is ast.Eq else ~present
    return COMPARISONS[op](_series(left, frame), right)


def _arithmetic(op, left, right):
    if (isinstance(left, str) or isinstance(right, str)) and op is not ast.Add:
        # 'a' * 10**9 would fill memory: text only joins with '+'.
        raise _Refused("arithmetic on text is only '+'")
    # Integer literals compute as floats, so 10**10**10 overflows at once instead of
    # running for ever.
    left = float(left) if type(left) is int else left
    right = float(right) if type(right) is int else right
    if left is None or right is None:
        raise _Refused("None takes part only in == and !=")
    try:
        result = ARITHMETIC[op](left, right)
    except ZeroDivisionError:
        raise _Refused("division by zero") from None
    except OverflowError:
        raise _Refused("a number too large to compute") from None
    _check_finite(result, left, right)
    return result


def _check_finite(result, left, right) -> None:
    """Arithmetic whose operands are numbers but whose result is not (x / 0 on a column, an
    overflow) is an error, not a value that compares true or false for every run."""
    import numpy as np
    import pandas as pd

    def known(value):  # where an operand is a number (a missing metric stays missing)
        if isinstance(value, pd.Series):
            return pd.to_numeric(value, errors="coerce").notna()
        return isinstance(value, (int, float)) and not (
            isinstance(value, float) and math.isnan(value)
        )

    if isinstance(result, pd.Series):
        numbers = pd.to_numeric(result, errors="coerce")
        if numbers.isna().all() and result.notna().any():
            return  # text joined with '+'
        bad = ~np.isfinite(numbers.astype(float)) & known(left) & known(right)
        if bool(np.any(bad)):
            raise _Refused(
                "the arithmetic gives a non-finite number (a division by zero or an overflow)"
            )
    elif isinstance(result, float) and not math.isfinite(result) and known(left) and known(right):
        raise _Refused(
            "the arithmetic gives a non-finite number (a division by zero or an overflow)"
        )


def _plain(column):
    """A nullable integer or boolean column as floats or objects, so comparisons give plain
    booleans (a missing setting compares False) rather than pandas' missing values."""
    import pandas as pd

    if isinstance(column.dtype, pd.BooleanDtype):
        return column.astype(object).where(column.notna(), None)
    if pd.api.types.is_extension_array_dtype(column.dtype) and pd.api.types.is_numeric_dtype(
        column.dtype
    ):
        return column.astype("float64")
    return column


def _series(value, frame):
    import pandas as pd

    return (
        value
        if isinstance(value, pd.Series)
        else pd.Series([value] * len(frame), index=frame.index)
    )


def _mask(value):
    import pandas as pd

    if isinstance(value, pd.Series):
        if value.dtype != bool:
            raise _Refused(
                "'and', 'or' and 'not' join conditions (comparisons), "
                f"not values such as {value.name!r}"
            )
        return value
    if isinstance(value, bool):
        return value
    raise _Refused("'and', 'or' and 'not' join conditions (comparisons), not values")


def _first_line(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]
