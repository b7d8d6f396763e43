// distsync web: the page. Vanilla JavaScript, no build step, nothing fetched from elsewhere.
// Every decision about what happens next is the server's simulator's (crates/sim Session): this
// file only sends the learner's choices and draws the views it gets back.
"use strict";

const $ = (sel) => document.querySelector(sel);
const el = (tag, attrs = {}, ...children) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null) e.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
};
const SVGNS = "http://www.w3.org/2000/svg";
const svgEl = (tag, attrs = {}) => {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
};

// ---------------------------------------------------------------- state of the page
const app = {
  algorithms: [],      // from /api/algorithms
  scenario: null,      // the scenario as JSON (what the form edits)
  session: null,       // the id of the open session
  view: null,          // its last view
  toml: "",            // the TOML the session was made from
  running: false,
  logFrom: null,       // null: follow the tail of the log
  prevStates: {},      // node -> JSON of its state at the previous view (to mark changes)
  violationsSeen: 0,
  svgTimer: null,
  quiz: { pending: null, seen: new Set(), scores: {} },
};
window.distsyncApp = app; // for the browser tests and the curious

// Every request goes through the engine (assets/engine.js): the server, or the same API running
// in this browser (the static build).
async function api(method, path, body) {
  const r = await distsyncEngine.request(method, path, body === undefined ? undefined : JSON.stringify(body));
  const data = r.contentType.includes("json") && r.body ? JSON.parse(r.body) : r.body;
  if (r.status >= 400) {
    const msg = data && data.error ? data.error : `${r.status} ${path}`;
    throw new Error(msg);
  }
  return data;
}

function fmtNs(ns) {
  if (ns === null || ns === undefined) return "";
  if (ns === 0) return "0";
  if (ns % 1e9 === 0) return ns / 1e9 + "s";
  if (ns >= 1e9) return (ns / 1e9).toFixed(3).replace(/\.?0+$/, "") + "s";
  if (ns >= 1e6) return (ns / 1e6).toFixed(3).replace(/\.?0+$/, "") + "ms";
  if (ns >= 1e3) return (ns / 1e3).toFixed(3).replace(/\.?0+$/, "") + "us";
  return ns + "ns";
}
function parseDur(text) {
  const m = /^\s*([0-9.]+)\s*(ns|us|µs|ms|s|m|h)?\s*$/.exec(text || "");
  if (!m) return null;
  const k = { ns: 1, us: 1e3, "µs": 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 }[m[2] || "ms"];
  return Math.round(parseFloat(m[1]) * k);
}

// ---------------------------------------------------------------- set up: the form
const PARAMS = {
  mutex: [["coordinator", "number", "central: the lock manager"], ["holder", "number", "token algorithms: first holder"],
    ["quorums", "select:plane,grid", "Maekawa quorums"]],
  election: [["answer_timeout", "dur", "T: wait for an answer"], ["coordinator_timeout", "dur", "T': wait for the result"],
    ["detect", "select:none,timeout", "failure detector"], ["heartbeat", "dur", "heartbeat period"],
    ["heartbeat_timeout", "dur", "silence before suspecting"]],
  "clock-sync": [["sync_interval", "dur", "synchronize every"], ["server", "number", "Cristian's time server"],
    ["samples", "number", "exchanges per sync"], ["min_delay", "dur", "smallest one-way delay"],
    ["max_drift_ppm", "number", "drift bound (ppm)"], ["threshold", "dur", "Berkeley threshold"],
    ["master_election", "text", "Berkeley master election"]],
  multicast: [],
  snapshot: [],
};

function entry() {
  return app.algorithms.find((a) => a.name === (app.scenario && app.scenario.algorithm)) || app.algorithms[0];
}

function renderParams() {
  const fam = entry() ? entry().family : "mutex";
  const box = $("#params");
  box.textContent = "";
  for (const [name, kind, help] of PARAMS[fam] || []) {
    const v = app.scenario[name];
    let input;
    if (kind.startsWith("select:")) {
      input = el("select", { id: "p-" + name }, el("option", { value: "" }, "(default)"),
        ...kind.slice(7).split(",").map((o) => el("option", { value: o }, o)));
      input.value = v ?? "";
    } else {
      input = el("input", { id: "p-" + name, type: kind === "number" ? "number" : "text", size: 6,
        placeholder: "default" });
      input.value = v ?? "";
    }
    input.addEventListener("change", () => {
      const raw = input.value.trim();
      if (raw === "") delete app.scenario[name];
      else app.scenario[name] = kind === "number" ? Number(raw) : raw;
      scenarioChanged();
    });
    box.append(el("label", { title: help }, name.replace(/_/g, " ") + " ", input));
  }
  $("#fs-params").hidden = !(PARAMS[fam] || []).length;
  $("#fs-workload").hidden = fam !== "mutex";
}

function fillForm() {
  const s = app.scenario;
  const e = entry();
  $("#algorithm").value = s.algorithm;
  $("#algo-desc").textContent = e ? `${e.family}${e.fifo ? ", needs FIFO links" : ""}: ${e.description}` : "";
  $("#algo-title").textContent = s.algorithm;
  $("#nodes").value = s.nodes ?? (s.ids ? s.ids.length : "");
  $("#ids").value = s.ids ? s.ids.join(", ") : "";
  $("#seed").value = s.seed ?? 1;
  $("#until").value = s.until ?? "";
  const net = s.network || {};
  const d = net.delay ?? "1ms";
  if (typeof d === "string") { $("#delay-kind").value = "const"; $("#delay-a").value = d; }
  else if (d.uniform) { $("#delay-kind").value = "uniform"; $("#delay-a").value = d.uniform[0]; $("#delay-b").value = d.uniform[1]; }
  else if (d.exponential) { $("#delay-kind").value = "exponential"; $("#delay-a").value = d.exponential; }
  $("#delay-b-label").hidden = $("#delay-kind").value !== "uniform";
  $("#fifo").checked = !!net.fifo;
  $("#loss").value = net.loss ?? 0;
  $("#duplicate").value = net.duplicate ?? 0;
  const w = s.workload || { kind: "none" };
  $("#wl-kind").value = w.kind;
  $("#wl-requests").value = w.requests ?? "";
  $("#wl-cs").value = w.cs ?? "10ms";
  $("#wl-rate").value = w.rate ?? "";
  renderParams();
  renderEvents();
}

const ACTIONS = ["request", "crash", "recover", "elect", "sync", "snapshot", "multicast", "partition", "heal"];
function renderEvents() {
  const tb = $("#events tbody");
  tb.textContent = "";
  (app.scenario.event || []).forEach((ev, i) => {
    const action = ACTIONS.find((a) => ev[a] !== undefined && ev[a] !== null) || "?";
    const arg = action === "heal" ? "" : JSON.stringify(ev[action]);
    tb.append(el("tr", {}, el("td", {}, ev.at), el("td", {}, action), el("td", {}, arg),
      el("td", {}, el("button", { class: "small", title: "remove", onclick: () => {
        app.scenario.event.splice(i, 1); scenarioChanged(); } }, "✕"))));
  });
}

function readForm() {
  const s = app.scenario;
  const ids = $("#ids").value.trim();
  if (ids) { s.ids = ids.split(/[\s,]+/).filter(Boolean).map(Number); delete s.nodes; }
  else { s.nodes = Number($("#nodes").value); delete s.ids; }
  s.seed = Number($("#seed").value || 1);
  const until = $("#until").value.trim();
  if (until) s.until = until; else delete s.until;
  s.network = s.network || {};
  const kind = $("#delay-kind").value;
  const a = $("#delay-a").value.trim(), b = $("#delay-b").value.trim();
  s.network.delay = kind === "const" ? a : kind === "uniform" ? { uniform: [a, b] } : { exponential: a };
  $("#delay-b-label").hidden = kind !== "uniform";
  s.network.fifo = $("#fifo").checked;
  s.network.loss = Number($("#loss").value || 0);
  s.network.duplicate = Number($("#duplicate").value || 0);
  if (entry() && entry().family === "mutex") {
    const w = { kind: $("#wl-kind").value, cs: $("#wl-cs").value.trim() || "10ms" };
    const req = $("#wl-requests").value.trim();
    if (req !== "") w.requests = Number(req);
    const rate = $("#wl-rate").value.trim();
    if (w.kind === "poisson" && rate !== "") w.rate = Number(rate);
    const gap = s.workload && s.workload.gap;
    if (gap) w.gap = gap;
    s.workload = w;
  }
}

let tomlSeq = 0;
async function scenarioChanged() {
  readForm();
  renderEvents();
  const seq = ++tomlSeq;
  try {
    const r = await api("POST", "/api/scenario/toml", { scenario: app.scenario });
    if (seq !== tomlSeq) return;
    setToml(r.toml);
    $("#setup-error").textContent = "";
    markDrift();
  } catch (e) {
    $("#setup-error").textContent = e.message;
  }
}

// The form and the run never drift apart silently: when the scenario the form writes is not
// the one the run was started from, the page says so until Start run.
function markDrift() {
  const drift = app.session !== null && !!app.toml && $("#toml").value.trim() !== app.toml.trim() && !app.checkLoaded;
  $("#drift").hidden = !drift;
}

function setToml(text) {
  $("#toml").value = text;
  $("#dl-toml").href = "data:application/toml;charset=utf-8," + encodeURIComponent(text);
  $("#dl-toml").download = (app.scenario && app.scenario.algorithm ? app.scenario.algorithm : "scenario") + ".toml";
}

