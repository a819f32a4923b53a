// The console's little script: a form posts once. Everything works without it. (A
// table's page keeps itself up to date with htmx and static/table.js.)
"use strict";

// A double click or a second press posts once: the first submit disables the form's
// buttons (the server's idempotency key would answer a repeat from its store anyway).
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.hasAttribute("data-once")) return;
  if (form.dataset.sent) { event.preventDefault(); return; }
  form.dataset.sent = "1";
  // Disable after the submit has taken the pressed button's name and value.
  setTimeout(() => form.querySelectorAll("button").forEach((b) => { b.disabled = true; }), 0);
});

// htmx's answers, on every page (base.html's htmx-config swaps a refusal as it swaps a
// success: the console draws each for its place). An answer that is not a page for people
// (a proxy's or a server's fault) is not swapped in: the page says so, and stays as it was.
document.addEventListener("htmx:beforeSwap", (event) => {
  const { xhr } = event.detail;
  if (xhr.status < 400 || (xhr.getResponseHeader("Content-Type") || "").startsWith("text/html")) return;
  event.detail.shouldSwap = false;
  const announce = document.getElementById("announce");
  if (announce) announce.textContent = `The server answered ${xhr.status}: nothing was done here; try again.`;
});

// A form whose answer never came (the network, a server gone), or whose refusal left it
// where it was (an alert alone: a stale page, a role refused), may be sent again.
document.addEventListener("htmx:afterRequest", (event) => {
  const form = event.detail.elt;
  if (!(form instanceof HTMLFormElement) || !form.isConnected) return;
  if (event.detail.successful && (event.detail.xhr?.status || 0) < 400) return;
  delete form.dataset.sent;
  form.querySelectorAll("button").forEach((b) => { b.disabled = false; });
});

// The verify page checks the log a page at a time, each a request of its own, and
// moves the progress bar between them. Without script each page is a link to follow.
function verifier(root) {
  const url = root.dataset.verify;
  const form = root.querySelector("form");
  const bar = root.querySelector("progress");
  const status = root.querySelector("#verify-status");
  const problems = root.querySelector("#verify-problems");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = form.querySelector("button");
    button.disabled = true;
    problems.textContent = "";
    let after = 0;
    let ok = true;
    try {
      for (;;) {
        const answer = await fetch(`${url}?after=${after}`, { credentials: "same-origin" });
        if (!answer.ok) throw new Error(`the server answered ${answer.status}`);
        const report = await answer.json();
        ok = ok && report.ok;
        for (const p of report.problems) {
          const li = document.createElement("li");
          li.textContent = p;
          problems.appendChild(li);
        }
        bar.max = report.through || 1;
        bar.value = report.next_after ?? report.through;
        status.textContent = `Checked ${bar.value} of ${report.through} events` +
          (report.next_after === null ? (ok ? ": the log is verified." : ": problems found.") : "…");
        if (report.next_after === null) break;
        after = report.next_after;
      }
    } catch (error) {
      status.textContent = `The check stopped: ${error.message}. Try again.`;
    }
    button.disabled = false;
  });
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("[data-verify]").forEach(verifier);
});

// A server-dice throw's client seed is kept in this browser (localStorage, by table, turn
// and throw) until the log holds it: a throw that failed, or got no answer, is sent again
// with the same seed, never a fresh one. The bank knows the dice the moment it reads a
// seed; given a fresh one after a failure, it could have refused the first for its dice
// (docs/player.md, "Provably fair server dice"). Once the seed is logged the page shows
// it, and the throw can only be drawn from it; once the throw is drawn the table's next
// throw has a key of its own, and the seeds kept for its earlier ones are let go. On the
// caster's own page (data-own-seed) the browser makes the seed: 16 random bytes, in hex.
function keepSeed(input) {
  const where = input.dataset.clientSeed;
  const key = `hazard-seed:${where}`;
  const table = where.slice(0, where.indexOf(":"));
  for (let i = localStorage.length - 1; i >= 0; i -= 1) {
    const old = localStorage.key(i);
    if (old && old.startsWith(`hazard-seed:${table}:`) && old !== key) localStorage.removeItem(old);
  }
  if (!input.value) input.value = localStorage.getItem(key) || (input.hasAttribute("data-own-seed") ? freshSeed() : "");
  const keep = () => { if (input.value) localStorage.setItem(key, input.value); };
  keep();
  input.form.addEventListener("submit", keep);
  // Kept as it is typed, too: the table redraws its form when anything at the table
  // changes, and the field drawn again for the same throw takes it back (a new throw's
  // field is another key's, and starts afresh).
  input.addEventListener("input", () => {
    if (input.value) localStorage.setItem(key, input.value); else localStorage.removeItem(key);
  });
}

function freshSeed() {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("input[data-client-seed]").forEach(keepSeed);
});
