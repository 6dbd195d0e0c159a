// The operator's view: deletion requests to decide, the sweep, holds whose request is gone (orphan_holds.js), any
// user's audit trail, agent settings (agent_settings.js), the legacy-import trail and the scan for hidden text
// (hidden_text_scan.js).
// Operator routes take an operator key or the operator app role.

import { AgentSettings } from "./agent_settings.js";
import { ApiError, SIGN_IN_EXPIRED } from "./api.js";
import { describeUnreadable, dismissedOutcome, dismissUnreadable, readableOutcome } from "./dismissal.js";
import { h, replace, field, formatCount, formatSecond, formatTime, isolatedText } from "./dom.js";
import { HiddenTextScan } from "./hidden_text_scan.js";
import { storedText } from "./invisible.js";
import { OrphanHolds } from "./orphan_holds.js";
import { auditTable } from "./records.js";
import {
  announce, busy, confirmAction, cutShortNote, focusAfterRedraw, OPERATOR_LISTING_REST, showMore,
} from "./ui.js";

// Deletion requests shown at once; a button shows the next ones. A thousand rows took five seconds to lay out and
// put the sweep, the audit trail and the agent settings 80,000 pixels down the page.
const ROWS_AT_ONCE = 100;

// Unreadable requests listed at once in their note, which sits above the sweep and the rest of the view.
const UNREADABLE_AT_ONCE = 20;

// The instance's trail of dismissals of requests naming no valid user (GET .../operator/audit?upn=~deletions).
const DELETIONS_TRAIL = "~deletions";
const DELETIONS_TRAIL_TITLE = "Dismissals of requests naming no user";

// Every text stored by others (a UPN, an agent's ID, a reason, a kind or status as stored) is shown through
// ``storedText`` (isolated, its invisible characters marked), and through ``isolatedText`` inside a string the view
// builds (a button's name, a dialog's text): an override left open in one cannot reorder the row around it.

export class OperatorView {
  constructor(api, session, config) {
    this.api = api;
    this.session = session;
    this.config = config;
    this.status = "pending";
    // How many requests the table shows: kept when the list is read again after a decision, reset with the filter.
    this.shownRows = ROWS_AT_ONCE;
    // How many unreadable requests the note lists, kept like ``shownRows`` (the note is no filter's).
    this.shownUnreadable = UNREADABLE_AT_ONCE;
    // What the last dismissal came to ({ text, success }), said once above the note when the view is next drawn.
    this.dismissal = null;
    // One scan for the view's life: what it found survives the view's redraws.
    this.hiddenTextScan = new HiddenTextScan(api, this.credential, () => this.refresh());
    this.agentSettings = new AgentSettings(api, this.credential);
    this.orphanHolds = new OrphanHolds(api, this.credential, () => this.refresh());
  }

  get credential() {
    return () => this.session.operatorHeaders();
  }

  async show() {
    const root = h("div", {});
    root.append(this.keyPanel());
    let requests;
    try {
      requests = await this.api.list("/operator/deletions", { status: this.status === "all" ? "" : this.status },
        ["requests", "unreadable"], this.credential);
    } catch (error) {
      // An expired sign-in is the page's to report (with a way to sign in again), not a missing operator role. Under
      // App Service a 401 is one too: the principal is missing, and an operator key cannot stand in for it there.
      const expired = error instanceof ApiError && (error.code === SIGN_IN_EXPIRED
        || (error.status === 401 && this.session.mode === "easyauth"));
      if (!expired && error instanceof ApiError && (error.status === 401 || error.status === 403)) {
        root.append(h("p", { class: "notice", id: "operator-refused" },
          `Operator access needs an operator key or the ${this.config.operator_role} role. `
          + `The service said: ${error.message}`));
        return root;
      }
      throw error;
    }
    root.append(this.deletionsSection(requests), this.sweepSection(), this.orphanHolds.section(), this.auditSection(),
      this.agentSettings.section(), this.legacySection(), this.hiddenTextScan.section());
    return root;
  }

