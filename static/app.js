// trajectory-review: the messages between the page and the server, and nothing else. The
// server owns all state and decides what every click and key does; this file turns
// clicks, keys and the address bar into Shiny inputs, and the server's messages into the
// address bar, the filter counts and a `tr:selection` event (static/view.js shows it).
(function () {
  "use strict";
  // The ids of the inputs and outputs named here, resolved by the server (module
  // namespaces included) into data- attributes of the page (app/page.py).
  const ids = document.querySelector(".tr-app").dataset;
  let conversation = null;

  function send(name, value) {
    if (window.Shiny && Shiny.setInputValue) {
      Shiny.setInputValue(name, value, { priority: "event" });
    }
  }

  document.addEventListener("click", function (ev) {
    // Links to conversations: plain clicks navigate in place, modified clicks open tabs.
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
    const anchor = ev.target.closest("a.tr-ex-anchor");
    if (anchor && !ev.metaKey && !ev.ctrlKey) {
      ev.preventDefault();
      const ex = Number(anchor.closest(".tr-exchange").getAttribute("data-exchange"));
      send(ids.nav, { conversation: conversation, exchange: ex, history: "push" });
    }
  });

  // A menu the server drew to send a choice (the review pane's scope): its change, which
  // only a reviewer makes (a menu drawn anew fires none), is sent as { value }.
  document.addEventListener("change", function (ev) {
    const menu = ev.target.closest("select[data-choose]");
    if (menu) send(menu.getAttribute("data-choose"), { value: menu.value });
  });

  // Keys: the server decides what each does (app/keys.py); the page sends the ones it
  // lists (data-keys), with the text typed in the verdict notes of the answer on screen,
  // which the server cannot see. static/view.js keeps the focus moves (/ and m) and says
  // what is text (a key typed into a box is the box's).
  document.addEventListener("keydown", function (ev) {
    if (ev.metaKey || ev.ctrlKey || ev.altKey || ev.key.length !== 1) return;
    if (window.trajectoryReview.isTyping(ev.target) || ids.keys.indexOf(ev.key) < 0) return;
    ev.preventDefault();
    const conv = document.querySelector(".tr-conversation");
    const notes = {};
    document.querySelectorAll(".tr-verdict-note").forEach(function (n) { if (n.value) notes[n.id] = n.value; });
    send(ids.key, { key: ev.key, conversation: conv ? conv.getAttribute("data-conversation") : null, notes: notes });
  });

  // Server -> address bar (pushed only when the location really changes), and the
  // selection to the page.
  function onUrl(msg) {
    conversation = msg.conversation;
    if (msg.query !== window.location.search) {
      const url = window.location.pathname + msg.query + window.location.hash;
      if (msg.mode === "push") history.pushState({ tr: true }, "", url);
      else history.replaceState({ tr: true }, "", url);
    }
    document.dispatchEvent(new CustomEvent("tr:selection", {
      detail: { conversation: msg.conversation, exchange: msg.exchange, focus: !!msg.focus },
    }));
  }
  window.addEventListener("popstate", function () { send(ids.urlState, { search: window.location.search }); });

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
  // The name form is a form so Enter saves it: it never submits to the server.
  document.addEventListener("submit", function (ev) {
    if (ev.target.closest(".tr-who")) ev.preventDefault();
  });

  // Controls that belong to one view (the queue's "Show reviewed", its flag kind) show in
  // that view only: the view input is mirrored into the page's data-view attribute and the
  // stylesheet hides the rest (a conditional panel would need eval, which the CSP forbids).
  jQuery(document).on("shiny:inputchanged", function (ev) {
    if (ev.name === ids.viewInput) document.querySelector(".tr-app").dataset.view = ev.value || "";
  });

  function start() {
    // The page was rendered with this URL's filters: the server only needs the selection.
    send(ids.urlState, { search: window.location.search, initial: true });
    let name = null;
    try { name = window.localStorage.getItem(NAME_KEY); } catch (e) { name = null; }
    if (name) send("reviewer_name", name);
  }

  // Loaded as an HTML dependency after Shiny's own scripts, before Shiny connects:
  // handlers are registered here and now; the first input waits for the session (an
  // input sent before Shiny's init message is a protocol error on the server).
  Shiny.addCustomMessageHandler("tr-url", onUrl);
  Shiny.addCustomMessageHandler("tr-counts", onCounts);
  Shiny.addCustomMessageHandler("tr-name", onName);
  jQuery(document).on("shiny:sessioninitialized", start);
})();
