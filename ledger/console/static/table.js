// The table page's script, on top of htmx: the page's parts are swapped in out of band
// by every form's answer and by a poll every second (templates/table.html); this keeps
// that poll free while nothing changes, drops a poll older than the table shown,
// enters a throw from the keyboard, and fills an amount from the table's usual stakes.
// Without it every form still posts and the page comes back.
"use strict";

(() => {
  const board = () => document.getElementById("board");
  const shownVersion = () => Number(board()?.dataset.version || 0);

  // The poll asks with the ETag the board was drawn with (the table's version, and while
  // it seats the club's count of players): the server answers 304, and nothing is drawn,
  // while neither changes.
  document.body.addEventListener("htmx:configRequest", (event) => {
    if (event.detail.elt.id === "live") {
      event.detail.headers["If-None-Match"] = `"${board()?.dataset.etag || shownVersion()}"`;
    }
  });

  // Every answer is swapped as base.html's htmx-config says (a refusal drawn beside its
  // control, a refusal before the table's code as an alert): here only the poll's own
  // cases. A 304 draws nothing; a poll that crossed a write on the way answers an older
  // table, and is dropped.
  document.body.addEventListener("htmx:beforeSwap", (event) => {
    const { xhr } = event.detail;
    if (xhr.status === 304) {
      event.detail.shouldSwap = false;
      return;
    }
    const etag = xhr.getResponseHeader("ETag");
    if (xhr.getResponseHeader("X-Table-Parts") === "1" && etag
        && parseInt(etag.replaceAll('"', ""), 10) < shownVersion()) {
      event.detail.shouldSwap = false;
    }
  });

  // -- a throw from the keyboard: two number keys and Enter ------------------------------
  const keys = [];

  function echoKeys() {
    const echo = document.getElementById("keys-echo");
    if (!echo) return;
    if (keys.length === 0) echo.textContent = "";
    else if (keys.length === 1) echo.textContent = `${keys[0]} and …`;
    else echo.textContent = `${keys[0]} and ${keys[1]}: Enter records it, Escape starts again`;
  }

  function pick(die, value) {
    const radio = document.getElementById(`d${die}-${value}`);
    if (radio) radio.checked = true;
  }

  document.addEventListener("keydown", (event) => {
    const form = document.getElementById("throw-form");
    if (!form || event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    // Keys typed into a field are that field's.
    if (target instanceof Element && target.closest("input:not([type=radio]), textarea, select, [contenteditable]")) return;
    if (/^[1-6]$/.test(event.key)) {
      if (keys.length === 2) keys.length = 0;
      keys.push(Number(event.key));
      pick(keys.length, event.key);
      echoKeys();
      event.preventDefault();
    } else if (event.key === "Enter" && keys.length === 2
               && !(target instanceof HTMLButtonElement) && !(target instanceof HTMLAnchorElement)) {
      event.preventDefault();
      keys.length = 0;
      form.requestSubmit(document.getElementById("record-throw"));
    } else if (event.key === "Escape" && keys.length) {
      keys.length = 0;
      echoKeys();
    }
  });

  // -- amounts: the table's usual stakes, and the amount as money --------------------------
  // An amount is typed in the club's major units, as the office takes it ("12.50"), and
  // read by the server exactly (House.parse); the echo reads it the same way, or says
  // nothing, and the server's refusal names the rule.
  const AMOUNT = /^([0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.([0-9]+))?$/;

  function money(input) {
    const echo = document.getElementById(input.dataset.moneyEcho);
    const controls = input.closest("[data-minor]");
    if (!echo || !controls) return;
    const { symbol } = controls.dataset;
    let typed = input.value.trim();
    if (typed.startsWith(symbol.trim())) typed = typed.slice(symbol.trim().length).trim();
    const found = AMOUNT.exec(typed);
    const minor = Number(controls.dataset.minor);
    if (!found || (found[2] || "").length > minor) {
      echo.textContent = "";
      return;
    }
    // The digits as typed, padded: no float near money.
    const whole = found[1].replaceAll(",", "").replace(/^0+(?=\d)/, "");
    const part = minor ? `.${(found[2] || "").padEnd(minor, "0")}` : "";
    echo.textContent = `= ${symbol}${whole.replace(/\B(?=(\d{3})+$)/g, ",")}${part}`;
  }

  document.addEventListener("click", (event) => {
    const chip = event.target instanceof Element && event.target.closest("[data-amount]");
    if (chip) {
      const input = document.getElementById(chip.closest("[data-chips-for]").dataset.chipsFor);
      input.value = chip.dataset.amount;
      money(input);
      input.focus();
      return;
    }
    const dismiss = event.target instanceof Element && event.target.closest("[data-dismiss]");
    if (dismiss) {
      event.preventDefault();
      dismiss.closest(".confirm")?.remove();
    }
  });

  document.addEventListener("input", (event) => {
    if (event.target instanceof HTMLInputElement && event.target.dataset.moneyEcho) money(event.target);
  });

  // A "More" section the person opened stays open as the table redraws around it.
  const opened = new Set();
  document.addEventListener("toggle", (event) => {
    const details = event.target;
    if (!(details instanceof HTMLDetailsElement) || !details.id) return;
    if (details.open) opened.add(details.id); else opened.delete(details.id);
  }, true);

  htmx.onLoad((root) => {
    root.querySelectorAll("[data-chips-for]").forEach((chips) => { chips.hidden = false; });
    document.querySelectorAll("input[data-money-echo]").forEach(money);
    root.querySelectorAll("details[id]").forEach((details) => {
      if (opened.has(details.id)) details.open = true;
    });
    if (root !== document.body) {
      // A seed field drawn by a swap is kept as the page's first one is (console.js).
      root.querySelectorAll("input[data-client-seed]").forEach(keepSeed);
    }
    if (root.id === "controls" || root.querySelector?.("#throw-form")) {
      keys.length = 0;
      echoKeys();
    }
  });
})();
