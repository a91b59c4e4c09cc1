// The topology picture: the hub in the centre, member clusters on a circle around it
// (coloured by connection state), and gateway links between clusters that exchanged
// ClusterInfo (coloured by the health the members reported for each other's import).

import { s } from "./dom.js";

const WIDTH = 480;
const HEIGHT = 340;
const CENTRE = { x: WIDTH / 2, y: HEIGHT / 2 };
const ORBIT = 122;
const NODE_RADIUS = 30;

function positions(clusterIDs) {
  // Start on the left so two clusters sit left and right of the hub.
  return new Map(
    clusterIDs.map((id, index) => {
      const angle = Math.PI + (2 * Math.PI * index) / clusterIDs.length;
      return [id, { x: CENTRE.x + ORBIT * Math.cos(angle), y: CENTRE.y + ORBIT * Math.sin(angle) }];
    }),
  );
}

// A curve that bows away from the hub, so a link never hides behind it.
function linkPath(a, b) {
  const mid = { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 };
  const length = Math.hypot(b.x - a.x, b.y - a.y) || 1;
  let normal = { x: -(b.y - a.y) / length, y: (b.x - a.x) / length };
  if (normal.x * (mid.x - CENTRE.x) + normal.y * (mid.y - CENTRE.y) < 0) normal = { x: -normal.x, y: -normal.y };
  const bow = ORBIT - Math.hypot(mid.x - CENTRE.x, mid.y - CENTRE.y) + 2 * NODE_RADIUS;
  const control = { x: mid.x + normal.x * bow, y: mid.y + normal.y * bow };
  return `M ${a.x} ${a.y} Q ${control.x} ${control.y} ${b.x} ${b.y}`;
}

export function renderTopology(svgElement, view) {
  const connected = new Map(view.members.map((m) => [m.clusterID, m.connected]));
  const clusterIDs = [...new Set([...connected.keys(), ...view.gateways.map((g) => g.clusterID)])].sort();
  const where = positions(clusterIDs);
  const gatewayIPs = new Map(view.gateways.map((g) => [g.clusterID, g.gatewayIPs.join(", ")]));
  const layers = { spokes: [], links: [], nodes: [] };

  for (const id of clusterIDs) {
    const p = where.get(id);
    const state = connected.has(id) ? (connected.get(id) ? "ok" : "bad") : "unknown";
    layers.spokes.push(
      s("line", { className: `spoke ${state}`, x1: CENTRE.x, y1: CENTRE.y, x2: p.x, y2: p.y }),
    );
    const label = state === "ok" ? "connected" : state === "bad" ? "disconnected" : "not a member";
    layers.nodes.push(
      s(
        "g",
        { className: `node ${state}`, "data-testid": `topology-node-${id}`, "data-state": state },
        s("title", {}, `${id}: ${label}${gatewayIPs.get(id) ? `, gateway ${gatewayIPs.get(id)}` : ""}`),
        s("circle", { cx: p.x, cy: p.y, r: NODE_RADIUS }),
        s("text", { x: p.x, y: p.y }, id),
        s("text", { className: "sub", x: p.x, y: p.y + NODE_RADIUS + 13 }, gatewayIPs.get(id) || "no gateway"),
      ),
    );
  }
  for (const link of view.gatewayLinks) {
    if (!where.has(link.a) || !where.has(link.b)) continue;
    layers.links.push(
      s(
        "path",
        {
          className: `link ${link.health}`,
          d: linkPath(where.get(link.a), where.get(link.b)),
          "data-testid": `topology-link-${link.a}-${link.b}`,
          "data-health": link.health,
        },
        s("title", {}, `gateway link ${link.a} ↔ ${link.b}: ${link.health}`),
      ),
    );
  }
  const hub = s(
    "g",
    { className: "hub", "data-testid": "topology-hub" },
    s("title", {}, `hub (leader ${view.clusterSet.leaderClusterID})`),
    s("circle", { cx: CENTRE.x, cy: CENTRE.y, r: 26 }),
    s("text", { x: CENTRE.x, y: CENTRE.y }, "hub"),
  );
  const empty = clusterIDs.length
    ? []
    : [s("text", { className: "empty", x: CENTRE.x, y: CENTRE.y + 50 }, "waiting for member clusters")];
  svgElement.replaceChildren(...layers.spokes, ...layers.links, hub, ...layers.nodes, ...empty);
}
