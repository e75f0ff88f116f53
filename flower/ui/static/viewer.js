// flower ui: the live tail of a session page (server-sent events). No library.
(function () {
  "use strict";
  var box = document.getElementById("conversation");
  var url = box && box.getAttribute("data-events");
  if (!url || !window.EventSource) return;
  var status = document.getElementById("live");
  // the words come from the page, in its language (data-* of #live)
  var said = function (name, fallback) {
    return (status && status.getAttribute("data-" + name)) || fallback;
  };
  var reconnecting = false;
  var source = new EventSource(url);
  source.addEventListener("entries", function (event) {
    var data = JSON.parse(event.data);
    box.insertAdjacentHTML("beforeend", data.html);
    if (status) status.textContent = said("entries", "live: {count} entries").replace("{count}", data.count);
  });
  source.onerror = function () {
    reconnecting = true;
    if (status) status.textContent = said("reconnecting", "live: reconnecting…");
  };
  source.onopen = function () {
    if (status && reconnecting) status.textContent = said("live", "live");
    reconnecting = false;
  };
})();
