// trajectory-review: navigation, deep links, keyboard. The server owns all state; this
// file only turns clicks, keys and the address bar into Shiny inputs and back.
(function () {
  "use strict";
  const state = { conversation: null, exchange: null };
  // The ids of the outputs and inputs this file works with, resolved by the server
  // (module namespaces included) into data- attributes of the page (app/page.py).
  const ids = document.querySelector(".tr-app").dataset;

  function send(name, value) {
    if (window.Shiny && Shiny.setInputValue) {
      Shiny.setInputValue(name, value, { priority: "event" });
    }
  }

  function scrollToExchange(ex, focus) {
    if (!ex) return;
    const el = document.getElementById("ex-" + ex);
    if (el) {
      el.scrollIntoView({ block: "start", behavior: "instant" });
      document.querySelectorAll(".tr-exchange.tr-current").forEach((e) => e.classList.remove("tr-current"));
      el.classList.add("tr-current");
      if (focus) el.focus({ preventScroll: true });
    }
  }

  function pending() { return state.exchange; }

  // Links to conversations: plain clicks navigate in place, modified clicks open tabs.
  document.addEventListener("click", function (ev) {
    const a = ev.target.closest("a[data-conversation]");
    if (a && !ev.metaKey && !ev.ctrlKey && !ev.shiftKey && ev.button === 0) {
      ev.preventDefault();
      const ex = a.getAttribute("data-exchange") || a.getAttribute("data-open-exchange");
      send(ids.nav, { conversation: a.getAttribute("data-conversation"), exchange: ex ? Number(ex) : null, history: "push" });
      return;
    }
    // A button the server gave an input and a value (app/actions.py): send it.
    const action = ev.target.closest("[data-send]");
    if (action) {
      const value = JSON.parse(action.getAttribute("data-value"));
      const note = document.getElementById(action.getAttribute("data-note-from"));
      if (note) value.note = note.value;
      send(action.getAttribute("data-send"), value);
      return;
    }
    // The new-traces banner (app/server.py): no inline handler, the page's CSP forbids them.
    if (ev.target.closest("[data-reload]")) { window.location.reload(); return; }
    const copy = ev.target.closest(".tr-btn-copy");
    if (copy) {
      const url = new URL(window.location.href);
      url.searchParams.set("exchange", copy.getAttribute("data-exchange"));
      copy.setAttribute("data-url", url.toString());
      // the clipboard needs a secure context (https, or this machine); else the link is
      // offered to copy by hand
      if (!navigator.clipboard || !window.isSecureContext) { window.prompt("Link to this answer", url); return; }
      navigator.clipboard.writeText(url.toString()).finally(function () {
        copy.textContent = "Copied";
        setTimeout(function () { copy.textContent = "Copy link"; }, 1500);
      });
      return;
    }
    const anchor = ev.target.closest("a.tr-ex-anchor");
    if (anchor && !ev.metaKey && !ev.ctrlKey) {
      ev.preventDefault();
      const ex = Number(anchor.closest(".tr-exchange").getAttribute("data-exchange"));
      send(ids.nav, { conversation: state.conversation, exchange: ex, history: "push" });
      return;
    }
    if (ev.target.closest(".tr-help-btn")) { toggleHelp(true); return; }
    if (ev.target.closest(".tr-help") && !ev.target.closest(".tr-help-card")) toggleHelp(false);
  });

  // QA from the keyboard: c / x give the verdict "correct flag" / "false positive" on the
  // rule under focus (the first flag of the current answer without a verdict), m writes a
  // note for it, l marks the answer "looks right". Once an answer is done the server
  // opens the next one nobody has finished (app/queue.py).
  function ruleUnderFocus() {
    const ex = document.getElementById("ex-" + (state.exchange || 1));
    if (!ex) return null;
    const rules = Array.from(ex.querySelectorAll(".tr-rule"));
    return rules.find(function (r) { return !r.querySelector(".tr-verdict-state"); }) || null;
  }
  // A key pressed while the answer just chosen is still on its way (] then x, faster
  // than the transcript arrives) would judge the answer still on screen, or nothing:
  // it waits for the current answer and is replayed when it lands.
  let pendingKey = null;
  function currentAnswerShown() {
    const conv = document.querySelector(".tr-conversation");
    if (!conv || conv.getAttribute("data-conversation") !== state.conversation) return false;
    return !!document.getElementById("ex-" + (state.exchange || 1));
  }
  function verdictKey(ev) {
    if (!currentAnswerShown()) { ev.preventDefault(); pendingKey = ev.key; return; }
    pendingKey = null;
    if (ev.key === "l") {
      const ex = document.getElementById("ex-" + (state.exchange || 1));
      const mark = ex && ex.querySelector('.tr-answer-mark[data-mark="looks_right"]');
      if (mark) { if (ev.preventDefault) ev.preventDefault(); mark.click(); }
      return;
    }
    const rule = ruleUnderFocus();
    const note = rule ? rule.querySelector(".tr-verdict-note") : document.getElementById(ids.note);
    if (ev.key === "m" && note) { if (ev.preventDefault) ev.preventDefault(); note.focus(); return; }
    if (!rule) return;
    if (ev.preventDefault) ev.preventDefault();
    const button = rule.querySelector(
      '.tr-verdict-btn[data-verdict="' + (ev.key === "c" ? "correct" : "false_positive") + '"]'
    );
    if (button) button.click();
  }

  // A dialog closed hands the focus back to where it was when it opened: left on the
  // body, a keyboard user started over from the top of the page (WCAG 2.4.3).
  let helpFrom = null;
  function toggleHelp(show) {
    const help = document.querySelector(".tr-help");
    if (!help) return;
    if (show === undefined) show = help.hasAttribute("hidden");
    if (show) {
      helpFrom = document.activeElement;
      help.removeAttribute("hidden"); help.querySelector(".tr-help-card").focus();
    } else if (!help.hasAttribute("hidden")) {
      help.setAttribute("hidden", "");
      if (helpFrom && helpFrom.isConnected) helpFrom.focus();
      helpFrom = null;
    }
  }
  let modalFrom = null;  // Shiny's modals (the warnings): Bootstrap's events
  jQuery(document).on("show.bs.modal", function () { modalFrom = document.activeElement; });
  jQuery(document).on("hidden.bs.modal", function () {
    if (modalFrom && modalFrom.isConnected) modalFrom.focus();
    modalFrom = null;
  });

  // Where a key is text: a text box, a text area, a select. A radio button, a checkbox or
  // a button is not: after a click on the Flagged tab (its radio button keeps the focus)
  // ] and x did nothing at all.
  const TEXT_TYPES = /^(text|search|email|number|password|url|tel|date|datetime-local|month|week|time)$/;
  function isTyping(t) {
    if (t.isContentEditable || t.tagName === "TEXTAREA" || t.tagName === "SELECT") return true;
    return t.tagName === "INPUT" && TEXT_TYPES.test((t.getAttribute("type") || "text").toLowerCase());
  }

  function exchanges() { return Array.from(document.querySelectorAll(".tr-exchange")); }

  // ] / [ : the next / previous row of the list as shown (in the Flagged view, the next
  // answer in the QA queue). Past the last row of a page, the next page opens; ] again
  // then takes its first row.
  function stepRow(delta) {
    const rows = Array.from(document.querySelectorAll(".tr-row"));
    const at = rows.findIndex(function (r) { return r.classList.contains("tr-row-selected"); });
    const target = rows[at < 0 ? (delta > 0 ? 0 : rows.length - 1) : at + delta];
    if (target) { target.click(); target.scrollIntoView({ block: "nearest" }); return; }
    const pager = document.querySelector('.tr-page[data-step="' + (delta > 0 ? 1 : -1) + '"]');
    if (pager && !pager.disabled) pager.click();
  }

  document.addEventListener("keydown", function (ev) {
    if (ev.metaKey || ev.ctrlKey || ev.altKey) return;
    const t = ev.target;
    const typing = t && isTyping(t);
    if (ev.key === "Escape") { toggleHelp(false); if (typing) t.blur(); return; }
    if (typing) return;
    if (ev.key === "?") { ev.preventDefault(); toggleHelp(); return; }
    if (ev.key === "/") {
      ev.preventDefault();
      const q = document.getElementById(ids.search);
      if (q) { q.focus(); q.select(); }
      return;
    }
    if (ev.key === "j" || ev.key === "k" || ev.key === "f") { ev.preventDefault(); send(ids.key, { key: ev.key }); return; }
    if (ev.key === "]" || ev.key === "[") { ev.preventDefault(); stepRow(ev.key === "]" ? 1 : -1); return; }
    if ("cxml".indexOf(ev.key) >= 0) { verdictKey(ev); return; }
    if (ev.key === "n" || ev.key === "p") {
      ev.preventDefault();
      // every answer of the conversation, though the page draws a window of them
      // (data-exchanges, data-shown "first-last"): the server draws the one asked for
      const conv = document.querySelector(".tr-conversation");
      const total = conv ? Number(conv.dataset.exchanges || exchanges().length) : 0;
      if (!total) return;
      const shown = ((conv && conv.dataset.shown) || "1-" + total).split("-").map(Number);
      let next;
      if (state.exchange) next = state.exchange + (ev.key === "n" ? 1 : -1);
      else next = ev.key === "n" ? shown[0] : shown[1];
      next = Math.max(1, Math.min(total, next));
      send(ids.nav, { conversation: state.conversation, exchange: next, history: "push" });
    }
  });

  // Server -> address bar. Pushes only when the location really changes.
  function onUrl(msg) {
    const changedSelection = msg.conversation !== state.conversation;
    state.conversation = msg.conversation;
    state.exchange = msg.exchange;
    if (msg.query !== window.location.search) {
      const url = window.location.pathname + msg.query + window.location.hash;
      if (msg.mode === "push") history.pushState({ tr: true }, "", url);
      else history.replaceState({ tr: true }, "", url);
    }
    markRows();
    applyCurrent(!changedSelection);
  }

  // The selected row: the conversation, or in the answer views the answer itself.
  function markRows() {
    document.querySelectorAll(".tr-row").forEach((r) => {
      const ex = r.getAttribute("data-exchange");
      const on = r.getAttribute("data-conversation") === state.conversation &&
        (!ex || !state.exchange || Number(ex) === state.exchange);
      r.classList.toggle("tr-row-selected", on);
      if (on) r.setAttribute("aria-current", "true"); else r.removeAttribute("aria-current");
    });
  }

  // Highlight and scroll to the current exchange once its transcript is in the page
  // (the address-bar message and the transcript can arrive in either order).
  function applyCurrent(focus) {
    const conv = document.querySelector(".tr-conversation");
    if (!conv || conv.getAttribute("data-conversation") !== state.conversation) return false;
    document.body.setAttribute("data-conversation", state.conversation || "");
    if (state.exchange) scrollToExchange(state.exchange, focus);
    else {
      document.querySelectorAll(".tr-exchange.tr-current").forEach((e) => e.classList.remove("tr-current"));
      const main = document.querySelector(".tr-main > .main");
      if (main && !conv.dataset.trShown) main.scrollTop = 0;
    }
    conv.dataset.trShown = "1";
    return true;
  }

  // When a new transcript or a new page of the list is in the page, mark the current
  // answer and row. Watched on the output containers (the HTML lands after Shiny's
  // shiny:value event, so that event alone is too early).
  function watch(id, then) {
    const el = document.getElementById(id);
    if (el) new MutationObserver(then).observe(el, { childList: true });
  }
  // The answers render after the transcript lands (shinychat draws markdown and asides as
  // custom elements), growing the page above the current answer: keep it in view while
  // the transcript's size changes, until the reviewer scrolls, clicks or types.
  let settling = null;
  function transcriptShown() {
    applyCurrent(false);
    if (pendingKey && currentAnswerShown()) verdictKey({ key: pendingKey });
    const conv = document.querySelector(".tr-conversation");
    if (!conv || !state.exchange) return;
    settling = state.exchange;
    new ResizeObserver(function (_entries, observer) {
      if (settling === null || settling !== state.exchange) { observer.disconnect(); return; }
      scrollToExchange(settling, false);
    }).observe(conv);
  }
  ["wheel", "touchstart", "mousedown", "keydown"].forEach(function (name) {
    document.addEventListener(name, function () { settling = null; }, { passive: true, capture: true });
  });
  function rowsShown() {
    markRows();
    const sel = document.querySelector(".tr-row-selected");
    if (sel) sel.scrollIntoView({ block: "nearest" });
  }
  watch(ids.transcript, transcriptShown);
  watch(ids.rows, rowsShown);

  window.addEventListener("popstate", function () { send(ids.urlState, { search: window.location.search }); });

  function start() {
    // The page was rendered with this URL's filters: the server only needs the selection.
    send(ids.urlState, { search: window.location.search, initial: true });
    sendName();
    describeResizeHandles();
    // a narrow window (a zoomed laptop) opens with the review pane closed: open, both
    // sidebars left the transcript too narrow to read (its toggle opens it)
    if (window.innerWidth < 768 && window.innerWidth >= 576) {
      const toggle = document.querySelector(".tr-right ~ .collapse-toggle");
      if (toggle && toggle.getAttribute("aria-expanded") === "true") toggle.click();
    }
  }
  // bslib's sidebar resize handles are focusable separators, which must say their value;
  // bslib sets it only once one is dragged (a WCAG 4.1.2 failure until then). Its own
  // bounds: 150 px, the window less 50 px.
  function describeResizeHandles() {
    document.querySelectorAll(".bslib-sidebar-resize-handle[role='separator']").forEach(function (h) {
      if (h.hasAttribute("aria-valuenow")) return;
      const sidebar = h.parentElement && h.parentElement.querySelector(":scope > .sidebar");
      h.setAttribute("aria-valuemin", "150");
      h.setAttribute("aria-valuemax", String(window.innerWidth - 50));
      h.setAttribute("aria-valuenow", String(Math.round(sidebar ? sidebar.getBoundingClientRect().width : 250)));
    });
  }
  // Tooltips for [data-tip] (the pills: the display table's body): Bootstrap's own,
  // delegated from the body (rows come and go), placed on the body so the scrolling list
  // never clips them; the text is set as text, never as HTML. Escape dismisses them.
  new bootstrap.Tooltip(document.body, {
    selector: "[data-tip]", html: false, customClass: "tr-tip", container: "body",
    trigger: "hover focus", title: function (el) { return (el || this).getAttribute("data-tip"); },
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.key !== "Escape") return;
    document.querySelectorAll("[data-tip]").forEach(function (el) {
      const t = bootstrap.Tooltip.getInstance(el);
      if (t) t.hide();
    });
  }, true);

  // Filter counts: rewrite the numbers only, never an input's value or its choices,
  // so an update computed before a reviewer's click cannot undo that click.
  function onCounts(msg) {
    Object.keys(msg.spans || {}).forEach(function (key) {
      document.querySelectorAll('[data-tr-count="' + key + '"]').forEach(function (el) {
        el.textContent = msg.spans[key];
      });
    });
    Object.keys(msg.options || {}).forEach(function (id) {
      const select = document.getElementById(id);
      if (!select) return;
      const labels = msg.options[id];
      const seen = {};
      Array.prototype.forEach.call(select.options, function (opt) {
        seen[opt.value] = true;
        if (Object.prototype.hasOwnProperty.call(labels, opt.value)) opt.textContent = labels[opt.value];
      });
      // While conversations are still read into the list, a model or tool seen for the
      // first time gets its option (as text and a value, never markup).
      Object.keys(labels).forEach(function (value) {
        if (seen[value]) return;
        const opt = document.createElement("option");
        opt.value = value;
        opt.textContent = labels[value];
        select.appendChild(opt);
      });
    });
  }
  // The reviewer's name where the server has none (anonymous access on Connect): asked
  // once, kept in this browser, sent with each session.
  const NAME_KEY = "trajectory-review-name";
  function onName(msg) {
    try { window.localStorage.setItem(NAME_KEY, msg.name); } catch (e) { /* private mode */ }
    send("reviewer_name", msg.name);
  }
  function sendName() {
    let name = null;
    try { name = window.localStorage.getItem(NAME_KEY); } catch (e) { name = null; }
    if (name) send("reviewer_name", name);
  }

  // The name form is a form so Enter saves it: it never submits to the server.
  document.addEventListener("submit", function (ev) {
    if (ev.target.closest(".tr-who")) ev.preventDefault();
  });

  // Controls that belong to one view (the queue's "Show reviewed", its flag kind) show in
  // that view only: the view input is mirrored into the page's data-view attribute and the
  // stylesheet hides the rest (a conditional panel would need eval, which the CSP forbids).
  function showView(view) { document.querySelector(".tr-app").dataset.view = view || ""; }
  jQuery(document).on("shiny:inputchanged", function (ev) {
    if (ev.name === ids.viewInput) showView(ev.value);
  });

  // Loaded as an HTML dependency after Shiny's own scripts, before Shiny connects:
  // handlers are registered here and now; the first input waits for the session (an
  // input sent before Shiny's init message is a protocol error on the server).
  Shiny.addCustomMessageHandler("tr-url", onUrl);
  Shiny.addCustomMessageHandler("tr-counts", onCounts);
  Shiny.addCustomMessageHandler("tr-name", onName);
  jQuery(document).on("shiny:sessioninitialized", start);
})();
