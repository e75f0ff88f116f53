// flower ui: the live tail of a session page (server-sent events). No library.
(function () {
  "use strict";
  var box = document.getElementById("conversation");
  var url = box && box.getAttribute("data-events");
  if (!url || !window.EventSource) return;
  var status = document.getElementById("live");
  var source = new EventSource(url);
  source.addEventListener("entries", function (event) {
    var data = JSON.parse(event.data);
    box.insertAdjacentHTML("beforeend", data.html);
    if (status) status.textContent = "live: " + data.count + " entries";
  });
  source.onerror = function () {
    if (status) status.textContent = "live: reconnecting…";
  };
  source.onopen = function () {
    if (status && status.textContent.indexOf("reconnecting") >= 0) status.textContent = "live";
  };
})();
