// flower ui: the live parts of its pages (server-sent events). No library.
(function () {
  "use strict";
  var status = document.getElementById("live");
  // the words come from the page, in its language (data-* of #live)
  var said = function (name, fallback) {
    return (status && status.getAttribute("data-" + name)) || fallback;
  };
  var put = function (id, html) {
    var el = document.getElementById(id);
    if (el && html !== undefined) el.innerHTML = html;
  };
  // follow the events ``name`` of the stream that element ``id`` names in data-events;
  // ``show`` takes each event's data and returns the status line to show
  var follow = function (id, name, show) {
    var box = document.getElementById(id);
    var url = box && box.getAttribute("data-events");
    if (!url || !window.EventSource) return;
    var reconnecting = false;
    var source = new EventSource(url);
    source.addEventListener(name, function (event) {
      var line = show(box, JSON.parse(event.data));
      if (status) status.textContent = line;
    });
    source.onerror = function () {
      reconnecting = true;
      if (status) status.textContent = said("reconnecting", "live: reconnecting…");
    };
    source.onopen = function () {
      if (status && reconnecting) status.textContent = said("live", "live");
      reconnecting = false;
    };
  };

  // a session page: its new entries are added at the end
  follow("conversation", "entries", function (box, data) {
    box.insertAdjacentHTML("beforeend", data.html);
    return said("entries", "live: {count} entries").replace("{count}", data.count);
  });

  // the fleet page: the tasks, the totals and the budget chart are replaced as the
  // server renders them anew
  follow("fleet", "fleet", function (box, data) {
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
    var time = new Date().toTimeString().slice(0, 8);
    return said("updated", "live: updated {time}").replace("{time}", time);
  });
})();
