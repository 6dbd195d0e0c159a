// Characters drawn as nothing in an entry's text, shown as marked code points ("U+200B") where they stand, as
// misleading links show where they lead: every model reads them, and a person reading the entry saw nothing. The
// stored text is not changed; only what the page draws. One alone may be stored (a write refuses runs of them,
// domain/hidden_text.py), and text stored before that rule, or imported, may hold anything.
//
// Marked: the default-ignorable characters the domain counts in zero-width runs (the zero-width space, word
// joiner, invisible operators, zero-width no-break space, soft hyphen, combining grapheme joiner, Hangul fillers,
// Khmer inherent vowels, Mongolian vowel separator, deprecated format characters and the code points reserved as
// default-ignorable), every bidirectional control (the marks U+200E, U+200F and U+061C, the embeddings and
// overrides U+202A-U+202E with their pop, the isolates U+2066-U+2069: each is drawn as nothing and read by agents;
// marked, none reorders the text after it, and the pop closing a marked override is seen as well), tag characters outside an emoji flag, and variation selectors that vary
// no character. Left as they are, since they have a visible use: a joiner (U+200D) inside an emoji sequence, a
// joiner or non-joiner (U+200C) between letters of a script whose shaping they change (Persian, Devanagari ...),
// variation selectors that pick a glyph, and emoji flags. Right-to-left letters keep their order without the
// controls (a mark that placed a punctuation mark may leave it on the other side of a word); names and tags stored
// beside an entry are isolated instead (dom.js ``isolated``).

import { h, isolated, isolatedText } from "./dom.js";
import { straySelector } from "./hidden_text.js";

// Marked wherever they are: the zero-width characters but the joiners, the bidirectional controls, the reserved
// code points.
const ALWAYS_CLASS = "\\u00AD\\u034F\\u061C\\u115F\\u1160\\u17B4\\u17B5\\u180E\\u200B\\u200E\\u200F\\u202A-\\u202E"
  + "\\u2060-\\u206F\\u3164\\uFEFF\\uFFA0\\uFFF0-\\uFFF8\\u{E0080}-\\u{E00FF}\\u{E01F0}-\\u{E0FFF}";
const ALWAYS = new RegExp(`^[${ALWAYS_CLASS}]$`, "u");
// Whatever may need a mark (with the joiners, selectors and tag characters): most text holds none, and is left
// alone after this one test.
const CANDIDATE = new RegExp(`[${ALWAYS_CLASS}\\u180B-\\u180D\\u180F\\u200C\\u200D\\uFE00-\\uFE0F\\u{E0000}-\\u{E007F}`
  + "\\u{E0100}-\\u{E01EF}]", "u");
const TAG = /^[\u{E0000}-\u{E007F}]$/u;
// An emoji flag of tag characters (England, Scotland, Wales): kept whole.
const FLAG = /(\u{1F3F4}[\u{E0020}-\u{E007E}]+\u{E007F})/u;
// A joiner between two pictographs (after a skin tone or an emoji selector too) joins an emoji sequence.
const BEFORE_EMOJI_JOINER = /^[\p{Extended_Pictographic}\p{Emoji_Modifier}\uFE0F]$/u;
const AFTER_EMOJI_JOINER = /^\p{Extended_Pictographic}$/u;
// Scripts whose letters a joiner or non-joiner shapes: Arabic script (Persian, Urdu ...), Syriac, N'Ko, Mongolian,
// and the Brahmic scripts (conjuncts, half forms).
const JOINING_SCRIPTS = ["Arabic", "Syriac", "Nko", "Mongolian", "Devanagari", "Bengali", "Gurmukhi", "Gujarati",
  "Oriya", "Tamil", "Telugu", "Kannada", "Malayalam", "Sinhala", "Khmer", "Myanmar", "Tibetan"];
const JOINING = new RegExp(`^[${JOINING_SCRIPTS.map((name) => `\\p{Script=${name}}`).join("")}]$`, "u");

const NAMES = {
  0x00AD: "soft hyphen", 0x034F: "combining grapheme joiner", 0x180E: "Mongolian vowel separator",
  0x200B: "zero-width space", 0x200C: "zero-width non-joiner", 0x200D: "zero-width joiner",
  0x2060: "word joiner", 0x3164: "Hangul filler", 0xFEFF: "zero-width no-break space",
  0x061C: "Arabic letter mark", 0x200E: "left-to-right mark", 0x200F: "right-to-left mark",
  0x202A: "left-to-right embedding", 0x202B: "right-to-left embedding", 0x202C: "pop directional formatting",
  0x202D: "left-to-right override", 0x202E: "right-to-left override", 0x2066: "left-to-right isolate",
  0x2067: "right-to-left isolate", 0x2068: "first strong isolate", 0x2069: "pop directional isolate",
};

/** ``ch``'s name for the mark's title: its own for the common ones, else what kind of character it is. */
function nameOf(ch) {
  const cp = ch.codePointAt(0);
  if (NAMES[cp]) return NAMES[cp];
  if (TAG.test(ch)) return "tag character";
  if (straySelector("", ch)) return "variation selector";
  return "character drawn as nothing";
}

