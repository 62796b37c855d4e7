"""A bounded grammar for the symbolic sizes of an exported program.

torch writes each symbolic size as sympy ``srepr`` text (``Mul(Integer(2), Symbol('s77',
positive=True, integer=True))``) and its loader hands that text to ``sympy.sympify``, which runs
Python's ``eval``. Untrusted text never reaches sympy: it is parsed here into a tree with a fixed
vocabulary (symbols, integer literals below 2**31, sums, products, floor division, modulo, min and
max; no powers, no factorials, nothing callable) under limits on length, depth and arity, and the
text torch later parses is printed anew from that tree.
"""

from __future__ import annotations

import re

MAX_LENGTH = 2048
MAX_DEPTH = 24
MAX_ARGS = 16
MAX_INT = 2**31
FUNCTIONS = {"Add", "Mul", "Max", "Min", "FloorDiv", "Mod", "PythonMod", "CleanDiv", "CeilDiv"}
BINARY = {"FloorDiv", "Mod", "PythonMod", "CleanDiv", "CeilDiv"}
ASSUMPTIONS = {"positive", "negative", "integer", "nonnegative", "nonpositive", "real", "finite",
               "nonzero"}
SYMBOL = re.compile(r"[a-z]{1,4}\d{1,6}")
TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z_]\w{0,31})|(?P<int>-?\d{1,10})|(?P<str>'[a-z0-9]{1,12}')"
                   r"|(?P<punct>[(),=]))")


class ShapeExpressionError(ValueError):
    """Text that is not a size expression of the bounded grammar."""


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = TOKEN.match(text, pos)
        if match is None:
            raise ShapeExpressionError(f"unexpected text at position {pos}")
        kind = match.lastgroup or ""
        out.append((kind, match.group(kind)))
        pos = match.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        if not isinstance(text, str) or len(text) > MAX_LENGTH:
            raise ShapeExpressionError(f"not a string of at most {MAX_LENGTH} characters")
        self.tokens = _tokens(text)
        self.pos = 0

    def take(self, kind: str, value: str | None = None) -> str:
        if self.pos >= len(self.tokens):
            raise ShapeExpressionError("the expression ends early")
        got_kind, got = self.tokens[self.pos]
        if got_kind != kind or (value is not None and got != value):
            raise ShapeExpressionError(f"expected {value or kind}, found {got!r}")
        self.pos += 1
        return got

    def peek(self) -> str:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else ""

    def expression(self, depth: int = 0) -> str:
        if depth > MAX_DEPTH:
            raise ShapeExpressionError(f"nested deeper than {MAX_DEPTH}")
        name = self.take("name")
        self.take("punct", "(")
        if name == "Integer":
            value = int(self.take("int"))
            if abs(value) >= MAX_INT:
                raise ShapeExpressionError(f"integer {value} is not below 2**31")
            self.take("punct", ")")
            return f"Integer({value})"
        if name == "Symbol":
            symbol = self.take("str").strip("'")
            if not SYMBOL.fullmatch(symbol):
                raise ShapeExpressionError(f"{symbol!r} is not a size symbol")
            flags = []
            while self.peek() == ",":
                self.take("punct", ",")
                flag = self.take("name")
                self.take("punct", "=")
                value = self.take("name")
                if flag not in ASSUMPTIONS or value not in ("True", "False"):
                    raise ShapeExpressionError(f"unknown symbol assumption {flag}={value}")
                flags.append(f"{flag}={value}")
            self.take("punct", ")")
            return f"Symbol({', '.join([repr(symbol), *flags])})"
        if name not in FUNCTIONS:
            raise ShapeExpressionError(f"{name!r} is not one of {', '.join(sorted(FUNCTIONS))}")
        args = [self.expression(depth + 1)]
        while self.peek() == ",":
            self.take("punct", ",")
            args.append(self.expression(depth + 1))
            if len(args) > MAX_ARGS:
                raise ShapeExpressionError(f"{name} has more than {MAX_ARGS} arguments")
        self.take("punct", ")")
        if name in BINARY and len(args) != 2:
            raise ShapeExpressionError(f"{name} takes 2 arguments, found {len(args)}")
        return f"{name}({', '.join(args)})"


def canonical_expression(text: str) -> str:
    """``text`` printed anew from the bounded grammar; raises ShapeExpressionError otherwise."""
    parser = _Parser(text)
    out = parser.expression()
    if parser.pos != len(parser.tokens):
        raise ShapeExpressionError(f"unexpected {parser.peek()!r} after the expression")
    return out


def is_symbol_name(text: object) -> bool:
    return isinstance(text, str) and SYMBOL.fullmatch(text) is not None
