// Building DOM nodes without ever parsing HTML: every string becomes text.
// Nothing in the console hands a string to an HTML parser (tests/console/test_serving.py checks).

/**
 * h("button", {class: "primary", onclick: fn, "aria-label": "x"}, "text", childNode, [more])
 * Attributes named on* become event listeners; strings are always text nodes.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2), value);
    } else if (name === "class") {
      el.className = value;
    } else if (name === "dataset") {
      Object.assign(el.dataset, value);
    } else if (name === "value" || name === "checked") {
      el[name] = value;
    } else {
      el.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export function replace(el, ...children) {
  return append(clear(el), children);
}

// One formatter for the page: building one per call costs more than the rest of an entry's rendering.
const TIME_FORMAT = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

// To the second: for names that must tell apart what one minute holds several of (a screen reader's list of buttons).
const SECOND_FORMAT = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

const COUNT_FORMAT = new Intl.NumberFormat();

/** A count in the reader's digit grouping, as ``formatTime`` writes times in their locale. */
export function formatCount(n) {
  return COUNT_FORMAT.format(n);
}

export function formatTime(iso, format = TIME_FORMAT) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return format.format(d);
}

/** ``iso`` as ``formatTime`` writes it, with the seconds. */
export function formatSecond(iso) {
  return formatTime(iso, SECOND_FORMAT);
}

/**
 * ``text`` stored by others (an agent's name, a tag, an author) as an element of its own for the bidirectional
 * algorithm (<bdi>: isolated, its direction from its first strong letter). An override, embedding or isolate left
 * open in it, or its right-to-left letters, then cannot reorder the page's text around it ("Agent: ", the agent's
 * ID, the tags after it): each ends where the name ends.
 */
export function isolated(text) {
  return h("bdi", {}, text);
}

// The bidirectional controls: the marks (U+200E, U+200F, U+061C), embeddings and overrides with their pop
// (U+202A-U+202E) and the isolates (U+2066-U+2069), a run of them at a time.
const BIDI_CONTROLS = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]+/g;

/**
 * ``text`` isolated as ``isolated`` does, inside a string the page builds (a heading, a dialog's title, a button's
 * name). A string holds no element to isolate, so the text goes between U+2068 and U+2069, and each bidirectional
 * control in it is written as its code point ("U+2069"), as the page marks it (invisible.js): one of its own
 * U+2069 would otherwise close the isolate early, or an isolate it opened keep it open, and what follows it reorder
 * the rest of the string.
 */
export function isolatedText(text) {
  const shown = String(text).replace(BIDI_CONTROLS, (run) => [...run]
    .map((ch) => `U+${ch.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}`).join(" "));
  return `\u2068${shown}\u2069`;
}

let ids = 0;
export function uid(prefix = "id") {
  ids += 1;
  return `${prefix}-${ids}`;
}

/** A labelled form field: returns [wrapper, control]. */
export function field(label, control, hint) {
  const id = control.id || uid("f");
  control.id = id;
  const hintEl = hint ? h("span", { class: "hint", id: `${id}-hint` }, hint) : null;
  if (hintEl) control.setAttribute("aria-describedby", hintEl.id);
  return [h("div", { class: "field" }, h("label", { for: id }, label), control, hintEl), control];
}
