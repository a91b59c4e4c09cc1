// The dashboard's tables, each rendered whole from the view model (hub/rest/dashboard.py).
// Rows carry data-testid="<section>-<object name>" so tests and operators can find them.

import { byId, fillRows, h } from "./dom.js";

const VERDICT_CLASS = { Accepted: "ok", Conflict: "warn", Rejected: "bad", Invalid: "bad", Pending: "neutral" };

export function formatAge(seconds) {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s ago`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m ago`;
}

function ports(list) {
  if (!list || list.length === 0) return "—";
  return list.map((p, i) =>
    h("span", { className: "port" }, `${p.name ? `${p.name} ` : ""}${p.port}/${p.protocol || "TCP"}${i < list.length - 1 ? ", " : ""}`),
  );
}

function serviceName(namespace, name) {
  return h("span", {}, h("span", { className: "ns" }, `${namespace}/`), h("span", { className: "name" }, name));
}

// Chips saying, per member cluster, whether it applied an import.
function statusChips(testidPrefix, statuses, clusters) {
  const chips = clusters.map((clusterID) => {
    const status = statuses[clusterID];
    const testid = `${testidPrefix}-status-${clusterID}`;
    if (!status) return h("span", { className: "chip neutral", "data-testid": testid }, `${clusterID}: no report`);
    const label = status.succeeded ? "applied" : `failed${status.reason ? ` (${status.reason})` : ""}`;
    return h(
      "span",
      { className: `chip ${status.succeeded ? "ok" : "bad"}`, "data-testid": testid, title: status.message || label },
      `${clusterID}: ${label}`,
    );
  });
  return chips.length ? chips : "—";
}

export function renderHeader(view) {
  const cs = view.clusterSet;
  byId("clusterset-name").textContent = cs.name;
  const ready = byId("clusterset-ready");
  ready.textContent = cs.ready.status === "True" ? "Ready" : cs.ready.reason || "Not ready";
  ready.className = `badge ${cs.ready.status === "True" ? "ok" : cs.ready.status === "False" ? "bad" : "neutral"}`;
  ready.title = cs.ready.message || "";
  byId("clusterset-message").textContent = cs.ready.message || "";
  byId("stat-total").textContent = cs.totalClusters;
  byId("stat-ready").textContent = `${cs.readyClusters}/${cs.totalClusters}`;
  byId("revision").textContent = `store revision ${view.revision} · leader cluster ${cs.leaderClusterID}`;
}

// A member's ClusterProperties (KEP-2149), one chip each.
function properties(map) {
  const entries = Object.entries(map || {}).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) return "—";
  return entries.map(([name, value]) => h("span", { className: "chip neutral", title: name }, `${name}=${value}`));
}

// Which exporting clusters each importer uses (KEP-5939): per group of importers, each selector's
// clusters in order; the first with a ready endpoint wins, else every exporter.
function selection(i) {
  if (!i.selective) return h("span", { className: "muted" }, "every exporter");
  if (i.selections.length === 0) return h("span", { className: "muted" }, "pending");
  return i.selections.map((s) =>
    h(
      "div",
      { "data-testid": `import-${i.name}-selection-${s.importers.join("-")}` },
      `${s.importers.join(", ")} → `,
      s.results.map((clusters, n) =>
        h("span", { className: "chip neutral", title: `selector ${n + 1}` }, clusters.length ? clusters.join(", ") : "none"),
      ),
    ),
  );
}

export function renderMembers(view) {
  const rows = view.members.map((m) =>
    h(
      "tr",
      { "data-testid": `member-${m.clusterID}`, "data-connected": m.connected },
      h("td", { className: "name" }, m.clusterID),
      h(
        "td",
        {},
        h(
          "span",
          { className: `badge ${m.connected ? "ok" : "bad"}`, "data-testid": `member-${m.clusterID}-state` },
          m.connected ? "Connected" : "Disconnected",
        ),
      ),
      h("td", { "data-heartbeat": m.lastHeartbeat, title: m.lastHeartbeat }, formatAge(m.heartbeatAgeSeconds)),
      h("td", { className: "muted" }, m.joined ? m.joined.replace("T", " ").replace("Z", " UTC") : "—"),
      h("td", {}, m.kubernetesVersion || "—"),
      h("td", { "data-testid": `member-${m.clusterID}-properties` }, properties(m.properties)),
    ),
  );
  fillRows(byId("members"), rows, "No member cluster has joined yet.");
}

// Whether a member is reached through its global CIDR (NAT: its ranges overlap another member's)
// or at its own addresses; its block either way, when it has one.
function reachedAt(g) {
  if (g.globallyAddressed) {
    return h(
      "span",
      { className: "chip warn", title: "its ranges overlap another member's: reached only through this block (NAT)" },
      `NAT via ${g.globalCIDR}`,
    );
  }
  const block = g.globalCIDR ? h("span", { className: "muted" }, ` (block ${g.globalCIDR})`) : "";
  return h("span", {}, "own ranges", block);
}