// TOML text (typed, opened or dropped) -> the form.
async function loadToml(text, origin) {
  setToml(text);
  try {
    const r = await api("POST", "/api/scenario/parse", { toml: text, origin: origin || "scenario" });
    app.scenario = r.scenario;
    fillForm();
    $("#setup-error").textContent = "";
    return true;
  } catch (e) {
    $("#setup-error").textContent = e.message;
    return false;
  }
}

// Picking an algorithm loads its starting scenario and starts a run at once.
async function pickAlgorithm(name) {
  const a = app.algorithms.find((x) => x.name === name);
  if (a && (await loadToml(a.toml, name + ".toml"))) await startSession(a.toml, [], name + ".toml");
}

// ---------------------------------------------------------------- sessions
async function startSession(toml, choices, origin) {
  const body = { toml, origin: origin || "scenario" };
  if (choices && choices.length) body.choices = choices;
  stopRunning();
  try {
    const r = await api("POST", "/api/session", body);
    app.session = r.session;
    app.toml = toml;
    app.origin = origin || "scenario";
    // A new run: the quiz asks afresh (its score stays with the scenario).
    app.quiz.seen = new Set();
    app.quiz.pending = null;
    $("#quiz-box").hidden = true;
    delete $("#quiz-box").dataset.right;
    quizUnhide();
    app.logFrom = null;
    app.prevStates = {};
    app.violationsSeen = 0;
    $("#announce").textContent = "";
    $("#setup-error").textContent = "";
    $("#dl-trace").href = `/api/session/${app.session}/trace`;
    $("#dl-svg").href = `/api/session/${app.session}/svg`;
    app.checkLoaded = false;
    closeCompare();
    show(r.view);
    markDrift();
    return true;
  } catch (e) {
    $("#setup-error").textContent = e.message;
    setStatus("error: " + e.message);
    return false;
  }
}

function windowQuery() {
  return app.logFrom === null ? "" : `?log_from=${app.logFrom}&log_to=${app.logFrom + 300}`;
}

async function act(path, body) {
  if (app.session === null) return null;
  try {
    const r = await api("POST", `/api/session/${app.session}/${path}${windowQuery()}`, body);
    show(r);
    return r;
  } catch (e) {
    stopRunning();
    if (/no session/.test(e.message) && app.toml) {
      setStatus("the server closed this session; replaying it from the start");
    } else {
      setStatus("refused: " + e.message);
    }
    return null;
  }
}

function choose(choice) {
  return act("apply", choice);
}

// ---------------------------------------------------------------- see: drawing a view
function setStatus(text) { $("#status").textContent = text; }

function show(v) {
  const prev = app.view;
  app.view = v;
  app.views = (app.views || 0) + 1; // how many views were drawn (the browser tests wait on it)
  const next = (v.pending || [])[0];
  const ahead = v.steps_recorded > v.step ? ` · ${v.steps_recorded - v.step} recorded choices ahead: Step follows them` : "";
  const over = v.final_checks ? ` · the run is over (${ENDED[v.final_checks] || v.final_checks}): final checks ${(v.violations || []).length ? "found the violations above" : "passed"}` : "";
  const quiet = ahead ? ahead : over ? over : v.quiet ? " · quiet (nothing pending)" : next && next.time_ns > v.time_ns ? ` · next event at ${fmtNs(next.time_ns)}` : "";
  setStatus(`step ${v.step} · time ${fmtNs(v.time_ns)} · ${v.log_total ?? (v.log || []).length} events${quiet}`);
  $("#goto-step").placeholder = v.step;
  drawTopology(v);
  drawPending(v);
  const prevStep = prev ? prev.step : null;
  drawStates(v, prev);
  drawRule(v, prevStep);
  drawBranches(v);
  drawLog(v);
  announce(v);
  showWarnings(v);
  drawLesson(v);
  scheduleSvg();
  scheduleOutcome();
  $("#back").disabled = v.step === 0;
  $("#reset").disabled = v.step === 0;
  $("#step").disabled = (!!v.quiet && !(v.steps_recorded > v.step)) || $("#manual").checked;
  $("#forward").disabled = !(v.steps_recorded > v.step);
}

// How a run ends (the View's `final_checks`, the report's `ended_by`).
const ENDED = { idle: "nothing is left to happen", done: "the workload is done", horizon: "the horizon is reached" };

function nodeIds(v) { return (v.processes || []).map((p) => p.id); }

// The drawing's size and its processes' radius: the drawing grows with the processes, and the
// circles shrink, so that 64 processes on a ring neither overlap nor run off the picture.
function geometry(v) {
  const n = Math.max(1, (v.processes || []).length);
  const scale = Math.max(1, Math.sqrt(n / 12));
  const W = Math.round(520 * scale), H = Math.round(420 * scale);
  const R = Math.min(W, H) / 2 - 50;
  const r = Math.max(9, Math.min(22, (Math.PI * R) / n - 3));
  return { W, H, R, r };
}

function layout(v) {
  const ids = nodeIds(v);
  const { W, H, R } = geometry(v);
  const cx = W / 2, cy = H / 2 + 6;
  const pos = {};
  if (v.layout === "tree" && v.edges && v.edges.length) {
    // Layers by distance from the first process (the tree's root as the scenario lists it).
    const adj = {};
    ids.forEach((i) => (adj[i] = []));
    for (const [a, b] of v.edges) { (adj[a] = adj[a] || []).push(b); (adj[b] = adj[b] || []).push(a); }
    const root = ids[0];
    const depth = { [root]: 0 }, order = [root];
    for (let k = 0; k < order.length; k++) for (const n of adj[order[k]] || []) if (!(n in depth)) { depth[n] = depth[order[k]] + 1; order.push(n); }
    ids.forEach((i) => { if (!(i in depth)) { depth[i] = 0; order.push(i); } });
    const layers = {};
    order.forEach((i) => (layers[depth[i]] = layers[depth[i]] || []).push(i));
    const nl = Object.keys(layers).length;
    Object.entries(layers).forEach(([d, list]) => list.forEach((i, k) => {
      pos[i] = { x: (W * (k + 1)) / (list.length + 1), y: 50 + ((H - 100) * Number(d)) / Math.max(1, nl - 1) };
    }));
  } else {
    ids.forEach((id, k) => {
      const a = -Math.PI / 2 + (2 * Math.PI * k) / ids.length;
      pos[id] = { x: cx + R * Math.cos(a), y: cy + R * Math.sin(a) };
    });
  }
  return pos;
}

function short(value, max = 26) {
  let t = typeof value === "string" ? value : JSON.stringify(value);
  if (t === undefined) t = "";
  return t.length > max ? t.slice(0, max - 1) + "…" : t;
}

function violationNodes(v) {
  const s = new Set();
  for (const x of v.violations || []) for (const n of x.nodes || []) s.add(n);
  return s;
}

// The class of a badge: the leader's colour only at the leader itself ("leader 6" at P6), not
// at every process that names it.
function badgeClass(b, id) {
  if (!b) return "";
  if (/in cs|critical/i.test(b)) return "in-cs";
  if (/token/i.test(b)) return "holds-token";
  if (/^leader (\d+)$/.test(b)) return Number(/\d+/.exec(b)[0]) === id ? "leader" : "";
  if (/crash|down/i.test(b)) return "crashed";
  return "";
}

