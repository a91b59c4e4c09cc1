// Tiny DOM builders. Text always goes in as text nodes (never innerHTML), so names
// coming from clusters cannot inject markup.

export function h(tag, attrs = {}, ...children) {
  return build(document.createElement(tag), attrs, children);
}

export function s(tag, attrs = {}, ...children) {
  return build(document.createElementNS("http://www.w3.org/2000/svg", tag), attrs, children);
}

function build(element, attrs, children) {
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    element.setAttribute(key === "className" ? "class" : key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

// Replace a table body's rows; a single explanatory row when there are none.
export function fillRows(tbody, rows, emptyText) {
  if (rows.length === 0) {
    const columns = tbody.closest("table").querySelectorAll("thead th").length;
    tbody.replaceChildren(h("tr", {}, h("td", { colspan: columns, className: "empty" }, emptyText)));
    return;
  }
  tbody.replaceChildren(...rows);
}

export function byId(id) {
  return document.getElementById(id);
}