export function renderGateways(view) {
  const rows = view.gateways.map((g) => {
    const receivers = view.members.map((m) => m.clusterID).filter((id) => id !== g.clusterID);
    return h(
      "tr",
      { "data-testid": `gateway-${g.clusterID}` },
      h("td", { className: "name" }, g.clusterID),
      h("td", {}, g.gatewayIPs.length ? g.gatewayIPs.join(", ") : "—"),
      h("td", {}, h("code", {}, g.serviceCIDR || "—")),
      h("td", {}, g.podCIDRs.length ? g.podCIDRs.map((c) => h("code", { className: "chip neutral" }, c)) : "—"),
      h("td", { "data-testid": `gateway-${g.clusterID}-reached` }, reachedAt(g)),
      h("td", {}, g.wireGuard ? "yes" : "no"),
      h("td", {}, statusChips(`gateway-${g.clusterID}`, g.health, receivers)),
    );
  });
  fillRows(byId("gateways"), rows, "No member has exported its ClusterInfo (no Gateway elected yet).");
}

export function renderExports(view) {
  const services = view.exports.filter((e) => e.kind === "Service");
  const rows = services.map((e) =>
    h(
      "tr",
      { "data-testid": `export-${e.name}`, "data-verdict": e.verdict },
      h("td", { className: "name" }, e.clusterID),
      h("td", {}, serviceName(e.namespace, e.sourceName)),
      h("td", {}, e.type),
      h("td", {}, ports(e.ports)),
      h(
        "td",
        {},
        h("span", { className: `badge ${VERDICT_CLASS[e.verdict] || "neutral"}`, "data-testid": `verdict-${e.name}` }, e.verdict),
      ),
      h("td", {}, e.reason || "—"),
      h("td", { className: "muted" }, e.message || ""),
    ),
  );
  fillRows(byId("exports"), rows, "No Service is exported. Create a ServiceExport in a member cluster.");
  const conflicts = view.exports.filter((e) => e.verdict !== "Accepted" && e.verdict !== "Pending");
  byId("stat-exports").textContent = services.length;
  byId("stat-conflicts").textContent = conflicts.length;

  // Endpoints, ClusterInfo and policy exports: counted, and named when not accepted.
  const others = view.exports.filter((e) => e.kind !== "Service");
  const counts = {};
  for (const e of others) counts[e.kind] = (counts[e.kind] || 0) + 1;
  const problems = others.filter((e) => e.verdict !== "Accepted");
  const summary = Object.entries(counts).map(([kind, n]) => `${n} ${kind}`);
  if (view.labelIdentities) summary.push(`${view.labelIdentities} LabelIdentity imports`);
  const text = summary.length ? `Also exported: ${summary.join(", ")}.` : "";
  const problemText = problems.map((e) => `${e.name}: ${e.verdict}${e.reason ? ` (${e.reason})` : ""}`).join("; ");
  byId("other-exports").textContent = problemText ? `${text} Not accepted: ${problemText}.` : text;
}

export function renderImports(view) {
  const rows = view.serviceImports.map((i) =>
    h(
      "tr",
      { "data-testid": `import-${i.name}` },
      h("td", {}, serviceName(i.namespace, i.sourceName)),
      h("td", {}, i.type),
      h("td", {}, ports(i.ports)),
      h("td", {}, i.clusters.map((c) => h("span", { className: "chip neutral" }, c))),
      h("td", {}, i.endpoints === null ? "—" : String(i.endpoints)),
      h("td", {}, selection(i)),
      h("td", {}, statusChips(`import-${i.name}`, i.clusterStatuses, Object.keys(i.clusterStatuses).sort())),
    ),
  );
  fillRows(byId("imports"), rows, "Nothing is imported yet.");
}

export function renderPolicies(view) {
  const allMembers = view.members.map((m) => m.clusterID);
  const rows = view.policies.map((p) => {
    const targets = p.targetClusters.length ? p.targetClusters : allMembers;
    return h(
      "tr",
      { "data-testid": `policy-${p.name}` },
      h("td", { className: "name" }, p.sourceName || p.name),
      h("td", {}, p.tier || "—"),
      h("td", {}, p.priority ?? "—"),
      h("td", {}, p.targetClusters.length ? p.targetClusters.join(", ") : "all members"),
      h("td", {}, statusChips(`policy-${p.name}`, p.clusterStatuses, targets)),
    );
  });
  fillRows(byId("policies"), rows, "No AntreaClusterNetworkPolicy is replicated to the ClusterSet.");
}
