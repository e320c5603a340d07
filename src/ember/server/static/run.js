// The run page, live from the run's event stream (Server-Sent Events read with fetch, so the
// token goes in a header; a dropped stream is resumed with Last-Event-ID): the plan's DAG as
// steps arrive, the latency waterfall on one time axis, the answer, each step's arguments and
// result.
import { api, el, headers, say } from "./app.js";

const SVG = "http://www.w3.org/2000/svg";
const STATES = ["planned", "running", "awaiting_approval", "in_doubt", "succeeded", "failed", "skipped"];

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

// -- the run as its events say it is (a small fold, as ember.journal.fold) ------------------
function newRun(id) { return { id, task: "", status: "running", start: null, steps: new Map(), planDone: null, lastPlan: null, done: null }; }

function apply(run, kind, e) {
  const step = run.steps.get(e.step_id);
  switch (kind) {
    case "run.started": run.task = e.task; run.start = e.at; run.principal = e.principal; break;
    case "run.resumed": run.status = "running"; break;
    case "plan.step": run.steps.set(e.step.id, { ...e.step, planned: e.step.args, status: "planned", at: e.at }); run.lastPlan = e.at; break;
    case "plan.done": run.planDone = e.at; break;
    case "step.intent": Object.assign(step, { status: "running", intent: e.at, args: e.args }); break;
    case "step.done": Object.assign(step, { status: "succeeded", result: e.result, ms: e.ms, selfMs: e.self_ms, end: e.at }); break;
    case "step.failed": Object.assign(step, { status: "failed", error: e.error, ms: e.ms, end: e.at }); break;
    case "step.skipped": Object.assign(step, { status: "skipped", error: e.reason }); break;
    case "step.denied": Object.assign(step, { status: "failed", error: e.reason }); break;
    case "step.in_doubt": Object.assign(step, { status: "in_doubt", error: e.reason }); break;
    case "step.awaiting_approval": Object.assign(step, { status: "awaiting_approval", error: e.rule }); break;
    case "run.waiting": run.status = "waiting"; break;
    case "run.done": run.status = e.status; run.done = e; break;
  }
}

// -- the plan as a DAG: edges from references ($N, {$N...}) and `after` ---------------------
function dependencies(step) {
  const refs = new Set();
  for (const m of JSON.stringify(step.planned || {}).matchAll(/\$(\d+)/g)) refs.add(Number(m[1]));
  return { refs: [...refs], after: (step.after || []).filter((a) => !refs.has(a)) };
}

function drawDag(run) {
  const steps = [...run.steps.values()];
  const depth = new Map();
  const depthOf = (s, seen = new Set()) => {
    if (depth.has(s.id)) return depth.get(s.id);
    seen.add(s.id);
    const { refs, after } = dependencies(s);
    let d = 0;
    for (const id of [...refs, ...after]) {
      const dep = run.steps.get(id);
      if (dep && !seen.has(id)) d = Math.max(d, depthOf(dep, seen) + 1);
    }
    depth.set(s.id, d);
    return d;
  };
  const columns = [];
  for (const s of steps) (columns[depthOf(s)] ||= []).push(s);
  const W = 170, H = 46, GX = 60, GY = 18;
  const place = new Map();
  columns.forEach((col, x) => col.forEach((s, y) => place.set(s.id, { x: 10 + x * (W + GX), y: 24 + y * (H + GY) })));
  const width = 20 + Math.max(1, columns.length) * (W + GX) - GX;
  const height = 34 + Math.max(1, ...columns.map((c) => c.length)) * (H + GY) - GY;
  const root = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": `Plan: ${steps.map((s) => `step ${s.id} ${s.tool} ${s.status}`).join("; ") || "no steps yet"}` });
  for (const s of steps) {
    const to = place.get(s.id);
    const { refs, after } = dependencies(s);
    for (const [ids, cls] of [[refs, "edge"], [after, "edge order"]]) {
      for (const id of ids) {
        const from = place.get(id);
        if (!from) continue;
        const x1 = from.x + W, y1 = from.y + H / 2, x2 = to.x, y2 = to.y + H / 2;
        const long = x2 - x1 > GX + 1; // it passes columns between: arc over them
        const d = long
          ? `M${from.x + W / 2},${from.y} C${from.x + W / 2},${from.y - GY} ${x2 - GX / 2},${to.y - GY} ${x2},${to.y + 8}`
          : `M${x1},${y1} C${x1 + GX / 2},${y1} ${x2 - GX / 2},${y2} ${x2},${y2}`;
        root.append(svg("path", { class: cls, d, "marker-end": "url(#arrow)" }));
      }
    }
  }
  root.prepend(svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto" }, svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#8d939e" }))));
  for (const s of steps) {
    const p = place.get(s.id);
    root.append(svg("g", { class: `node ${s.status}`, "data-step": s.id, transform: `translate(${p.x},${p.y})` },
      svg("rect", { width: W, height: H }),
      svg("text", { x: 10, y: 19 }, `${s.id}. ${s.tool}`),
      svg("text", { x: 10, y: 36, class: "state" }, s.status.replace("_", " ") + (s.ms != null ? ` · ${s.ms.toFixed(1)} ms` : ""))));
  }
  return root;
}