  keyPanel() {
    const [keyField, key] = field("Operator key",
      h("input", { type: "password", id: "operator-key", autocomplete: "off", value: this.session.operatorKey }),
      `Leave empty to use your sign-in's ${this.config.operator_role} role.`);
    const form = h("form", { class: "panel row", id: "operator-key-form", "aria-label": "Operator credential" },
      keyField, h("button", { type: "submit" }, "Use key"));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.session.setOperatorKey(key.value.trim());
      announce(key.value.trim() ? "Operator key set for this tab." : "Operator key removed.");
      this.refresh();
    });
    return form;
  }

  refresh() {
    document.getElementById("tab-operator")?.click();
  }

  deletionsSection(page) {
    const requests = page.requests || [];
    const select = h("select", { id: "deletion-status" },
      ["pending", "approved", "rejected", "executed", "all"]
        .map((s) => h("option", { value: s, selected: s === this.status }, s)));
    select.addEventListener("change", () => {
      this.status = select.value;
      this.shownRows = ROWS_AT_ONCE;
      this.refresh();
    });
    const [statusField] = field("Show", select);
    const table = requests.length ? h("table", { id: "deletions" },
      h("caption", { class: "visually-hidden" }, "Deletion requests"),
      h("thead", {}, h("tr", {}, ["Who", "Asked by", "When", "What", "Entries", "Status", "Decision"]
        .map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, requests.slice(0, this.shownRows).map((r) => this.requestRow(r))))
      : h("p", { class: "empty", id: "no-deletions" },
        `No ${this.status === "all" ? "" : `${this.status} `}deletion requests`
        + `${(page.unreadable || []).length ? " this release can read" : ""}.`);
    return h("section", { "aria-labelledby": "deletions-title" },
      h("h2", { id: "deletions-title", tabindex: "-1" }, "Deletion requests"), statusField, table,
      requests.length ? showMore({ container: table.tBodies[0], items: requests, render: (r) => this.requestRow(r),
        step: ROWS_AT_ONCE, id: "show-more-requests", noun: "requests",
        onShown: (n) => { this.shownRows = n; } }) : null,
      this.dismissalOutcome(), this.unreadableNote(page.unreadable || []),
      cutShortNote(page, requests, "requests", OPERATOR_LISTING_REST));
  }

  /**
   * Stored requests this release cannot read (another release's layout): listed with why, never decided here,
   * ``UNREADABLE_AT_ONCE`` at a time (the button that lists more is ``show-more-unreadable``).
   */
  unreadableNote(unreadable) {
    if (!unreadable.length) return null;
    const one = unreadable.length === 1;
    const item = (u) => h("li", { dataset: { requestId: u.request_id } },
      h("code", {}, storedText(u.request_id)), " \u2014 ", u.kind ? storedText(u.kind) : "kind unknown", ", ",
      u.status ? storedText(u.status) : "status unknown", ", ", u.upn ? storedText(u.upn) : "user unknown", ": ",
      storedText(u.message), " ",
      h("button", { type: "button", class: "danger dismiss", "aria-label": `Dismiss ${describeUnreadable(u)}`,
        onclick: (e) => this.dismiss(u, e.currentTarget) }, "Dismiss"));
    const list = h("ul", {}, unreadable.slice(0, this.shownUnreadable).map(item));
    return h("div", { class: "notice", id: "unreadable-deletions", role: "note" },
      h("p", {}, `${one ? "One stored deletion request" : `${formatCount(unreadable.length)} stored deletion requests`}`
        + ` cannot be read by this release (another release's layout), so ${one ? "it is" : "they are"} not in the `
        + "table and cannot be approved or rejected here. Each stays stored as it is, for a release that reads it; "
        + "one no release will read is dismissed with its Dismiss button (or \u201cpython -m memory_core operator "
        + "dismiss <id>\u201d): its record erased, audited; what it hid stays hidden, so one whose holds still "
        + "stand is dismissed only when you confirm it anyway."),
      list, showMore({ container: list, items: unreadable, render: item, step: UNREADABLE_AT_ONCE,
        id: "show-more-unreadable", noun: "unreadable requests", onShown: (n) => { this.shownUnreadable = n; } }));
  }

  /** What the last dismissal came to, once (the view drawn again after it); null when there is nothing to say. */
  dismissalOutcome() {
    const said = this.dismissal;
    this.dismissal = null;
    return said ? h("p", { class: said.success ? "success" : "notice", id: "dismissal-outcome", tabindex: "-1" },
      said.shown) : null;
  }

  /**
   * Dismiss the unreadable request ``u`` (dismissal.js asks first, and again when holds still stand); the view is
   * drawn again after it, and after a 409 or 404 too, saying what happened above the note. Focus goes to the next
   * request's Dismiss (else the one before), then to that line. Both POSTs go to the instance the note was read
   * on: the second, after a dialog, must not reach another instance chosen while the first was answered.
   */
  async dismiss(u, button) {
    const item = button.closest("li");
    const { instance } = this.api;
    const post = async (force) => {
      button.disabled = true;
      try {
        const path = `/operator/deletions/${encodeURIComponent(u.request_id)}/dismiss${force ? "?force=true" : ""}`;
        return (await this.api.send("POST", path, {}, this.credential, instance)).data;
      } finally {
        button.disabled = false;
        // A disabled button drops the focus; a second dialog gives it back to whatever had it.
        if (document.activeElement === document.body) button.focus();
      }
    };
    let result;
    try {
      result = await dismissUnreadable(u, post);
    } catch (error) {
      announce(error.message || String(error), { error: true });
      if (error instanceof ApiError && (error.status === 404 || error.status === 409)) this.refresh();
      return;
    }
    if (result.outcome === "cancelled") return;
    if (result.outcome === "dismissed") {
      this.dismissal = { success: true, ...dismissedOutcome(result.dismissed) };
      focusAfterRedraw(...[item?.nextElementSibling, item?.previousElementSibling].filter(Boolean)
        .map((li) => `#unreadable-deletions li[data-request-id="${CSS.escape(li.dataset.requestId)}"] button.dismiss`),
      "#dismissal-outcome");
    } else {
      this.dismissal = { success: false, ...readableOutcome(u) };
      focusAfterRedraw("#dismissal-outcome");
    }
    announce(this.dismissal.said);
    this.refresh();
  }

  requestRow(r) {
    const whole = r.kind === "purge";
    const what = whole ? "all memory" : [r.kind, r.scope ? [" ", storedText(r.scope)] : null,
      r.agent_object_id ? [" (", storedText(r.agent_object_id), ")"] : null];
    const whatText = whole ? "all memory" : [r.kind, r.scope ? ` ${isolatedText(r.scope)}` : "",
      r.agent_object_id ? ` (${isolatedText(r.agent_object_id)})` : ""].join("");
    // A screen reader lists buttons by name: each names its row (what, whose, when asked), not only the kind and
    // the user, which every one of a person's forgets shares.
    const row = `${whatText} for ${isolatedText(r.upn)}, asked ${formatSecond(r.requested_on)}`;
    const decision = r.status === "pending" ? h("div", { class: "actions" },
      h("button", { type: "button", class: "primary", "aria-label": `Approve ${row}`,
        onclick: (e) => this.approve(r, e.currentTarget) }, "Approve"),
      h("button", { type: "button", class: "danger", "aria-label": `Reject ${row}`,
        onclick: (e) => this.reject(r, e.currentTarget) }, "Reject"))
      : h("span", {}, r.decided_by ? [storedText(r.decided_by), `, ${formatTime(r.decided_on)}`] : "",
        r.reason ? [" \u2014 ", storedText(r.reason)] : "");
    return h("tr", { dataset: { requestId: r.id } },
      h("td", {}, storedText(r.upn)), h("td", {}, storedText(r.requested_by)),
      h("td", {}, h("time", { datetime: r.requested_on }, formatTime(r.requested_on))),
      h("td", {}, what), h("td", {}, r.entry_count == null ? "\u2014" : String(r.entry_count)),
      h("td", {}, r.status), h("td", {}, decision));
  }

  async approve(r, button) {
    const ok = await confirmAction({ title: "Approve this deletion?",
      text: `${isolatedText(r.upn)}'s ${r.kind === "purge" ? "whole memory" : r.kind} will be erased by the next `
        + "sweep. This cannot be undone.",
      ok: "Approve" });
    if (!ok) return;
    await this.decide(r, "approve", {}, button,
      "Approved. The sweep erases it; run it now below or wait for the schedule.");
  }

  async reject(r, button) {
    const [reasonField] = field("Reason (shown in the audit trail)",
      h("textarea", { name: "reason", id: "reject-reason", required: true }));
    const answer = await confirmAction({ title: "Reject this deletion?",
      text: `${isolatedText(r.upn)}'s memory shows again.`, ok: "Reject", extra: [reasonField], danger: false });
    if (!answer) return;
    await this.decide(r, "reject", { reason: answer.reason }, button, "Rejected. The memory shows again.");
  }

  /** Send the decision; the list is read again after it, and also when another tab or operator decided first. */
  async decide(r, decision, body, button, done) {
    // The list is drawn again without this row: focus goes to the next row's decision (else the one before), then
    // the heading, not to the top of the page.
    const row = button.closest("tr");
    focusAfterRedraw(...[row?.nextElementSibling, row?.previousElementSibling].filter(Boolean)
      .map((tr) => `tr[data-request-id="${CSS.escape(tr.dataset.requestId)}"] button.primary`), "#deletions-title");
    await busy(button, async () => {
      try {
        const path = `/operator/deletions/${encodeURIComponent(r.id)}/${decision}`;
        await this.api.send("POST", path, body, this.credential);
      } catch (error) {
        // 409 (no longer pending) or 404 (gone): the row shown is stale, and must not keep offering the decision.
        // The error still goes to the status line (busy), saying why nothing was decided here.
        if (error instanceof ApiError && (error.status === 404 || error.status === 409)) this.refresh();
        throw error;
      }
      announce(done);
      this.refresh();
    });
  }

  sweepSection() {
    const result = h("div", { id: "sweep-result", "aria-live": "polite" });
    return h("section", { "aria-labelledby": "sweep-title" },
      h("h2", { id: "sweep-title" }, "Sweep"),
      h("p", { class: "muted" }, "The sweep erases every approved request. It also runs on its schedule."),
      h("button", { type: "button", id: "run-sweep", onclick: (e) => busy(e.currentTarget, async () => {
        const { data } = await this.api.send("POST", "/operator/sweep", {}, this.credential);
        const executed = data.executed || [];
        const left = data.left || [];
        const erased = executed.reduce((n, r) => n + (r.erased_entries || 0), 0);
        replace(result, h("p", { class: "success" },
          `The sweep executed ${executed.length} request${executed.length === 1 ? "" : "s"} `
          + `and erased ${erased} entr${erased === 1 ? "y" : "ies"}.`),
        executed.length ? h("ul", {}, executed.map((r) => h("li", {}, r.kind, " for ", storedText(r.upn),
          `: ${r.erased_entries ?? 0} entries`))) : null,
        // Requests it left stay approved, their memory hidden; the next sweep tries them again.
        left.length ? h("div", { class: "notice", id: "sweep-left" },
          h("p", {}, `It left ${left.length} approved request${left.length === 1 ? "" : "s"} for a later sweep:`),
          h("ul", {}, left.map((l) => h("li", {}, l.kind ?? "unreadable request", " for ",
            l.upn ? storedText(l.upn) : "?", " (", storedText(l.request_id), `): ${l.reason}: `,
            storedText(l.message))))) : null);
      }) }, "Run the sweep now"),
      result);
  }

  auditSection() {
    const [upnField, upn] = field("User (UPN)", h("input", { type: "text", id: "audit-upn", required: true }));
    const out = h("div", { id: "operator-audit" });
    const form = h("form", { class: "panel", "aria-label": "Audit trail of a user" },
      h("div", { class: "row" }, upnField, h("button", { type: "submit" }, "Show audit trail")));
    const show = (button, owner) => busy(button, async () => {
      const page = await this.api.list("/operator/audit", { upn: owner, order: "newest_first" }, "events",
        this.credential);
      replace(out, h("h3", {}, ...(page.upn === DELETIONS_TRAIL ? [DELETIONS_TRAIL_TITLE]
        : ["Audit trail of ", storedText(page.upn)])),
      auditTable(page.events || [], "operator-audit-table"),
      cutShortNote(page, page.events, "events, the newest,", OPERATOR_LISTING_REST));
    });
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      if (!upn.value.trim()) { upn.focus(); return; }
      show(form.querySelector("button"), upn.value.trim());
    });
    // A dismissed request that names no valid user is audited in the instance's own trail, which no UPN names.
    const deletions = h("button", { type: "button", id: "show-deletions-trail",
      onclick: (e) => show(e.currentTarget, DELETIONS_TRAIL) }, DELETIONS_TRAIL_TITLE);
    return h("section", { "aria-labelledby": "op-audit-title" },
      h("h2", { id: "op-audit-title" }, "Audit trail per user"), form, h("div", { class: "row" }, deletions), out);
  }

  /** The instance's legacy-import trail: what was loaded without an owner, and each import refused for a secret. */
  legacySection() {
    const out = h("div", { id: "legacy-imports" });
    const showImports = (e) => busy(e.currentTarget, async () => {
      const page = await this.api.list("/operator/legacy-imports/audit", { order: "newest_first" }, "events",
        this.credential);
      replace(out, auditTable(page.events || [], "legacy-audit-table"),
        cutShortNote(page, page.events, "events, the newest,", OPERATOR_LISTING_REST));
    });
    const show = h("button", { type: "button", id: "show-legacy-imports", onclick: showImports },
      "Show legacy imports");
    return h("section", { "aria-labelledby": "legacy-title" }, h("h2", { id: "legacy-title" }, "Legacy imports"),
      h("p", { class: "muted" }, "Memory loaded without an owner (shown only under the legacy sharing policy), "
        + "and each import refused for a secret. Newest first; never the text."), show, out);
  }
}
