// CoMeta's reference chat page: POST /ask/stream, read the server-sent events, show the checked answer.
// Plain JavaScript, no dependencies; every text from the server goes in as text, never as HTML.
"use strict";

const CITE = /\[\s*PMID\s*:?\s*(\d+(?:\s*[,;]\s*(?:PMID\s*:?\s*)?\d+)*)\s*\]/gi;
const STAGES = {
  understand: "Understanding the question…",
  retrieve: "Searching PubMed for studies…",
  answer: "Writing the answer from the studies…",
  judge: "Comparing the sources with each other…",
};
const MODES = {
  extractive: "No language model wrote this answer: these are the most relevant sentences quoted from the studies.",
  insufficient_evidence: "The published studies found do not answer this question, so no answer is given.",
  out_of_scope: "This question is outside what the medical literature can answer here.",
};
const CLASSES = { D1: "Research abstract", D2: "Review (full text)", D3: "Full-text article" };

const $ = (id) => document.getElementById(id);

function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function pubmedUrl(pmid) {
  return "https://pubmed.ncbi.nlm.nih.gov/" + encodeURIComponent(pmid) + "/";
}

// The only links the page makes: PubMed and PMC over https (as the server's chat markdown, literature_url).
const LITERATURE = /^https:\/\/(?:pubmed\.ncbi\.nlm\.nih\.gov|pmc\.ncbi\.nlm\.nih\.gov|www\.ncbi\.nlm\.nih\.gov\/pmc)\/[A-Za-z0-9._\/-]*$/;

function safeUrl(url, fallback) {
  return typeof url === "string" && LITERATURE.test(url) ? url : fallback;
}

// The answer with [PMID:n] markers as links to the numbered source cards and to PubMed.
function renderAnswer(target, text, citations) {
  target.replaceChildren();
  const numbers = new Map(citations.map((c, i) => [String(c.pmid), i + 1]));
  let last = 0;
  for (const match of text.matchAll(CITE)) {
    target.append(document.createTextNode(text.slice(last, match.index)));
    const ids = match[1].match(/\d+/g) || [];
    ids.forEach((id, k) => {
      const n = numbers.get(id);
      const link = el("a", { href: pubmedUrl(id), target: "_blank", rel: "noopener",
        "aria-label": "source " + (n || "") + ", PubMed " + id }, n ? "[" + n + "]" : "[PMID " + id + "]");
      if (k > 0) target.append(document.createTextNode(" "));
      target.append(link);
    });
    last = match.index + match[0].length;
  }
  target.append(document.createTextNode(text.slice(last)));
}

function design(c) {
  const types = (c.publication_types || []).filter((t) => t !== "Journal Article");
  return types[0] || CLASSES[c.doc_class] || "Article";
}

function renderCitations(citations) {
  const list = $("citations");
  list.replaceChildren();
  $("sources-heading").hidden = citations.length === 0;
  citations.forEach((c, i) => {
    const card = el("li", { class: "card" });
    card.append(el("span", { class: "num" }, "Source " + (i + 1)));
    card.append(el("span", { class: "title" }, c.title || "PMID " + c.pmid));
    card.append(el("span", { class: "meta" }, [c.year, design(c)].filter(Boolean).join(" · ")));
    // PubMed's notices about the study (a concern, a correction, a newer version): text, like the title.
    for (const n of c.notices || []) {
      if (!n || !n.text) continue;
      card.append(el("p", { class: "notice " + String(n.type || "").replace(/[^a-z_]/g, "") }, n.text));
    }
    if (c.pmid) {
      card.append(el("a", { href: safeUrl(c.url, pubmedUrl(c.pmid)), target: "_blank", rel: "noopener" },
        "PubMed " + c.pmid));
    }
    if (c.pmcid) {
      card.append(el("a", { href: "https://pmc.ncbi.nlm.nih.gov/articles/" + encodeURIComponent(c.pmcid) + "/",
        target: "_blank", rel: "noopener" }, "Free full text (PMC)"));
    }
    list.append(card);
  });
}

// The evidence verdict, whatever shape the service gives it (a word, or an object with a label and reason).
// ``verdict``: the response's ``evidence_verdict`` ({verdict, reasons, signals}) or null.
function renderVerdict(verdict, mode) {
  const box = $("verdict");
  const label = verdict ? verdict.verdict : null;
  const reason = verdict && verdict.reasons && verdict.reasons.length ? verdict.reasons.join("; ") : null;
  const plain = MODES[mode] || null;
  if (!label && !plain) { box.hidden = true; return; }
  box.replaceChildren();
  if (label) box.append(el("strong", {}, "Evidence: " + String(label).replace(/_/g, " ")));
  if (reason) box.append(el("p", {}, reason));
  if (plain && (!reason || reason !== plain)) box.append(el("p", {}, plain));
  const tone = String(label || mode || "").toLowerCase();
  box.className = "verdict " + (/insufficient|none|out_of_scope|no_/.test(tone) ? "none"
    : /weak|limited|mixed|conflict|extractive|low/.test(tone) ? "caution" : "ok");
  box.hidden = false;
}

