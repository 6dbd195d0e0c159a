// The operator's scan for entries stored with characters no one sees (domain/hidden_text.py, before writes
// were screened for them): GET /operator/hidden-text a page at a time, and a forget request for each finding.

import { h, replace, formatCount, formatTime, isolatedText } from "./dom.js";
import { storedText } from "./invisible.js";
import { announce, busy, confirmAction, showMore } from "./ui.js";

const STOPPING = " Stopping after this page.";
// A hidden-text scan is kept in this tab's session storage, one per instance, after each page: its findings
// (users and entry ids, never text), counts and continuation. Signing out forgets them (``forgetScans``).
const SCAN_STORE = "memory-core.console.hidden-text-scan.";
// Findings shown at once; a button shows the next ones. A scan of an old instance may find thousands, each row
// with its button, and the table sits above nothing but held the page for as long as it took to lay them out.
const FINDINGS_AT_ONCE = 100;

/** The scan last kept for ``instance`` in this tab, or null. */
function keptScan(instance) {
  try {
    const kept = JSON.parse(sessionStorage.getItem(SCAN_STORE + instance) || "null");
    return kept && Array.isArray(kept.findings) ? { ...kept, instance } : null;
  } catch {
    return null;
  }
}

/** Keep ``scan`` for ``instance`` (null forgets it). Storage that is full only costs a reload's memory of it. */
function keepScan(scan, instance) {
  try {
    if (!scan) sessionStorage.removeItem(SCAN_STORE + instance);
    else sessionStorage.setItem(SCAN_STORE + instance, JSON.stringify({ findings: scan.findings,
      memories: scan.memories, entries: scan.entries, token: scan.token }));
  } catch {
    // A quota exceeded: the scan still shows until the page is left.
  }
}

/** Forget every scan kept in this tab: signing out must leave no one's findings behind. */
export function forgetScans() {
  for (const name of Object.keys(sessionStorage)) if (name.startsWith(SCAN_STORE)) sessionStorage.removeItem(name);
}

/** How much a scan read: "250 memories (250 entries)" when whole; entries first while under way or stopped, as
 * pages inside one memory larger than a page read entries but finish no memory. */
function scanned({ memories, entries }, soFar) {
  const counted = (n, one, many) => `${formatCount(n)} ${n === 1 ? one : many}`;
  const [m, e] = [counted(memories, "memory", "memories"), counted(entries, "entry", "entries")];
  return soFar ? `${e} (${m} finished)` : `${m} (${e})`;
}

/** The operator view's scan section, and the one scan it runs at a time. */
export class HiddenTextScan {
  /**
   * @param {import("./api.js").Api} api  the console's API (its ``instance`` is the one scanned)
   * @param {() => Promise<Record<string,string>>} credential  the operator's headers
   * @param {() => void} refresh  redraws the operator's view (after a forget request)
   */
  constructor(api, credential, refresh) {
    this.api = api;
    this.credential = credential;
    this.refresh = refresh;
    this.scan = null;
    // How many findings the table shows: kept through the view's redraws (a forget request is one), reset by a
    // fresh scan.
    this.shownFindings = FINDINGS_AT_ONCE;
  }

  /**
   * The scan for entries stored with characters no one sees (before writes were screened for them), every
   * page of it with a progress line, and a forget request for each one a user owns. The scan can be stopped
   * after the page under way, and continued from there; a page that fails stops it the same way, keeping
   * what was found. What a scan found, and where it stopped, outlive the section: the view's redraws (asking
   * to forget a finding is one) and a reload of the page, through this tab's session storage (``keepScan``).
   */
  section() {
    const out = h("div", { id: "hidden-text", "aria-live": "polite" });
    const start = h("button", { type: "button", id: "scan-hidden-text", onclick: () => this.run(true) },
      "Scan for hidden text");
    if (this.scan?.instance !== this.api.instance && !this.scan?.running) this.scan = keptScan(this.api.instance);
    this.shown = { out, start };
    this.show();
    return h("section", { "aria-labelledby": "hidden-text-title" }, h("h2", { id: "hidden-text-title" }, "Hidden text"),
      h("p", { class: "muted" }, "Entries stored before writes were screened for characters no one sees and every "
        + "model reads (Unicode tag characters, stray variation selectors, zero-width characters in a row) or that "
        + "shows in another order than models read it (bidirectional overrides). The scan reads every user's memory and "
        + "names the field and the first such character, never the text."), start, out);
  }