// -- the latency waterfall: L1 plan, each step (journal wait, tool, orchestration), L4 -------
function drawWaterfall(run, now) {
  const spans = run.done ? run.done.spans || [] : [];
  const lat = run.done ? run.done.latency_ms || {} : {};
  const at = (t) => (t - run.start) * 1000;
  const rows = [];
  const planEnd = lat.l1_plan || (run.planDone ? at(run.planDone) : run.lastPlan ? at(run.lastPlan) : 0);
  rows.push({ label: "L1 plan", bars: [[0, planEnd, "plan"]], ttft: lat.l1_ttft });
  const stepSpans = new Map(spans.filter((s) => s.layer === "L2").map((s) => [s.attrs.step_id, s]));
  for (const s of run.steps.values()) {
    const span = stepSpans.get(s.id);
    let bars = [];
    if (span) {
      const j = span.attrs.persist_ms, t = span.attrs.tool_ms, o = Math.max(0, span.ms - j - t);
      bars = [[span.start_ms, j, "journal"], [span.start_ms + j, t, "tool"], [span.start_ms + j + t, o, "orch"]];
    } else if (s.end != null && s.ms != null) {
      const begin = at(s.end) - s.ms, t = s.selfMs || 0;
      bars = [[begin, t, "tool"], [begin + t, Math.max(0, s.ms - t), "orch"]];
    } else if (s.intent != null) {
      bars = [[at(s.intent), Math.max(0, now - at(s.intent)), "live"]];
    }
    rows.push({ label: `${s.id}. ${s.tool}`, bars });
  }
  const total = lat.l4_e2e || (run.done ? at(run.done.at) : now);
  rows.push({ label: "L4 end to end", bars: [[0, total, "e2e"]] });
  const scale = Math.max(total, planEnd, ...rows.flatMap((r) => r.bars.map(([b, w]) => b + w)), 1);
  const L = 150, W = 760, RH = 22;
  const height = rows.length * RH + 30;
  const x = (ms) => L + (ms / scale) * W;
  const root = svg("svg", { width: L + W + 40, height, role: "img",
    "aria-label": `Latency waterfall over ${total.toFixed(1)} ms: ` + rows.map((r) => `${r.label} ${r.bars.reduce((a, [, w]) => a + w, 0).toFixed(1)} ms`).join("; ") });
  const axis = svg("g", { class: "axis" });
  for (let i = 0; i <= 5; i++) {
    const ms = (scale * i) / 5;
    axis.append(svg("line", { x1: x(ms), x2: x(ms), y1: 0, y2: height - 18 }),
      svg("text", { x: x(ms), y: height - 4, "text-anchor": "middle" }, `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`));
  }
  root.append(axis);
  rows.forEach((r, i) => {
    const y = i * RH + 4;
    root.append(svg("text", { x: 0, y: y + 13 }, r.label));
    for (const [begin, width, kind] of r.bars) {
      root.append(svg("rect", { class: `bar ${kind}`, x: x(begin), y, width: Math.max(1, (width / scale) * W), height: RH - 8 },
        svg("title", {}, `${kind}: ${width.toFixed(2)} ms`)));
    }
    if (r.ttft) root.append(svg("line", { class: "ttft", x1: x(r.ttft), x2: x(r.ttft), y1: y - 2, y2: y + RH - 6 }, svg("title", {}, `time to first token ${r.ttft.toFixed(1)} ms`)));
  });
  return root;
}

// -- a Markdown answer, escaped (headings, lists, code, bold, links) -------------------------
function markdown(text) {
  const esc = (s) => s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  const inline = (s) => esc(s).replace(/`([^`]+)`/g, "<code>$1</code>").replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
    .replace(/\[([^\]]+)\]\((https?:[^)\s]+)\)/g, '<a href="$2" rel="noopener">$1</a>');
  const out = []; let list = null, code = null;
  for (const line of text.split("\n")) {
    if (line.startsWith("```")) { if (code) { out.push(`<pre>${esc(code.join("\n"))}</pre>`); code = null; } else code = []; continue; }
    if (code) { code.push(line); continue; }
    const item = line.match(/^\s*(?:[-*]|\d+\.)\s+(.*)/);
    if (item) { if (!list) { list = []; } list.push(`<li>${inline(item[1])}</li>`); continue; }
    if (list) { out.push(`<ul>${list.join("")}</ul>`); list = null; }
    const heading = line.match(/^(#{1,4})\s+(.*)/);
    if (heading) out.push(`<h${heading[1].length + 2}>${inline(heading[2])}</h${heading[1].length + 2}>`);
    else if (line.trim()) out.push(`<p>${inline(line)}</p>`);
  }
  if (list) out.push(`<ul>${list.join("")}</ul>`);
  if (code) out.push(`<pre>${esc(code.join("\n"))}</pre>`);
  return out.join("\n");
}

