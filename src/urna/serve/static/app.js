// The urna serve page: ask a corpus a question (POST retrieve) and show what inspect says.
// Plain DOM, no dependencies; every value from the server is set as text, never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
let encodingNames = {};

async function api(path, body, retried) {
  const headers = body === undefined ? {} : { "content-type": "application/json" };
  // A server started with --token answers 401 until the tab sends it: ask once, keep it in
  // sessionStorage (this tab only, gone when it closes), never in a URL or a cookie.
  const token = sessionStorage.getItem("urna-token");
  if (token) headers.authorization = `Bearer ${token}`;
  const init = body === undefined ? { headers } : { method: "POST", headers, body: JSON.stringify(body) };
  const res = await fetch(path, init);
  if (res.status === 401 && !retried) {
    const given = window.prompt("This urna server needs its access token:");
    if (given) {
      sessionStorage.setItem("urna-token", given.trim());
      return api(path, body, true);
    }
  }
  const data = await res.json();
  if (!res.ok) {
    const err = data.error || {};
    throw new Error(`${err.type || res.status}: ${err.message || res.statusText}`);
  }
  return data;
}

function setStatus(text, isError) {
  const s = $("status");
  s.textContent = text;
  s.classList.toggle("error", Boolean(isError));
}

function corpusPath(suffix) {
  return `/api/corpora/${encodeURIComponent($("corpus").value)}/${suffix}`;
}

async function copyText(text) {
  // navigator.clipboard needs a secure context (loopback is one); fall back otherwise.
  if (navigator.clipboard && window.isSecureContext) {
    try { await navigator.clipboard.writeText(text); return true; } catch (e) { /* fall back */ }
  }
  const area = document.createElement("textarea");
  area.value = text;
  document.body.appendChild(area);
  area.select();
  const ok = document.execCommand("copy");
  area.remove();
  return ok;
}

function renderHits(hits) {
  const list = $("hits");
  list.replaceChildren();
  const tpl = $("hit-template");
  for (const h of hits) {
    const li = tpl.content.firstElementChild.cloneNode(true);
    li.querySelector(".score").textContent = `score ${h.score.toFixed(4)}`;
    li.querySelector(".source").textContent = h.source_uri;
    li.querySelector(".span").textContent = `span ${h.offset_start}\u2013${h.offset_end}`;
    li.querySelector(".text").textContent = h.text;
    li.querySelector(".citation").textContent = h.citation_id;
    const btn = li.querySelector(".copy");
    btn.addEventListener("click", async () => {
      const ok = await copyText(h.citation_id);
      btn.textContent = ok ? "Copied" : "Copy failed";
      setTimeout(() => { btn.textContent = "Copy citation"; }, 1500);
    });
    list.appendChild(li);
  }
}

async function ask(event) {
  event.preventDefault();
  const text = $("question").value;
  const k = Number($("k").value) || 5;
  setStatus("searching\u2026");
  $("hits").replaceChildren();
  try {
    const res = await api(corpusPath("retrieve"), { text, k });
    renderHits(res.hits);
    setStatus(`${res.hits.length} hit(s), route ${res.route}, ${res.rerank_source}, ` +
              `${res.query_time_ms.toFixed(1)} ms`);
  } catch (e) {
    setStatus(e.message, true);
  }
}

function table(headers, rows) {
  const t = document.createElement("table");
  const head = t.createTHead().insertRow();
  for (const h of headers) {
    const th = document.createElement("th");
    th.textContent = h;
    head.appendChild(th);
  }
  const body = t.createTBody();
  for (const row of rows) {
    const tr = body.insertRow();
    for (const cell of row) {
      const td = tr.insertCell();
      td.textContent = String(cell);
      if (typeof cell === "number") td.className = "num";
    }
  }
  return t;
}

function heading(text) {
  const h = document.createElement("h2");
  h.textContent = text;
  return h;
}

async function showInspect() {
  const box = $("inspect");
  box.replaceChildren();
  try {
    const d = await api(corpusPath("inspect"));
    box.appendChild(heading("File"));
    box.appendChild(table(["field", "value"], [
      ["file_size", d.file_size], ["n_chunks", d.n_chunks], ["embedding_dim", d.embedding_dim],
      ["format", `v${d.version_major}.${d.version_minor}`], ["file_hash", d.file_hash],
      ["content_hash", d.content_hash], ["simd_backend", d.simd_backend],
    ]));
    box.appendChild(heading("Sections"));
    box.appendChild(table(["id", "name", "encoding", "offset", "size", "checksum"],
      d.sections.map((s) => [s.section_id, s.name,
        encodingNames[String(s.encoding)] || String(s.encoding), s.offset, s.size, s.checksum])));
    box.appendChild(heading("Manifest"));
    const m = d.manifest || {};
    // values as text, left-aligned: nested objects (capabilities ...) as compact JSON
    box.appendChild(table(["key", "value"], Object.keys(m).map((key) => [key,
      typeof m[key] === "object" ? JSON.stringify(m[key]) : String(m[key])])));
  } catch (e) {
    box.textContent = e.message;
  }
}

function showView(id) {
  for (const tab of document.querySelectorAll(".tab")) {
    tab.classList.toggle("active", tab.dataset.view === id);
  }
  for (const view of document.querySelectorAll(".view")) view.hidden = view.id !== id;
  if (id === "inspect-view") showInspect();
}

async function init() {
  for (const tab of document.querySelectorAll(".tab")) {
    tab.addEventListener("click", () => showView(tab.dataset.view));
  }
  $("ask-form").addEventListener("submit", ask);
  $("corpus").addEventListener("change", () => {
    $("hits").replaceChildren();
    setStatus("");
    if (!$("inspect-view").hidden) showInspect();
  });
  try {
    const data = await api("/api/corpora");
    encodingNames = data.encoding_names || {};
    for (const c of data.corpora) {
      const opt = document.createElement("option");
      opt.value = c.name;
      opt.textContent = `${c.name} (${c.n_embeddings} chunks, ${c.dtype})`;
      $("corpus").appendChild(opt);
    }
    document.body.dataset.ready = "1";
  } catch (e) {
    setStatus(e.message, true);
  }
}

init();
