// ace dashboard: keeps the server-rendered page live over /api/v1/events. No framework, no build step.
"use strict";
(() => {
  const $ = (sel) => document.querySelector(sel);
  const runs = new Map(); // id -> run (the API's view)
  let selected = null, tab = "screen", statusFilter = null, screenTimer = null, timelineFor = null;
  const order = { waiting_input: 0, failed: 1, active: 2, cancelled: 3, done: 4 };
  const live = (id) => runs.get(id) && (runs.get(id).status === "active" || runs.get(id).status === "waiting_input");

  function age(t) {
    const s = Math.max(0, (Date.now() - new Date(t).getTime()) / 1000);
    if (s < 60) return Math.floor(s) + "s";
    if (s < 3600) return Math.floor(s / 60) + "m";
    if (s < 172800) return Math.floor(s / 3600) + "h";
    return Math.floor(s / 86400) + "d";
  }
  const cls = (s) => "st-" + String(s).replace(/_/g, "-");
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else if (k === "text") e.textContent = v; else e.setAttribute(k, v);
    }
    for (const k of kids) if (k != null) e.append(k);
    return e;
  }
  async function api(path, opts) {
    const res = await fetch(path, Object.assign({ credentials: "same-origin", headers: { Accept: "application/json" } }, opts));
    if (res.status === 401) { location.href = "/login"; throw new Error("sign in again"); }
    return res;
  }

  // The runs table.
  function row(r) {
    const pr = r.pr_url ? el("a", { href: r.pr_url, target: "_blank", rel: "noopener", text: "#" + (r.pr_number || "PR") }) : "–";
    const issue = el("td", { class: "issue" }, r.repo, el("b", { text: "#" + r.issue }),
      r.attempt > 1 ? el("span", { class: "attempt", text: "try " + r.attempt }) : null);
    const tr = el("tr", { class: "run " + cls(r.status), "data-id": r.id },
      issue, el("td", { class: "title", text: r.title || "", title: r.title || "" }), el("td", { text: r.agent }),
      el("td", { class: "step", text: r.step + (r.agent_line ? " · " + r.agent_line : "") }), el("td", {}, el("span", { class: "badge " + cls(r.status), text: r.status.replace(/_/g, "-") }),
        r.reach ? el("span", { class: "badge reach", text: "model unreachable", title: r.reach }) : null),
      el("td", { class: "num", text: r.nudges }), el("td", { class: "age", "data-t": r.updated_at, text: age(r.updated_at) }), el("td", {}, pr));
    if (r.id === selected) tr.classList.add("sel");
    return tr;
  }
  function visible(r) {
    if (statusFilter && r.status !== statusFilter) return false;
    const q = $("#filter").value.trim().toLowerCase();
    if (!q) return true;
    return [r.repo + "#" + r.issue, r.title, r.agent, r.step, r.status, r.branch].join(" ").toLowerCase().includes(q);
  }
  function latest() {
    const byIssue = new Map();
    for (const r of runs.values()) {
      const k = r.repo + "#" + r.issue, b = byIssue.get(k);
      if (!b || r.attempt > b.attempt) byIssue.set(k, r);
    }
    return [...byIssue.values()];
  }
  function renderTable(flashId) {
    const list = latest();
    const counts = {};
    for (const r of list) counts[r.status] = (counts[r.status] || 0) + 1;
    document.querySelectorAll("#counts .pill").forEach((p) => {
      p.querySelector("b").textContent = counts[p.dataset.status] || 0;
      p.classList.toggle("on", p.dataset.status === statusFilter);
    });
    list.sort((a, b) => (order[a.status] ?? 9) - (order[b.status] ?? 9) || new Date(b.updated_at) - new Date(a.updated_at));
    const body = $("#runs tbody");
    const rows = list.filter(visible).map(row);
    if (!rows.length) rows.push(el("tr", { class: "empty" }, el("td", { colspan: 8, text: runs.size ? "No run matches the filter." : "No runs yet. Label an issue, or start one with ace run --issue N." })));
    body.replaceChildren(...rows);
    if (flashId != null) { const tr = body.querySelector(`tr[data-id="${flashId}"]`); if (tr) tr.classList.add("flash"); }
    const bad = counts.waiting_input || 0;
    document.title = (bad ? `(${bad}) ` : "") + "ace · runs";
  }

  // The selected run.
  function renderDetail() {
    const r = runs.get(selected);
    $("#detail").hidden = !r; $("#placeholder").hidden = !!r;
    if (!r) return;
    $("#d-title").textContent = `${r.repo}#${r.issue}  ${r.title || ""}`;
    const pr = $("#d-pr");
    pr.hidden = !r.pr_url; if (r.pr_url) { pr.href = r.pr_url; pr.textContent = `PR #${r.pr_number || ""} ↗`; }
    const meta = [["status", r.status], ["step", r.step], ["agent", r.agent + (r.model ? " · " + r.model : "")], ["runner", r.runner],
      ["attempt", r.attempt], ["nudges", r.nudges], ["restarts", r.restarts], ["branch", r.branch], ["host", r.host], ["sandbox", r.sandbox], ["model", r.reach], ["started", age(r.created_at) + " ago"]];
    $("#d-meta").replaceChildren(...meta.filter(([, v]) => v !== "" && v != null).map(([k, v]) => el("div", {}, el("dt", { text: k }), el("dd", { text: String(v) }))));
    const q = $("#d-question");
    const text = r.status === "waiting_input" ? (r.question || "The agent needs a human: answer below or on the issue.") : (r.status === "failed" ? r.error : "");
    q.hidden = !text; q.textContent = text || ""; q.classList.toggle("error", r.status === "failed");
    const on = live(r.id);
    for (const b of ["#nudge", "#stop", "#send-text", "#send-form button"]) $(b).disabled = !on;
  }
  function select(id, push) {
    selected = id; timelineFor = null;
    if (push) history.replaceState(null, "", "#run-" + id);
    document.querySelectorAll("tr.run").forEach((tr) => tr.classList.toggle("sel", Number(tr.dataset.id) === id));
    $("#d-msg").textContent = "";
    renderDetail(); refreshTab(true);
  }
  async function refreshScreen() {
    if (selected == null) return;
    const id = selected, res = await api(`/api/v1/runs/${id}/screen`), text = await res.text();
    if (id !== selected) return;
    let note = "";
    if (res.ok) note = res.headers.get("X-Ace-Screen") === "last" ? "The agent is gone: its last screen." : "Live · refreshed " + new Date().toLocaleTimeString();
    else { try { note = JSON.parse(text).error; } catch { note = text; } }
    $("#screen-note").textContent = note;
    $("#screen").textContent = res.ok ? text.replace(/\s+$/, "") : "";
  }
  async function refreshTimeline() {
    const id = selected, res = await api(`/api/v1/runs/${id}`);
    if (!res.ok || id !== selected) return;
    const d = await res.json();
    runs.set(d.id, Object.assign({}, d, { events: undefined }));
    timelineFor = id;
    $("#timeline").replaceChildren(...d.events.slice().reverse().map(eventItem));
  }
  function eventItem(e) {
    return el("li", {}, el("time", { text: new Date(e.time).toLocaleTimeString(), title: e.time }),
      el("span", { class: "kind k-" + e.kind, text: e.kind }), el("span", { class: "text" }, e.step ? el("small", { text: e.step }) : null, e.message || ""));
  }
  async function refreshTranscript() {
    const id = selected, res = await api(`/api/v1/runs/${id}/transcript`), text = await res.text();
    if (id !== selected) return;
    const pre = $("#transcript"), atEnd = pre.parentElement.scrollTop + pre.parentElement.clientHeight >= pre.parentElement.scrollHeight - 20;
    if (res.ok) pre.textContent = text; else { try { pre.textContent = JSON.parse(text).error; } catch { pre.textContent = text; } }
    if (atEnd) pre.parentElement.scrollTop = pre.parentElement.scrollHeight;
  }
  function refreshTab(now) {
    clearInterval(screenTimer); screenTimer = null;
    if (selected == null) return;
    const work = { screen: refreshScreen, timeline: refreshTimeline, transcript: refreshTranscript }[tab];
    if (now) work().catch(() => {});
    // A live agent's screen and transcript change without run events: look every 2s while they are shown.
    if (tab !== "timeline" && live(selected)) screenTimer = setInterval(() => work().catch(() => {}), 2000);
  }

  // Actions.
  async function act(action, body) {
    const r = runs.get(selected), msg = $("#d-msg");
    msg.className = "msg"; msg.textContent = action + "…";
    const opts = { method: "POST" };
    if (body != null) { opts.body = JSON.stringify({ text: body }); opts.headers = { "Content-Type": "application/json", Accept: "application/json" }; }
    const res = await api(`/api/v1/runs/${r.id}/${action}`, opts);
    const data = await res.json().catch(() => ({}));
    if (!res.ok) { msg.className = "msg err"; msg.textContent = data.error || res.statusText; return false; }
    msg.className = "msg ok"; msg.textContent = { stop: "Stopped.", nudge: "Nudged.", send: "Sent." }[action];
    if (data.id) { runs.set(data.id, data); renderTable(); renderDetail(); }
    refreshTab(true);
    return true;
  }
  $("#send-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const t = $("#send-text").value;
    if (t.trim() && await act("send", t)) $("#send-text").value = "";
  });
  $("#nudge").addEventListener("click", () => act("nudge"));
  $("#stop").addEventListener("click", () => {
    const r = runs.get(selected);
    if (confirm(`Stop the agent of ${r.repo}#${r.issue}? Its run is cancelled; the working copy is kept.`)) act("stop");
  });
  document.querySelectorAll(".tabs button").forEach((b) => b.addEventListener("click", () => {
    tab = b.dataset.tab;
    document.querySelectorAll(".tabs button").forEach((x) => x.classList.toggle("on", x === b));
    for (const t of ["screen", "timeline", "transcript"]) $("#tab-" + t).hidden = t !== tab;
    refreshTab(true);
  }));
  $("#runs tbody").addEventListener("click", (ev) => {
    if (ev.target.closest("a")) return;
    const tr = ev.target.closest("tr.run");
    if (tr) select(Number(tr.dataset.id), true);
  });
  $("#filter").addEventListener("input", () => renderTable());
  document.querySelectorAll("#counts .pill").forEach((p) => p.addEventListener("click", () => {
    statusFilter = statusFilter === p.dataset.status ? null : p.dataset.status; renderTable();
  }));

  // Live updates.
  async function load() {
    const res = await api("/api/v1/runs?all=1");
    if (!res.ok) return;
    const d = await res.json();
    runs.clear();
    for (const r of d.runs) runs.set(r.id, r);
    renderTable(); renderDetail();
  }
  function update(r, kind) {
    const prev = runs.get(r.id);
    runs.set(r.id, r);
    renderTable(prev && prev.status === r.status ? null : r.id);
    if (r.id === selected) {
      const wasLive = screenTimer != null;
      renderDetail();
      if (tab === "timeline" || kind) refreshTab(true); else if (wasLive !== live(r.id)) refreshTab(false);
    }
  }
  function connect() {
    const es = new EventSource("/api/v1/events");
    const state = (s, t) => { $("#live").dataset.state = s; $("#live-text").textContent = t; };
    es.onopen = () => { state("live", "live"); load().catch(() => {}); loadEvals().catch(() => {}); };
    es.onerror = () => state("down", "reconnecting…");
    es.addEventListener("run", (ev) => update(JSON.parse(ev.data)));
    es.addEventListener("progress", (ev) => { const p = JSON.parse(ev.data); if (p.run) update(p.run, p.kind); });
  }
  // Agents on this repository: each repository's latest eval, an agent a row, its solve rate a bar with the 95%
  // interval as an error bar. Hidden while no repository has an eval.
  const svgNS = "http://www.w3.org/2000/svg";
  function svg(tag, attrs) {
    const e = document.createElementNS(svgNS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    return e;
  }
  const pct = (x) => Math.round(100 * x) + "%";
  function secs(s) {
    if (s < 60) return s.toFixed(1) + "s";
    const m = Math.floor(s / 60);
    return m + "m" + String(Math.round(s - 60 * m)).padStart(2, "0") + "s";
  }
  function rateChart(a) {
    const w = 160, h = 14, x = (v) => (w * Math.min(1, Math.max(0, v))).toFixed(1);
    const g = svg("svg", { class: "chart", width: w, height: h, viewBox: `0 0 ${w} ${h}`, role: "img",
      "aria-label": `solve rate ${pct(a.solve_rate)}, 95% interval ${pct(a.solve_rate_low)} to ${pct(a.solve_rate_high)}` });
    g.append(svg("rect", { class: "track", x: 0, y: 2, width: w, height: h - 4 }),
      svg("rect", { class: "bar", x: 0, y: 2, width: x(a.solve_rate), height: h - 4 }),
      svg("line", { class: "err", x1: x(a.solve_rate_low), x2: x(a.solve_rate_high), y1: h / 2, y2: h / 2 }),
      svg("line", { class: "err lo", x1: x(a.solve_rate_low), x2: x(a.solve_rate_low), y1: 1, y2: h - 1 }),
      svg("line", { class: "err hi", x1: x(a.solve_rate_high), x2: x(a.solve_rate_high), y1: 1, y2: h - 1 }));
    return g;
  }
  function agentRow(a) {
    const versions = [a.cli_versions, a.models].filter(Boolean).map((l) => l.join(" ")).join(" · ");
    return el("tr", { class: "agent", "data-agent": a.agent },
      el("td", { class: "name", text: a.agent, title: versions }), el("td", {}, rateChart(a)),
      el("td", { class: "num rate", text: `${pct(a.solve_rate)} (${pct(a.solve_rate_low)}–${pct(a.solve_rate_high)})` }),
      el("td", { class: "num solved", text: `${a.solved}/${a.runs}` }),
      el("td", { class: "num per-solved", text: a.cost_per_solved_usd == null ? "—" : "$" + a.cost_per_solved_usd.toFixed(4) }),
      el("td", { class: "num median", text: secs(a.median_seconds) }));
  }
  async function loadEvals() {
    const res = await api("/api/v1/evals");
    if (!res.ok) return;
    const d = await res.json();
    const body = $("#evals-body");
    body.replaceChildren(...d.evals.map((e) => el("div", { class: "eval", "data-repo": e.repo },
      el("h4", { text: e.repo + " " }, el("small", { text: `${e.runs} runs of ${(e.tasks || []).length} tasks · ${age(e.scored_at)} ago` })),
      el("table", {}, el("thead", {}, el("tr", {}, ...["Agent", "Solve rate", "Rate (95% interval)", "Solved", "Per solved", "Median time"].map((t) => el("th", { text: t })))),
        el("tbody", {}, ...(e.agents || []).map(agentRow))))));
    $("#evals").hidden = d.evals.length === 0;
    $("#evals").dataset.loaded = "true";
  }

  setInterval(() => document.querySelectorAll("td.age").forEach((td) => { td.textContent = age(td.dataset.t); }), 5000);

  load().then(() => {
    const m = location.hash.match(/^#run-(\d+)$/);
    if (m && runs.has(Number(m[1]))) select(Number(m[1]), false);
  }).catch(() => {});
  loadEvals().catch(() => {});
  connect();
})();
