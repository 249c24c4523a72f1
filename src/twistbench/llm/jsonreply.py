"""A tolerant reader of JSON replies from chat models.

Servers without a JSON mode (and some with one) wrap the value in prose or a code fence, add a
trailing comma, or think aloud first. `parse_json_reply` accepts exactly these forms:

- the value alone, possibly surrounded by whitespace;
- a ```json (or bare ```) code fence around it, closed or not;
- leading prose before the first bracket and trailing prose after the value;
- `<think>...</think>` blocks (reasoning models) anywhere before the value;
- trailing commas before a closing `}` or `]` (outside strings).

It never guesses: a value that opens and never closes raises LLMTruncatedError naming how far
the reply got, and anything else raises LLMJSONError with a short excerpt. Single quotes,
comments and unquoted keys are not repaired (a reply that needs them is malformed).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, Literal

from twistbench.llm.errors import LLMJSONError, LLMTruncatedError

Expect = Literal["object", "array", "any"]

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|json5|javascript)?[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL)
_OPENERS = {"object": "{", "array": "[", "any": "{["}
_PAIRS = {"{": "}", "[": "]"}


def parse_json_reply(text: str | None, *, expect: Expect = "object") -> Any:
    """The JSON value in a model's reply; `expect` says which kind of value counts."""
    if text is None or not text.strip():
        raise LLMJSONError("the reply is empty, expected a JSON value", content=text or "")
    stripped = _THINK.sub("", text).strip()
    value = _try_loads(stripped, expect)
    if value is not _MISSING:
        return value
    fenced = _FENCE.search(stripped)
    body = fenced.group(1) if fenced else stripped
    return _from_embedded(body, expect, original=text)


class _Missing:
    pass


_MISSING: Any = _Missing()


def _try_loads(text: str, expect: Expect) -> Any:
    try:
        value = json.loads(text)
    except ValueError:
        return _MISSING
    return value if _kind_ok(value, expect) else _MISSING


def _kind_ok(value: Any, expect: Expect) -> bool:
    if expect == "object":
        return isinstance(value, dict)
    if expect == "array":
        return isinstance(value, list)
    return isinstance(value, (dict, list))


def _from_embedded(body: str, expect: Expect, *, original: str) -> Any:
    """The first balanced bracketed span in `body` that parses as the expected kind."""
    openers = _OPENERS[expect]
    pos = 0
    last_problem = ""
    while True:
        start = _next_opener(body, openers, pos)
        if start < 0:
            break
        end = _matching_close(body, start)
        if end < 0:
            raise LLMTruncatedError(
                f"the reply ends inside a JSON value that opens at character {start} and never "
                f"closes ({len(body) - start} characters in): {_excerpt(body[start:])}",
                content=original,
            )
        span = body[start:end + 1]
        for candidate in (span, _drop_trailing_commas(span)):
            value = _try_loads(candidate, expect)
            if value is not _MISSING:
                return value
        last_problem = f"; the bracketed text {_excerpt(span)} is not valid JSON"
        pos = end + 1
    raise LLMJSONError(
        f"no JSON {expect if expect != 'any' else 'value'} in the reply {_excerpt(original)}"
        f"{last_problem}",
        content=original,
    )


def _next_opener(text: str, openers: str, pos: int) -> int:
    hits = [i for i in (text.find(ch, pos) for ch in openers) if i >= 0]
    return min(hits) if hits else -1


def _outside_strings(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """(index, character) of every character of `text` from `start` that is not inside a
    JSON string (an opening quote is yielded, the string's content and closing quote not)."""
    in_string = False
    escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        yield i, ch


def _matching_close(text: str, start: int) -> int:
    """Index of the bracket closing the one at `start` (string-aware), or -1 if it never closes.
    A mismatched closer ends the span there, so the caller's parse fails on it."""
    stack = [_PAIRS[text[start]]]
    for i, ch in _outside_strings(text, start + 1):
        if ch in _PAIRS:
            stack.append(_PAIRS[ch])
        elif ch in "}]" and (ch != stack.pop() or not stack):
            return i
    return -1


def _drop_trailing_commas(text: str) -> str:
    """Remove commas that directly precede a closing bracket, outside strings."""
    drop = set()
    for i, ch in _outside_strings(text):
        if ch == ",":
            j = i + 1
            while j < len(text) and text[j].isspace():
                j += 1
            if j < len(text) and text[j] in "}]":
                drop.add(i)
    return "".join(ch for i, ch in enumerate(text) if i not in drop)


def _excerpt(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[:limit] + "...")
