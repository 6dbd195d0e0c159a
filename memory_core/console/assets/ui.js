// Shared page furniture: the status line, the confirmation dialog and the note under a list cut short.

import { formatCount, h, replace } from "./dom.js";

let statusTimer = null;

/** Announce a short message (role=status); errors stay until the next message. */
export function announce(message, { error = false } = {}) {
  const status = document.getElementById("status");
  status.className = error ? "status error-status" : "status";
  status.textContent = message;
  clearTimeout(statusTimer);
  if (!error) statusTimer = setTimeout(() => { status.textContent = ""; }, 6000);
}

let focusWanted = null;

/**
 * Where focus goes once the view is next redrawn (``settleFocus``): the first of ``selectors`` found, else the
 * status line. A redraw removes the button that had focus, which left it on <body>, at the top of the page.
 */
export function focusAfterRedraw(...selectors) {
  focusWanted = selectors.filter(Boolean);
}

/**
 * Called by the page once a view is in the DOM: moves focus where ``focusAfterRedraw`` asked, only when the
 * redraw dropped it (focus the person moved elsewhere meanwhile stays where it is).
 */
export function settleFocus() {
  const wanted = focusWanted;
  focusWanted = null;
  if (!wanted) return;
  const active = document.activeElement;
  if (active && active !== document.body && active.isConnected) return;
  const target = wanted.map((s) => document.querySelector(s)).find((el) => el && !el.disabled)
    || document.getElementById("status");
  target.focus();
}

/**
 * A modal confirmation (native <dialog>: focus is trapped, Escape cancels). ``text``: a string, or nodes and strings
 * (``h``'s children) for a text that shows what others stored as the page marks it (invisible.js ``storedText``).
 * Resolves to false on cancel; to true, or to the extra inputs' values when ``extra`` is given.
 */
export function confirmAction({ title, text, ok = "Confirm", extra = [], danger = true }) {
  const dialog = document.getElementById("confirm");
  const form = document.getElementById("confirm-form");
  document.getElementById("confirm-title").textContent = title;
  replace(document.getElementById("confirm-text"), text);
  const okButton = document.getElementById("confirm-ok");
  okButton.textContent = ok;
  okButton.className = danger ? "danger" : "primary";
  replace(document.getElementById("confirm-extra"), extra);
  const opener = document.activeElement;
  return new Promise((resolve) => {
    const finish = (value) => {
      form.removeEventListener("submit", onSubmit);
      cancel.removeEventListener("click", onCancel);
      dialog.removeEventListener("cancel", onCancel);
      if (dialog.open) dialog.close();
      if (opener && opener.isConnected) opener.focus();
      resolve(value);
    };
    const onSubmit = (event) => {
      event.preventDefault();
      const required = extra.flatMap((el) => [...el.querySelectorAll("[required]")]);
      if (required.some((el) => !el.value.trim())) {
        required.find((el) => !el.value.trim()).focus();
        return;
      }
      finish(extra.length ? Object.fromEntries(
        extra.flatMap((el) => [...el.querySelectorAll("input, textarea, select")]).map((el) => [el.name, el.value]),
      ) : true);
    };
    const onCancel = (event) => { event.preventDefault(); finish(false); };
    const cancel = document.getElementById("confirm-cancel");
    form.addEventListener("submit", onSubmit);
    cancel.addEventListener("click", onCancel);
    dialog.addEventListener("cancel", onCancel);
    dialog.showModal();
    const first = dialog.querySelector("#confirm-extra input, #confirm-extra textarea") || cancel;
    first.focus();
  });
}

/** Run an action on a button, disabling it meanwhile and reporting a failure. */
export async function busy(button, action) {
  if (button) button.disabled = true;
  try {
    return await action();
  } catch (error) {
    announce(error.message || String(error), { error: true });
    return undefined;
  } finally {
    if (button) button.disabled = false;
  }
}

/** ``cutShortNote``'s ``rest`` for the operator's listings: where an operator reads the rest of one cut short. */
export const OPERATOR_LISTING_REST = "The REST route gives the rest, a page at a time (its continuation).";

/**
 * A note for a listing ``Api.list`` did not read to its end (``truncated``), naming how many ``what`` it
 * shows and where the rest is (``rest``); null for a whole one. A list cut short must never pass for all of it.
 */
export function cutShortNote(page, items, what, rest) {
  if (!page || !page.truncated) return null;
  return h("p", { class: "notice cut-short", role: "note" },
    `Only the first ${formatCount(items.length)} ${what} are shown here, and there are more. ${rest}`);
}

/**
 * Under a long list: a button that adds the next ``step`` of ``items`` (``render`` makes each) to ``container``
 * and says how many are not shown, then a line that says all are shown and takes the focus. Null when
 * ``container`` already holds them all. ``onShown(count)`` hears how many are shown after each click. A list
 * laid out whole took seconds at a thousand rows and pushed everything below it tens of thousands of pixels down.
 */
export function showMore({ container, items, render, step, id, noun, onShown = () => {} }) {
  const more = h("button", { type: "button", id });
  const label = () => {
    const left = items.length - container.children.length;
    more.textContent = `Show ${formatCount(Math.min(step, left))} more (${formatCount(left)} not shown)`;
  };
  more.addEventListener("click", () => {
    const start = container.children.length;
    container.append(...items.slice(start, start + step).map(render));
    const shown = container.children.length;
    onShown(shown);
    announce(`Showing ${formatCount(shown)} of ${formatCount(items.length)} ${noun}.`);
    if (shown < items.length) {
      label();
      return;
    }
    // The button goes; focus moves to what replaces it rather than to the top of the page.
    const done = h("p", { class: "muted", id: `${id}-done`, tabindex: "-1" }, `All ${formatCount(items.length)} ${noun} shown.`);
    more.replaceWith(done);
    done.focus();
  });
  if (container.children.length >= items.length) return null;
  label();
  return h("div", { class: "show-more" }, more);
}
