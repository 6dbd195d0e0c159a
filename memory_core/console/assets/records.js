// What the person's and the operator's views both show about records: audit trails, pending deletions, and
// agents named so that two of them never look the same.

import { h, formatCount, formatTime, isolated } from "./dom.js";
import { storedText } from "./invisible.js";
import { showMore } from "./ui.js";

const ACTION_LABELS = {
  append: "Added", import: "Imported", clear: "Cleared", forget: "Forgot",
  clear_requested: "Asked to clear", replace_requested: "Replaced by an import", forget_requested: "Asked to forget", purge_requested: "Erasure of everything requested",
  deletion_approved: "Deletion approved", deletion_rejected: "Deletion rejected", deletion_executed: "Deletion carried out",
  deletion_dismissed: "Unreadable deletion request dismissed",
  hold_released: "Hidden memory shown again (its request was gone)",
  write_rejected: "Write refused", memory_file: "Memory file changed", agent_settings: "Settings changed",
  agent_settings_deleted: "Settings deleted",
};

/** Agent ids longer than this are shown cut short (the whole id is in the title). */
const AGENT_ID_SHOWN = 12;

/** ``id`` as the list shows it: whole up to ``AGENT_ID_SHOWN`` characters, else its start and "…". */
export function shortAgentId(id) {
  return id.length > AGENT_ID_SHOWN ? `${id.slice(0, AGENT_ID_SHOWN - 1)}\u2026` : id;
}

/**
 * The ids of ``agents`` (``agent_object_id``) that must be shown whole: those whose short forms are alike, since
 * ids too may be chosen by an agent platform and a shared start must not make two agents look the same.
 */
export function idsShownWhole(agents) {
  const times = new Map();
  for (const a of agents) {
    const short = shortAgentId(a.agent_object_id);
    times.set(short, (times.get(short) || 0) + 1);
  }
  return new Set(agents.filter((a) => times.get(shortAgentId(a.agent_object_id)) > 1).map((a) => a.agent_object_id));
}

/**
 * An agent's display name beside its id. The name is the agent platform's choice ("About me (all agents)", or
 * another agent's name with a zero-width space in it): the id, one per agent, tells agents apart. ``whole``
 * shows the id uncut (``idsShownWhole``). The name is isolated (``isolated``): an override in it cannot show the id
 * or what follows in another order.
 */
export function agentLabel(name, agentId, whole = false) {
  const id = String(agentId ?? "");
  const idPart = [h("span", { class: "visually-hidden" }, "agent ID "),
    h("span", { class: "agent-id", title: id }, whole ? id : shortAgentId(id))];
  return name ? [isolated(name), " ", idPart] : idPart;
}

/**
 * Agents the most recently updated first (as the list showed before the API paged it), those never updated
 * last, then by id. Times are compared as instants: the API writes fractions of a second only when there are.
 */
export function newestFirst(agents) {
  const time = (a) => (a.updated_on ? Date.parse(a.updated_on) : -Infinity);
  const id = (a) => a.agent_object_id;
  return agents.slice().sort((a, b) => time(b) - time(a) || (id(a) < id(b) ? -1 : id(a) > id(b) ? 1 : 0));
}

/** Deletion requests by the time they were made (``requested_on``, one ISO 8601 form), oldest first. */
export function oldestFirst(requests) {
  const time = (r) => r.requested_on;
  return requests.slice().sort((a, b) => (time(a) < time(b) ? -1 : time(a) > time(b) ? 1 : 0));
}

/** The pending-deletions notice lists this many requests; it counts the rest in one line. */
export const PENDING_LISTED = 10;

/**
 * The notice of the person's deletions waiting for an operator: how many, and the oldest ``PENDING_LISTED`` of
 * them. A person who forgot entries one by one may have a thousand waiting, and the notice sits above the
 * entries: listed whole, it pushed them thousands of pixels down and made a screen reader read every one first.
 */
export function pendingPanel(pending) {
  const rest = pending.length - PENDING_LISTED;
  return h("div", { class: "notice", id: "pending", role: "note" },
    h("strong", {}, `${formatCount(pending.length)} deletion${pending.length === 1 ? "" : "s"} waiting for an operator`),
    h("p", {}, "What you asked to forget is already hidden from you and from every agent. An operator approves the erasure, "
      + "or rejects it and the memory shows again."),
    h("ul", {}, pending.slice(0, PENDING_LISTED).map((p) => h("li", {},
      `${ACTION_LABELS[`${p.kind}_requested`] || p.kind} `,
      p.scope ? ["(", storedText(p.scope), p.agent_object_id ? [": ", storedText(p.agent_object_id)] : null, ") "] : "",
      `on ${formatTime(p.requested_on)}: `,
      p.status === "approved" ? "approved, erasure under way" : "pending approval"))),
    rest > 0 ? h("p", { id: "pending-more" }, `and ${formatCount(rest)} more, asked later `
      + "(each is in My audit trail).") : null);
}

/** Audit events shown at once; a button shows the next ones (a trail of 2,000 took 2.7 s to show, whole). */
export const EVENTS_AT_ONCE = 200;

/**
 * Audit events as the audit routes answer them with ``order=newest_first``: the newest first, ``EVENTS_AT_ONCE``
 * at a time (the button that shows more is ``<id>-more``). Who, the scope, the agent and the detail (a reason, a
 * file's path, group IDs) are stored by others: each is isolated and its invisible characters marked
 * (``storedText``).
 */
export function auditTable(events, id) {
  if (!events.length) return h("p", { class: "empty", id }, "No changes recorded yet.");
  const row = (e) => h("tr", {},
    h("td", {}, h("time", { datetime: e.time }, formatTime(e.time))),
    h("td", {}, ACTION_LABELS[e.action] || storedText(e.action)),
    h("td", {}, storedText(e.actor)),
    h("td", {}, e.scope ? storedText(e.scope) : ""),
    h("td", {}, e.agent_object_id ? storedText(e.agent_object_id) : ""),
    h("td", {}, e.detail ? storedText(e.detail) : e.byte_count != null ? `${e.byte_count} bytes` : ""));
  const body = h("tbody", {}, events.slice(0, EVENTS_AT_ONCE).map(row));
  const table = h("table", { id },
    h("caption", { class: "visually-hidden" }, "Audit events"),
    h("thead", {}, h("tr", {}, ["Time", "What", "Who", "Scope", "Agent", "Detail"].map((c) => h("th", { scope: "col" }, c)))),
    body);
  return [table, showMore({ container: body, items: events, render: row, step: EVENTS_AT_ONCE, id: `${id}-more`,
    noun: "events" })];
}
