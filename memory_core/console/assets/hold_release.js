// An operator's release of a hold whose deletion request is gone (docs/custody.md, "Holds left behind by their
// request"): the hold told by its ids, the confirmation naming what shows again, and what the API's answer comes to.
// Ids only: a hold names no memory text, and neither does anything here.

import { ApiError } from "./api.js";
import { formatCount, formatTime, h } from "./dom.js";
import { spelledText, storedText } from "./invisible.js";
import { confirmAction } from "./ui.js";

/** The team-shared partition's owner, and the ``?upn=`` that releases a team-shared hold naming no author. */
export const SHARED = "~shared";

/** Entry ids a hold's description names before it sums up the rest: a hold filed for a replace may name hundreds. */
const IDS_SHOWN = 5;

/**
 * The ``upn`` a release of ``hold`` names: the listing's ``release_upn`` (its user; ``SHARED`` for a team-shared hold
 * whose author is absent or no valid UPN), or null when no release names it. The API decides which
 * (memory_core/domain/orphan_holds.py): the console holds no copy of the UPN rule.
 */
export function releaseUpn(hold) {
  return hold.release_upn ?? null;
}

/**
 * Why the console cannot release ``hold``, or null when it can. Every id is named in the release's body
 * (POST .../orphan-holds/release), so ".", ".." and ids holding "/" are released like any other; only a hold the
 * listing says no release names (``release_upn`` null: a partition whose owner is no user's name, another
 * release's layout or a damaged record) is not offered a Release that could never work, and nothing is posted.
 */
export function unreleasableWhy(hold) {
  return releaseUpn(hold) === null
    ? "it lies in a memory whose owner is no valid user principal name, which no release names "
      + "(docs/console.md, \u201cOrphan holds\u201d)"
    : null;
}

/**
 * Whose memory ``hold`` hides, as nodes: the user (isolated, what draws as nothing marked), or every author (a
 * team-shared hold naming none), or nobody's (``author_of_no_entry``: an author of "" or not text, which no entry
 * has); a stored author the listing cut (``upn_cut``) is said to be cut, never shown as if whole.
 */
export function shownOwner(hold) {
  if (hold.upn == null) return "every author's team-shared copies";
  if (hold.author_of_no_entry) return ["no user's copies (its author, ", shownNoEntryAuthor(hold), ", no entry has)"];
  if (hold.owner !== SHARED) return [storedText(hold.upn), "'s memory"];
  return hold.upn_cut ? ["the team-shared copies of an author cut here to ", storedText(hold.upn), "\u2026"]
    : [storedText(hold.upn), "'s team-shared copies"];
}

/** ``shownOwner`` as a string (a button's name, an announcement): what draws as nothing spelled by code point. */
function saidOwner(hold) {
  if (hold.upn == null) return "every author's team-shared copies";
  if (hold.author_of_no_entry) {
    return `no user's copies (its author, ${hold.upn === "" ? "empty" : spelledText(hold.upn)}, no entry has)`;
  }
  if (hold.owner !== SHARED) return `${spelledText(hold.upn)}'s memory`;
  return hold.upn_cut ? `the team-shared copies of an author cut here to ${spelledText(hold.upn)}\u2026`
    : `${spelledText(hold.upn)}'s team-shared copies`;
}

/** The author of no entry a hold names: "empty", or what is stored (a non-text author's JSON) in <code>. */
function shownNoEntryAuthor(hold) {
  return hold.upn === "" ? "empty" : h("code", {}, storedText(hold.upn));
}

/** The scopes ``hold`` covers, as nodes: every scope, or its profile ids. */
export function shownScope(hold) {
  if (hold.profile_ids == null) return "every scope";
  return hold.profile_ids.map((id, i) => [i ? ", " : "", h("code", {}, storedText(id))]);
}

/** What kind of hold it is, as nodes: the entries it names by id (a forget's), or all written up to a time. */
export function shownKind(hold) {
  const ids = hold.entry_ids || [];
  const parts = [];
  if (ids.length) {
    parts.push(`${formatCount(ids.length)} entr${ids.length === 1 ? "y" : "ies"} by id: `,
      ids.slice(0, IDS_SHOWN).map((id, i) => [i ? ", " : "", h("code", {}, storedText(id))]),
      ids.length > IDS_SHOWN ? ` and ${formatCount(ids.length - IDS_SHOWN)} more` : "");
  }
  if (hold.watermark) {
    parts.push(ids.length ? "; " : "", "everything written up to ",
      h("time", { datetime: hold.watermark }, formatTime(hold.watermark)));
  }
  if (!parts.length) parts.push("nothing this release can name");
  if (hold.readable === false) parts.push(" (a later release's hold, shown as far as this release reads it)");
  return parts;
}

