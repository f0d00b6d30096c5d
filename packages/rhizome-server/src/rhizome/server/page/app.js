// The page at `/`: plain JavaScript over the REST API (no build step). Text from the server is
// only ever set as textContent, never parsed as HTML. Graphs are drawn by Cytoscape.js
// (vendor/cytoscape), laid out by its own layouts.
"use strict";

const state = {
  workspaces: [],     // GET /workspaces
  workspace: null,    // the one picked in the header
  graphWorkspace: null,
  groupsOffset: 0,
  documentsOffset: 0,
  cy: null,
};
const GROUPS_PAGE = 10;
const DOCUMENTS_PAGE = 50;
const $ = (id) => document.getElementById(id);

// -- helpers ---------------------------------------------------------------------------------------
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value !== null && value !== undefined && value !== false) node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function headers(extra) {
  const key = $("api-key").value.trim();
  return Object.assign(key ? { Authorization: "Bearer " + key } : {}, extra || {});
}

async function api(path, options) {
  options = options || {};
  const init = { method: options.method || "GET", headers: headers() };
  if (options.json !== undefined) {
    init.body = JSON.stringify(options.json);
    init.headers["Content-Type"] = "application/json";
  }
  const response = await fetch(path, init);
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const message = body.error && (body.error.message || body.error);
    throw new Error(message || response.status + " " + response.statusText);
  }
  return body;
}

function status(text, isError) {
  $("status").textContent = text || "";
  $("status").className = isError ? "error" : "muted";
}

function cut(text, n) {
  text = (text || "").replace(/\s+/g, " ").trim();
  return text.length > n ? text.slice(0, n - 1) + "…" : text;
}

function enc(part) { return encodeURIComponent(part); }

function spaceNamed(name) { return state.workspaces.find((w) => w.name === name); }
function hasEntities(space) { return space && space.counts.entities > 0; }
function hasGroups(space) { return space && space.counts.communities > 0; }

// -- workspaces ------------------------------------------------------------------------------------
async function loadWorkspaces(keep) {
  try {
    state.workspaces = (await api("/workspaces")).workspaces;
  } catch (error) {
    status(error.message + " — type the API key above", true);
    return;
  }
  const picker = $("workspace");
  const kept = picker.value;
  picker.replaceChildren(...state.workspaces.map((w) => el("option", { value: w.name }, w.name + " (" + w.method + ")")));
  if (kept && spaceNamed(kept)) picker.value = kept;
  status(state.workspaces.length + " workspaces");
  if (keep && state.workspace && spaceNamed(state.workspace.name)) {  // after a write: new counts, same page
    state.workspace = spaceNamed(state.workspace.name);
    describeWorkspace();
    loadDocuments();
  } else {
    pickWorkspace();
  }
}

function describeWorkspace() {
  const c = state.workspace.counts;
  $("workspace-info").textContent = `${c.documents} documents · ${c.chunks} chunks · ${c.entities} entities · ${c.relations} relations · ${c.communities} groups`;
}

function pickWorkspace() {
  state.workspace = spaceNamed($("workspace").value) || state.workspaces[0] || null;
  if (!state.workspace) return;
  describeWorkspace();
  resetColumns();
  $("level").replaceChildren();
  state.groupsOffset = 0;
  state.documentsOffset = 0;
  loadEntityNames();
  loadGroups();
  loadDocuments();
}

// -- asking, side by side --------------------------------------------------------------------------
function choices() {
  // every workspace and mode: "ws\u0000mode" ("" for a method with one mode)
  return state.workspaces.flatMap((w) => w.modes.map((m) => ({
    value: w.name + "\u0000" + (m.name || ""), label: w.name + (m.name ? " · " + m.name : ""), purpose: m.purpose,
  })));
}

function resetColumns() {
  const space = state.workspace;
  const modes = space.modes.map((m) => space.name + "\u0000" + (m.name || ""));
  const others = choices().map((c) => c.value).filter((v) => !modes.includes(v));
  const picked = modes.concat(others).slice(0, 2);
  $("columns").replaceChildren(...picked.map(column));
}

function column(value) {
  const select = el("select", { class: "mode", "aria-label": "method and mode" },
    choices().map((c) => el("option", { value: c.value, title: c.purpose }, c.label)));
  select.value = value;
  const remove = el("button", { type: "button", class: "remove", title: "remove this column",
    onclick: () => { if ($("columns").children.length > 1) box.remove(); } }, "×");
  const box = el("div", { class: "column" }, el("div", { class: "column-head" }, select, remove), el("div", { class: "results" }));
  return box;
}