// Processes and messages of the drawing are buttons for the keyboard too: Tab reaches them,
// Enter (or space) opens their menu, whose first item takes the focus; Escape closes it.
function focusable(g, label, open) {
  g.setAttribute("tabindex", "0");
  g.setAttribute("role", "button");
  g.setAttribute("aria-label", label);
  g.addEventListener("keydown", (ev) => {
    if (ev.key !== "Enter" && ev.key !== " ") return;
    ev.preventDefault();
    ev.stopPropagation();
    const r = g.getBoundingClientRect();
    open({ clientX: r.left + r.width / 2, clientY: r.top + r.height / 2 });
    const first = document.querySelector("#node-menu:not([hidden]) button, #msg-menu button");
    if (first) first.focus();
  });
}
function drawTopology(v) {
  const svg = $("#topo");
  // The element of the drawing that has the focus keeps it across the redraw.
  const had = document.activeElement && svg.contains(document.activeElement)
    ? (document.activeElement.dataset.node !== undefined ? `g.t-hit[data-node="${document.activeElement.dataset.node}"]` : `g.t-msg[data-id="${document.activeElement.dataset.id}"]`) : null;
  svg.textContent = "";
  const defs = svgEl("defs");
  const marker = svgEl("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto-start-reverse" });
  marker.append(svgEl("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#9aa6b8" }));
  defs.append(marker);
  svg.append(defs);
  const geo = geometry(v);
  svg.setAttribute("viewBox", `0 0 ${geo.W} ${geo.H}`);
  const many = (v.processes || []).length > 24;
  svg.classList.toggle("t-many", many);
  // Many processes: the drawing takes the whole width, the Pending table goes below it.
  $("#topo-panel").parentNode.classList.toggle("many", many);
  const pos = layout(v);
  // The label boxes placed so far: a label that would overlap one is moved further out.
  const placed = Object.values(pos).map((q) => ({ x: q.x - geo.r, y: q.y - geo.r, w: 2 * geo.r, h: 2 * geo.r }));
  const overlaps = (b) => placed.some((o) => b.x < o.x + o.w && o.x < b.x + b.w && b.y < o.y + o.h && o.y < b.y + b.h);
  const ids = nodeIds(v);
  // Links: the tree's edges, the ring's successor links, or nothing drawn for "everyone talks".
  const links = [];
  if (v.layout === "tree" && v.edges) for (const [a, b] of v.edges) links.push([a, b]);
  else if (v.layout === "ring") ids.forEach((id, k) => links.push([id, ids[(k + 1) % ids.length]]));
  // Raymond's holder pointers: each process's arrow towards the token, on the tree's edges.
  const holders = new Map((v.processes || []).filter((p) => p.holder !== undefined).map((p) => [p.id, p.holder]));
  for (const [a, b] of links) {
    if (!pos[a] || !pos[b]) continue;
    const dir = holders.get(a) === b ? [a, b] : holders.get(b) === a ? [b, a] : null;
    if (dir) {
      const [f, t] = [pos[dir[0]], pos[dir[1]]];
      const dx = t.x - f.x, dy = t.y - f.y, len = Math.hypot(dx, dy) || 1;
      svg.append(svgEl("line", { class: "t-link t-holder", "data-from": dir[0], "data-to": dir[1], "marker-end": "url(#arrow)",
        x1: f.x + (dx / len) * 24, y1: f.y + (dy / len) * 24, x2: t.x - (dx / len) * 26, y2: t.y - (dy / len) * 26 }));
    } else {
      svg.append(svgEl("line", { class: "t-link", x1: pos[a].x, y1: pos[a].y, x2: pos[b].x, y2: pos[b].y }));
    }
  }
  // Messages in flight on their links, stacked when several share one.
  const perLink = {};
  const inflight = shownPending(v).filter((p) => p.kind === "deliver" && pos[p.from] !== undefined && pos[p.to] !== undefined);
  for (const p of inflight) {
    const key = p.from + ">" + p.to;
    const k = (perLink[key] = (perLink[key] || 0) + 1) - 1;
    const a = pos[p.from], b = pos[p.to];
    const dx = b.x - a.x, dy = b.y - a.y, len = Math.hypot(dx, dy) || 1;
    const nx = -dy / len, ny = dx / len; // offset to the right of the direction of travel
    let off = 9 + 16 * k;
    const t = 0.55;
    const g = svgEl("g", { class: "t-msg", "data-id": p.id });
    g.append(svgEl("line", { class: "t-msg-line", x1: a.x + nx * 6, y1: a.y + ny * 6, x2: a.x + dx * 0.8 + nx * 6, y2: a.y + dy * 0.8 + ny * 6 }));
    const label = p.what || `${p.msg_kind || "msg"} ${short(payloadOf(p.msg), 16)}`.trim();
    const w = 6.2 * label.length + 10;
    let x = a.x + dx * t + nx * off, y = a.y + dy * t + ny * off;
    // Move the label along the link, then out along the normal (either side), until it
    // overlaps none placed.
    search: for (let ring = 0; ring < 12 && overlaps({ x: x - w / 2, y: y - 8, w, h: 16 }); ring++) {
      for (const side of [1, -1]) {
        for (const tt of [0.55, 0.45, 0.65, 0.35, 0.75, 0.25, 0.85]) {
          const o = side * (off + 17 * ring);
          const cx = a.x + dx * tt + nx * o, cy = a.y + dy * tt + ny * o;
          if (!overlaps({ x: cx - w / 2, y: cy - 8, w, h: 16 })) { x = cx; y = cy; break search; }
        }
      }
    }
    placed.push({ x: x - w / 2, y: y - 8, w, h: 16 });
    const text = svgEl("text", { x, y });
    text.textContent = label;
    g.append(svgEl("rect", { x: x - w / 2, y: y - 8, width: w, height: 16 }));
    g.append(text);
    const title = svgEl("title");
    title.textContent = `${p.label || label} (arrives ${fmtNs(p.time_ns)}): click to deliver, drop or duplicate`;
    g.append(title);
    g.addEventListener("click", (ev) => { ev.stopPropagation(); messageMenu(p, ev); });
    focusable(g, `message ${p.label || label}, arrives ${fmtNs(p.time_ns)}: deliver, drop or duplicate`, (ev) => messageMenu(p, ev));
    svg.append(g);
  }
  const bad = violationNodes(v);
  for (const p of v.processes || []) {
    const q = pos[p.id];
    const cls = ["t-node"];
    if (!p.alive) cls.push("t-down");
    const bc = badgeClass(p.badge, p.id);
    if (bc === "in-cs" || bc === "holds-token") cls.push("t-cs");
    if (bc === "leader") cls.push("t-leader");
    if (bad.has(p.id)) cls.push("t-bad");
    const g = svgEl("g", { class: cls.join(" "), "data-node": p.id });
    // The process itself (its circle and name) is the button; its badge and token are drawn
    // beside it and said in its accessible name.
    const hit = svgEl("g", { class: "t-hit", "data-node": p.id });
    hit.append(svgEl("circle", { cx: q.x, cy: q.y, r: geo.r }));
    const t = svgEl("text", { x: q.x, y: q.y });
    t.textContent = "P" + p.id;
    hit.append(t);
    g.append(hit);
    if (p.holds_token) {
      // The token, drawn at the process that holds it.
      const tk = svgEl("g", { class: "t-token" });
      tk.append(svgEl("circle", { cx: q.x + 20, cy: q.y - 18, r: 9 }));
      const tt = svgEl("text", { x: q.x + 20, y: q.y - 18 });
      tt.textContent = "T";
      tk.append(tt);
      const title = svgEl("title");
      title.textContent = `P${p.id} holds the token`;
      tk.append(title);
      g.append(tk);
    }
    if (p.badge || !p.alive) {
      const b = svgEl("text", { class: "t-badge", x: q.x, y: q.y + geo.r + 10 });
      b.textContent = p.alive ? p.badge : "crashed";
      g.append(b);
    }
    g.addEventListener("click", (ev) => { ev.stopPropagation(); nodeMenu(p, ev); });
    // The accessible name starts with what the drawing shows ("P1 requesting"), then says more.
    focusable(hit, `P${p.id}${p.alive ? (p.badge ? " " + p.badge : "") : " crashed"}${p.holds_token ? ", holds the token" : ""}: open the process's menu`, (ev) => nodeMenu(p, ev));
    svg.append(g);
  }
  if (had) { const again = svg.querySelector(had); if (again) again.focus(); }
}

function payloadOf(msg) {
  // A message is serialized as "Kind" or {"Kind": payload}: show the payload.
  if (msg && typeof msg === "object" && !Array.isArray(msg)) {
    const keys = Object.keys(msg);
    if (keys.length === 1) return msg[keys[0]];
  }
  return typeof msg === "string" ? "" : msg;
}

function closeMenus() { $("#node-menu").hidden = true; const m = $("#msg-menu"); if (m) m.remove(); }
document.addEventListener("click", closeMenus);
document.addEventListener("keydown", (ev) => {
  if (ev.key === "Escape" && (!$("#node-menu").hidden || $("#msg-menu"))) { closeMenus(); ev.preventDefault(); }
});

function menuAt(menu, ev) {
  const box = $("#topo-panel").getBoundingClientRect();
  menu.style.left = ev.clientX - box.left + 8 + "px";
  menu.style.top = ev.clientY - box.top + 8 + "px";
}

function nodeMenu(p, ev) {
  closeMenus();
  const m = $("#node-menu");
  m.textContent = "";
  const fam = app.view.family;
  const item = (label, choice) => m.append(el("button", { "data-do": choice.do, onclick: () => { closeMenus(); choose(choice); } }, label));
  m.append(el("strong", {}, "P" + p.id));
  if (p.alive) item("Crash P" + p.id, { do: "crash", node: p.id });
  else item("Recover P" + p.id, { do: "recover", node: p.id });
  if (fam === "mutex") item(`P${p.id} requests the critical section`, { do: "request", node: p.id });
  if (fam === "election") item(`P${p.id} starts an election`, { do: "elect", node: p.id });
  // Each family's own inputs (the session refuses, saying why, one that does not apply here,
  // e.g. a sync asked of Cristian's time server).
  if (p.alive && fam === "clock-sync") item(`P${p.id} synchronizes now`, { do: "sync", node: p.id });
  if (p.alive && fam === "multicast") item(`P${p.id} multicasts now`, { do: "multicast", node: p.id });
  if (p.alive && fam === "snapshot") item(`P${p.id} starts a snapshot now`, { do: "snapshot", node: p.id });
  for (const d of p.inputs || []) item(d.label, { do: "input", node: p.id, input: d.input });
  m.hidden = false;
  menuAt(m, ev);
}

function messageMenu(p, ev) {
  closeMenus();
  const m = el("div", { id: "msg-menu" },
    el("strong", {}, p.label || `${p.msg_kind} ${p.from}→${p.to}`), el("br"),
    el("button", { "data-do": "event", onclick: () => { closeMenus(); choose({ do: "event", id: p.id }); } }, "Deliver now"), " ",
    el("button", { "data-do": "drop", onclick: () => { closeMenus(); choose({ do: "drop", id: p.id }); } }, "Drop"), " ",
    el("button", { "data-do": "duplicate", onclick: () => { closeMenus(); choose({ do: "duplicate", id: p.id }); } }, "Duplicate"));
  m.addEventListener("click", (e) => e.stopPropagation());
  $("#topo-panel").append(m);
  menuAt(m, ev);
}

function pendingText(p) {
  if (p.label) return p.label;
  if (p.kind === "deliver") return `${p.msg_kind} ${p.from}→${p.to}`;
  return `${p.kind} at ${p.node}`;
}

// The reliable ring link's own traffic (acks, retransmission timers) is hidden unless the
// learner asks to see the link layer.
function showLink() { return $("#show-link").checked; }
function shownPending(v) { return (v.pending || []).filter((p) => !p.link || showLink()); }

