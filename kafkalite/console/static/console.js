// kafkalite console: draws /api/cluster and /api/groups, and redraws on every event of
// /api/events (Server-Sent Events); a slow timer refreshes the offsets and rates in between.
"use strict";

const GROUP_STYLES = [            // colour AND dash pattern per group (never colour alone)
  {color: "#c2185b", dash: ""}, {color: "#00796b", dash: "10 6"},
  {color: "#5e35b1", dash: "3 5"}, {color: "#ef6c00", dash: "14 4 3 4"},
];
const state = {cluster: null, groups: null, refreshTimer: null};

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined) continue;
    if (k === "text") node.textContent = v; else node.setAttribute(k, v);
  }
  for (const child of children) {
    if (child !== null && child !== undefined) {
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
  }
  return node;
}

async function getJson(url) {
  const response = await fetch(url, {cache: "no-store"});
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

async function refresh() {
  try {
    const [cluster, groups] = await Promise.all([getJson("/api/cluster"),
                                                 getJson("/api/groups")]);
    state.cluster = cluster;
    state.groups = groups;
    render();
  } catch (err) {
    document.getElementById("stream-status").textContent = "console unreachable: " + err;
  }
}

function scheduleRefresh() {     // many events arrive together during a failover: draw once
  clearTimeout(state.refreshTimer);
  state.refreshTimer = setTimeout(refresh, 100);
}

function replicaRole(partition, brokerId) {
  if (partition.leader === null) return "offline";
  if (partition.leader === brokerId) return "leader";
  return partition.isr.includes(brokerId) ? "follower" : "out-of-sync";
}

const ROLE_LABEL = {leader: "♛ LEADER", follower: "✓ in sync", "out-of-sync": "⚠ OUT OF SYNC",
                    offline: "✖ NO LEADER"};

function renderZooKeeper(cluster) {
  const controller = document.getElementById("controller");
  const c = cluster.controller;
  controller.dataset.brokerId = c.broker_id === null ? "" : String(c.broker_id);
  controller.replaceChildren(c.broker_id === null
    ? el("span", {text: "controller: none (an election is under way)"})
    : el("span", {}, "★ controller: ", el("b", {text: `broker ${c.broker_id}`}),
         ` · controller epoch ${c.epoch}`));
  const live = cluster.brokers.filter(b => b.alive).map(b => b.id);
  document.getElementById("live-brokers").textContent =
    `/brokers/ids: [${live.join(",")}]`;
  document.getElementById("cluster-id").textContent =
    cluster.cluster_id ? `cluster ${cluster.cluster_id}` : "";
}

function renderProducers(cluster) {
  const box = document.getElementById("producer-rates");
  const topics = Object.entries(cluster.topics).filter(([, t]) => !t.internal);
  const max = Math.max(1, ...topics.map(([, t]) => t.records_per_s));
  box.replaceChildren(...topics.map(([name, t]) => el("span",
    {class: "rate", "data-topic": name}, `${name} ◀ ${t.records_per_s} rec/s`,
    el("span", {class: "bar", style: `width:${Math.round(80 * t.records_per_s / max)}px`}))));
  if (!topics.length) box.textContent = "no topics yet";
}

function renderBrokers(cluster) {
  const box = document.getElementById("brokers");
  const controllerId = cluster.controller.broker_id;
  box.replaceChildren(...cluster.brokers.map(b => {
    const chips = [];
    for (const [topic, t] of Object.entries(cluster.topics)) {
      if (t.internal && !document.body.classList.contains("show-internal")) continue;
      for (const p of t.partitions) {
        if (!p.replicas.includes(b.id)) continue;
        const role = replicaRole(p, b.id);
        const leading = role === "leader" && p.high_watermark !== null;
        const lso = p.last_stable_offset === null ? "" : ` · LSO ${p.last_stable_offset}`;
        const offsets = leading
          ? el("small", {text: `HW ${p.high_watermark}${lso} · LEO ${p.log_end_offset}`}) : null;
        // the records between the LSO and the HW belong to a transaction still open:
        // read_committed consumers stop at the LSO until it commits or aborts
        const openTxn = leading && p.open_transaction
          ? el("small", {class: "txn-span", "data-from": String(p.last_stable_offset),
                         "data-to": String(p.high_watermark),
                         text: `◐ open transaction: offsets ${p.last_stable_offset}..` +
                               `${p.high_watermark - 1} not yet visible to read_committed`})
          : null;
        chips.push(el("div", {class: "replica", "data-topic": topic,
                              "data-partition": String(p.partition), "data-broker": String(b.id),
                              "data-role": role,
                              "data-open-txn": String(Boolean(leading && p.open_transaction)),
                              title: `ISR [${p.isr.join(",")}], leader epoch ${p.leader_epoch}`},
          el("b", {text: `${topic}-${p.partition}`}), el("small", {text: ROLE_LABEL[role]}),
          offsets, openTxn));
      }
    }
    const isController = b.id === controllerId;
    return el("div", {class: "broker", "data-broker-id": String(b.id),
                      "data-alive": String(b.alive), "data-controller": String(isController)},
      el("h3", {}, `broker ${b.id} `,
         isController ? el("span", {class: "badge", text: "★ CONTROLLER"}) : null),
      el("div", {class: "status", text: b.alive ? "● alive" : "✖ DEAD"}),
      el("div", {class: "where", text: b.host ? `${b.host}:${b.port}` + (b.rack ? ` rack ${b.rack}` : "") : ""}),
      el("div", {class: "replicas"}, ...chips));
  }));
}

function renderGroups(groups) {
  const box = document.getElementById("group-list");
  if (!groups.groups.length) { box.textContent = "no consumer groups yet"; return; }
  box.replaceChildren(...groups.groups.map((g, index) => {
    const style = GROUP_STYLES[index % GROUP_STYLES.length];
    const lag = g.offsets.reduce((sum, row) => sum + (row.lag || 0), 0);
    return el("div", {class: "group", "data-group": g.group, "data-kind": g.kind,
                      style: `border-color:${style.color}`},
      el("h4", {text: `group ${g.group} (${g.kind}) · ${g.state} · lag ${lag}`}),
      el("div", {class: "members"}, ...g.members.map(m => {
        const owned = m.partitions.map(tp => `${tp.topic}-${tp.partition}`);
        return el("span", {class: "member", "data-member": m.id, "data-group-index": String(index),
                           "data-idle": String(!owned.length), title: m.id,
                           style: `border-color:${style.color}`},
          `${m.short} → ${owned.length ? owned.join(", ") : "idle (owns nothing)"}`);
      })));
  }));
}

const TXN_SHOWN = 12;
const TXN_LABEL = {Empty: "○ idle", Ongoing: "◐ OPEN", PrepareCommit: "… committing",
                   PrepareAbort: "… aborting", PrepareEpochFence: "… fencing",
                   CompleteCommit: "✔ COMMITTED", CompleteAbort: "✖ ABORTED"};

function renderTransactions(cluster) {
  const box = document.getElementById("txn-list");
  const all = cluster.transactions || [];
  if (!all.length) { box.textContent = "no transactional producers yet"; return; }
  // open transactions first, then the most recently finished: a long-lived cluster keeps
  // every transactional id for transactional.id.expiration.ms (7 days)
  const txns = [...all].sort((a, b) => (b.open - a.open) || (b.last_update_ms - a.last_update_ms))
    .slice(0, TXN_SHOWN);
  const more = all.length - txns.length;
  box.replaceChildren(...txns.map(t => el("div", {
      class: "txn", "data-transactional-id": t.transactional_id, "data-state": t.state,
      "data-open": String(t.open),
      title: `timeout ${t.timeout_ms} ms` + (t.coordinator === null || t.coordinator === undefined
        ? "" : `, coordinator broker ${t.coordinator}`)},
    el("b", {text: t.transactional_id}),
    ` producer ${t.producer_id} (epoch ${t.producer_epoch}) `,
    el("span", {class: "txn-state", text: TXN_LABEL[t.state] || t.state}),
    t.partitions.length ? ` on ${t.partitions.join(", ")}` : "",
    t.coordinator === null || t.coordinator === undefined ? ""
      : ` · coordinator broker ${t.coordinator}`)),
    ...(more > 0 ? [el("div", {class: "txn-more",
                               text: `… and ${more} more transactional ids`})] : []));
}

function drawArrows() {
  const svg = document.getElementById("arrows");
  for (const old of svg.querySelectorAll("path.arrow")) old.remove();
  if (!state.groups) return;
  const origin = document.getElementById("picture").getBoundingClientRect();
  state.groups.groups.forEach((g, index) => {
    const style = GROUP_STYLES[index % GROUP_STYLES.length];
    for (const m of g.members) {
      const from = document.querySelector(
        `#group-list .group[data-group="${CSS.escape(g.group)}"][data-kind="${g.kind}"] ` +
        `.member[data-member="${CSS.escape(m.id)}"]`);
      if (!from) continue;
      for (const tp of m.partitions) {
        const sel = `.replica[data-topic="${CSS.escape(tp.topic)}"][data-partition="${tp.partition}"]`;
        const to = document.querySelector(`#brokers ${sel}[data-role="leader"]`) ||
                   document.querySelector(`#brokers ${sel}`);
        if (!to) continue;
        const a = from.getBoundingClientRect(), b = to.getBoundingClientRect();
        const x1 = a.left + a.width / 2 - origin.left, y1 = a.top - origin.top;
        const x2 = b.left + b.width / 2 - origin.left, y2 = b.bottom - origin.top;
        const bend = Math.max(40, (y1 - y2) / 2);
        const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
        path.setAttribute("class", "arrow");
        path.setAttribute("d", `M ${x1} ${y1} C ${x1} ${y1 - bend}, ${x2} ${y2 + bend}, ${x2} ${y2}`);
        path.setAttribute("stroke", style.color);
        if (style.dash) path.setAttribute("stroke-dasharray", style.dash);
        path.setAttribute("marker-end", "url(#arrowhead)");
        svg.append(path);
      }
    }
  });
}

function render() {
  if (!state.cluster) return;
  renderZooKeeper(state.cluster);
  renderProducers(state.cluster);
  renderBrokers(state.cluster);
  renderTransactions(state.cluster);
  if (state.groups) renderGroups(state.groups);
  requestAnimationFrame(drawArrows);
}

function addToTimeline(event) {
  const list = document.getElementById("timeline");
  const when = new Date(event.time * 1000).toLocaleTimeString();
  list.prepend(el("li", {"data-kind": event.kind, "data-id": String(event.id),
                         "data-internal": String(Boolean(event.internal))},
                  el("time", {text: when}), event.sentence));
  while (list.children.length > 300) list.lastElementChild.remove();
}

function connectEvents() {
  const source = new EventSource("/api/events?backlog=300");
  source.onopen = () => {
    document.body.dataset.stream = "open";
    document.getElementById("stream-status").textContent = "live";
    scheduleRefresh();
  };
  source.onmessage = message => {
    addToTimeline(JSON.parse(message.data));
    scheduleRefresh();
  };
  source.onerror = () => {        // EventSource reconnects by itself (sending Last-Event-ID)
    document.body.dataset.stream = "connecting";
    document.getElementById("stream-status").textContent = "reconnecting…";
  };
}

// --- the ZooKeeper tree browser ---------------------------------------------------------------
async function browse(path) {
  document.getElementById("zk-path").value = path;
  const crumbs = document.getElementById("zk-crumbs");
  const parts = path.split("/").filter(Boolean);
  const links = [el("a", {href: "#", "data-path": "/", text: "/"})];
  parts.forEach((part, i) => links.push(
    el("a", {href: "#", "data-path": "/" + parts.slice(0, i + 1).join("/"), text: part + "/"})));
  crumbs.replaceChildren(...links);
  const children = document.getElementById("zk-children");
  const data = document.getElementById("zk-data");
  const stat = document.getElementById("zk-stat");
  try {
    const node = await getJson("/api/zk?path=" + encodeURIComponent(path));
    children.replaceChildren(...node.children.map(c => el("li", {},
      el("a", {href: "#", "data-path": (path === "/" ? "" : path) + "/" + c, text: c}))));
    data.textContent = node.json !== null ? JSON.stringify(node.json, null, 1)
      : (node.data !== null ? node.data : `(binary) ${node.data_base64}`);
    const s = node.stat;
    const rows = [["zkVersion", s.version], ["children", s.num_children],
                  ["ephemeral", s.ephemeral ? `yes (session 0x${s.ephemeral_owner.toString(16)})` : "no"],
                  ["czxid", s.czxid], ["modified", new Date(s.mtime).toLocaleString()]];
    stat.replaceChildren(...rows.map(([k, v]) => el("tr", {}, el("td", {text: k}),
                                                    el("td", {text: String(v)}))));
  } catch (err) {
    children.replaceChildren();
    stat.replaceChildren();
    data.textContent = String(err.message || err);
  }
}

document.addEventListener("click", e => {
  const link = e.target.closest("a[data-path]");
  if (link) { e.preventDefault(); browse(link.dataset.path); }
});
document.getElementById("zk-form").addEventListener("submit", e => {
  e.preventDefault();
  browse(document.getElementById("zk-path").value || "/");
});
document.getElementById("show-internal").addEventListener("change", e => {
  document.body.classList.toggle("show-internal", e.target.checked);
  render();
});
window.addEventListener("resize", () => requestAnimationFrame(drawArrows));

connectEvents();
refresh();
browse("/");
setInterval(refresh, 2000);