async function ask(event) {
  event.preventDefault();
  const query = $("question").value.trim();
  if (!query) return;
  const k = Number($("k").value) || 4;
  const withAnswer = $("with-answer").checked;
  await Promise.all([...$("columns").children].map((box) => runColumn(box, query, k, withAnswer)));
}

async function runColumn(box, query, k, withAnswer) {
  const [ws, mode] = box.querySelector("select.mode").value.split("\u0000");
  const results = box.querySelector(".results");
  results.replaceChildren(el("p", { class: "muted" }, "searching…"));
  const request = { query, k, mode: mode || null };
  try {
    const found = await api(`/${enc(ws)}/query`, { method: "POST", json: request });
    const cost = ["embed_calls", "model_calls", "prompt_tokens", "completion_tokens"]
      .filter((name) => found.stats[name]).map((name) => `${found.stats[name]} ${name.replace("_", " ")}`);
    const parts = [el("p", { class: "muted" }, [`${found.hits.length} hits · mode ${found.mode || "(only)"}`].concat(cost).join(" · "))];
    if (withAnswer) {
      const answered = await api(`/${enc(ws)}/answer`, { method: "POST", json: request });
      parts.push(el("div", { class: "answer" }, el("strong", {}, "Answer "), answered.extractive ? el("em", {}, "(extractive) ") : null,
        answered.answer, el("div", { class: "muted" }, "cites " + answered.citations.map((h) => h.id).join(", "))));
    }
    for (const note of found.notes) parts.push(el("p", { class: "note" }, note));
    parts.push(el("ol", { class: "hits" }, found.hits.map((hit) => hitItem(ws, hit))));
    results.replaceChildren(...parts);
  } catch (error) {
    results.replaceChildren(el("p", { class: "error" }, error.message));
  }
}

function hitItem(ws, hit) {
  const title = hit.metadata.title || hit.provenance.document_ids.join(", ");
  const chips = el("div", { class: "chips" });
  const item = el("li", { class: "hit" },
    el("div", { class: "hit-head" }, el("span", { class: "score" }, hit.score.toFixed(3)), el("span", { class: "kind" }, hit.kind),
      el("span", { class: "title" }, title)),
    el("details", {}, el("summary", {}, cut(hit.text, 220)), el("pre", { class: "passage" }, hit.text),
      el("div", { class: "muted" }, "documents " + hit.provenance.document_ids.join(", ") + " · passages " + hit.provenance.chunk_ids.join(", "))),
    chips);
  const chunks = hit.provenance.chunk_ids;
  if (hasEntities(spaceNamed(ws)) && chunks.length) {
    const query = chunks.slice(0, 20).map((c) => "chunk=" + enc(c)).join("&");
    api(`/${enc(ws)}/graph/entities?${query}&limit=8`)
      .then((found) => chips.replaceChildren(...found.entities.map((e) => entityChip(ws, e.id, e.name))))
      .catch(() => {});
  }
  return item;
}

function entityChip(ws, id, name) {
  return el("button", { type: "button", class: "chip entity", "data-entity": id, title: "explore the neighbourhood of " + name,
    onclick: () => showNeighbourhood(ws, id) }, name);
}

// -- the graph ------------------------------------------------------------------------------------
function graph() {
  if (!state.cy) {
    state.cy = cytoscape({
      container: $("cy"),
      wheelSensitivity: 0.3,
      maxZoom: 1.5,
      style: [
        { selector: "node", style: { label: "data(label)", "font-size": 10, "background-color": "#6b8fb3", width: "mapData(degree, 0, 30, 14, 40)", height: "mapData(degree, 0, 30, 14, 40)", "text-valign": "bottom", "text-margin-y": 3 } },
        { selector: "node.center", style: { "background-color": "#d9822b", "font-weight": "bold" } },
        { selector: "node.far", style: { "background-color": "#a9bdd2" } },
        { selector: "node.group", style: { shape: "round-rectangle", "background-color": "#e2b68a", width: 24, height: 24 } },
        { selector: "node.passage", style: { shape: "rectangle", "background-color": "#bbbbbb", width: 12, height: 12 } },
        { selector: "edge", style: { width: "mapData(weight, 1, 10, 1, 5)", "line-color": "#c3ccd6", "curve-style": "bezier", label: "data(label)", "font-size": 8, color: "#777", "text-rotation": "autorotate" } },
      ],
    });
    state.cy.on("tap", "node", (event) => {
      const kind = event.target.data("kind");
      if (kind === "entity") showNeighbourhood(state.graphWorkspace, event.target.id());
      else if (kind === "group") showGroup(state.graphWorkspace, event.target.id());
    });
  }
  return state.cy;
}