function drawPending(v) {
  const tb = $("#pending tbody");
  tb.textContent = "";
  const list = shownPending(v);
  const hidden = (v.pending || []).length - list.length;
  $("#link-switch").hidden = !(v.processes || []).some((p) => p.link_state);
  $("#link-hidden").textContent = hidden ? `(${hidden} hidden)` : "";
  // The earliest (time, seq) is what Step would apply.
  list.forEach((p, k) => {
    const buttons = [el("button", { class: "go", "data-id": p.id, title: "make this happen now", onclick: () => choose({ do: "event", id: p.id }) },
      p.kind === "deliver" ? "deliver" : p.kind === "timer" ? "fire" : "now")];
    if (p.kind === "deliver") {
      buttons.push(el("button", { class: "drop", "data-id": p.id, onclick: () => choose({ do: "drop", id: p.id }) }, "drop"));
      buttons.push(el("button", { class: "dup", "data-id": p.id, onclick: () => choose({ do: "duplicate", id: p.id }) }, "dup"));
    }
    tb.append(el("tr", { class: k === 0 ? "next" : "", "data-id": p.id, "data-kind": p.kind, "data-msg-kind": p.msg_kind || "",
      "data-from": p.from ?? "", "data-to": p.to ?? "", "data-node": p.node ?? "" },
      el("td", {}, fmtNs(p.time_ns)), el("td", {}, pendingText(p)), el("td", {}, ...buttons)));
  });
  if (!list.length) tb.append(el("tr", {}, el("td", { colspan: 3, class: "hint" }, hidden ? "only the link layer's traffic is pending" : "nothing pending: the run is quiet")));
}

// A value of a process's state, readably: scalars as text, maps and arrays as small tables.
function renderValue(v, depth = 0) {
  if (v === null || v === undefined) return el("span", { class: "null" }, "–");
  if (typeof v !== "object") return document.createTextNode(String(v));
  if (Array.isArray(v)) {
    if (!v.length) return el("span", { class: "null" }, "[]");
    if (v.every((x) => x === null || typeof x !== "object")) {
      const text = "[" + v.map((x) => (x === null ? "–" : x)).join(", ") + "]";
      if (v.length <= 16) return document.createTextNode(text);
      // A long array (one entry per process at 64 processes) is summarised, the whole on demand.
      const trues = v.filter((x) => x === true).length;
      const what = v.every((x) => typeof x === "boolean") ? `${v.length} values, ${trues} true` : `${v.length} values: [${v.slice(0, 6).join(", ")}, …]`;
      return el("details", { class: "long" }, el("summary", {}, what), text);
    }
    if (depth > 3) return document.createTextNode(short(v, 60));
    // An array of records with the same keys: one row each.
    const keys = v.every((x) => x && typeof x === "object" && !Array.isArray(x)) ? [...new Set(v.flatMap(Object.keys))] : null;
    if (keys && keys.length <= 6) {
      return el("table", { class: "kv" }, el("tr", {}, ...keys.map((k) => el("th", {}, k))),
        ...v.map((x) => el("tr", {}, ...keys.map((k) => el("td", {}, renderValue(x[k], depth + 1))))));
    }
    return el("table", { class: "kv" }, ...v.map((x, i) => el("tr", {}, el("td", { class: "k" }, i), el("td", {}, renderValue(x, depth + 1)))));
  }
  const keys = Object.keys(v);
  if (!keys.length) return el("span", { class: "null" }, "{}");
  if (depth > 3) return document.createTextNode(short(v, 60));
  return el("table", { class: "kv" }, ...keys.map((k) => el("tr", {}, el("td", { class: "k" }, k), el("td", {}, renderValue(v[k], depth + 1)))));
}

function drawStates(v, prev) {
  const box = $("#states");
  box.textContent = "";
  const bad = violationNodes(v);
  for (const p of v.processes || []) {
    const json = JSON.stringify(p.state);
    const changed = app.prevStates[p.id] !== undefined && app.prevStates[p.id] !== json;
    const cls = ["proc-card"];
    if (!p.alive) cls.push("p-down");
    if (bad.has(p.id)) cls.push("bad");
    if (changed) cls.push("changed");
    const badge = p.alive ? p.badge : "crashed";
    const link = p.link_state && showLink()
      ? el("details", { class: "link-state" }, el("summary", {}, "the ring link under it"), renderValue(p.link_state)) : null;
    box.append(el("div", { class: cls.join(" "), "data-node": p.id },
      el("h3", {}, "P" + p.id, badge ? el("span", { class: "badge " + badgeClass(badge, p.id) }, badge) : null),
      el("div", { class: "state" }, renderValue(p.state)), link));
  }
  app.prevStateObjs = app.prevStateObjs || {};
  app.ruleBefore = app.prevStateObjs;
  app.prevStates = {};
  app.prevStateObjs = {};
  for (const p of v.processes || []) {
    app.prevStates[p.id] = JSON.stringify(p.state);
    app.prevStateObjs[p.id] = p.state;
  }
}

// Branching history: going back and choosing differently keeps the old future as a branch
// (the View's `branches`); switching to one replays it up to where it parts from this run.
function drawBranches(v) {
  const box = $("#branches");
  box.textContent = "";
  const bs = v.branches || [];
  box.hidden = !bs.length;
  if (!bs.length) return;
  box.append(el("span", { class: "hint" }, "branches: "));
  box.append(el("span", { class: "branch current" }, `this run (${v.steps_recorded} steps)`));
  for (const b of bs) {
    box.append(el("button", { class: "small branch", "data-branch": b.index,
      title: `the future left at step ${b.fork}: switch to it (it replays to step ${b.fork}; Redo follows it)`,
      onclick: () => act("branch", { index: b.index }) }, `branch ${b.index + 1}: parts at step ${b.fork}, ${b.steps} steps`));
    box.append(el("button", { class: "small compare", "data-compare": b.index,
      title: `this run and branch ${b.index + 1} side by side, from the step where they part`,
      "aria-label": `compare this run with branch ${b.index + 1}`,
      onclick: () => openCompare("current", String(b.index)) }, "compare"));
  }
  // The comparison open is of the runs as they were: read it again when they change (once
  // they stop changing: a Run does not replay both at every step).
  if (app.compare && app.compare.key !== compareKey(v)) {
    clearTimeout(app.compareTimer);
    app.compareTimer = setTimeout(loadCompare, 400);
  }
}

