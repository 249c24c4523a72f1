"""The LoCoMo audit's judge decoys (../shared/data/locomo-audit/decoys, CC BY-NC 4.0).

Each file holds, for every one of the 1,540 non-adversarial LoCoMo questions, a deliberately
wrong answer in one style: `specific_but_wrong` (a confident wrong value: another date, place or
name) and `vague_but_topical` (an answer that stays on topic without stating the fact). Layout:
{"detailed_results": {<conversation>: [{question_id, question, golden_answer,
generated_answer, category}, ...]}}. A sound judge rejects them (judges/calibration.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from twistbench.datasets.paths import LOCOMO_DECOYS, resolve_shared_or_path
from twistbench.errors import InputError, pydantic_to_input_error
from twistbench.model import QADecoy


def decoy_path(style: str) -> Path:
    """The shared-data file of one LoCoMo decoy style."""
    if style not in LOCOMO_DECOYS:
        raise InputError("decoy style", f"unknown style {style!r}",
                         expected=" or ".join(LOCOMO_DECOYS))
    return resolve_shared_or_path(LOCOMO_DECOYS[style])


def load_locomo_decoys(style: str, path: str | Path | None = None) -> list[QADecoy]:
    """Every decoy of one style, in file order; InputError naming the file, the record and
    the field when the file is not the audit's layout."""
    path = Path(path) if path is not None else decoy_path(style)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(str(path), f"cannot read: {exc.strerror or exc}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(str(path), f"not valid JSON: {exc}") from exc
    groups = doc.get("detailed_results") if isinstance(doc, dict) else None
    if not isinstance(groups, dict):
        raise InputError(str(path), "missing", field="detailed_results",
                         expected="an object of conversations, each a list of answers")
    out: list[QADecoy] = []
    seen: set[str] = set()
    for conv, rows in groups.items():
        if not isinstance(rows, list):
            raise InputError(str(path), "not a list", where=f"detailed_results.{conv}",
                             expected="a list of answer records")
        for pos, row in enumerate(rows):
            where = f"detailed_results.{conv}[{pos}]"
            if not isinstance(row, dict):
                raise InputError(str(path), "not an object", where=where,
                                 expected="an answer record")
            try:
                decoy = QADecoy(id=str(row.get("question_id", "")), style=style,
                                question=row.get("question"),
                                gold=str(row.get("golden_answer", "")),
                                answer=row.get("generated_answer"),
                                category=int(row.get("category", 0)))
            except ValidationError as exc:
                raise pydantic_to_input_error(str(path), where, exc) from exc
            except (TypeError, ValueError) as exc:
                raise InputError(str(path), f"bad category {row.get('category')!r}",
                                 where=where, field="category", expected="1-4") from exc
            if decoy.id in seen:
                raise InputError(str(path), f"question {decoy.id} appears twice", where=where,
                                 field="question_id", expected="one decoy per question")
            seen.add(decoy.id)
            out.append(decoy)
    return out
