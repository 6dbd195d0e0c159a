// An operator's dismissal of a stored deletion request this release cannot read (docs/custody.md, "Dismissing a
// request this release cannot read"): a confirmation, then what the API answers, told in the dialog.

import { ApiError } from "./api.js";
import { formatCount, h } from "./dom.js";
import { spelledText, storedText } from "./invisible.js";
import { confirmAction } from "./ui.js";

/**
 * How many holds a 409 ``holds_standing`` says still stand ("... filed 2 hold(s) that still stand ..."): its
 * message is the only place the answer gives the count. Null when the message does not say.
 */
export function holdsStanding(message) {
  const match = /filed (\d+) hold/.exec(String(message || ""));
  return match ? Number(match[1]) : null;
}

/**
 * An unreadable request ``u`` (an entry of the listing's ``unreadable``, or the dismissal's answer) as a string (a
 * button's name, an announcement): its id, then its kind, status and user as stored, each isolated, what draws as
 * nothing spelled (``spelledText``). On the page it is shown as nodes (``shownUnreadable``).
 */
export function describeUnreadable(u) {
  const kind = u.kind ? `stored as ${spelledText(u.kind)}` : "kind unknown";
  const status = u.status ? spelledText(u.status) : "status unknown";
  const upn = u.upn ? `for ${spelledText(u.upn)}` : "naming no user";
  return `${spelledText(u.request_id)} (${kind}, ${status}, ${upn})`;
}

/**
 * ``u`` as ``describeUnreadable`` says it, as nodes for a dialog's text: its id, kind, status and user each shown as
 * the note of unreadable requests shows them (operator.js: ``storedText``, the id in <code>), isolated with every
 * character drawn as nothing marked. A string (``isolatedText``) cannot mark them: an id holding a zero-width space
 * or a tag character would read in the dialog as another id the note shows apart.
 */
export function shownUnreadable(u) {
  return [h("code", {}, storedText(u.request_id)), " (",
    u.kind ? ["stored as ", storedText(u.kind)] : "kind unknown", ", ",
    u.status ? storedText(u.status) : "status unknown", ", ",
    u.upn ? ["for ", storedText(u.upn)] : "naming no user", ")"];
}

/**
 * What a dismissal's answer ``d`` (``DismissedRequestModel``) says was done, in a sentence: ``shown`` as nodes
 * for the page (the request as ``shownUnreadable`` shows it, what draws as nothing marked), ``said`` as a string
 * to announce (``describeUnreadable``).
 */
export function dismissedOutcome(d) {
  const holds = d.holds_left
    ? ` ${formatCount(d.holds_left)} hold${d.holds_left === 1 ? "" : "s"} it filed still `
      + `stand${d.holds_left === 1 ? "s" : ""} (dismissed anyway): the memory they hide stays hidden.`
    : " No hold of it stood.";
  const sentence = (request) => ["Dismissed request ", request,
    `: its record is erased and the dismissal audited.${holds}`];
  return { shown: sentence(shownUnreadable(d)), said: sentence(describeUnreadable(d)).join("") };
}

/** What a Dismiss of ``u`` answered 409 ``readable_request`` comes to, as ``dismissedOutcome`` tells it. */
export function readableOutcome(u) {
  const sentence = (request) => ["Request ", request, " became readable meanwhile (a release rewrote it), so "
    + "nothing was dismissed: it is listed in the table under its status, to approve or reject if pending."];
  return { shown: sentence(shownUnreadable(u)), said: sentence(describeUnreadable(u)).join("") };
}

/**
 * Ask the operator, then dismiss ``u`` through ``post(force)`` (which sends the POST and answers its data, or
 * throws the ``ApiError``). Resolves to ``{ outcome: "dismissed", dismissed }`` (the API's answer),
 * ``{ outcome: "readable" }`` (409 ``readable_request``: nothing dismissed) or ``{ outcome: "cancelled" }``.
 * A 409 ``holds_standing`` opens a second dialog that says how many holds stand and that the memory they hide stays
 * hidden, offering "Dismiss anyway" (``force``). Every other failure is thrown.
 */
export async function dismissUnreadable(u, post) {
  const ok = await confirmAction({ title: "Dismiss this unreadable request?",
    text: ["Request ", shownUnreadable(u), " cannot be read by this release. Dismissed, its record is erased from the "
      + "store and the dismissal audited; no memory is shown again or erased. Dismiss only a request no release will "
      + "read. This cannot be undone."],
    ok: "Dismiss" });
  if (!ok) return { outcome: "cancelled" };
  let force = false;
  for (;;) {
    try {
      return { outcome: "dismissed", dismissed: await post(force) };
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 409) throw error;
      if (error.code === "readable_request") return { outcome: "readable" };
      if (error.code !== "holds_standing" || force) throw error;
      const n = holdsStanding(error.message);
      const holds = n === null ? "Holds it filed still stand"
        : `${formatCount(n)} hold${n === 1 ? "" : "s"} it filed still stand${n === 1 ? "s" : ""}`;
      const anyway = await confirmAction({ title: "Holds of this request still stand",
        text: [`${holds}, so nothing was dismissed. Dismissed anyway, request `, shownUnreadable(u),
          ` is erased and ${n === 1 ? "its hold stays" : "its holds stay"} standing: the memory `
          + `${n === 1 ? "it hides" : "they hide"} stays hidden, neither shown again nor erased, with no request left `
          + "to decide. A release that reads the request could decide it instead."],
        ok: "Dismiss anyway" });
      if (!anyway) return { outcome: "cancelled" };
      force = true;
    }
  }
}
