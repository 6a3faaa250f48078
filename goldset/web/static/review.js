// goldmine review: every key on the page, one POST per action, the panel re-rendered by the server.
(function () {
  "use strict";
  const panel = document.getElementById("panel");
  const searchBox = document.getElementById("search");
  const searchInput = document.getElementById("search-input");
  const searchResults = document.getElementById("search-results");
  let focus = null; // chunk id of the candidate the grade keys apply to

  function filters() {
    const out = {};
    new URLSearchParams(panel.dataset.qs || "").forEach((v, k) => { out[k] = v; });
    return out;
  }

  function item() { return document.getElementById("item"); }

  // Ids are JSON in their attributes: HTML itself would turn a NUL into U+FFFD and a CR into a
  // LF, and the grade would go to a chunk the item does not hold.
  function chunkOf(el) { return JSON.parse(el.dataset.chunk); }

  function cards() { return Array.from(panel.querySelectorAll(".cand")); }

  function setFocus(chunk) {
    focus = chunk;
    cards().forEach((c) => c.classList.toggle("focused", chunkOf(c) === chunk));
    const el = cards().find((c) => chunkOf(c) === chunk);
    if (el) el.scrollIntoView({ block: "nearest" });
  }

  // The page's CSP allows no style attribute: the progress bar's width is set from here.
  function showProgress() {
    const fill = panel.querySelector(".progress-fill");
    if (fill) fill.style.width = (Number(fill.dataset.pct) || 0) + "%";
  }

  // The footer offers m only where a model suggests a grade (the panel says so).
  function showModelKey() {
    const it = item();
    document.getElementById("key-m").hidden = !(it && it.dataset.suggested === "1");
  }

  // A refusal the server words in JSON ({"error": ...}), else its text.
  async function reason(resp) {
    const text = await resp.text();
    if (!(resp.headers.get("Content-Type") || "").startsWith("application/json")) return text;
    try { return JSON.parse(text).error || text; } catch (err) { return text; }
  }

  function initFocus() {
    const current = panel.querySelector(".cand.current") || panel.querySelector(".cand.undecided");
    const first = current || cards()[0];
    setFocus(first ? chunkOf(first) : null);
  }

  function moveFocus(step) {
    const list = cards();
    if (!list.length) return;
    let i = list.findIndex((c) => chunkOf(c) === focus);
    i = Math.max(0, Math.min(list.length - 1, (i < 0 ? 0 : i + step)));
    setFocus(chunkOf(list[i]));
  }

  // A note typed and not saved (its write refused because the item changed, or a grade given
  // meanwhile) stays in its box while the panel shows the same query: drawing the panel again
  // emptied the box, and the note was lost.
  function noteDraft() {
    const input = document.getElementById("note-input");
    const it = item();
    if (!input || !it || !input.value.trim()) return null;
    return { query: it.dataset.queryId, text: input.value };
  }

  function keepDraft(draft, action) {
    const input = document.getElementById("note-input");
    const it = item();
    if (!draft || !input || !it || it.dataset.queryId !== draft.query) return;
    const saved = action === "note" && it.dataset.stale !== "1";
    if (!saved) input.value = draft.text;
  }

  async function act(action, extra) {
    const it = item();
    const draft = noteDraft();
    const body = Object.assign({ action: action }, filters(), extra || {});
    if (it) { body.query_id = JSON.parse(it.dataset.queryId); body.version = it.dataset.version; }
    let resp;
    try {
      resp = await fetch("/api/act", {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-Goldmine": "1" },
        body: JSON.stringify(body),
      });
    } catch (err) {
      showError("the goldmine server does not answer: is it still running?");
      return;
    }
    const type = resp.headers.get("Content-Type") || "";
    if (resp.status === 403 || !type.startsWith("text/html")) { showError(await reason(resp)); return; }
    panel.innerHTML = await resp.text();
    keepDraft(draft, action);
    showProgress();
    showModelKey();
    initFocus();
    // How many actions the page has shown the answer to (scripts and tests wait on it).
    document.body.dataset.acts = String(Number(document.body.dataset.acts || 0) + 1);
  }

  function showError(text) {
    const div = document.createElement("div");
    div.className = "error";
    div.setAttribute("role", "alert");
    div.textContent = text;
    panel.prepend(div);
  }

  function grade(g) {
    if (!focus) return;
    act("grade", { chunk_id: focus, grade: g });
  }

  function openSearch() {
    searchBox.hidden = false;
    searchInput.focus();
    searchInput.select();
  }

  function closeSearch() {
    searchBox.hidden = true;
    searchResults.innerHTML = "";
    searchInput.blur();
  }

  async function runSearch() {
    const q = searchInput.value.trim();
    if (!q) return;
    const resp = await fetch("/api/search?" + new URLSearchParams({ q: q }), { credentials: "same-origin" });
    searchResults.innerHTML = await resp.text();
    const firstAdd = searchResults.querySelector("button.add");
    if (firstAdd) firstAdd.focus();
  }

  searchInput.addEventListener("keydown", (e) => {
    if (e.key === "Enter") { e.preventDefault(); runSearch(); }
    if (e.key === "Escape") { e.preventDefault(); closeSearch(); }
  });
  document.getElementById("search-close").addEventListener("click", closeSearch);
  searchResults.addEventListener("click", (e) => {
    const btn = e.target.closest("button.add");
    if (!btn) return;
    act("add", { chunk_id: chunkOf(btn) }).then(() => { closeSearch(); setFocus(chunkOf(btn)); });
  });
  searchResults.addEventListener("keydown", (e) => {
    if (e.key === "Escape") { e.preventDefault(); closeSearch(); }
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      const buttons = Array.from(searchResults.querySelectorAll("button.add"));
      const i = buttons.indexOf(document.activeElement);
      const j = Math.max(0, Math.min(buttons.length - 1, i + (e.key === "ArrowDown" ? 1 : -1)));
      if (buttons[j]) { e.preventDefault(); buttons[j].focus(); }
    }
  });

  panel.addEventListener("click", (e) => {
    const gradeBtn = e.target.closest("button[data-grade]");
    const card = e.target.closest(".cand");
    if (card) setFocus(chunkOf(card));
    if (gradeBtn) { grade(Number(gradeBtn.dataset.grade)); return; }
    const actionBtn = e.target.closest("button[data-action]");
    if (actionBtn) act(actionBtn.dataset.action);
  });

  panel.addEventListener("submit", (e) => {
    if (e.target.id !== "note-form") return;
    e.preventDefault();
    const input = document.getElementById("note-input");
    const text = input.value.trim();
    if (text) act("note", { note: text });
    input.blur();
  });

  const rater = document.getElementById("rater");
  rater.addEventListener("keydown", async (e) => {
    if (e.key !== "Enter") return;
    e.preventDefault();
    const resp = await fetch("/api/rater", {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-Goldmine": "1" },
      body: JSON.stringify({ rater: rater.value.trim() }),
    });
    if (resp.ok) location.reload(); else showError(await reason(resp));
  });

  // The queue's filters apply when one changes (no inline handler: the CSP forbids them).
  document.getElementById("filters").addEventListener("change", (e) => {
    if (e.target.form) e.target.form.submit();
  });
  // An error panel's "try again" (in the panel or the search results).
  document.addEventListener("click", (e) => {
    if (e.target.closest("button[data-reload]")) location.reload();
  });

  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const typing = e.target.closest && e.target.closest("input, textarea, select");
    if (typing) {
      if (e.key === "Escape") e.target.blur();
      return;
    }
    if (!searchBox.hidden && searchResults.contains(e.target)) return;
    const it = item();
    const stale = it && it.dataset.stale === "1";
    if (stale && e.key !== "r") return;
    const keys = {
      "2": () => grade(2), "1": () => grade(1), "0": () => grade(0),
      "x": () => act("rest"),
      "m": () => { if (focus) act("accept", { chunk_id: focus }); },
      "n": () => act("no-answer"), "a": () => act("no-answer"),
      "?": () => act("unsure"),
      "s": () => act("skip"), "k": () => act("skip"),
      "u": () => act("undo"),
      "r": () => act(stale ? "reload" : "reject"),
      "/": openSearch,
      "e": () => { const n = document.getElementById("note-input"); if (n) n.focus(); },
      "ArrowDown": () => moveFocus(1), "j": () => moveFocus(1),
      "ArrowUp": () => moveFocus(-1),
      "Escape": closeSearch,
    };
    const fn = keys[e.key];
    if (!fn) return;
    e.preventDefault();
    if (!it && !["u", "/", "Escape"].includes(e.key)) return;
    fn();
  });

  showProgress();
  initFocus();
})();