// Two branches side by side (GET /api/session/ID/compare?a=&b=): the run shown and a branch,
// or two branches, each replayed to its end by the server without switching to it; aligned at
// the step where they part, what each did there marked, the outcome each reached, and each
// one's diagram from the fork on over the same window of time.
function compareKey(v) { return JSON.stringify([v.steps_recorded, v.branches || []]); }
function openCompare(a, b) {
  app.compare = { a, b, key: null };
  loadCompare();
}
function closeCompare() {
  app.compare = null;
  clearTimeout(app.compareTimer);
  const box = $("#compare");
  box.hidden = true;
  box.textContent = "";
}
async function loadCompare() {
  const c = app.compare, v = app.view;
  if (!c || !v || app.session === null) return;
  const bs = v.branches || [];
  if (!bs.length) { closeCompare(); return; }
  // A branch gone (switched to: the run shown took its place) falls back to the first.
  const valid = (x) => x === "current" || Number(x) < bs.length;
  if (!valid(c.a)) c.a = "current";
  if (!valid(c.b) || c.b === c.a) c.b = c.a === "0" ? (bs.length > 1 ? "1" : "current") : "0";
  c.key = compareKey(v);
  let r;
  try {
    r = await api("GET", `/api/session/${app.session}/compare?a=${c.a}&b=${c.b}`);
  } catch (e) {
    $("#compare").hidden = false;
    $("#compare").textContent = "compare: " + e.message;
    return;
  }
  if (app.compare !== c) return;
  drawCompare(r, bs);
}
function drawCompare(r, bs) {
  const box = $("#compare");
  box.textContent = "";
  box.hidden = false;
  const c = app.compare;
  const pick = (which) => {
    const s = el("select", { id: "compare-" + which, "aria-label": which === "a" ? "left run" : "right run" },
      el("option", { value: "current" }, "this run"),
      ...bs.map((b) => el("option", { value: String(b.index) }, `branch ${b.index + 1}`)));
    s.value = c[which];
    s.addEventListener("change", () => { c[which] = s.value; if (c.a === c.b) c[which === "a" ? "b" : "a"] = c.a === "current" ? "0" : "current"; loadCompare(); });
    return s;
  };
  box.append(el("h2", {}, "Side by side ",
    el("span", { class: "hint" }, `(both are the same up to step ${r.fork}, at ${fmtNs(r.fork_ns)}; the diagrams start there${r.cut ? ` and stop at ${fmtNs(r.to_ns)}, the first 200 events after it: switch to a branch to see the rest` : ""})`)),
  el("div", { class: "row" }, el("label", {}, "left ", pick("a")), el("label", {}, "right ", pick("b")),
    el("button", { class: "small", id: "compare-close", onclick: closeCompare }, "close")));
  const cols = el("div", { class: "cmp-cols" });
  r.sides.forEach((s, k) => {
    const prefix = `cmp${k}-`;
    const diagram = el("div", { class: "cmp-diagram" });
    // The two diagrams' markers keep ids of their own.
    diagram.innerHTML = s.svg.replace(/id="/g, `id="${prefix}`).replace(/url\(#/g, `url(#${prefix}`);
    // The first difference marked in the diagram too: its events name their seq.
    const seqs = new Set(s.first_seqs || []);
    for (const t of diagram.querySelectorAll("title")) {
      const m = /· seq (\d+) ·/.exec(t.textContent);
      if (m && seqs.has(Number(m[1]))) t.parentNode.classList.add("first-mark");
    }
    const outcome = el("ul", { class: "cmp-outcome" },
      ...s.outcome.map((line) => el("li", { class: /^VIOLATION/.test(line) ? "bad-text" : "" }, line)));
    const badges = el("p", { class: "cmp-badges hint" }, (s.processes || []).map((p) =>
      `P${p.id}${p.alive ? (p.badge ? " " + p.badge : "") : " crashed"}`).join(" · "));
    const log = el("table", { class: "cmp-log" }, ...s.log.map((e) =>
      el("tr", { class: e.first ? "first" : "" }, el("td", {}, e.step), el("td", {}, fmtNs(e.time_ns)), el("td", {}, e.label))));
    cols.append(el("section", { class: "cmp-side", "data-side": k === 0 ? "a" : "b", "aria-label": s.name },
      el("h3", {}, `${s.name} `, el("span", { class: "hint" }, `${s.steps} steps, ends at ${fmtNs(s.time_ns)}`)),
      el("p", { class: "cmp-first" }, el("strong", {}, `At step ${r.fork + 1}: `), el("mark", {}, s.first)),
      el("h4", {}, "Outcome"), outcome, badges,
      el("h4", {}, "Space-time diagram from the fork"), diagram,
      el("details", {}, el("summary", {}, `what happens after the fork (${s.log.length}${s.log.length >= 200 ? "+" : ""} events)`), log)));
  });
  box.append(cols);
}

// The rule panel: the rule of the algorithm's file that the process applied at this step, in
// the file's words (the View's `rule`, its sentences read from the file by the server), with
// the fields the rule names and those the step changed marked in the process's card.
function drawRule(v, prevStep) {
  const box = $("#rule-box");
  box.textContent = "";
  const r = v.rule;
  if (!r || !r.texts || !r.texts.length) {
    box.hidden = !v.rule_file;
    if (v.rule_file) box.append(el("p", { class: "hint" }, `Step ${v.step}: no rule of ${v.rule_file} applied (${v.step ? "a crash, a message ignored, the link's own traffic or the workload" : "the start"}).`));
    return;
  }
  box.hidden = false;
  const before = app.ruleBefore && app.ruleBefore[r.node];
  const now = (v.processes || []).find((p) => p.id === r.node);
  // Changed fields: only when this view is the step right after the one drawn before.
  const changed = prevStep === v.step - 1 && before && now && now.state
    ? Object.keys(now.state).filter((k) => JSON.stringify(before[k]) !== JSON.stringify(now.state[k])) : [];
  const reads = [...new Set(r.texts.flatMap((t) => t.reads))];
  box.append(el("h2", {}, `Step ${v.step}: P${r.node} applied rule ${r.texts.map((t) => t.rule).join(", ")} `, el("span", { class: "hint" }, `of ${r.file}`)));
  // The file's sentence, its `field` names as code.
  const words = (text) => text.split("`").map((part, i) => (i % 2 ? el("code", {}, part) : part));
  for (const t of r.texts) box.append(el("p", { class: "rule-text", "data-rule": t.rule }, el("b", {}, t.rule + ". "), ...words(t.text)));
  box.append(el("p", { class: "hint" },
    reads.length ? `fields the rule names: ${reads.join(", ")}` : "the rule names no field of the state", " · ",
    changed.length ? `changed by this step: ${changed.join(", ")}` : prevStep === v.step - 1 ? "no field changed" : "",
  ));
  const card = document.querySelector(`#states .proc-card[data-node="${r.node}"]`);
  if (!card) return;
  card.classList.add("rule-node");
  for (const tr of card.querySelectorAll(":scope > .state > table.kv > tbody > tr, :scope > .state > table.kv > tr")) {
    const k = tr.querySelector("td.k");
    if (!k) continue;
    if (reads.includes(k.textContent)) tr.classList.add("rule-read");
    if (changed.includes(k.textContent)) tr.classList.add("rule-changed");
  }
}

function drawLog(v) {
  const tb = $("#log tbody");
  tb.textContent = "";
  const badSeqs = new Set();
  for (const x of v.violations || []) for (const s of x.events || []) badSeqs.add(s);
  const causeSeqs = causeEvents(v);
  const rows = (v.log || []).filter((e) => !e.link || showLink());
  // Steps that wrote no event (a scripted event turned into a pending input...) get a line too.
  const silent = [...(v.silent_steps || [])];
  const silentRow = (x) => tb.append(el("tr", { class: "ev-silent", "data-step": x.step },
    el("td", {}, x.step), el("td", {}, ""), el("td", {}, ""), el("td", { class: "hint" }, x.label), el("td", {}, ""), el("td", {}, "")));
  for (const e of rows) {
    while (silent.length && silent[0].before <= e.seq) silentRow(silent.shift());
    const what = e.label || e.event;
    const vec = Array.isArray(e.vector) ? "[" + e.vector.join(",") + "]" : "";
    tb.append(el("tr", { class: (badSeqs.has(e.seq) ? "bad " : causeSeqs.has(e.seq) ? "cause " : "") + "ev-" + e.event, "data-step": e.step, "data-seq": e.seq },
      el("td", {}, e.step), el("td", {}, fmtNs(e.time_ns)), el("td", {}, e.node !== undefined && e.node !== null ? "P" + e.node : ""),
      el("td", {}, what), el("td", {}, e.lamport ?? ""), el("td", { class: "vec" }, vec)));
  }
  for (const x of silent) silentRow(x);
  if (app.logFrom === null) { const w = $("#log-wrap"); w.scrollTop = w.scrollHeight; }
  $("#log-earlier").disabled = !(v.log_from > 0);
}

function describe(x) {
  return `${x.property}: ${x.detail}`;
}

function announce(v) {
  const vs = v.violations || [];
  const box = $("#announce");
  box.textContent = "";
  if (!vs.length) { app.violationsSeen = 0; return; }
  for (const x of vs) {
    const c = x.cause;
    // Say why: the cause in words, its events marked in the log and the diagram, and a way
    // back to just before it (goto the step before its first decisive event).
    const why = c ? el("div", { class: "cause" }, el("strong", {}, "Why: "), c.text,
      c.back_to !== null && c.back_to !== undefined && c.back_to < v.step
        ? el("button", { class: "back-before", type: "button", onclick: () => act("goto", { step: c.back_to }) },
          `◀ back to just before it (step ${c.back_to})`) : null) : null;
    box.append(el("div", { class: "violation" }, "⚠ " + describe(x) + (x.time_ns !== undefined ? ` (at ${fmtNs(x.time_ns)})` : ""), why));
  }
  if (vs.length > app.violationsSeen) stopRunning();
  app.violationsSeen = vs.length;
}

// How the scenario is set up outside its algorithm's assumptions (the report's warnings, as
// `distsync run` prints them): shown for the whole run, apart from the violations.
function showWarnings(v) {
  const box = $("#assumptions");
  box.textContent = "";
  for (const w of v.warnings || []) box.append(el("div", {}, "⚑ " + w));
}

// The space-time diagram of the run so far, drawn by the viz crate, for the log's window.
function scheduleSvg() {
  if (app.svgTimer) return;
  app.svgTimer = setTimeout(loadSvg, app.running ? 600 : 30);
}
async function loadSvg() {
  app.svgTimer = null;
  app.svgLoading = true;
  try { await loadSvgNow(); } finally { app.svgLoading = false; }
}
async function loadSvgNow() {
  if (app.session === null || !app.view) return;
  const v = app.view;
  const first = (v.log || [])[0];
  let q = "";
  if (first && v.log_from > 0) q = `?from_seq=${v.log_from}`;
  $("#svg-window").textContent = q ? `(from ${fmtNs(first.time_ns)}, the window of the log)` : "";
  try {
    const text = await api("GET", `/api/session/${app.session}/svg${q}`);
    if (app.view !== v) return;
    $("#diagram").innerHTML = text;
    const d = $("#diagram");
    d.scrollLeft = d.scrollWidth;
    highlightSvg(v);
  } catch (e) {
    $("#diagram").textContent = "(no diagram: " + e.message + ")";
  }
}
// The events and messages of the violations' causes (`cause.events`, `cause.messages`).
function causeEvents(v) {
  const s = new Set();
  for (const x of v.violations || []) for (const q of (x.cause && x.cause.events) || []) s.add(q);
  return s;
}
function causeMessages(v) {
  const s = new Set();
  for (const x of v.violations || []) for (const q of (x.cause && x.cause.messages) || []) s.add(q);
  return s;
}
function highlightSvg(v) {
  const bad = violationNodes(v);
  if (!bad.size) return;
  // The cause's events (their dots name their seq) and messages (their arrows name their id).
  const seqs = causeEvents(v), msgs = causeMessages(v);
  for (const t of document.querySelectorAll("#diagram title")) {
    const text = t.textContent;
    const m = /· seq (\d+) ·/.exec(text);
    const k = /^\S+ #(\d+) P/.exec(text);
    if ((m && seqs.has(Number(m[1]))) || (k && msgs.has(Number(k[1])))) t.parentNode.classList.add("cause-mark");
  }
  for (const g of document.querySelectorAll("#diagram .process")) {
    const label = g.querySelector(".label");
    if (label && bad.has(Number(label.textContent.replace(/^P/, "")))) label.setAttribute("fill", "#d1242f");
  }
}

// ---------------------------------------------------------------- the outcome panel
// Each family's outcome for the run so far, from the report `distsync run --json` gives
// (GET /api/session/ID/report): clock values and offsets, the assembled snapshots with their
// channels and total, the delivery order at each process and the replicas' balances, and the
// mutual-exclusion metrics beside the notes' formula (ORACLES.md).
const FORMULAS = {
  // [light, heavy]: a function of N (and K, the quorum size) or words.
  "lamport-mutex": [(n) => [3 * (n - 1), "3(N-1)"], (n) => [3 * (n - 1), "3(N-1)"]],
  "ricart-agrawala": [(n) => [2 * (n - 1), "2(N-1)"], (n) => [2 * (n - 1), "2(N-1)"]],
  central: [() => [3, "3"], () => [4, "4 with the queued reply"]],
  "token-ring": [() => [null, "unbounded (the token circulates)"], () => [1, "1"]],
  "suzuki-kasami": [(n) => [n, "N, or 0 if holding the idle token"], (n) => [n, "N"]],
  "ricart-agrawala-token": [(n) => [n, "N, or 0 if holding the token"], (n) => [n, "N"]],
  raymond: [() => [null, "2 x the distance to the holder"], (n) => [4 * (n - 1) / n, "about 4(N-1)/N"]],
  maekawa: [(n, k) => [3 * (k - 1), "3(K-1)"], (n, k) => [5 * (k - 1), "up to 5(K-1)"]],
  "maekawa-basic": [(n, k) => [3 * (k - 1), "3(K-1)"], (n, k) => [3 * (k - 1), "3(K-1)"]],
  singhal: [(n) => [n - 1, "N-1 on average"], (n) => [2 * (n - 1), "2(N-1)"]],
  "singhal-token": [(n) => [n / 2, "about N/2"], (n) => [n, "about N"]],
  "majority-vote": [(n) => [2 * (n - 1), "about 2(N-1) plus the release"], () => [null, "not stated"]],
};
function formula(v, load) {
  const f = FORMULAS[v.algorithm];
  if (!f) return null;
  const n = (v.processes || []).length;
  // Maekawa's quorum size K: the request set in the first process's card.
  const p0 = (v.processes || [])[0];
  const k = p0 && p0.state && Array.isArray(p0.state.request_set) ? p0.state.request_set.length : null;
  if (k === null && /maekawa/.test(v.algorithm)) return null;
  const [value, words] = f[load === "saturated" ? 1 : 0](n, k);
  return { value, words, load: load === "saturated" ? "heavy load" : "light load" };
}
function scheduleOutcome() {
  if (app.outcomeTimer) return;
  app.outcomeTimer = setTimeout(loadOutcome, app.running ? 800 : 60);
}
async function loadOutcome() {
  app.outcomeTimer = null;
  if (app.session === null || !app.view) return;
  const v = app.view;
  try {
    const r = await api("GET", `/api/session/${app.session}/report`);
    if (app.view !== v) return;
    drawOutcome(v, r);
  } catch (e) {
    $("#outcome").textContent = "(no outcome: " + e.message + ")";
  }
}
const kv = (rows) => el("table", { class: "kv outcome" }, ...rows.map(([k, ...cells]) => el("tr", {}, el("td", { class: "k" }, k), ...cells.map((c) => el("td", {}, c)))));
function drawOutcome(v, r) {
  const box = $("#outcome");
  box.textContent = "";
  box.dataset.family = v.family;
  if (r.mutex) {
    const m = r.mutex;
    const load = (app.scenario && app.scenario.workload && app.scenario.workload.kind) || "light";
    const f = formula(v, load);
    const measured = m.entries ? m.messages_per_entry.toFixed(2) : "–";
    box.append(kv([
      ["entries", String(m.entries)],
      ["messages per entry", el("strong", { id: "metric-mpe" }, measured),
        f ? `the notes (${f.load}): ${f.words}${f.value !== null ? " = " + (+f.value.toFixed(2)) : ""}` : ""],
      ["synchronization delay", m.sync_delay_ns.count ? fmtNs(Math.round(m.sync_delay_ns.mean)) + " mean" : "–", "the notes: T for most algorithms (2T central and Maekawa)"],
      ["response time", m.response_time_ns.count ? fmtNs(Math.round(m.response_time_ns.mean)) + " mean" : "–", "light load: 2T + E for Lamport and Ricart-Agrawala"],
      ["requests unserved", String(m.unserved_requests)],
    ]));
  }
  if (r.election) {
    const e = r.election;
    box.append(kv(Object.entries(e).filter(([, x]) => typeof x !== "object" || x === null).map(([k, x]) => [k.replace(/_/g, " "), String(x)])));
  }
  if (r.clock) {
    const c = r.clock;
    box.append(kv([
      ["rounds", String(c.rounds)], ["adjustments", String(c.adjustments)],
      ["largest skew now", fmtNs(c.max_skew_ns)], ["largest error now", fmtNs(c.max_error_ns)],
      ...(c.masters && c.masters.length ? [["masters", c.masters.map((x) => "P" + x).join(", ")]] : []),
    ]));
    box.append(el("table", { class: "kv outcome", id: "clock-values" },
      el("tr", {}, el("th", {}, "process"), el("th", {}, "clock minus true time")),
      ...(c.clocks || []).map((x) => el("tr", {}, el("td", {}, "P" + x.node),
        el("td", {}, (x.error_ns < 0 ? "−" : "+") + fmtNs(Math.abs(x.error_ns)))))));
  }
  if (r.multicast) {
    const m = r.multicast;
    box.append(kv([
      ["multicasts", String(m.multicasts)], ["deliveries", String(m.deliveries)],
      ["messages per multicast", m.messages_per_multicast.toFixed(2)],
      ["inversions (fifo, causal)", `${m.fifo_inversions}, ${m.causal_inversions}`],
      ["order disagreements", String(m.order_disagreements)],
    ]));
    const order = r.delivery_order || {};
    box.append(el("table", { class: "kv outcome", id: "delivery-order" },
      el("tr", {}, el("th", {}, "process"), el("th", {}, "delivered, in order"), ...(Object.keys(m.balances || {}).length ? [el("th", {}, "balance")] : [])),
      ...Object.keys(order).map((n) => el("tr", {}, el("td", {}, "P" + n), el("td", {}, order[n].join(" · ") || "–"),
        ...(Object.keys(m.balances || {}).length ? [el("td", {}, String(m.balances[n] ?? "–"))] : [])))));
  }
  // Every family: each process's Lamport clock and vector clock now (as the trace stamps them).
  const ps = (v.processes || []).filter((p) => p.lamport !== undefined && p.lamport !== null);
  if (ps.length) {
    box.append(el("details", { class: "outcome", id: "logical-clocks" }, el("summary", {}, "Lamport and vector clocks of each process"),
      el("table", { class: "kv" }, el("tr", {}, el("th", {}, "process"), el("th", {}, "Lamport"), el("th", {}, "vector")),
        ...ps.map((p) => el("tr", {}, el("td", {}, "P" + p.id), el("td", {}, String(p.lamport)),
          el("td", { class: "vec" }, Array.isArray(p.vector) ? "[" + p.vector.join(", ") + "]" : ""))))));
  }
  if (r.snapshot) {
    const s = r.snapshot;
    box.append(kv([["money in the system", String(s.money)], ["snapshots completed", `${s.completed} of ${s.snapshots.length}`], ["markers", String(s.markers)]]));
    for (const x of s.snapshots) {
      const states = Object.entries(x.states).map(([n, b]) => `P${n}: ${b}`).join(", ");
      const chans = x.channels.filter((c) => c.amounts.length).map((c) => `P${c.from}→P${c.to}: ${c.amounts.join(" + ")}`).join(", ");
      box.append(el("div", { class: "snapshot" },
        el("strong", {}, `snapshot ${x.number} of P${x.initiator}`), ` (started ${fmtNs(x.started_ns)}${x.completed_ns !== null && x.completed_ns !== undefined ? ", complete " + fmtNs(x.completed_ns) : ", not complete yet"}): `,
        "states ", states || "–", "; in the channels ", chans || "nothing",
        x.completed_ns !== null && x.completed_ns !== undefined ? el("span", { class: x.recorded_total === s.money ? "ok" : "bad-text" },
          ` · total ${x.recorded_total} against the bank's ${s.money}: ${x.recorded_total === s.money ? "conserved" : "NOT conserved"}`) : ""));
    }
  }
}

// ---------------------------------------------------------------- drive
const SPEEDS = [[1, "1 event/s"], [3, "3/s"], [10, "10/s"], [50, "50/s"], [300, "300/s"], [5000, "max"]];
function speed() { return SPEEDS[Number($("#speed").value)]; }
function stopRunning() {
  app.running = false;
  $("#run").textContent = "Run";
}
async function runLoop() {
  while (app.running) {
    const [perSec] = speed();
    const tick = perSec >= 10 ? 100 : 1000 / perSec;
    // With the quiz on, one event per request, so that no decisive event passes unasked.
    const limit = app.quiz.enabled ? 1 : Math.max(1, Math.round((perSec * tick) / 1000));
    const t0 = performance.now();
    if (app.quiz.enabled && (await quizGateOnce())) { stopRunning(); app.quiz.resume = true; return; }
    const v = app.view;
    // Recorded choices ahead (a counterexample, or after Back) are followed first.
    const r = v && v.steps_recorded > v.step
      ? await act("goto", { step: Math.min(v.steps_recorded, v.step + limit) })
      : await act("run", { limit });
    if (r && r.steps_recorded > r.step && !(r.violations || []).length) {
      const spent = performance.now() - t0;
      await new Promise((res) => setTimeout(res, Math.max(0, tick - spent)));
      continue;
    }
    if (!r || r.quiet || (r.stop && r.stop !== "limit" && !(r.stop && r.stop.limit !== undefined))) { stopRunning(); return; }
    const spent = performance.now() - t0;
    await new Promise((res) => setTimeout(res, Math.max(0, tick - spent)));
  }
}

// Step: the next recorded choice when there is one ahead (after Back, or a loaded
// counterexample), else the earliest pending event.
async function stepOnce() {
  if (app.quiz.pending) { setStatus("answer the quiz first (or turn the quiz off)"); return null; }
  if (app.quiz.enabled && (await quizGateOnce())) return null;
  const v = app.view;
  if (v && v.steps_recorded > v.step) return act("goto", { step: v.step + 1 });
  return choose({ do: "next" });
}
$("#step").addEventListener("click", stepOnce);
$("#back").addEventListener("click", () => act("back"));
$("#forward").addEventListener("click", () => act("goto", { step: app.view.step + 1 }));
$("#reset").addEventListener("click", () => act("goto", { step: 0 }));
function startRunning() {
  if (app.running || app.session === null) return;
  app.running = true;
  $("#run").textContent = "Pause";
  runLoop();
}
$("#run").addEventListener("click", () => {
  if (app.running) { stopRunning(); app.quiz.resume = false; return; }
  startRunning();
});
$("#show-link").addEventListener("change", () => { if (app.view) show(app.view); });
$("#speed").addEventListener("input", () => ($("#speed-label").textContent = speed()[1]));
$("#goto").addEventListener("click", async () => {
  const s = $("#goto-step").value.trim();
  const t = $("#goto-time").value.trim();
  if (s !== "") { await gotoStep(Number(s)); return; }
  if (t !== "") {
    const ns = parseDur(t);
    if (ns === null) { setStatus(`time: expected a duration like 25ms, got "${t}"`); return; }
    app.busy = true;
    if (app.view && ns < app.view.time_ns) await act("goto", { step: 0 });
    await act("run", { until_ns: ns });
    app.busy = false;
  }
});
// ---------------------------------------------------------------- lessons
// A lesson: a built-in scenario and steps of its run with a sentence each, and questions whose
// answer is shown only on demand. The sentence shown is that of the latest lesson step reached.
$("#lesson").addEventListener("change", async () => {
  const l = (app.lessons || []).find((x) => x.name === $("#lesson").value);
  app.lesson = null;
  if (!l) { $("#lesson-box").hidden = true; return; }
  if (await loadToml(l.toml, l.example + ".toml")) {
    app.lesson = { ...l, revealed: new Set() };
    await startSession(l.toml, [], l.example + ".toml");
  }
});
function drawLesson(v) {
  const box = $("#lesson-box");
  const l = app.lesson;
  if (!l || v.algorithm !== (app.scenario && app.scenario.algorithm) || app.toml !== l.toml) { box.hidden = true; return; }
  box.hidden = false;
  box.textContent = "";
  const steps = l.step || [];
  let k = -1;
  steps.forEach((s, i) => { if (s.at <= v.step) k = i; });
  const cur = k >= 0 ? steps[k] : null;
  const next = steps[k + 1];
  box.append(el("h2", {}, "Lesson: " + l.title, el("span", { class: "hint" }, ` (${k + 1} of ${steps.length})`)));
  box.append(el("p", { class: "lesson-text" }, cur ? cur.text : l.intro));
  if (cur && cur.question) {
    box.append(el("p", { class: "lesson-question" }, el("strong", {}, "Predict: "), cur.question, " "));
    if (l.revealed.has(k)) box.append(el("p", { class: "lesson-answer" }, cur.answer));
    else box.append(el("button", { class: "lesson-reveal", onclick: () => { l.revealed.add(k); drawLesson(app.view); } }, "Reveal the answer"));
  }
  const row = el("div", { class: "row" });
  if (k >= 0) row.append(el("button", { class: "lesson-prev", onclick: () => act("goto", { step: k > 0 ? steps[k - 1].at : 0 }) }, "◀ previous"));
  if (next) row.append(el("button", { class: "lesson-next", onclick: () => gotoStep(next.at) }, `next: step ${next.at} ▶`));
  else row.append(el("span", { class: "hint" }, "the end of the lesson: step on, go back, or break it"));
  box.append(row);
}

// Go to step N: back by replay, forward along the recorded choices and then by Step.
async function gotoStep(n) {
  const v = app.view;
  if (!v || !Number.isInteger(n) || n < 0) { setStatus("go to step: expected a whole number"); return; }
  if (n <= v.steps_recorded) { await act("goto", { step: n }); return; }
  if (v.step < v.steps_recorded) await act("goto", { step: v.steps_recorded });
  while (app.view && app.view.step < n && !app.view.quiet) {
    if (!(await choose({ do: "next" }))) break;
  }
  if (app.view && app.view.step < n) setStatus(`step ${app.view.step}: the run went quiet before step ${n}`);
}

// Keys: → or n steps, ← or b goes back, space or r runs and pauses (not while typing).
document.addEventListener("keydown", (ev) => {
  const t = ev.target;
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable)) return;
  // Space and Enter on a button or an element of the drawing press that, not Run.
  if ((ev.key === " " || ev.key === "Enter") && t && (t.tagName === "BUTTON" || t.tagName === "SUMMARY" || (t.getAttribute && t.getAttribute("role") === "button"))) return;
  const key = ev.key;
  if (key === "ArrowRight" || key === "n") { ev.preventDefault(); if (!$("#step").disabled) stepOnce(); }
  else if (key === "ArrowLeft" || key === "b") { ev.preventDefault(); if (!$("#back").disabled) act("back"); }
  else if (key === " " || key === "r") { ev.preventDefault(); $("#run").click(); }
});