async function showNeighbourhood(ws, entity) {
  showTab("graph");
  state.graphWorkspace = ws;
  const depth = Number($("depth").value) || 1;
  $("graph-title").textContent = `${ws}: loading ${entity}…`;
  let found;
  try {
    found = await api(`/${enc(ws)}/graph/neighbourhood?entity=${enc(entity)}&depth=${depth}&limit=60`);
  } catch (error) {
    $("graph-title").textContent = error.message;
    $("graph-title").className = "error";
    return;
  }
  $("graph-title").className = "muted";
  $("graph-title").textContent = `${ws}: ${found.entity.name}, ${found.nodes.length - 1} entities within ${found.depth} step(s)` + (found.truncated ? " (limit reached: some entities or relations left out)" : "");
  draw(found.nodes.map((n) => ({ id: n.id, label: n.name, degree: n.degree, kind: "entity", classes: n.depth === 0 ? "center" : (n.depth > 1 ? "far" : "") })),
    found.edges.map((e) => ({ id: "e:" + e.id, source: e.source, target: e.target, weight: e.weight, label: e.predicate || "" })),
    { name: "cose", animate: false, randomize: false, nodeDimensionsIncludeLabels: true });
  entityInfo(ws, found);
}

function draw(nodes, edges, layout) {
  const cy = graph();
  cy.elements().remove();
  cy.add(nodes.map(({ classes, ...data }) => ({ group: "nodes", data, classes: classes || "" })));
  cy.add(edges.map((data) => ({ group: "edges", data })));
  cy.layout(layout).run();
  cy.fit(undefined, 20);
  $("cy").setAttribute("data-node-count", String(cy.nodes().length));
}

function drawGroup(ws, g) {
  // the group in the middle, its child groups around it, its members around them (Cytoscape's concentric layout)
  showTab("graph");
  state.graphWorkspace = ws;
  const label = (x) => cut(x, 40);
  const nodes = [{ id: g.id, label: `L${g.level} ${label(g.title || g.summary)}`, degree: 10, kind: "group", classes: "group center" }]
    .concat(g.children.map((c) => ({ id: c, label: "↓ " + c.slice(-6), degree: 5, kind: "group", classes: "group" })))
    .concat(g.members.map((m) => ({ id: m.id, label: label(m.kind === "entity" ? m.name : m.id), degree: 2, kind: m.kind, classes: m.kind === "chunk" ? "passage" : "" })));
  const edges = g.children.concat(g.members.map((m) => m.id)).map((id) => ({ id: "e:" + g.id + ">" + id, source: g.id, target: id, weight: 1, label: "" }));
  draw(nodes, edges, { name: "concentric", concentric: (n) => n.data("degree"), levelWidth: () => 1, minNodeSpacing: 24, animate: false });
  $("graph-title").className = "muted";
  $("graph-title").textContent = `${ws}: level ${g.level} ${g.id}, ${g.children.length} child groups, ${g.member_count} members`;
  $("entity-info").replaceChildren(el("div", {}, el("h3", {}, g.title || g.id), el("p", {}, g.summary)));
}

function entityInfo(ws, found) {
  const e = found.entity;
  const neighbours = found.nodes.filter((n) => n.depth === 1);
  $("entity-info").replaceChildren(el("div", {},
    el("h3", {}, e.name), el("p", { class: "muted" }, [e.type, "degree " + e.degree].filter(Boolean).join(" · ")),
    el("p", {}, e.description),
    found.groups.length ? el("div", {}, el("strong", {}, "In "), found.groups.map((g) => el("button", { type: "button", class: "chip group",
      onclick: () => showGroup(ws, g.id) }, `L${g.level} ${g.title || g.id}`))) : null,
    el("p", { class: "muted" }, "found in " + found.chunks.join(", ")),
    el("strong", {}, "Neighbours"),
    el("ul", { id: "neighbours" }, neighbours.map((n) => el("li", {}, entityChip(ws, n.id, n.name), " ", el("span", { class: "muted" }, cut(n.description, 120)))))));
}