/** Whether ``ch``, between ``before`` and ``after`` ("" at an end), is drawn as nothing here and is marked. */
function invisible(before, ch, after) {
  if (ALWAYS.test(ch) || TAG.test(ch)) return true;
  if (ch === "\u200D" && BEFORE_EMOJI_JOINER.test(before) && AFTER_EMOJI_JOINER.test(after)) return false;
  if (ch === "\u200C" || ch === "\u200D") return !(JOINING.test(before) && JOINING.test(after));
  return straySelector(before, ch);
}

/**
 * ``text`` cut where a character drawn as nothing stands: strings, and between them each run of such characters
 * as ``{ codePoint: "U+200B U+200C", name: "zero-width space, zero-width non-joiner" }`` (one part a run, so that
 * an entry stored as thousands of them makes one mark, not thousands). A text without one is ``[text]``.
 */
export function invisibleParts(text) {
  const s = String(text ?? "");
  if (!CANDIDATE.test(s)) return [s];
  const parts = [];
  let plain = "";
  let before = "";
  s.split(FLAG).forEach((piece, at) => {
    if (at % 2) { plain += piece; before = "\u{E007F}"; return; }  // a flag, kept whole
    const chars = [...piece];
    chars.forEach((ch, i) => {
      if (invisible(before, ch, chars[i + 1] ?? "")) {
        if (plain) parts.push(plain);
        plain = "";
        const codePoint = `U+${ch.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}`;
        const run = parts.at(-1);
        if (run && typeof run !== "string") {
          run.codePoint += ` ${codePoint}`;
          run.names.add(nameOf(ch));
        } else {
          parts.push({ codePoint, names: new Set([nameOf(ch)]) });
        }
      } else {
        plain += ch;
      }
      before = ch;
    });
  });
  if (plain) parts.push(plain);
  return parts.map((part) => (typeof part === "string" ? part
    : { codePoint: part.codePoint, name: [...part.names].join(", ") }));
}

/** Each character drawn as nothing in ``root``'s text, replaced on the page by a mark naming it; ``root``. */
export function showInvisible(root) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const marked = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (CANDIDATE.test(node.data)) marked.push(node);
  }
  for (const node of marked) {
    node.replaceWith(...invisibleParts(node.data).map((part) => (typeof part === "string" ? part
      : h("span", { class: "invisible-char", title: `${part.name}: drawn as nothing, and read by agents` },
        part.codePoint))));
  }
  return root;
}

/**
 * ``text`` stored by others (a user's UPN, an agent's ID, a reason, an audit event's detail) as an operator reads
 * it: isolated (dom.js ``isolated``), so that an override left open in it, or its right-to-left letters, cannot
 * show the row's other words ("for", "asked", the time) in another order; and each character drawn as nothing
 * marked (``showInvisible``), so that "alice@contoso.com" and the same with a zero-width space in it do not look
 * alike. Empty or missing text is an empty isolate.
 */
export function storedText(text) {
  return showInvisible(isolated(String(text ?? "")));
}

// Whitespace at either end of an identifier: drawn as nothing (or collapsed) on the page, yet part of the id.
const EDGE_SPACE = /^(\s*)([\s\S]*?)(\s*)$/u;

/** The mark for one whitespace character at an identifier's end: "␣" for a space, its code point for another. */
function edgeMark(ch) {
  const name = ch === " " ? "\u2423" : `U+${ch.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}`;
  return h("span", { class: "invisible-char edge-space", title: "whitespace stored in the ID" }, name);
}

/**
 * An identifier stored by others (an agent's ID) as ``storedText`` shows it, with each whitespace character at its
 * ends marked ("␣" for a space): " agent-1" and "agent-1" are two agents, and a page draws both alike. An older
 * release could store such an id; the API still opens it by its exact text (api/operator.py).
 */
export function storedId(text) {
  const [, lead, core, trail] = EDGE_SPACE.exec(String(text ?? ""));
  if (!lead && !trail) return storedText(core);
  return h("span", { class: "spaced-id" }, [...lead].map(edgeMark), storedText(core), [...trail].map(edgeMark));
}

/** An identifier as ``isolatedText`` gives it inside a built string (a form's or a button's name), quoted when
 * whitespace stands at either end, which ``storedId`` marks on the page. */
export function isolatedId(text) {
  const s = String(text ?? "");
  return isolatedText(/^\s|\s$/u.test(s) ? JSON.stringify(s) : s);
}

/**
 * ``text`` isolated (dom.js ``isolatedText``) for a string the view cannot mark up (a button's name, an
 * announcement), each run of characters drawn as nothing spelled by its code points as the page's marks read and
 * as ``isolatedText`` writes a bidirectional control ("laterU+200Bone"): an id holding one must not read as another.
 */
export function spelledText(text) {
  return isolatedText(invisibleParts(text).map((part) => (typeof part === "string" ? part : part.codePoint)).join(""));
}