$("#manual").addEventListener("change", () => {
  const manual = $("#manual").checked;
  $("#step").disabled = manual; $("#run").disabled = manual;
  document.body.classList.toggle("manual", manual);
  if (manual) { stopRunning(); setStatus("manual: click a message on a link or a pending event to make it happen, a process to crash it or give it an input"); }
});
$("#log-earlier").addEventListener("click", () => {
  const v = app.view;
  app.logFrom = Math.max(0, (v.log_from || 0) - 300);
  act("goto", { step: v.step });
});
$("#log-latest").addEventListener("click", () => { app.logFrom = null; act("goto", { step: app.view.step }); });

// ---------------------------------------------------------------- break
$("#partition").addEventListener("click", () => {
  const text = $("#groups").value.trim();
  const groups = text.split("|").map((g) => g.split(/[\s,]+/).filter(Boolean).map(Number)).filter((g) => g.length);
  if (groups.length < 1 || groups.some((g) => g.some(isNaN))) { setStatus('partition: expected groups of ids like "0 1 | 2 3"'); return; }
  choose({ do: "partition", groups });
});
$("#heal").addEventListener("click", () => choose({ do: "heal" }));

// ---------------------------------------------------------------- share
// The fragment: toml=<scenario>&choices=<JSON>, where a number k stands for k times {"do":"next"}.
function packChoices(choices) {
  const out = [];
  let n = 0;
  for (const c of choices) {
    if (c.do === "next") { n++; continue; }
    if (n) { out.push(n); n = 0; }
    out.push(c);
  }
  if (n) out.push(n);
  return out;
}
function unpackChoices(packed) {
  const out = [];
  for (const c of packed) {
    if (typeof c === "number") for (let i = 0; i < c; i++) out.push({ do: "next" });
    else out.push(c);
  }
  return out;
}
$("#share").addEventListener("click", async () => {
  if (app.session === null) return;
  try {
    const r = await api("GET", `/api/session/${app.session}/share`);
    history.replaceState(null, "", "#" + r.fragment);
    try { await navigator.clipboard.writeText(location.href); setStatus("share link copied: it replays this run, choices included"); }
    catch (_) { setStatus("share link in the address bar: it replays this run, choices included"); }
  } catch (e) { setStatus("share: " + e.message); }
});

