// The ember console: a page per hash route (#/, #/runs, #/runs/ID, #/inbox, #/audit,
// #/tools), each drawn from the JSON API (/openapi.json describes it). No framework, no build.
import { showRun } from "./run.js";

const main = document.getElementById("main");
const notice = document.getElementById("notice");
const tokenForm = document.getElementById("token-form");
let leave = () => {}; // the current page's clean-up (a run page closes its event stream)

export function headers(extra = {}) {
  const token = sessionStorage.getItem("ember-token");
  return token ? { ...extra, Authorization: `Bearer ${token}` } : extra;
}

export async function api(path, { method = "GET", body } = {}) {
  const init = { method, headers: headers(body ? { "Content-Type": "application/json" } : {}) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await fetch(path, init);
  if (res.status === 401) {
    askToken();
    const err = new Error(TOKEN_NEEDED);
    err.status = 401;
    throw err;
  }
  if (res.status === 204) return null;
  const data = await res.json();
  if (!res.ok) {
    const err = new Error(`${data.error}${data.what_to_do ? ": " + data.what_to_do : ""}`);
    err.status = res.status;
    throw err;
  }
  return data;
}

export function say(text) { notice.textContent = text; }

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

export function when(epoch) { return new Date(epoch * 1000).toLocaleString(); }

const TOKEN_NEEDED = "This server needs a token: paste one from `ember tokens create NAME`.";

function askToken() {
  tokenForm.hidden = false;
  document.getElementById("token").focus();
}

tokenForm.addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem("ember-token", document.getElementById("token").value.trim());
  tokenForm.hidden = true;
  say("");
  route();
});

// -- the task box: prefill while typing (debounced, latest text only), Enter submits ---------
function home() {
  const session = sessionStorage.getItem("ember-session") || crypto.randomUUID();
  sessionStorage.setItem("ember-session", session);
  const box = el("textarea", { id: "task", rows: 3, "aria-describedby": "task-hint",
    placeholder: "Check the weather in Paris tomorrow, book the cheapest hotel there…" });
  const hint = el("p", { id: "task-hint", class: "hint" },
    "Enter runs the task; Shift+Enter starts a new line. The planner reads it as you type.");
  let timer = null, inflight = false, pending = null, canPrefill = true;
  async function prefill() {
    if (!canPrefill || inflight || pending === null) return;
    const text = pending; pending = null; inflight = true;
    try { await api("/v1/prefill", { method: "POST", body: { session, text } }); }
    catch (err) { if (err.status === 409) canPrefill = false; }
    finally { inflight = false; if (pending !== null) prefill(); }
  }
  box.addEventListener("input", () => {
    pending = box.value;
    clearTimeout(timer);
    timer = setTimeout(prefill, 250);
  });
  async function submit() {
    const task = box.value.trim();
    if (!task) return;
    try {
      const accepted = await api("/v1/runs", { method: "POST", body: { task } });
      location.hash = `#/runs/${accepted.run_id}`;
    } catch (err) { say(err.message); }
  }
  box.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); submit(); }
  });
  main.replaceChildren(
    el("h1", {}, "Run a task"),
    el("label", { for: "task" }, "Task, in plain words"), box, hint,
    el("button", { class: "primary", onclick: submit }, "Run"),
  );
  box.focus();
}

// -- runs: filters and pages ------------------------------------------------------------------
async function runs(params) {
  const form = el("form", { class: "filters", "aria-label": "Filter runs" },
    el("label", {}, "Status", el("select", { name: "status" },
      ["", "running", "waiting", "succeeded", "failed", "cancelled"].map((s) =>
        el("option", { value: s, selected: params.get("status") === s }, s || "any")))),
    el("label", {}, "Principal", el("input", { name: "principal", value: params.get("principal") || "" })),
    el("label", {}, "Since", el("input", { name: "since", type: "date", value: params.get("since") || "" })),
    el("button", { type: "submit" }, "Filter"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const query = new URLSearchParams([...new FormData(form)].filter(([, v]) => v));
    location.hash = `#/runs?${query}`;
  });
  const body = el("tbody");
  const more = el("button", { hidden: true }, "Older runs");
  main.replaceChildren(el("h1", {}, "Runs"), form,
    el("table", {}, el("thead", {}, el("tr", {}, ["Run", "Started", "Status", "Principal", "Task"].map((h) => el("th", { scope: "col" }, h)))), body), more);
  async function page(before) {
    const query = new URLSearchParams(params);
    if (before) query.set("before", before);
    const data = await api(`/v1/runs?${query}`);
    for (const run of data.runs) {
      body.append(el("tr", {},
        el("td", {}, el("a", { href: `#/runs/${run.run_id}` }, run.run_id)),
        el("td", {}, when(run.started_at)),
        el("td", { class: `status ${run.status}` }, run.status),
        el("td", {}, run.principal || "-"),
        el("td", {}, run.task)));
    }
    more.hidden = data.next === null;
    more.onclick = () => page(data.next);
    if (!data.runs.length && !before) body.append(el("tr", {}, el("td", { colspan: 5 }, "No runs.")));
  }
  await page(null);
}

