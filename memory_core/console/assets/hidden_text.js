// Text no reader sees (memory_core/domain/hidden_text.py): Unicode tag characters outside an emoji
// flag. No font draws them and every model reads them, so the person's view spells them out.

const FLAG = /\u{1F3F4}[\u{E0020}-\u{E007E}]+\u{E007F}/gu;
const TAG_RUN = /[\u{E0000}-\u{E007F}]+/gu;

/**
 * Each run of tag characters in ``text`` outside an emoji flag, spelled as the ASCII it mirrors (a tag
 * character with no printable twin as its code point, "U+E0001"); [] when there is none.
 */
export function hiddenRuns(text) {
  const s = String(text || "");
  if (!/[\u{E0000}-\u{E007F}]/u.test(s)) return [];
  return (s.replace(FLAG, "").match(TAG_RUN) || []).map((run) => [...run].map((ch) => {
    const cp = ch.codePointAt(0);
    return cp >= 0xE0020 && cp <= 0xE007E ? String.fromCharCode(cp - 0xE0000)
      : `U+${cp.toString(16).toUpperCase()}`;
  }).join(""));
}
