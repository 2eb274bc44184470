// trajectory-review: how the page shows what the server said (static/app.js carries the
// messages): the current answer and row marked and kept in view, the two keys that only
// move the focus, tooltips, copy links, focus given back by dialogs, and bslib's parts
// made to say what they are. Nothing here decides anything or talks to the server.
(function () {
  "use strict";
  const ids = document.querySelector(".tr-app").dataset;
  const state = { conversation: null, exchange: null };

  // Where a key is text: a text box, a text area, a select. A radio button, a checkbox or
  // a button is not: after a click on the Flagged tab (its radio button keeps the focus)
  // ] and x did nothing at all. Shared with static/app.js (loaded after this file).
  const TEXT_TYPES = /^(text|search|email|number|password|url|tel|date|datetime-local|month|week|time)$/;
  function isTyping(t) {
    if (!t || !t.tagName) return false;
    if (t.isContentEditable || t.tagName === "TEXTAREA" || t.tagName === "SELECT") return true;
    return t.tagName === "INPUT" && TEXT_TYPES.test((t.getAttribute("type") || "text").toLowerCase());
  }
  window.trajectoryReview = { isTyping: isTyping };

  function scrollToExchange(ex, focus) {
    const el = ex && document.getElementById("ex-" + ex);
    if (!el) return;
    el.scrollIntoView({ block: "start", behavior: "instant" });
    document.querySelectorAll(".tr-exchange.tr-current").forEach((e) => e.classList.remove("tr-current"));
    el.classList.add("tr-current");
    if (focus) el.focus({ preventScroll: true });
  }

  // The selected row: the conversation, or in the answer views the answer itself. The
  // list is not drawn again for a selection (a page query per click for every reviewer).
  function markRows() {
    document.querySelectorAll(".tr-row").forEach((r) => {
      const ex = r.getAttribute("data-exchange");
      const on = r.getAttribute("data-conversation") === state.conversation &&
        (!ex || !state.exchange || Number(ex) === state.exchange);
      r.classList.toggle("tr-row-selected", on);
      if (on) r.setAttribute("aria-current", "true"); else r.removeAttribute("aria-current");
    });
    const sel = document.querySelector(".tr-row-selected");
    if (sel) sel.scrollIntoView({ block: "nearest" });
  }

  // Highlight and scroll to the current exchange once its transcript is in the page
  // (the selection and the transcript can arrive in either order), and give it the
  // focus when that is due (focusDue).
  function applyCurrent() {
    const conv = document.querySelector(".tr-conversation");
    if (!conv || conv.getAttribute("data-conversation") !== state.conversation) return;
    if (state.exchange) { scrollToExchange(state.exchange, focusDue); focusDue = false; }
    else {
      document.querySelectorAll(".tr-exchange.tr-current").forEach((e) => e.classList.remove("tr-current"));
      const main = document.querySelector(".tr-main > .main");
      if (main && !conv.dataset.trShown) main.scrollTop = 0;
    }
    conv.dataset.trShown = "1";
  }
  // The answer opened takes the focus once drawn when the server says so (a key opened
  // it, the queue moving on included: the reviewer reads and Tabs on from it; a link to
  // another answer of the open conversation); a row clicked, or a view chosen, leaves
  // the focus where it was: choosing the Answers view with the arrow keys opened its
  // first answer, and the focus went with it, out of the views the next arrow was for.
  // The same selection said again (the address changed with a colleague's note) moves
  // nothing: it took the focus out of the note being written.
  let focusDue = false;
  document.addEventListener("tr:selection", function (ev) {
    const conversation = ev.detail.conversation !== state.conversation;
    const moved = conversation || ev.detail.exchange !== state.exchange;
    state.conversation = ev.detail.conversation;
    state.exchange = ev.detail.exchange;
    markRows();
    if (!moved) return;
    focusDue = ev.detail.focus;
    applyCurrent();
  });

  // / and m move the focus at once (the next keystroke must land in the box): / to the
  // search, m to the note the server marked on the current answer (data-note-for: the
  // flag c / x would judge), else the review note. Pressed before that answer is in the
  // page, m waits for it, holding what is typed meanwhile (sent as keys, the letters of
  // "checked" would have judged a flag).
  let held = null;
  function answerShown() {
    const conv = document.querySelector(".tr-conversation");
    return !!conv && conv.getAttribute("data-conversation") === state.conversation &&
      !!document.getElementById("ex-" + (state.exchange || 1));
  }
  function focusNote() {
    const ex = document.getElementById("ex-" + (state.exchange || 1));
    const note = document.getElementById((ex && ex.dataset.noteFor) || ids.note);
    if (note) { note.focus(); note.value += held ? held.join("") : ""; }
    held = null;
  }
  document.addEventListener("keydown", function (ev) {
    if (ev.metaKey || ev.ctrlKey || ev.altKey) return;
    const t = ev.target;
    const typing = isTyping(t);
    if (ev.key === "Escape") {
      document.querySelectorAll("[data-tip]").forEach(function (el) {
        const tip = bootstrap.Tooltip.getInstance(el);
        if (tip) tip.hide();
      });
      if (typing) t.blur();
      return;
    }
    if (held && ev.key.length === 1) { ev.preventDefault(); ev.stopPropagation(); held.push(ev.key); return; }
    if (typing || (ev.key !== "/" && ev.key !== "m")) return;
    ev.preventDefault();
    ev.stopPropagation();
    if (ev.key === "/") {
      const q = document.getElementById(ids.search);
      if (q) { q.focus(); q.select(); }
    } else if (answerShown()) focusNote();
    else held = [];
  }, true);  // before static/app.js: a held key is never sent

  // The focus in the transcript (the answer opened by a key, a verdict note being
  // written) survives the transcript being drawn again (the verdict just given, a
  // colleague's note): the new element gets it, and a note its text, before the next key
  // (left on the page, the rest of a note was sent as keys: "checked" judged a flag).
  // Only the reviewer ends it (a click elsewhere, Esc): the page's own redraw blurs the
  // element a moment before it replaces it.
  let focused = null;
  let focusedIn = null;  // its conversation: an element of another one has the same id
  document.addEventListener("focusin", function (ev) {
    const transcript = document.getElementById(ids.transcript);
    focused = ev.target.id && transcript && transcript.contains(ev.target) ? ev.target : null;
    focusedIn = state.conversation;
  });
  document.addEventListener("mousedown", function (ev) { if (ev.target !== focused) focused = null; }, true);
  document.addEventListener("keydown", function (ev) { if (ev.key === "Escape") focused = null; }, true);
  function keepFocus() {
    if (!focused || focused.isConnected) return;
    const conv = document.querySelector(".tr-conversation");
    if (!conv || conv.getAttribute("data-conversation") !== focusedIn) { focused = null; return; }
    const now = document.getElementById(focused.id);
    if (now && focused.classList.contains("tr-verdict-note")) now.value = focused.value;
    if (now) now.focus({ preventScroll: true });
    focused = now;
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
  watch(ids.transcript, function () {
    keepFocus();
    applyCurrent();
    if (held && answerShown()) focusNote();
    const conv = document.querySelector(".tr-conversation");
    if (!conv || !state.exchange) return;
    settling = state.exchange;
    new ResizeObserver(function (_entries, observer) {
      if (settling === null || settling !== state.exchange) { observer.disconnect(); return; }
      scrollToExchange(settling, false);
    }).observe(conv);
  });
  ["wheel", "touchstart", "mousedown", "keydown"].forEach(function (name) {
    document.addEventListener(name, function () { settling = null; }, { passive: true, capture: true });
  });
  watch(ids.rows, markRows);

  // Copy a link to an answer: the clipboard needs a secure context (https, or loopback);
  // else the link is offered to copy by hand.
  document.addEventListener("click", function (ev) {
    const copy = ev.target.closest(".tr-btn-copy");
    if (!copy) return;
    const url = new URL(window.location.href);
    url.searchParams.set("exchange", copy.getAttribute("data-exchange"));
    copy.setAttribute("data-url", url.toString());
    if (!navigator.clipboard || !window.isSecureContext) { window.prompt("Link to this answer", url); return; }
    navigator.clipboard.writeText(url.toString()).finally(function () {
      copy.textContent = "Copied";
      setTimeout(function () { copy.textContent = "Copy link"; }, 1500);
    });
  });

  // A dialog closed (the help, the warnings: Shiny's modals) hands the focus back to where
  // it was when it opened: left on the body, a keyboard user started over from the top
  // of the page (WCAG 2.4.3).
  let modalFrom = null;
  jQuery(document).on("show.bs.modal", function () { modalFrom = document.activeElement; });
  jQuery(document).on("hidden.bs.modal", function () {
    if (modalFrom && modalFrom.isConnected) modalFrom.focus();
    modalFrom = null;
  });

  // Tooltips for [data-tip] (the pills: the display table's body): Bootstrap's own,
  // delegated from the body (rows come and go), placed on the body so the scrolling list
  // never clips them; the text is set as text, never as HTML. Escape dismisses them.
  new bootstrap.Tooltip(document.body, {
    selector: "[data-tip]", html: false, customClass: "tr-tip", container: "body",
    trigger: "hover focus", title: function (el) { return (el || this).getAttribute("data-tip"); },
  });

  jQuery(document).on("shiny:sessioninitialized", function () {
    // bslib's sidebar resize handles are focusable separators, which must say their value;
    // bslib sets it only once one is dragged (a WCAG 4.1.2 failure until then). Its own
    // bounds: 150 px, the window less 50 px.
    document.querySelectorAll(".bslib-sidebar-resize-handle[role='separator']").forEach(function (h) {
      if (h.hasAttribute("aria-valuenow")) return;
      const sidebar = h.parentElement && h.parentElement.querySelector(":scope > .sidebar");
      h.setAttribute("aria-valuemin", "150");
      h.setAttribute("aria-valuemax", String(window.innerWidth - 50));
      h.setAttribute("aria-valuenow", String(Math.round(sidebar ? sidebar.getBoundingClientRect().width : 250)));
    });
    // a narrow window (a zoomed laptop) opens with the review pane closed: open, both
    // sidebars left the transcript too narrow to read (its toggle opens it)
    if (window.innerWidth < 768 && window.innerWidth >= 576) {
      const toggle = document.querySelector(".tr-right ~ .collapse-toggle");
      if (toggle && toggle.getAttribute("aria-expanded") === "true") toggle.click();
    }
  });
})();