  /** Scan from the start (``fresh``) or from where the last scan stopped; one scan at a time. */
  async run(fresh) {
    if (this.scan?.running) return;
    if (fresh || !this.scan) {
      this.scan = { instance: this.api.instance, findings: [], memories: 0, entries: 0, token: null };
      this.shownFindings = FINDINGS_AT_ONCE;
      keepScan(null, this.api.instance);
    }
    const state = this.scan;
    state.running = true;
    state.stopping = false;
    this.show();
    try {
      do {
        // A page asked of another instance would be refused, or worse, read there: switching stops the scan.
        if (this.api.instance !== state.instance) break;
        const page = await this.api.get("/operator/hidden-text", { limit: 100, continuation: state.token },
          this.credential);
        state.findings.push(...(page.findings || []));
        state.memories += page.owners_scanned;
        state.entries += page.entries_scanned;
        state.token = page.continuation || null;
        keepScan(state, state.instance);
        this.show();
      } while (state.token && !state.stopping);
    } catch (error) {
      announce(error.message || String(error), { error: true });
    } finally {
      state.running = false;
      this.show();
    }
  }

  /** The scan into the section on the page: its progress while it runs, else what it found, whole or so far. */
  show() {
    const { out, start } = this.shown || {};
    const scan = this.scan?.instance === this.api.instance ? this.scan : null;
    if (!out) return;
    start.disabled = Boolean(this.scan?.running);
    if (!scan) {
      replace(out);
    } else if (scan.running) {
      const counted = scan.memories || scan.entries ? `Scanned ${scanned(scan, true)}\u2026` : "Scanning\u2026";
      replace(out, h("p", { class: "muted", id: "hidden-text-progress" }, counted + (scan.stopping ? STOPPING : "")),
        h("button", { type: "button", id: "stop-hidden-text", disabled: scan.stopping, onclick: () => {
          scan.stopping = true;
          this.show();
        } }, "Stop"));
    } else {
      this.showFindings(out, scan);
    }
  }

  /** What a scan found, whole or so far; a scan cut short says so and offers to continue from where it stopped. */
  showFindings(out, scan) {
    const { findings, token } = scan;
    const found = `${formatCount(findings.length)} entr${findings.length === 1 ? "y holds" : "ies hold"} hidden text`;
    const read = scanned(scan, Boolean(token));
    const more = token ? h("button", { type: "button", id: "continue-hidden-text",
      onclick: () => this.run(false) }, "Continue the scan") : null;
    replace(out, h("p", { id: "hidden-text-summary" },
      token ? `Stopped: ${found} in the ${read} scanned so far; the rest is not scanned yet.`
        : `${found}; ${read} scanned.`), more, findings.length ? this.table(findings) : null);
  }

  /**
   * One row a finding: who, where, the first hidden character; a forget request for what a user owns.
   * ``FINDINGS_AT_ONCE`` at a time (the button that shows more is ``show-more-findings``).
   */
  table(findings) {
    const action = (f) => {
      if (!f.upn) return h("span", { class: "muted" }, "legacy: never changed");
      if (f.forget_requested) return h("span", { class: "muted" }, "forget requested");
      const label = `Ask to forget ${isolatedText(f.entry_id)} of ${isolatedText(f.upn)}`;
      return h("button", { type: "button", class: "danger", "aria-label": label,
        onclick: (e) => this.forget(f, e.currentTarget) }, "Ask to forget");
    };
    // The user, entry and agent are stored by others: isolated and marked (``storedText``), so that an override
    // left open in one cannot show the row's other cells' text in another order.
    const row = (f) => h("tr", { "data-entry": f.entry_id },
      h("td", {}, f.upn ? storedText(f.upn) : "(legacy)"), h("td", {}, h("code", {}, storedText(f.entry_id))),
      h("td", {}, storedText(f.scope), f.agent_object_id ? [" (", storedText(f.agent_object_id), ")"] : null),
      h("td", {}, f.field),
      h("td", {}, f.character), h("td", {}, h("time", { datetime: f.created_on }, formatTime(f.created_on))),
      h("td", {}, action(f)));
    const body = h("tbody", {}, findings.slice(0, this.shownFindings).map(row));
    return [h("table", { id: "hidden-text-table" },
      h("caption", { class: "visually-hidden" }, "Entries holding hidden text"),
      h("thead", {}, h("tr", {}, ["Who", "Entry", "Where", "Field", "Character", "Stored", "Action"]
        .map((c) => h("th", { scope: "col" }, c)))),
      body),
    showMore({ container: body, items: findings, render: row, step: FINDINGS_AT_ONCE, id: "show-more-findings",
      noun: "findings", onShown: (n) => { this.shownFindings = n; } })];
  }

  /** Ask to forget a finding's entry, as if its user had; the row then says so, here and after a reload. */
  async forget(f, button) {
    const ok = await confirmAction({ title: "Ask to forget this entry?",
      text: `${isolatedText(f.upn)}'s entry is hidden at once and waits for an operator's approval, `
        + "as if they had asked.",
      ok: "Ask to forget" });
    if (!ok) return;
    await busy(button, async () => {
      await this.api.send("POST", "/operator/forgets", { upn: f.upn, entry_id: f.entry_id }, this.credential);
      f.forget_requested = true;
      if (this.scan && this.scan.findings.includes(f)) keepScan(this.scan, this.scan.instance);
      announce("Forget requested. It waits in Deletion requests for approval.");
      this.refresh();
    });
  }
}