async function loadEntityNames() {
  const space = state.workspace;
  $("entity-names").replaceChildren();
  if (!hasEntities(space)) return;
  try {
    const found = await api(`/${enc(space.name)}/graph/entities?limit=200`);
    $("entity-names").replaceChildren(...found.entities.map((e) => el("option", { value: e.name })));
  } catch (error) { /* the list is a convenience */ }
}

// -- communities, levels, tree nodes ---------------------------------------------------------------
async function loadGroups(level) {
  const space = state.workspace;
  const list = $("group-list");
  if (!hasGroups(space)) {
    list.replaceChildren(el("p", { class: "muted" }, `${space.name} (${space.method}) has no communities, levels or tree nodes.`));
    $("level").replaceChildren();
    $("groups-page").textContent = "";
    return;
  }
  const chosen = level === undefined ? $("level").value : level;
  const query = `offset=${state.groupsOffset}&limit=${GROUPS_PAGE}` + (chosen !== "" && chosen !== undefined ? `&level=${enc(chosen)}` : "");
  try {
    const found = await api(`/${enc(space.name)}/graph/groups?${query}`);
    $("level").replaceChildren(...found.levels.map((l) => el("option", { value: l }, String(l))));
    $("level").value = String(found.level);
    $("groups-page").textContent = `${found.offset + 1}–${found.offset + found.groups.length} of ${found.total} ${found.kind === "tree" ? "tree nodes" : "groups"}`;
    list.replaceChildren(...found.groups.map((g) => groupCard(space.name, g)));
  } catch (error) {
    list.replaceChildren(el("p", { class: "error" }, error.message));
  }
}

function groupCard(ws, g) {
  const members = g.members.map((m) => m.kind === "entity" ? entityChip(ws, m.id, m.name)
    : el("span", { class: "chip passage", title: m.name }, m.id));
  return el("div", { class: "group", "data-group": g.id },
    el("h4", {}, `L${g.level} · ${g.title || cut(g.summary, 60) || g.id}`, el("span", { class: "muted" }, ` ${g.member_count} members` + (g.rating !== null ? ` · rating ${g.rating}` : ""))),
    el("details", {}, el("summary", {}, cut(g.summary, 200)), el("p", {}, g.summary),
      g.findings.map((f) => el("p", { class: "finding" }, f.summary || "", " ", f.explanation || ""))),
    el("div", { class: "chips" }, members, g.member_count > g.members.length ? el("span", { class: "muted" }, ` +${g.member_count - g.members.length} more`) : null),
    el("div", { class: "chips" },
      el("button", { type: "button", class: "chip draw", onclick: () => drawGroup(ws, g) }, "draw"),
      g.parent ? el("button", { type: "button", class: "chip group", onclick: () => showGroup(ws, g.parent) }, "↑ parent") : null,
      g.children.map((c) => el("button", { type: "button", class: "chip group", onclick: () => showGroup(ws, c) }, "↓ " + c))));
}

async function showGroup(ws, id) {
  showTab("groups");
  try {
    const found = await api(`/${enc(ws)}/graph/groups/${enc(id)}`);
    $("group-list").replaceChildren(groupCard(ws, found.group), el("button", { type: "button", onclick: () => loadGroups() }, "back to the level"));
  } catch (error) {
    $("group-list").replaceChildren(el("p", { class: "error" }, error.message));
  }
}

// -- documents and uploads -------------------------------------------------------------------------
async function loadDocuments() {
  const space = state.workspace;
  try {
    const found = await api(`/${enc(space.name)}/documents?offset=${state.documentsOffset}&limit=${DOCUMENTS_PAGE}`);
    $("documents-table").tBodies[0].replaceChildren(...found.documents.map((d) => el("tr", { class: "status-" + d.status },
      el("td", {}, d.id), el("td", {}, d.title || ""), el("td", { title: d.error || "" }, d.status + (d.error ? ": " + cut(d.error, 80) : "")),
      el("td", {}, String(d.chunks)), el("td", {}, d.updated))));
    $("documents-page").textContent = found.total ? `${found.offset + 1}–${found.offset + found.documents.length} of ${found.total}` : "no documents";
  } catch (error) {
    $("documents-page").textContent = error.message;
  }
}

