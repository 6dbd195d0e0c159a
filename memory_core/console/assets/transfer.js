// The person's export, import and clear of the scope on view: a panel of the person's view (person.js), kept apart
// so that each file holds one concept. Every action goes through the view's API client and redraws the view after.

import { field, h, uid } from "./dom.js";
import { announce, busy, confirmAction, focusAfterRedraw } from "./ui.js";

/** The panel: export as .md, clear all of it (disabled when ``count`` is 0), and import a markdown file. ``view``
 * is the PersonView whose scope it acts on (its ``api``, ``config``, ``scopeQuery``, ``scopeBody``, ``scopeLabel``
 * and ``onChange``). */
export function transferPanel(view, count) {
  const file = h("input", { type: "file", id: "import-file", accept: ".md,.markdown,.txt,text/markdown,text/plain" });
  const [fileField] = field("Markdown file", file);
  const mode = uid("mode");
  const append = h("input", { type: "radio", name: mode, value: "append", id: `${mode}-append`, checked: true });
  const replaceRadio = h("input", { type: "radio", name: mode, value: "replace", id: `${mode}-replace` });
  const importForm = h("form", { id: "import-form" },
    fileField,
    h("fieldset", {}, h("legend", {}, "How to import"),
      h("div", {}, append, h("label", { for: append.id }, " Add to what is remembered")),
      h("div", {}, replaceRadio, h("label", { for: replaceRadio.id }, " Replace what is remembered"))),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Import")));
  importForm.addEventListener("submit", (event) => {
    event.preventDefault();
    importFile(view, file, replaceRadio.checked ? "replace" : "append", importForm.querySelector("button"));
  });
  return h("section", { class: "panel", "aria-labelledby": "transfer-title" },
    h("h3", { id: "transfer-title" }, "Export, import, clear"),
    h("div", { class: "actions" },
      h("button", { type: "button", id: "export", onclick: (e) => exportScope(view, e.currentTarget) }, "Export as .md"),
      h("button", { type: "button", id: "clear-scope", class: "danger", disabled: count === 0,
        onclick: (e) => clearScope(view, e.currentTarget) }, "Clear all of it")),
    importForm);
}

async function exportScope(view, button) {
  await busy(button, async () => {
    const { text, filename } = await view.api.download("/memory/export", view.scopeQuery);
    const url = URL.createObjectURL(new Blob([text], { type: "text/markdown;charset=utf-8" }));
    const link = h("a", { href: url, download: filename, class: "visually-hidden" }, "download");
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
    announce(`Exported ${filename}.`);
  });
}

async function importFile(view, input, mode, button) {
  const file = input.files && input.files[0];
  if (!file) { announce("Choose a markdown file to import.", { error: true }); input.focus(); return; }
  if (file.size > (view.config.max_write_bytes || 65536)) {
    announce(`The file is ${file.size} bytes; the limit is ${view.config.max_write_bytes} bytes.`, { error: true });
    return;
  }
  if (mode === "replace") {
    const ok = await confirmAction({ title: `Replace ${view.scopeLabel}?`,
      text: "Everything remembered here now is replaced by the file. Under operator approval the old memory is hidden until an operator decides.",
      ok: "Replace" });
    if (!ok) return;
  }
  await busy(button, async () => {
    const content = await file.text();
    const { status, data } = await view.api.send("POST", "/memory/import", { ...view.scopeBody, content_markdown: content, mode });
    announce(status === 202 ? "Import done; the replaced memory is hidden, waiting for an operator's approval."
      : data?.status === "not_stored" ? data.message : `Imported ${file.name}.`);
    focusAfterRedraw("#entries-title");
    view.onChange();
  });
}

async function clearScope(view, button) {
  const ok = await confirmAction({ title: `Clear ${view.scopeLabel}?`,
    text: view.config.deletion_mode === "immediate" ? "Every entry here is erased now."
      : "Every entry here disappears now. An operator approves the erasure; until then it is hidden, not yet erased.",
    ok: "Clear" });
  if (!ok) return;
  await busy(button, async () => {
    const { status } = await view.api.send("POST", "/memory/clear", { ...view.scopeBody, confirm: true });
    announce(status === 202 ? "Clearing requested: hidden now, waiting for an operator's approval." : "Cleared.");
    focusAfterRedraw("#entries-title");
    view.onChange();
  });
}