// -- the stream: fetch + a small SSE parser; reconnect with Last-Event-ID --------------------
async function follow(runId, onEvent, signal) {
  let last = null;
  while (!signal.aborted) {
    try {
      const res = await fetch(`/v1/runs/${encodeURIComponent(runId)}/events`, { headers: headers(last ? { "Last-Event-ID": last } : {}), signal });
      if (!res.ok) { const p = await res.json(); say(`${p.error}: ${p.what_to_do}`); return; }
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, cut); buffer = buffer.slice(cut + 2);
          const fields = {};
          for (const line of block.split("\n")) {
            if (!line || line.startsWith(":")) continue;
            const i = line.indexOf(":");
            fields[line.slice(0, i)] = line.slice(i + 1).replace(/^ /, "");
          }
          if (fields.data === undefined) continue;
          last = fields.id;
          onEvent(fields.event, JSON.parse(fields.data));
          if (fields.event === "run.done") return;
        }
      }
    } catch (err) { if (signal.aborted) return; }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

export function showRun(main, runId) {
  const run = newRun(runId);
  const title = el("h1", {}, `Run ${runId}`);
  const status = el("p", { role: "status", "aria-live": "polite" });
  const dag = el("div", { class: "panel", id: "dag" });
  const fall = el("div", { class: "panel", id: "waterfall" });
  const legend = el("div", { class: "legend" }, [["plan", "L1 plan (| first token)"], ["journal", "journal wait (L3)"], ["tool", "tool"], ["orch", "orchestration (L2)"], ["live", "running"], ["e2e", "L4 end to end"]]
    .map(([k, t]) => el("span", { style: `--c: var(--${k === "live" ? "running" : k})` }, t)));
  const latency = el("div", { class: "latency" });
  const answer = el("section", { class: "answer", id: "answer", "aria-label": "Answer" }, el("p", { class: "hint" }, "The answer appears when the run is over."));
  const stepList = el("div", { id: "steps" });
  const cancel = el("button", { onclick: async () => { try { await api(`/v1/runs/${runId}/cancel`, { method: "POST" }); } catch (e) { say(e.message); } } }, "Cancel run");
  main.replaceChildren(title, status, cancel, el("h2", {}, "Plan"), dag, el("h2", {}, "Where the time went"), fall, legend, latency,
    el("h2", {}, "Answer"), answer, el("h2", {}, "Steps"), stepList);
  const opened = new Set();
  let drawn = false;
  function draw() {
    drawn = false;
    const now = run.start ? Date.now() - run.start * 1000 : 0;
    title.textContent = run.task ? `Run: ${run.task}` : `Run ${runId}`;
    status.className = `status ${run.status}`;
    status.textContent = `${run.status} · ${runId}${run.principal ? " · by " + run.principal : ""}`;
    cancel.hidden = run.status !== "running";
    dag.replaceChildren(drawDag(run));
    if (run.start) fall.replaceChildren(drawWaterfall(run, now));
    for (const d of stepList.querySelectorAll("details[open]")) opened.add(d.dataset.step);
    stepList.replaceChildren(...[...run.steps.values()].map((s) => el("details", { "data-step": s.id, open: opened.has(String(s.id)) },
      el("summary", {}, `${s.id}. ${s.tool} — `, el("span", { class: `status ${s.status}` }, s.status.replace("_", " ")), s.ms != null ? ` — ${s.ms.toFixed(1)} ms` : ""),
      el("h3", { class: "hint" }, "Arguments"), el("pre", {}, JSON.stringify(s.args, null, 2)),
      s.result !== undefined ? [el("h3", { class: "hint" }, "Result"), el("pre", {}, JSON.stringify(s.result, null, 2))] : null,
      s.error ? el("p", { class: "bad" }, s.error) : null)));
    if (run.done) {
      answer.innerHTML = markdown(run.done.answer || run.done.error || "(no answer)");
      const l = run.done.latency_ms || {};
      latency.replaceChildren(...[["l1_ttft", "L1 first token"], ["l1_plan", "L1 plan"], ["l2_overhead", "L2 orchestration"], ["l3_persist", "L3 journal"], ["l4_e2e", "L4 end to end"]]
        .map(([k, t]) => el("div", {}, t, el("b", {}, `${(l[k] || 0).toFixed(2)} ms`))));
    }
  }
  const schedule = () => { if (!drawn) { drawn = true; requestAnimationFrame(draw); } };
  const control = new AbortController();
  const ticker = setInterval(() => { if (run.status === "running") schedule(); }, 100);
  follow(runId, (kind, event) => { apply(run, kind, event); schedule(); }, control.signal);
  draw();
  return () => { control.abort(); clearInterval(ticker); };
}

export { STATES };
