// The progress page: its server says when the data is ready (app/page.py,
// loading_server), and the page opens the app by loading the same URL again, deep link
// included. Loaded after Shiny's own scripts, before Shiny connects.
(function () {
  "use strict";
  // Shiny takes only handlers of one argument (it throws on any other).
  Shiny.addCustomMessageHandler("tr-ready", function (_message) {
    window.location.reload();
  });
  // Should the live link be down (never up, or lost), the same URL is loaded again after
  // a while: a Shiny page without its link shows nothing else. Only then: a page that
  // reloads itself on a timer while it works (it was a <meta> refresh) fails WCAG 2.2.1.
  const holder = document.querySelector("[data-fallback-reload]");
  const wait = 1000 * Number(holder ? holder.dataset.fallbackReload : 30);
  let timer = setTimeout(function () { window.location.reload(); }, wait);
  jQuery(document).on("shiny:connected", function () { clearTimeout(timer); });
  jQuery(document).on("shiny:disconnected", function () {
    clearTimeout(timer);
    timer = setTimeout(function () { window.location.reload(); }, wait);
  });
})();
