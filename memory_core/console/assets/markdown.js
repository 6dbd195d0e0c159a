// A small, safe markdown renderer: it builds DOM nodes and sets only text, so memory
// content can never become markup or script. Supported: headings, paragraphs, lists,
// block quotes, fenced and inline code, emphasis, strong, and links whose URL is
// http(s) or mailto (anything else, javascript: included, is shown as plain text).
// Images are never loaded: they render as their alt text and address.
// Nesting is capped: block quotes nest at most MAX_NESTING deep and deeper markers are flattened into the
// innermost quote, so an entry of thousands of ">" cannot exhaust the stack (lists do not nest at all, and
// inline emphasis nests at most a few levels, each level excluding its own marker).

import { h } from "./dom.js";

const SAFE_URL = /^(https?:\/\/|mailto:)[^\s<>"'`]+$/i;

export function safeHref(url) {
  const trimmed = String(url || "").trim();
  // Browsers ignore tabs, newlines and control characters in a scheme ("java\tscript:").
  if (/[\u0000-\u001f\u007f]/.test(trimmed)) return null;
  return SAFE_URL.test(trimmed) ? trimmed : null;
}

/** Block quotes nest at most this deep; markers past it are flattened into the innermost quote as text. */
export const MAX_NESTING = 8;

/**
 * An entry's content rendered from markdown, or, should the renderer fail on it, shown as plain text with a
 * note: one entry must never take the whole view down (``render`` is the renderer, replaceable in tests).
 */
export function renderEntryContent(text, render = renderMarkdown) {
  try {
    return render(text);
  } catch (error) {
    return h("div", { class: "markdown markdown-fallback" },
      h("p", { class: "muted" }, "This entry could not be formatted; its text is shown as written."),
      h("pre", {}, String(text ?? "")));
  }
}

/** ``text`` as DOM nodes (never markup); ``depth`` is how many quotes it is already inside. */
export function renderMarkdown(text, depth = 0) {
  const root = h("div", { class: "markdown" });
  const lines = String(text || "").replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (/^\s*$/.test(line)) { i += 1; continue; }
    const fence = line.match(/^\s*(```|~~~)/);
    if (fence) {
      const body = [];
      i += 1;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) { body.push(lines[i]); i += 1; }
      i += 1;
      root.append(h("pre", {}, h("code", {}, body.join("\n"))));
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) {
      // Memory headings sit under the console's own: shift them below h3.
      const level = Math.min(6, heading[1].length + 3);
      // A closing run of #, found without backtracking over a long run of spaces.
      root.append(h(`h${level}`, {}, inline(heading[2].replace(/\s#+\s*$/, "").trimEnd())));
      i += 1;
      continue;
    }
    if (/^\s*>/.test(line)) {
      const body = [];
      // At the deepest level every further marker is taken off, so the quote inside holds no quote.
      const marker = depth + 1 >= MAX_NESTING ? /^(?:\s*>)+\s?/ : /^\s*>\s?/;
      while (i < lines.length && /^\s*>/.test(lines[i])) { body.push(lines[i].replace(marker, "")); i += 1; }
      // Spread: a NodeList is no array, and h() would have shown it as "[object NodeList]".
      root.append(h("blockquote", {}, [...renderMarkdown(body.join("\n"), depth + 1).childNodes]));
      continue;
    }
    const bullet = /^\s*([-*+]|\d+[.)])\s+/;
    if (bullet.test(line)) {
      const ordered = /^\s*\d/.test(line);
      const list = h(ordered ? "ol" : "ul");
      while (i < lines.length && bullet.test(lines[i])) {
        list.append(h("li", {}, inline(lines[i].replace(bullet, ""))));
        i += 1;
      }
      root.append(list);
      continue;
    }
    const para = [];
    while (i < lines.length && !/^\s*$/.test(lines[i]) && !/^(#{1,6}\s|\s*```|\s*~~~|\s*>|\s*([-*+]|\d+[.)])\s)/.test(lines[i])) {
      para.push(lines[i].trim());
      i += 1;
    }
    root.append(h("p", {}, inline(para.join(" "))));
  }
  return root;
}

// Inline: `code`, ![alt](url), [text](url), **strong**, *em* / _em_, <autolinks>.
// Each part stops at the character that would start another of its kind ("[" in a link's text, "(" in its address
// but for one pair, as in a Wikipedia address, "<" in an autolink), and the address and title do not overlap: otherwise an entry of "[a](" repeated, with no ")",
// made the engine try every split at every "[" (a 64 KB entry froze the person's view for minutes;
// tests/console/test_markdown_cost.py times the worst texts).
const INLINE = /(`+)([\s\S]*?)\1|!\[([^[\]]*)\]\(((?:[^()\s]|\([^()\s]*\))*)(?:\s[^()]*)?\)|\[([^[\]]+)\]\(((?:[^()\s]|\([^()\s]*\))*)(?:\s[^()]*)?\)|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*]+)\*|_([^_]+)_|<(https?:\/\/[^<>\s]+)>/g;

export function inline(text) {
  const nodes = [];
  let last = 0;
  for (const m of String(text).matchAll(INLINE)) {
    if (m.index > last) nodes.push(text.slice(last, m.index));
    if (m[1]) nodes.push(h("code", {}, m[2]));
    else if (m[3] !== undefined && m[4] !== undefined && m[0].startsWith("!")) {
      nodes.push(h("span", { class: "image-ref" }, `[image: ${m[3] || "untitled"}] ${m[4]}`));
    } else if (m[5] !== undefined) nodes.push(link(m[5], m[6]));
    else if (m[7] || m[8]) nodes.push(h("strong", {}, inline(m[7] || m[8])));
    else if (m[9] || m[10]) nodes.push(h("em", {}, inline(m[9] || m[10])));
    else if (m[11]) nodes.push(link(m[11], m[11]));
    last = m.index + m[0].length;
  }
  if (last < text.length) nodes.push(text.slice(last));
  return nodes;
}

function link(label, url) {
  const href = safeHref(url);
  if (!href) return h("span", { class: "unsafe-link", title: "link not followed" }, `${label} (${url})`);
  return h("a", { href, rel: "noopener noreferrer nofollow", target: "_blank" }, inline(label));
}
