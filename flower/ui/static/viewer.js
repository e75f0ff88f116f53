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

// flower ui: the fleet page, live (server-sent events): the tasks, the totals and the
// budget chart are replaced as the server renders them anew.
(function () {
  "use strict";
  var box = document.getElementById("fleet");
  var url = box && box.getAttribute("data-events");
  if (!url || !window.EventSource) return;
  var status = document.getElementById("live");
  var said = function (name, fallback) {
    return (status && status.getAttribute("data-" + name)) || fallback;
  };
  var put = function (id, html) {
    var el = document.getElementById(id);
    if (el && html !== undefined) el.innerHTML = html;
  };
  var reconnecting = false;
  var source = new EventSource(url);
  source.addEventListener("fleet", function (event) {
    var data = JSON.parse(event.data);
    var error = document.getElementById("fleet-error");
    if (error) {
      error.textContent = data.error || "";
      error.hidden = !data.error;
    }
    if (!data.error) {
      put("fleet-tasks", data.tasks);
      put("fleet-summary", data.summary);
      put("budget-chart", data.chart);
    }
    if (status) {
      var time = new Date().toTimeString().slice(0, 8);
      status.textContent = said("updated", "live: updated {time}").replace("{time}", time);
    }
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