async function openFragment() {
  if (!location.hash || location.hash.length < 2) return false;
  const p = new URLSearchParams(location.hash.slice(1));
  const toml = p.get("toml");
  if (!toml) return false;
  let choices = [];
  try { choices = unpackChoices(JSON.parse(p.get("choices") || "[]")); }
  catch (e) { $("#setup-error").textContent = "the link's choices are not valid JSON: " + e.message; }
  await loadToml(toml, "shared link");
  return startSession(toml, choices, "shared link");
}

// ---------------------------------------------------------------- prove or refute
$("#check").addEventListener("click", async () => {
  const out = $("#check-result");
  out.textContent = "exploring every interleaving…";
  try {
    const r = await api("POST", "/api/check", { toml: $("#toml").value });
    out.textContent = "";
    const line = (cls, text) => out.append(el("div", { class: cls }, text));
    const props = r.properties.join(", ");
    if (r.proved) line("check-proved", `proved: ${props} hold in all ${r.states} states, for ${r.bounds}.`);
    else if (!r.violation) {
      line("check-bounded", `no violation of ${props} in the ${r.states} states explored, for ${r.bounds}; ` +
        `the exploration stopped at ${r.bound === "--max-states" ? `the bound of ${r.max_states} states` : `its bound (${r.bound})`}: this is no proof.`);
    } else {
      line("check-refuted", `refuted: ${r.violation.property}: ${r.violation.detail} (${r.states} states explored, for ${r.bounds}).`);
      if (r.load_error) {
        line("error", `The counterexample could not be loaded: ${r.load_error.replace(/^the counterexample could not be replayed in the stepper: /, "")}. Its ${r.violation.steps.length} steps, as the checker wrote them:`);
        out.append(el("ol", { class: "check-steps" }, ...r.violation.steps.map((t) => el("li", {}, t))));
        if (app.session !== null) line("hint", "The stepper still shows your previous run, not this counterexample.");
      } else if (r.session !== undefined) {
        app.session = r.session; app.toml = r.toml; app.logFrom = null; app.prevStates = {}; app.violationsSeen = 0;
        app.checkLoaded = true; // the counterexample's scenario is the checker's, not the form's
        markDrift();
        $("#dl-trace").href = `/api/session/${app.session}/trace`;
        $("#dl-svg").href = `/api/session/${app.session}/svg`;
        await act("goto", { step: 0 });
        line("hint", `The shortest counterexample (${r.choices.length} choices) is loaded at its start: press Step to follow it, or Run.`);
        setStatus(`counterexample loaded: ${r.choices.length} choices; press Step (or Run) to replay it`);
        app.checkChoices = r.choices;
      }
    }
    for (const n of r.notes || []) line("hint", "note: " + n);
    if (r.needs_fifo === true && !/FIFO links/.test(r.bounds.replace("non-FIFO", ""))) line("hint", `${r.algorithm} assumes FIFO links; they are off here.`);
  } catch (e) { out.textContent = e.message; }
});

