// The dashboard's entry point: ask for a token (or reuse this tab's), check it with
// the hub, then render every snapshot/changed/liveness event from /api/v1/events.

import { byId } from "./dom.js";
import { formatAge, renderExports, renderGateways, renderHeader, renderImports, renderMembers, renderPolicies } from "./sections.js";
import { checkToken, openEvents, tokens } from "./session.js";
import { renderTopology } from "./topology.js";

const RECONNECT_MS = 3000;
let view = null;
let source = null;
let clockOffsetMs = 0; // server clock minus browser clock, so ages use the hub's time

function setLive(state) {
  const live = byId("live-state");
  const text = { open: "Live", reconnecting: "Reconnecting…", closed: "Disconnected", idle: "Not connected" };
  live.textContent = text[state] || state;
  live.className = `live ${state === "open" ? "on" : state === "reconnecting" ? "" : "off"}`;
}

function render() {
  renderHeader(view);
  renderMembers(view);
  renderGateways(view);
  renderExports(view);
  renderImports(view);
  renderPolicies(view);
  renderTopology(byId("topology"), view);
}

function adoptClock(serverTime) {
  clockOffsetMs = Date.parse(serverTime) - Date.now();
}

// Heartbeat ages move every second without a server event.
function tickAges() {
  const now = Date.now() + clockOffsetMs;
  for (const cell of document.querySelectorAll("[data-heartbeat]")) {
    cell.textContent = formatAge((now - Date.parse(cell.dataset.heartbeat)) / 1000);
  }
}

function showPrompt(message) {
  if (source) source.close();
  source = null;
  setLive("idle");
  byId("dashboard").hidden = true;
  byId("change-token").hidden = true;
  byId("token-panel").hidden = false;
  const error = byId("token-error");
  error.textContent = message || "";
  error.hidden = !message;
  byId("token-input").focus();
}

function connect(token) {
  byId("token-panel").hidden = true;
  byId("change-token").hidden = false;
  source = openEvents(token, {
    onView(next) {
      adoptClock(next.serverTime);
      view = next;
      byId("dashboard").hidden = false;
      render();
    },
    onLiveness(next) {
      if (!view) return;
      adoptClock(next.serverTime);
      view = { ...view, ...next };
      renderHeader(view);
      renderMembers(view);
      renderGateways(view);
      renderPolicies(view);
      renderTopology(byId("topology"), view);
    },
    onState(state) {
      setLive(state);
      // EventSource gives up on an HTTP error: find out whether the token is to blame.
      if (state === "closed") recover(token);
    },
  });
}

async function recover(token) {
  const verdict = await checkToken(token);
  if (verdict.refused) {
    tokens.clear();
    showPrompt(verdict.message);
  } else {
    setTimeout(() => {
      if (source && source.readyState === EventSource.CLOSED) connect(token);
    }, RECONNECT_MS);
  }
}

async function start(token) {
  const verdict = await checkToken(token);
  if (!verdict.ok) {
    if (verdict.refused) tokens.clear();
    showPrompt(verdict.message);
    return;
  }
  tokens.set(token);
  connect(token);
}

byId("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const token = byId("token-input").value.trim();
  if (token) start(token);
});
byId("change-token").addEventListener("click", () => {
  tokens.clear();
  showPrompt("");
});
setInterval(tickAges, 1000);

// A link may carry the token in its fragment (#token=...), which never reaches a server;
// take it and wipe it from the address bar and history.
function tokenFromFragment() {
  const token = new URLSearchParams(location.hash.slice(1)).get("token") || "";
  if (token) history.replaceState(null, "", location.pathname + location.search);
  return token;
}

const initial = tokenFromFragment() || tokens.get();
if (initial) start(initial);
else showPrompt("");