function upload(event) {
  event.preventDefault();
  const files = $("files").files;
  if (!files.length) return;
  const space = state.workspace;
  const form = new FormData();
  for (const file of files) form.append("files", file, file.name);
  const bar = $("upload-progress");
  $("upload").hidden = false;
  $("upload-files").replaceChildren();
  bar.value = 0;
  $("upload-status").textContent = "uploading…";
  const request = new XMLHttpRequest();
  request.open("POST", `/${enc(space.name)}/documents`);
  for (const [key, value] of Object.entries(headers())) request.setRequestHeader(key, value);
  request.upload.onprogress = (e) => { if (e.lengthComputable) { bar.max = e.total; bar.value = e.loaded; } };
  request.onerror = () => { $("upload-status").textContent = "the upload failed: the server could not be reached"; };
  request.onload = () => {
    let body = {};
    try { body = JSON.parse(request.responseText); } catch (error) { /* not JSON */ }
    if (request.status !== 202) {
      $("upload-status").textContent = (body.error && (body.error.message || body.error)) || "the upload failed (" + request.status + ")";
      return;
    }
    $("upload-files").replaceChildren(...body.files.map((f) => el("li", { class: f.error ? "error" : "" },
      `${f.name}: ${f.documents} documents` + (f.error ? " — " + f.error : "") + (f.warnings.length ? " (" + f.warnings.join("; ") + ")" : ""))));
    follow(body.id);
  };
  request.send(form);
}

async function follow(jobId) {
  const bar = $("upload-progress");
  for (;;) {
    let job;
    try {
      job = await api(`/jobs/${enc(jobId)}`);
    } catch (error) {
      $("upload-status").textContent = error.message;
      return;
    }
    const p = job.progress;
    bar.max = Math.max(p.total, 1);
    bar.value = job.status === "done" ? bar.max : p.done;
    $("upload-status").textContent = job.status === "running" ? `${p.phase || "starting"}: ${p.done}/${p.total}` : job.status
      + (job.status === "done" ? ` — ${job.result.inserted.length} inserted` : "") + (job.error ? ": " + job.error : "");
    if (job.status === "done" || job.status === "failed") break;
    await new Promise((resolve) => setTimeout(resolve, 400));
  }
  await loadWorkspaces(true);
}

// -- tabs and wiring -----------------------------------------------------------------------------
function showTab(name) {
  for (const button of document.querySelectorAll("[data-tab]")) button.setAttribute("aria-selected", String(button.dataset.tab === name));
  for (const tab of document.querySelectorAll(".tab")) tab.hidden = tab.id !== "tab-" + name;
  if (name === "graph" && state.cy) state.cy.resize();
}

function page(which, step) {
  return () => {
    const key = which + "Offset";
    state[key] = Math.max(0, state[key] + step);
    if (which === "groups") loadGroups(); else loadDocuments();
  };
}

document.addEventListener("DOMContentLoaded", () => {
  $("api-key").value = sessionStorage.getItem("rhizome-api-key") || "";
  $("api-key").addEventListener("change", () => { sessionStorage.setItem("rhizome-api-key", $("api-key").value.trim()); loadWorkspaces(true); });
  $("workspace").addEventListener("change", pickWorkspace);
  $("ask-form").addEventListener("submit", ask);
  $("add-column").addEventListener("click", () => $("columns").append(column(choices()[0].value)));
  $("entity-form").addEventListener("submit", (event) => { event.preventDefault(); showNeighbourhood(state.workspace.name, $("entity").value.trim()); });
  $("level").addEventListener("change", () => { state.groupsOffset = 0; loadGroups(); });
  $("groups-prev").addEventListener("click", page("groups", -GROUPS_PAGE));
  $("groups-next").addEventListener("click", page("groups", GROUPS_PAGE));
  $("documents-prev").addEventListener("click", page("documents", -DOCUMENTS_PAGE));
  $("documents-next").addEventListener("click", page("documents", DOCUMENTS_PAGE));
  $("upload-form").addEventListener("submit", upload);
  for (const button of document.querySelectorAll("[data-tab]")) button.addEventListener("click", () => showTab(button.dataset.tab));
  loadWorkspaces();
});
