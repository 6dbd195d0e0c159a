// A small, safe markdown renderer: it builds DOM nodes and sets only text, so memory
// content can never become markup or script. Supported: headings, paragraphs, lists,
// block quotes, fenced and inline code, emphasis, strong, and links whose URL is
// http(s) or mailto (anything else, javascript: included, is shown as plain text).
// Images are never loaded: they render as their alt text and address.
// Nesting is capped: block quotes nest at most MAX_NESTING deep and deeper markers are flattened into the
// innermost quote, so an entry of thousands of ">" cannot exhaust the stack (lists do not nest at all, and
// inline emphasis nests at most a few levels, each level excluding its own marker).

import { h } from "./dom.js";
import { showInvisible } from "./invisible.js";

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
 * note: one entry must never take the whole view down (``render`` is the renderer, replaceable in tests). Either
 * way each character drawn as nothing shows as its marked code point (``showInvisible``).
 */
export function renderEntryContent(text, render = renderMarkdown) {
  let rendered;
  try {
    rendered = render(text);
  } catch (error) {
    rendered = h("div", { class: "markdown markdown-fallback" },
      h("p", { class: "muted" }, "This entry could not be formatted; its text is shown as written."),
      h("pre", {}, String(text ?? "")));
  }
  return showInvisible(rendered);
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
  const a = h("a", { href, rel: "noopener noreferrer nofollow", target: "_blank" }, inline(label));
  const target = misleadingTarget(label, href);
  // The link's text names one site and the link goes to another ("[https://bank.example](https://evil.example)"):
  // the site it really leads to is shown beside it, as the browser's status bar would on hover (not on a phone).
  return target ? [a, h("span", { class: "link-target" }, ` (leads to ${target})`)] : a;
}

// A host name as written in a link's text: an address's host, or a bare "name.tld" (letters of any script).
const HOST_IN_TEXT = /(?:[a-z][a-z0-9+.-]*:\/\/)?(?:[^\s@/:]+@)?((?:[\p{L}\p{N}_-]+\.)+\p{L}{2,})/iu;
const INVISIBLE = /[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff]/gu;

/**
 * The host ``href`` leads to when ``label`` names another host, or ``href`` holds a user name before its host,
 * else null. Hosts are compared as the browser resolves them (IDNA: "bаnk.example" with a Cyrillic "а" is not
 * "bank.example"), so a look-alike is shown too.
 */
export function misleadingTarget(label, href) {
  const host = (address) => {
    try {
      const url = new URL(address);
      return url.protocol === "mailto:" ? new URL(`http://${url.pathname.split("@").pop()}`).hostname : url.hostname;
    } catch { return null; }
  };
  const target = host(href);
  if (!target) return null;
  // "https://bank.example@evil.example" leads to evil.example: what comes before the "@" is a user name.
  if (/^https?:\/\/[^/?#]*@/i.test(href)) return target;
  const named = String(label).replace(INVISIBLE, "").match(HOST_IN_TEXT);
  if (!named) return null;
  const written = host(`http://${named[1]}`);
  return written === target || written === `www.${target}` || `www.${written}` === target ? null : target;
}
