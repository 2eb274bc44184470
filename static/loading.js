// The progress page: its server says when the data is ready (app/page.py,
// loading_server), and the page opens the app by loading the same URL again, deep link
// included. Loaded after Shiny's own scripts, before Shiny connects.
(function () {
  "use strict";
  // Shiny takes only handlers of one argument (it throws on any other).
  Shiny.addCustomMessageHandler("tr-ready", function (_message) {
    window.location.reload();
  });
})();