/** A Release button's name: the request's id and whose memory, spelled (``spelledText``), unlike any other's. */
export function releaseName(hold) {
  return `Release ${spelledText(hold.request_id)} on ${saidOwner(hold)}`;
}

/** ``hold`` in a sentence's nodes: its request's id in <code> as the table shows it, and whose memory it holds. */
function shownHold(hold) {
  return [h("code", {}, storedText(hold.request_id)), " on ", shownOwner(hold)];
}

/**
 * Ask the operator to release ``hold``, naming what shows again. Resolves to true when confirmed.
 */
export function confirmRelease(hold) {
  const deletionsTrail = [" Audited in the instance's ", h("code", {}, "~deletions"), " trail."];
  let whose;
  const asShared = [" (no valid user principal name, so released as ", h("code", {}, SHARED), ")"];
  if (hold.upn == null) whose = ["every author's team-shared copies it hides show again to the team.", deletionsTrail];
  else if (hold.author_of_no_entry) {
    whose = ["nothing of any user's shows again: its author, ", shownNoEntryAuthor(hold), ", is one no entry has, "
      + "so it hides none of the team-shared copies", asShared, ".", deletionsTrail];
  } else if (hold.upn_cut) {
    whose = ["the team-shared copies it hides of an author cut here to ", storedText(hold.upn), "\u2026 (a longer "
      + "name, so released as ", h("code", {}, SHARED), ") show again to the team.", deletionsTrail];
  } else if (releaseUpn(hold) === SHARED) {
    whose = ["the team-shared copies it hides of ", storedText(hold.upn), asShared, " show again to the team.",
      deletionsTrail];
  } else {
    whose = ["what this request's holds hide of ", storedText(hold.upn), "'s memory and of their team-shared copies "
      + "shows again, to them and to the agents that read it. Audited in their trail."];
  }
  return confirmAction({ title: "Release this hold?",
    text: ["The hold ", shownHold(hold), " was left by a deletion request that is no longer stored. It ",
      hold.author_of_no_entry ? "names, of that author, " : "hides ", shownKind(hold), " in ", shownScope(hold),
      ". Released, ", whose, " Nothing is erased; to have it erased, ask for a purge of the user first."],
    ok: "Release" });
}

/**
 * What releasing ``hold`` came to: ``answer`` (``ReleasedHoldModel``), or ``error`` when the API refused.
 * ``shown`` as nodes for the outcome line, ``said`` as a string to announce, ``success``, ``stored`` when the
 * hold's request is stored again (409 ``hold_not_orphaned``) and ``gone`` when no hold of it stands any more (404
 * ``hold_not_found``: released already, from another tab or by another operator). An error's message comes with its
 * status and code.
 */
export function releaseOutcome(hold, { answer = null, error = null }) {
  const sentence = (held) => {
    if (answer) {
      const n = answer.holds_released;
      return ["Released ", held, n ? `: ${formatCount(n)} hold${n === 1 ? "" : "s"} lifted; what `
        + `${n === 1 ? "it" : "they"} hid shows again.` : ": no hold of it stood (released already)."];
    }
    const code = error instanceof ApiError ? ` (${error.status} ${error.code})` : "";
    const again = error instanceof ApiError && error.code === "hold_not_orphaned"
      ? " Its deletion request is stored again: decide it under Deletion requests." : "";
    // The API's message names the id and the memory already; the outcome line names them once.
    if (error instanceof ApiError && error.code === "hold_not_found") {
      return ["Not released ", held, `: no hold of it stands any more (released already)${code}.`];
    }
    return ["Not released ", held, `: ${error?.message || String(error)}${code}${again}`];
  };
  const said = [spelledText(hold.request_id), " on ", saidOwner(hold)].join("");
  return { shown: sentence(shownHold(hold)), said: sentence(said).join(""), success: Boolean(answer),
    stored: error instanceof ApiError && error.code === "hold_not_orphaned",
    gone: error instanceof ApiError && error.code === "hold_not_found" };
}
