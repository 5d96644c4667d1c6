// kubecrew dashboard: the pages read without this file. It shows times in
// the browser's zone and, when the core's event stream
// (/api/v1/events) says a decision or an investigation changed, fetches
// the page again and swaps its main part in place: no reload.
(function () {
  "use strict";
  function localise(root) {
    root.querySelectorAll("time[datetime]").forEach(function (el) {
      var d = new Date(el.getAttribute("datetime"));
      if (isNaN(d)) { return; }
      if (!el.title) { el.title = el.textContent; }
      el.textContent = d.toLocaleString();
    });
  }
  var live = document.getElementById("live");
  var pending = null;
  function busyTyping() {
    var a = document.activeElement;
    return a && a.form && document.getElementById("main").contains(a);
  }
  function refresh() {
    pending = null;
    if (busyTyping()) { return; }
    fetch(location.href, { headers: { Accept: "text/html" }, credentials: "same-origin" })
      .then(function (r) { if (!r.ok) { throw new Error(r.status); } return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("main");
        var main = document.getElementById("main");
        if (!fresh || !main) { return; }
        main.innerHTML = fresh.innerHTML;
        localise(main);
        if (live) { live.textContent = "live · updated " + new Date().toLocaleTimeString(); }
        document.body.setAttribute("data-updates", String(Number(document.body.getAttribute("data-updates") || 0) + 1));
      })
      .catch(function (e) { if (live) { live.textContent = "live · update failed (" + e.message + ")"; } });
  }
  function schedule() { if (!pending) { pending = setTimeout(refresh, 250); } }
  localise(document);
  var page = document.body.getAttribute("data-page");
  if (!window.EventSource || !page) { return; }
  var es = new EventSource("/api/v1/events");
  es.addEventListener("open", function () {
    document.body.setAttribute("data-live", "1");
    if (live) { live.textContent = "live"; }
  });
  es.addEventListener("decision", schedule);
  es.addEventListener("investigation", schedule);
  es.addEventListener("error", function () {
    document.body.removeAttribute("data-live");
    if (live) { live.textContent = "live updates paused (reconnecting)"; }
  });
})();
