"""The offline HTML form of a packet: one self-contained file.

No network and no external file: styles, script, the guide, the items and the full records are
inside. Items are rendered here (escaped HTML), so the form reads the same with scripts off; the
script only keeps the answers (in the browser's localStorage as they are given, so closing the
tab loses nothing), counts what is left, reloads a downloaded answer file, and downloads the
answers as JSON (the packet's answers format) or CSV, through a Blob link: nothing is sent
anywhere. The script's pure functions (CSV and JSON writing, reloading) are exported for node,
which tests/annotate/test_form.py uses to check them against the Python reader.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

_CSS = """
body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d1d1f;
background:#fafafa}
header{position:sticky;top:0;background:#fff;border-bottom:1px solid #ddd;padding:.6em 1em;
z-index:2;display:flex;flex-wrap:wrap;gap:.6em;align-items:center}
header .id{font-weight:600}#progress{margin-left:auto}
main,#guide,#records{max-width:62em;margin:0 auto;padding:0 1em}
.item{background:#fff;border:1px solid #ddd;border-radius:6px;margin:1.2em 0;padding:.8em 1em}
.item.done{border-color:#6a6}.item h2{font-size:1.05em;margin:.2em 0 .6em}
.lead{white-space:pre-wrap;margin:.3em 0}.excerpt{border-left:3px solid #ccd;margin:.6em 0;
padding-left:.6em;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.86em}
.turn{white-space:pre-wrap;margin:.15em 0}.turn.marked{background:#fff6d6}
.mark{display:inline-block;width:1.4em;font-weight:700;color:#a50}.n,.when,.where{color:#666}
.gap{color:#888;font-style:italic;margin:.3em 0}.legend{color:#555;font-size:.9em}
.question{font-weight:600}fieldset{border:0;padding:0;margin:.4em 0}
fieldset label{display:block;margin:.25em 0;cursor:pointer}textarea{width:100%;min-height:2.5em}
pre.guide,pre.record{white-space:pre-wrap;font-size:.85em;background:#fff;border:1px solid #ddd;
padding:.8em}#warn{color:#a00}
"""

_JS = r"""
"use strict";
function csvField(v) {
  v = String(v === undefined || v === null ? "" : v);
  return /[",\n\r]/.test(v) ? '"' + v.replace(/"/g, '""') + '"' : v;
}
function answersToCsv(meta, answers) {
  var cols = ["packet", "annotator", "key_version", "key_sha256", "seq", "code", "answer", "note"];
  var lines = [cols.join(",")];
  answers.forEach(function (a) {
    lines.push([meta.packet, meta.annotator, meta.key_version, meta.key_sha256, a.seq, a.code,
                a.answer, a.note].map(csvField).join(","));
  });
  return lines.join("\n") + "\n";
}
function answersToJson(meta, answers) {
  return JSON.stringify({format: meta.answers_format, packet: meta.packet,
                         annotator: meta.annotator, key_version: meta.key_version,
                         key_sha256: meta.key_sha256, answers: answers}, null, 1) + "\n";
}
function mergeLoaded(meta, doc) {
  if (!doc || doc.packet !== meta.packet || doc.annotator !== meta.annotator) {
    throw new Error("this file holds answers of packet " + (doc && doc.packet) + ", annotator " +
                    (doc && doc.annotator) + "; this form is packet " + meta.packet +
                    ", annotator " + meta.annotator);
  }
  var out = {};
  (doc.answers || []).forEach(function (a) {
    out[a.code] = {answer: a.answer || "", note: a.note || ""};
  });
  return out;
}
if (typeof document !== "undefined") {
  (function () {
    var meta = JSON.parse(document.getElementById("meta").textContent);
    var storeKey = "twist-answers:" + meta.packet + ":" + meta.annotator;
    var state = {};
    var store = null;
    try { store = window.localStorage; state = JSON.parse(store.getItem(storeKey) || "{}"); }
    catch (e) { store = null; document.getElementById("warn").textContent =
      "This browser does not keep answers for local files: download them before closing."; }
    function save() { if (store) { try { store.setItem(storeKey, JSON.stringify(state)); }
                                   catch (e) {} } }
    function show() {
      var done = 0;
      meta.items.forEach(function (it) {
        var s = state[it.code] || {answer: "", note: ""};
        var sec = document.getElementById("item-" + it.code);
        sec.querySelectorAll("input[type=radio]").forEach(function (r) {
          r.checked = r.value === s.answer; });
        sec.querySelector("textarea").value = s.note || "";
        sec.classList.toggle("done", !!s.answer);
        if (s.answer) { done += 1; }
      });
      document.getElementById("progress").textContent =
        done + " of " + meta.items.length + " answered";
    }
    function collect() {
      return meta.items.map(function (it) {
        var s = state[it.code] || {};
        return {seq: it.seq, code: it.code, answer: s.answer || "", note: s.note || ""};
      });
    }
    function download(name, text, type) {
      var a = document.createElement("a");
      a.href = URL.createObjectURL(new Blob([text], {type: type}));
      a.download = name;
      document.body.appendChild(a); a.click(); a.remove();
    }
    function ready() {
      var left = collect().filter(function (a) { return !a.answer; }).length;
      return !left || window.confirm(left + " items have no answer yet. Download anyway?");
    }
    document.querySelector("main").addEventListener("change", function (ev) {
      var sec = ev.target.closest(".item"); if (!sec) { return; }
      var code = sec.getAttribute("data-code");
      var s = state[code] || {answer: "", note: ""};
      if (ev.target.type === "radio") { s.answer = ev.target.value; }
      if (ev.target.tagName === "TEXTAREA") { s.note = ev.target.value; }
      state[code] = s; save(); show();
    });
    var base = "answers-" + meta.packet + "-" + meta.annotator;
    document.getElementById("dl-json").onclick = function () {
      if (ready()) { download(base + ".json", answersToJson(meta, collect()), "application/json"); }
    };
    document.getElementById("dl-csv").onclick = function () {
      if (ready()) { download(base + ".csv", answersToCsv(meta, collect()), "text/csv"); }
    };
    document.getElementById("load").onchange = function (ev) {
      var f = ev.target.files[0]; if (!f) { return; }
      f.text().then(function (t) {
        try { state = mergeLoaded(meta, JSON.parse(t)); save(); show(); }
        catch (e) { window.alert(e.message); }
      });
    };
    show();
  })();
}
if (typeof module !== "undefined") {
  module.exports = {csvField: csvField, answersToCsv: answersToCsv, answersToJson: answersToJson,
                    mergeLoaded: mergeLoaded};
}
"""


def _json_script(obj: Any) -> str:
    # "</" would end the script element early
    return json.dumps(obj, ensure_ascii=False, sort_keys=True).replace("</", "<\\/")


def _turn_html(t: dict[str, Any]) -> str:
    cls = "turn marked" if t["mark"] else "turn"
    return (f'<div class="{cls}"><span class="mark">{escape(t["mark"])}</span>'
            f'<span class="n">#{t["n"]}</span> <span class="when">{escape(t["when"])}</span> · '
            f'<span class="where">{escape(t["where"])}</span> · <b>{escape(t["speaker"])}</b>: '
            f'{escape(t["text"])}</div>')


def _item_html(row: dict[str, Any], total: int) -> str:
    code = escape(row["code"])
    parts = [f'<section class="item" id="item-{code}" data-code="{code}">',
             f'<h2>Item {row["seq"]} of {total} · Track {escape(row["track"])} · '
             f'code {code}</h2>',
             '<div class="lead">' + escape("\n".join(row["lead"])) + "</div>",
             f'<div class="legend">Record of {escape(row["conversation"])}</div>']
    for ex in row["excerpts"]:
        parts.append('<div class="excerpt">')
        if ex["gap"]:
            parts.append(f'<div class="gap">⋮ {escape(ex["gap"])}</div>')
        parts += [_turn_html(t) for t in ex["turns"]]
        parts.append("</div>")
    parts.append(f'<p class="legend">{escape(row["legend"])}</p>')
    parts.append(f'<p class="question">{escape(row["question"])}</p><fieldset>')
    for c in row["choices"]:
        parts.append(f'<label><input type="radio" name="a-{code}" value="{escape(c["code"])}"> '
                     f'<code>{escape(c["code"])}</code>: {escape(c["text"])}</label>')
    parts.append(f'</fieldset><label>Note (optional)<textarea name="n-{code}"></textarea>'
                 "</label></section>")
    return "\n".join(parts)


def render_form(header: dict[str, Any], rows: list[dict[str, Any]], guide: str,
                records: dict[str, str]) -> str:
    """The whole form as one HTML document."""
    meta = {"packet": header["packet"], "annotator": header["annotator"],
            "key_version": header["key"]["version"], "key_sha256": header["key"]["sha256"],
            "answers_format": header["answers_format"],
            "items": [{"seq": r["seq"], "code": r["code"]} for r in rows]}
    title = f"Annotation packet {header['packet']}, annotator {header['annotator']}"
    body = "\n".join(_item_html(r, len(rows)) for r in rows)
    recs = "\n".join(f"<details><summary>{escape(cid)}</summary><pre class=\"record\">"
                     f"{escape(text)}</pre></details>" for cid, text in records.items())
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title><style>{_CSS}</style></head>
<body>
<header><span class="id">{escape(title)}</span>
<span>key {escape(meta['key_version'])} (sha256 {escape(meta['key_sha256'][:12])}…)</span>
<button id="dl-json" type="button">Download answers (JSON)</button>
<button id="dl-csv" type="button">Download answers (CSV)</button>
<label>Reload answers <input id="load" type="file" accept=".json"></label>
<span id="progress"></span><span id="warn"></span></header>
<section id="guide"><details><summary>Annotation guide (read it first)</summary>
<pre class="guide">{escape(guide)}</pre></details></section>
<main>
{body}
</main>
<section id="records"><h2>Full records</h2>
{recs}
</section>
<script type="application/json" id="meta">{_json_script(meta)}</script>
<script>{_JS}</script>
</body></html>
"""
