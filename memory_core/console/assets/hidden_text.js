// Text no reader sees (memory_core/domain/hidden_text.py): Unicode tag characters outside an emoji flag,
// variation selectors (Mongolian ones included) that vary no character, zero-width characters in a row, and
// bidirectional overrides, which show text in another order than it is read. Every model reads them as they
// are, so the person's view spells them out. The rule mirrors the domain's; keep the two alike
// (tests/console/test_hidden_text_rule.py checks that they agree on every character and on any mix of the pieces
// hidden text is made of).

const FLAG = /\u{1F3F4}[\u{E0020}-\u{E007E}]+\u{E007F}/gu;
const TAG_RUN = /[\u{E0000}-\u{E007F}]+/gu;
const MONGOLIAN_SELECTORS = "\\u180B-\\u180D\\u180F";
const SELECTORS = `${MONGOLIAN_SELECTORS}\\uFE00-\\uFE0F\\u{E0100}-\\u{E01EF}`;
const SELECTOR = new RegExp(`^[${SELECTORS}]$`, "u");
const ANY_SELECTOR = new RegExp(`[${SELECTORS}]`, "u");
const MONGOLIAN_SELECTOR = new RegExp(`^[${MONGOLIAN_SELECTORS}]$`, "u");
const MONGOLIAN = /^[\u1800-\u18AF]$/u;
const IDEOGRAPH = /^[\u3400-\u4DBF\u4E00-\u9FFF\uF900-\uFAFF\u{20000}-\u{3FFFF}]$/u;
const ASCII_WITH_VARIANTS = "#*0123456789";
// Beyond ASCII, the letters and punctuation a selector may follow (the domain's _VARIED_SCRIPTS and
// _VARIED_PUNCTUATION), and what no selector varies elsewhere: letters, marks, spaces, punctuation and controls.
const VARIED_SCRIPT = /^[\u1000-\u109F\uA9E0-\uA9FF\uAA60-\uAA7F\uA840-\uA87F\u{10AC0}-\u{10AFF}\u{13000}-\u{143FF}]$/u;
const VARIED_LETTER_OR_PUNCTUATION =
  /^[\u2100-\u214F\u{1D400}-\u{1D7FF}\u203C\u2049\u3001\u3002\u3030\u303D\uFF01\uFF0C\uFF0E\uFF1A\uFF1B\uFF1F]$/u;
const WITHOUT_VARIANTS = /^[\p{L}\p{M}\p{P}\p{Z}\p{Cc}\p{Cf}\p{Co}]$/u;
const FIRST_IDEOGRAPHIC_SELECTOR = 0xE0100;
// Bidirectional overrides: the text after one is shown in the order it forces, not as agents read it.
const OVERRIDE = /[\u202D\u202E]/g;
// Zero-width characters in a row: how zero-width steganography writes bits between two visible letters. Every
// default-ignorable character of the BMP and plane 14 no text needs two of counts (the soft hyphen, U+034F, the
// Hangul filler ...); bidirectional marks, embeddings and isolates between two break no run, but do not count.
const ZERO_WIDTH = "\\u00AD\\u034F\\u17B4\\u17B5\\u180E\\u200B-\\u200D\\u2060-\\u2065\\u206A-\\u206F\\u3164\\uFEFF\\uFFA0"
  + "\\uFFF0-\\uFFF8\\u{E0080}-\\u{E00FF}\\u{E01F0}-\\u{E0FFF}";
const BIDI_CONTROLS = "\\u061C\\u200E\\u200F\\u202A-\\u202C\\u2066-\\u2069";
const ZERO_WIDTH_RUN = new RegExp(`[${ZERO_WIDTH}](?:[${BIDI_CONTROLS}]*[${ZERO_WIDTH}])+`, "gu");
const PRINTABLE = /^[^\p{Cc}\p{Cf}\p{Co}\p{Cn}]*$/u;

const codePoint = (ch) => `U+${ch.codePointAt(0).toString(16).toUpperCase()}`;

/**
 * Each run of hidden characters in ``text``, spelled out; [] when there is none. A run of tag characters
 * outside an emoji flag reads as the ASCII it mirrors (a tag character with no printable twin as its code
 * point, "U+E0001"). A run of variation selectors holding a stray one reads as the bytes it encodes in the
 * usual scheme (U+FE00-U+FE0F are 0-15, U+E0100-U+E01EF are 16-255) when they are printable UTF-8, and
 * otherwise as its code points. A bidirectional override reads as its code point, and a run of zero-width
 * characters as theirs.
 */
export function hiddenRuns(text) {
  const s = String(text || "");
  return [...tagRuns(s), ...selectorRuns(s), ...(s.match(OVERRIDE) || []).map(codePoint),
    ...(s.match(ZERO_WIDTH_RUN) || []).map((run) => [...run].map(codePoint).join(" "))];
}

function tagRuns(s) {
  if (!/[\u{E0000}-\u{E007F}]/u.test(s)) return [];
  return (s.replace(FLAG, "").match(TAG_RUN) || []).map((run) => [...run].map((ch) => {
    const cp = ch.codePointAt(0);
    return cp >= 0xE0020 && cp <= 0xE007E ? String.fromCharCode(cp - 0xE0000) : codePoint(ch);
  }).join(""));
}

/**
 * Whether ``ch`` is a variation selector that varies no character when ``before`` (a character, or "" at the start)
 * comes before it: a run of them, or one after a letter, space or punctuation without variants (the domain's rule).
 */
export function straySelector(before, ch) {
  return SELECTOR.test(ch) && strays(before, ch);
}

function strays(before, selector) {
  const ideographic = selector.codePointAt(0) >= FIRST_IDEOGRAPHIC_SELECTOR;
  if (MONGOLIAN_SELECTOR.test(selector)) return !before || SELECTOR.test(before) || !MONGOLIAN.test(before);
  return !before || SELECTOR.test(before)
    || (before.codePointAt(0) < 0x80 && !ASCII_WITH_VARIANTS.includes(before))
    || (ideographic && !IDEOGRAPH.test(before))
    || (!ideographic && before.codePointAt(0) >= 0x80 && !IDEOGRAPH.test(before) && !VARIED_SCRIPT.test(before)
      && !VARIED_LETTER_OR_PUNCTUATION.test(before)
      && WITHOUT_VARIANTS.test(before));
}

function selectorRuns(s) {
  if (!ANY_SELECTOR.test(s)) return [];
  const chars = [...s];
  const runs = [];
  let run = [];
  let stray = false;
  chars.forEach((ch, at) => {
    if (SELECTOR.test(ch)) {
      stray = stray || strays(at ? chars[at - 1] : "", ch);
      run.push(ch);
      return;
    }
    if (stray) runs.push(run);
    run = [];
    stray = false;
  });
  if (stray) runs.push(run);
  return runs.map(spellSelectors);
}

function spellSelectors(run) {
  // Mongolian selectors carry no byte in the usual scheme: a run holding one is spelled as code points.
  if (run.some((ch) => MONGOLIAN_SELECTOR.test(ch))) return run.map(codePoint).join(" ");
  const bytes = run.map((ch) => {
    const cp = ch.codePointAt(0);
    return cp >= FIRST_IDEOGRAPHIC_SELECTOR ? cp - FIRST_IDEOGRAPHIC_SELECTOR + 16 : cp - 0xFE00;
  });
  try {
    const decoded = new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(bytes));
    if (PRINTABLE.test(decoded)) return decoded;
  } catch {
    // not UTF-8: spelled as code points below
  }
  return run.map(codePoint).join(" ");
}
