// A memory system in plain Node.js (no npm packages), served over the twistbench HTTP contract
// (docs/http-contract.openapi.json). It stores every turn as written and answers from the turn
// that shares the most words with the question: a baseline, not a good memory system.
//
//   node server.js [--port 8770] [--host 127.0.0.1]
//   twist conform http://127.0.0.1:8770
//   twist run -s http://127.0.0.1:8770
//
// It declares recall, retrieve and lineage; the other calls answer 501 (declined), so the
// tracks that need them are N/A, never zero.
"use strict";
const http = require("http");

const CONTRACT = "1";
const MAX_BODY = 64 * 1024 * 1024;
const conversations = new Map(); // conversation id -> [{id, speaker, text, words}]

function arg(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

function words(text) {
  return new Set((text.toLowerCase().match(/[a-z0-9']+/g) || []).filter((w) => w.length > 2));
}

function ranked(turns, query, k) {
  const q = words(query);
  const scored = turns.map((t, pos) => {
    let shared = 0;
    for (const w of q) if (t.words.has(w)) shared += 1;
    return { id: t.id, score: q.size ? shared / q.size : 0, pos };
  });
  // Best first; ties go to the later turn (the more recent statement).
  scored.sort((a, b) => b.score - a.score || b.pos - a.pos);
  return scored.slice(0, k);
}

class Refused extends Error {
  constructor(status, kind, message) {
    super(message);
    this.status = status;
    this.kind = kind;
  }
}

function need(body, field, type) {
  const value = body[field];
  if (typeof value !== type || (type === "string" && field.endsWith("_id") && value === "")) {
    throw new Refused(400, "bad_request", `${field}: expected a ${type}`);
  }
  return value;
}

function only(body, fields) {
  for (const key of Object.keys(body)) {
    if (!fields.includes(key)) throw new Refused(400, "bad_request", `${key}: unknown field`);
  }
}

function turnsOf(body) {
  const turns = conversations.get(need(body, "conversation_id", "string"));
  if (!turns) throw new Refused(409, "no_conversation", "call reset first");
  return turns;
}

const declined = () => {
  throw new Refused(501, "declined", "node-memory declines this call");
};

const calls = {
  "GET /capabilities": () => ({
    contract: CONTRACT,
    name: "node-memory",
    capabilities: { recall: true, retrieve: true, lineage: true },
    config: { runtime: `node ${process.version}` },
  }),
  "POST /reset": (b) => {
    only(b, ["conversation_id"]);
    conversations.set(need(b, "conversation_id", "string"), []);
    return { ok: true };
  },
  "POST /ingest": (b) => {
    only(b, ["conversation_id", "events"]);
    const turns = turnsOf(b);
    if (!Array.isArray(b.events)) throw new Refused(400, "bad_request", "events: expected a list");
    for (const [i, e] of b.events.entries()) {
      if (!e || typeof e.id !== "string" || typeof e.text !== "string" ||
          typeof e.speaker !== "string") {
        throw new Refused(400, "bad_request", `events[${i}]: expected id, speaker and text`);
      }
      turns.push({ id: e.id, speaker: e.speaker, text: e.text, words: words(e.text) });
    }
    return { tensions: [], referrals: [], audit_records: [] };
  },
  "POST /recall": (b) => {
    only(b, ["conversation_id", "query"]);
    const turns = turnsOf(b);
    const [best] = ranked(turns, need(b, "query", "string"), 1);
    if (!best || best.score === 0) return { text: "", evidence: [] };
    const turn = turns[best.pos];
    return { text: `${turn.speaker}: ${turn.text}`, evidence: [turn.id] };
  },
  "POST /retrieve": (b) => {
    only(b, ["conversation_id", "query", "k"]);
    const turns = turnsOf(b);
    const k = b.k;
    if (!Number.isInteger(k) || k < 1 || k > 1000) {
      throw new Refused(400, "bad_request", "k: expected an integer from 1 to 1000");
    }
    const hits = ranked(turns, need(b, "query", "string"), k);
    return { hits: hits.map(({ id, score }) => ({ id, score })) };
  },
  "POST /lineage": (b) => {
    only(b, ["conversation_id"]);
    return {
      records: turnsOf(b).map((t) => ({
        memory_id: t.id, sources: [t.id], raw: true, canonical: false, text: t.text,
      })),
    };
  },
  "POST /close": (b) => {
    only(b, ["conversation_id"]);
    conversations.delete(need(b, "conversation_id", "string"));
    return { ok: true };
  },
  "POST /flag_tensions": (b) => { turnsOf(b); declined(); },
  "POST /check_alignment": (b) => { turnsOf(b); declined(); },
  "POST /resolve": (b) => { turnsOf(b); declined(); },
};

function send(res, status, payload) {
  const data = Buffer.from(JSON.stringify(payload), "utf8");
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": data.length });
  res.end(data);
}

const server = http.createServer((req, res) => {
  const chunks = [];
  let size = 0;
  req.on("data", (c) => {
    size += c.length;
    if (size <= MAX_BODY) chunks.push(c);
  });
  req.on("end", () => {
    try {
      const path = req.url.split("?")[0];
      const call = calls[`${req.method} ${path}`];
      if (!call) {
        const known = Object.keys(calls).some((k) => k.endsWith(` ${path}`));
        if (known) throw new Refused(405, "method_not_allowed", `${path} takes another method`);
        throw new Refused(404, "not_found", `no call ${path}`);
      }
      if (req.headers["twist-contract"] !== CONTRACT) {
        throw new Refused(400, "contract_version", `this server speaks contract ${CONTRACT}`);
      }
      if (size > MAX_BODY) throw new Refused(400, "bad_request", "request body too large");
      let body = {};
      if (req.method === "POST") {
        try {
          body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        } catch (e) {
          throw new Refused(400, "bad_request", "the body is not JSON");
        }
        if (body === null || typeof body !== "object" || Array.isArray(body)) {
          throw new Refused(400, "bad_request", "the body is not a JSON object");
        }
      }
      send(res, 200, call(body));
    } catch (e) {
      if (e instanceof Refused) send(res, e.status, { error: { kind: e.kind, message: e.message } });
      else send(res, 500, { error: { kind: "system_error", message: String(e) } });
    }
  });
});

server.keepAliveTimeout = 60000; // the client keeps one connection for the whole run
server.listen(Number(arg("--port", "8770")), arg("--host", "127.0.0.1"), () => {
  const { address, port } = server.address();
  console.log(`node-memory listening on http://${address}:${port}`);
});