// ---------------------------------------------------------------- quiz
// Questions at three levels (observe, predict, explain), asked before a Step (and during Run),
// made and marked by the server from the run itself (GET/POST /api/session/ID/quiz): the page
// never holds the right answer while it asks, and hides what would give it away. A score is
// kept per scenario.
function quizLevel() { return $("#quiz-level").value; }
function quizKey(q) {
  return [q.level, q.kind, q.text, q.options.join("/"), q.reveal_at ?? (q.level === "predict" ? "" : q.step)].join("|");
}
function scenarioKey() { return app.origin || (app.view && app.view.algorithm) || "scenario"; }
function score() {
  const s = app.quiz.scores[scenarioKey()] || (app.quiz.scores[scenarioKey()] = { right: 0, asked: 0 });
  return s;
}
function quizHide(q) {
  document.body.classList.add("quiz-asking");
  for (const h of q.hide) document.body.classList.add("quiz-hide-" + h);
}
function quizUnhide() {
  for (const c of [...document.body.classList]) if (c.startsWith("quiz-")) document.body.classList.remove(c);
}
async function quizGate() {
  const v = app.view;
  if (!v || app.session === null || app.quiz.pending) return false;
  const r = await api("GET", `/api/session/${app.session}/quiz?level=${quizLevel()}`);
  const q = r.question;
  if (!q) { app.quiz.why = r.why; return false; }
  const key = quizKey(q);
  if (app.quiz.seen.has(key)) return false;
  app.quiz.seen.add(key);
  app.quiz.pending = q;
  quizHide(q);
  const box = $("#quiz-box");
  box.hidden = false;
  box.textContent = "";
  const buttons = q.options.map((o) => el("button", { "data-answer": o.replace(/^P(\d+)$/, "$1"), "data-option": o, onclick: () => quizAnswer(q, o) }, o));
  box.append(el("strong", {}, `Quiz (${q.level}): ${q.text} `), ...buttons);
  return true;
}
async function quizAnswer(q, option) {
  const box = $("#quiz-box");
  let r;
  try {
    r = await api("POST", `/api/session/${app.session}/quiz`, { level: q.level, step: q.step, kind: q.kind, answer: option });
  } catch (e) {
    box.textContent = e.message;
    app.quiz.pending = null;
    quizUnhide();
    return;
  }
  const s = score();
  s.asked++;
  if (r.right) s.right++;
  const is = r.answer.length === 1 ? `it is ${r.answer[0]}` : `it is any of ${r.answer.join(", ")}`;
  box.textContent = `${r.right ? "Right" : "Not quite"}: ${is} (${r.why}). Score for ${scenarioKey()}: ${s.right}/${s.asked}. ` +
    (app.quiz.resume ? "The run goes on." : "Press Step to go on.");
  box.dataset.right = String(r.right);
  quizUnhide();
  app.quiz.pending = null;
  if (app.quiz.resume) { app.quiz.resume = false; startRunning(); }
}
$("#quiz").addEventListener("change", () => {
  app.quiz.enabled = $("#quiz").checked;
  $("#quiz-level").disabled = !app.quiz.enabled;
  $("#quiz-box").hidden = true;
  app.quiz.pending = null;
  app.quiz.resume = false;
  quizUnhide();
});
$("#quiz-level").addEventListener("change", () => { app.quiz.pending = null; $("#quiz-box").hidden = true; quizUnhide(); });
// A question already answered at this point is not asked again: the next Step goes ahead.
async function quizGateOnce() {
  const asked = await quizGate();
  if (!asked && !app.quiz.pending) $("#quiz-box").hidden = $("#quiz-box").dataset.right === undefined ? true : $("#quiz-box").hidden;
  return asked;
}

// ---------------------------------------------------------------- wiring the set-up form
for (const id of ["#nodes", "#ids", "#seed", "#until", "#delay-kind", "#delay-a", "#delay-b", "#fifo", "#loss", "#duplicate",
  "#wl-kind", "#wl-requests", "#wl-cs", "#wl-rate"]) {
  $(id).addEventListener("change", scenarioChanged);
}
$("#algorithm").addEventListener("change", () => pickAlgorithm($("#algorithm").value));
// A worked example opens and starts at once: two clicks from the page to its run.
$("#example").addEventListener("change", async () => {
  const e = (app.examples || []).find((x) => x.name === $("#example").value);
  $("#example-desc").textContent = e ? e.description : "";
  if (e && (await loadToml(e.toml, e.name + ".toml"))) await startSession(e.toml, [], e.name + ".toml");
});
$("#ev-add").addEventListener("click", () => {
  const action = $("#ev-action").value;
  const at = $("#ev-at").value.trim() || "0ms";
  const ev = { at };
  ev[action] = action === "heal" ? true : Number($("#ev-node").value);
  app.scenario.event = app.scenario.event || [];
  app.scenario.event.push(ev);
  scenarioChanged();
});
let tomlEditTimer = null;
$("#toml").addEventListener("input", () => {
  clearTimeout(tomlEditTimer);
  tomlEditTimer = setTimeout(async () => { await loadToml($("#toml").value, "scenario"); markDrift(); }, 400);
});
$("#start").addEventListener("click", async () => {
  if (!(await loadToml($("#toml").value, "scenario"))) return;
  await startSession($("#toml").value, [], "scenario");
});
$("#file").addEventListener("change", async () => {
  const f = $("#file").files[0];
  if (f) await loadToml(await f.text(), f.name);
});
const dz = $("#drop-zone");
dz.addEventListener("dragover", (e) => { e.preventDefault(); dz.classList.add("dragging"); });
dz.addEventListener("dragleave", () => dz.classList.remove("dragging"));
dz.addEventListener("drop", async (e) => {
  e.preventDefault();
  dz.classList.remove("dragging");
  const f = e.dataTransfer.files[0];
  if (f) await loadToml(await f.text(), f.name);
});

async function main() {
  $("#speed-label").textContent = speed()[1];
  app.algorithms = await api("GET", "/api/algorithms");
  const sel = $("#algorithm");
  let fam = null, group = null;
  for (const a of app.algorithms) {
    if (a.family !== fam) { fam = a.family; group = el("optgroup", { label: fam }); sel.append(group); }
    group.append(el("option", { value: a.name }, a.name));
  }
  app.examples = await api("GET", "/api/examples");
  const ex = $("#example");
  for (const e of app.examples) ex.append(el("option", { value: e.name }, `${e.name} (${e.algorithm})`));
  app.lessons = await api("GET", "/api/lessons");
  for (const l of app.lessons) $("#lesson").append(el("option", { value: l.name }, l.title));
  if (await openFragment()) { app.ready = true; return; }
  const initial = await api("GET", "/api/initial");
  if (initial && initial.toml) {
    if (await loadToml(initial.toml, initial.origin)) await startSession(initial.toml, [], initial.origin);
  } else {
    await pickAlgorithm("ricart-agrawala");
  }
  app.ready = true;
}
window.addEventListener("hashchange", () => openFragment());
// The page's session closes with the page (the server frees it at once).
window.addEventListener("pagehide", () => {
  if (app.session !== null) distsyncEngine.close(`/api/session/${app.session}`);
});
// Downloads of the run (trace, SVG) go through the engine too: it has the session, and the
// server wants this page's secret.
document.addEventListener("click", async (ev) => {
  const a = ev.target.closest && ev.target.closest('a[href^="/api/"]');
  if (!a) return;
  ev.preventDefault();
  try {
    const r = await distsyncEngine.request("GET", a.getAttribute("href"));
    if (r.status >= 400) throw new Error(JSON.parse(r.body).error || r.status);
    const url = URL.createObjectURL(new Blob([r.body], { type: r.contentType }));
    el("a", { href: url, download: a.getAttribute("download") || "distsync" }).click();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  } catch (e) {
    setStatus("download failed: " + e.message);
  }
});
main().catch((e) => setStatus("error: " + e.message));
