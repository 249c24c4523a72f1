"""Errors a user must be able to act on. The CLI turns InputError into one line and exit code 2."""

from __future__ import annotations


class InputError(Exception):
    """Bad input: names the file, the line or record, the field and what was expected."""

    exit_code = 2

    def __init__(
        self,
        file: str,
        message: str,
        *,
        where: str | None = None,
        field: str | None = None,
        expected: str | None = None,
    ):
        self.file = str(file)
        self.where = where
        self.field = field
        self.expected = expected
        self.message = message
        parts = [self.file]
        if where:
            parts.append(where)
        if field:
            parts.append(f"field {field!r}")
        text = ": ".join(parts) + f": {message}"
        if expected:
            text += f" (expected {expected})"
        super().__init__(text)


def pydantic_to_input_error(file: str, where: str, exc: Exception) -> InputError:
    """The first problem of a pydantic ValidationError as an InputError."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        errs = errors()
        if errs:
            first = errs[0]
            loc = ".".join(str(p) for p in first.get("loc", ())) or None
            extra = f" (+{len(errs) - 1} more)" if len(errs) > 1 else ""
            return InputError(file, first.get("msg", str(exc)) + extra, where=where, field=loc,
                              expected=_expected(first))
    return InputError(file, str(exc), where=where)


def _expected(err: dict) -> str | None:
    typ = err.get("type", "")
    if typ == "missing":
        return "a value for this required field"
    if typ == "extra_forbidden":
        return "no such field"
    return typ.replace("_", " ") or None
