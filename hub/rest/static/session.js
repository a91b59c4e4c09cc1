// The token and the two ways the page talks to the hub: fetch (Authorization header)
// and EventSource (which cannot set headers, hence ?token=). The token lives in
// sessionStorage: it is forgotten when the tab closes.

const TOKEN_KEY = "mchub.token";
export const EVENTS_URL = "/api/v1/events";

export const tokens = {
  get: () => sessionStorage.getItem(TOKEN_KEY) || "",
  set: (token) => sessionStorage.setItem(TOKEN_KEY, token),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

// Ask the hub whether it accepts the token; a clear message when it does not.
export async function checkToken(token) {
  let response;
  try {
    response = await fetch("/api/v1/clusterset", {
      headers: { Authorization: `Bearer ${token}` },
      cache: "no-store",
    });
  } catch (error) {
    return { ok: false, refused: false, message: `The hub cannot be reached (${error.message}).` };
  }
  if (response.ok) return { ok: true };
  let detail = "";
  try {
    detail = (await response.json()).message || "";
  } catch {
    detail = "";
  }
  if (response.status === 401) {
    return {
      ok: false,
      refused: true,
      message: `The hub refused this token (401 Unauthorized${detail ? `: ${detail}` : ""}). Check it and try again.`,
    };
  }
  return { ok: false, refused: false, message: `The hub answered ${response.status}${detail ? `: ${detail}` : ""}.` };
}

// Open the live stream; handlers get parsed events and connection state changes.
export function openEvents(token, { onView, onLiveness, onState }) {
  const source = new EventSource(`${EVENTS_URL}?token=${encodeURIComponent(token)}`);
  source.addEventListener("open", () => onState("open"));
  source.addEventListener("error", () => onState(source.readyState === EventSource.CLOSED ? "closed" : "reconnecting"));
  for (const name of ["snapshot", "changed"]) {
    source.addEventListener(name, (event) => onView(JSON.parse(event.data), name));
  }
  source.addEventListener("liveness", (event) => onLiveness(JSON.parse(event.data)));
  return source;
}