function addNotes(listId, boxId, items) {
  const list = $(listId);
  for (const text of items) if (text) list.append(el("li", {}, text));
  $(boxId).hidden = list.children.length === 0;
}

function plainWarning(w) {
  const s = String(w);
  if (/rerank|encoder|dense index/i.test(s)) return null; // how the service is configured: not for the reader
  if (/^degraded|NCBI unavailable/i.test(s)) return "PubMed could not be fully searched just now, so some studies may be missing. " + s;
  if (/language model (was unavailable|stopped)/i.test(s)) return "The answer-writing model was unavailable, so the most relevant sentences from the studies are quoted instead.";
  if (/citation/i.test(s) && /removed/i.test(s)) return "Some references the model gave could not be checked against the studies and were removed.";
  return s.charAt(0).toUpperCase() + s.slice(1);
}

function renderJudge(judge) {
  if (!judge) return;
  const items = [];
  if (judge.note) items.push(judge.note);
  for (const p of judge.pairs || []) {
    if (p.classification === "DIVERGENT" || p.classification === "CONTRADICTORY") {
      items.push(p.a + " and " + p.b + (p.classification === "CONTRADICTORY" ? " contradict each other" : " differ")
        + (p.divergence_topic ? " on " + p.divergence_topic : "") + (p.reasoning ? ": " + p.reasoning : "."));
    }
  }
  addNotes("disagreement-list", "disagreement", items);
}

function reset() {
  $("result").hidden = false;
  $("answer-heading").hidden = false;
  $("answer").hidden = false;
  $("answer").replaceChildren();
  $("answer").classList.add("provisional");
  $("citations").replaceChildren();
  $("sources-heading").hidden = true;
  $("note-list").replaceChildren();
  $("notes").hidden = true;
  $("disagreement-list").replaceChildren();
  $("disagreement").hidden = true;
  $("verdict").hidden = true;
  $("urgent").hidden = true;
  $("urgent-message").textContent = "";
}

// An emergency, self-harm or a request for means: the guidance first and on its own, nothing else.
function renderUrgent(safety) {
  if (!safety || !safety.urgent) return;
  $("urgent-message").textContent = safety.message || "";
  $("urgent").hidden = false;
  $("answer-heading").hidden = true;
  $("answer").hidden = true;
}

async function ask(question, judge) {
  reset();
  const headers = { "Content-Type": "application/json", Accept: "text/event-stream" };
  const key = $("api-key").value.trim();
  if (key) headers["X-API-Key"] = key;
  const response = await fetch("/ask/stream", { method: "POST", headers, body: JSON.stringify({ question, judge }) });
  if (!response.ok) {
    let reason = response.statusText;
    try { const body = await response.json(); reason = body.reason || body.error || reason; } catch (e) { /* not JSON */ }
    if (response.status === 401) { $("key-box").open = true; }
    throw new Error("The service refused the question (" + response.status + "): " + reason);
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let provisional = "";
  let answer = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let name = "message";
      let data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) name = line.slice(7);
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      if (!data) continue;
      const payload = JSON.parse(data);
      if (name === "safety") renderUrgent(payload);
      else if (name === "stage" && payload.status === "started") $("status").textContent = STAGES[payload.stage] || "";
      else if (name === "token") {
        provisional += payload.delta;
        $("answer").textContent = provisional;
      } else if (name === "answer") {
        answer = payload;
        if (payload.mode === "urgent") { $("answer").textContent = payload.answer; continue; }
        $("answer").classList.remove("provisional");
        renderAnswer($("answer"), payload.answer, payload.citations || []);
        renderCitations(payload.citations || []);
        renderVerdict(payload.evidence_verdict, payload.mode);
      } else if (name === "judge") renderJudge(payload);
      else if (name === "done") {
        if (payload.evidence_verdict && answer) renderVerdict(payload.evidence_verdict, answer.mode);
        addNotes("note-list", "notes", (payload.warnings || []).map(plainWarning));
        $("status").textContent = "Done.";
      } else if (name === "error") {
        throw new Error((payload.error || "The answer failed") + (payload.reason ? ": " + payload.reason : ""));
      }
    }
  }
  if (!answer) throw new Error("The answer stopped before it was complete. Please try again.");
}

function start() {
  const form = $("ask-form");
  const box = $("question");
  const button = $("ask-button");
  const stored = sessionStorage.getItem("cometa-api-key");
  if (stored) $("api-key").value = stored;
  $("api-key").addEventListener("change", (e) => sessionStorage.setItem("cometa-api-key", e.target.value));
  box.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); form.requestSubmit(); }
  });
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const question = box.value.trim();
    if (!question || button.disabled) return;
    button.disabled = true;
    $("status").textContent = "Asking…";
    try {
      await ask(question, $("judge").checked);
    } catch (err) {
      $("status").textContent = err.message;
      $("answer").classList.remove("provisional");
    } finally {
      button.disabled = false;
      $("answer-heading").focus({ preventScroll: true });
    }
  });
  box.focus();
}

document.addEventListener("DOMContentLoaded", start);