// -- inbox: approve, deny; retry, skip, fail ----------------------------------------------------
async function inbox() {
  const data = await api("/v1/inbox");
  const rows = data.items.map((item) => {
    const choices = item.status === "awaiting_approval" ? ["approve", "deny"] : ["retry", "skip", "fail"];
    const decide = (choice) => async () => {
      const path = `/v1/runs/${item.run_id}/steps/${item.step}/`;
      try {
        if (choice === "approve" || choice === "deny") await api(path + choice, { method: "POST" });
        else await api(path + "resolve", { method: "POST", body: { decision: choice } });
        say(`Step ${item.step} of ${item.run_id}: ${choice}. The run goes on.`);
        inbox();
      } catch (err) { say(err.message); }
    };
    return el("tr", {},
      el("td", {}, el("a", { href: `#/runs/${item.run_id}` }, item.run_id)),
      el("td", {}, `${item.step}. ${item.tool}`),
      el("td", {}, el("code", {}, JSON.stringify(item.args))),
      el("td", { class: `status ${item.status}` }, item.status.replace("_", " ")),
      el("td", {}, item.reason),
      el("td", {}, item.principal || "-"),
      el("td", { class: "actions" }, choices.map((c) =>
        el("button", { onclick: decide(c), "aria-label": `${c} step ${item.step} of ${item.run_id}` }, c))));
  });
  updateCount(data.items.length);
  main.replaceChildren(el("h1", {}, "Inbox: steps waiting for you"),
    rows.length ? el("table", {}, el("thead", {}, el("tr", {}, ["Run", "Step", "Arguments", "State", "Why", "Started by", "Decide"].map((h) => el("th", { scope: "col" }, h)))), el("tbody", {}, rows))
      : el("p", {}, "Nothing waits for a decision."));
}

function updateCount(n) { document.getElementById("inbox-count").textContent = n ? String(n) : ""; }

async function audit() {
  const view = await api("/v1/audit");
  const verdict = view.ok
    ? el("p", { class: "ok" }, `Chain verified: ${view.entries} entries, ${view.checkpoints} signed checkpoints${view.signed ? "" : " (no key here: signatures not checked)"}.`)
    : el("p", { class: "bad" }, `Chain BROKEN at ${view.broken}`);
  main.replaceChildren(el("h1", {}, "Audit log"), verdict,
    el("table", {}, el("thead", {}, el("tr", {}, ["#", "When", "Kind", "Entry", "Hash"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, view.recent.map((e) => el("tr", {}, el("td", {}, e.seq), el("td", {}, when(e.at)), el("td", {}, e.kind),
        el("td", {}, el("code", {}, JSON.stringify(e.entry))), el("td", {}, el("code", {}, e.hash.slice(0, 12))))))));
}

async function tools() {
  const data = await api("/v1/tools");
  main.replaceChildren(el("h1", {}, "Tools"),
    el("table", {}, el("thead", {}, el("tr", {}, ["Tool", "Lives in", "Mode", "Risk", "What it does"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, data.tools.map((t) => el("tr", {}, el("td", {}, el("code", {}, t.name)), el("td", {}, t.source),
        el("td", {}, t.execution_mode), el("td", {}, t.risk), el("td", {}, t.description.split("\n")[0]))))));
}

async function route() {
  leave(); leave = () => {};
  const [path, query] = (location.hash.slice(1) || "/").split("?");
  const params = new URLSearchParams(query || "");
  for (const link of document.querySelectorAll("nav a")) {
    const target = link.getAttribute("href").slice(1);
    link.toggleAttribute("aria-current", target === "/" ? path === "/" : path.startsWith(target));
    if (link.hasAttribute("aria-current")) link.setAttribute("aria-current", "page");
  }
  try {
    if (path.startsWith("/runs/")) leave = showRun(main, decodeURIComponent(path.slice(6)));
    else if (path === "/runs") await runs(params);
    else if (path === "/inbox") await inbox();
    else if (path === "/audit") await audit();
    else if (path === "/tools") await tools();
    else home();
    if (!path.startsWith("/runs/") && path !== "/") main.focus();
  } catch (err) { say(err.message); }
}

window.addEventListener("hashchange", () => { say(""); route(); });
route();
api("/v1/inbox").then((d) => updateCount(d.items.length)).catch(() => {});
