// Live updates for the dashboard: every few seconds the page asks for its
// live part (the same address with ?fragment=live) and puts it in place
// when it changed. It waits while focus is inside that part, so a form
// being filled or a button being reached is never replaced under the
// user. Without this script every page still works: reload to refresh.
(function () {
  "use strict";
  var focus = document.querySelector("[data-focus]");
  if (focus) { focus.focus(); }
  var live = document.getElementById("live");
  if (!live || !window.fetch) { return; }
  var every = parseInt(live.getAttribute("data-poll"), 10) || 2000;
  var status = document.getElementById("live-status");
  // The version of the live part shown: a digest the server computes.
  var shown = live.getAttribute("data-version");
  function address() {
    var u = new URL(window.location.href);
    u.searchParams.set("fragment", "live");
    return u.toString();
  }
  function busy() {
    var a = document.activeElement;
    return a && a !== document.body && live.contains(a);
  }
  function tick() {
    if (busy()) { window.setTimeout(tick, every); return; }
    window.fetch(address(), { credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        if (!r.ok) { throw new Error("the server answered " + r.status); }
        return r.text().then(function (html) {
          var version = r.headers.get("X-Live-Version");
          if (version !== shown && !busy()) {
            live.innerHTML = html;
            shown = version;
            live.setAttribute("data-version", version);
          }
          window.setTimeout(tick, every);
        });
      })
      .catch(function (e) {
        if (status) { status.textContent = "Live updates stopped (" + e.message + "): reload the page."; }
      });
  }
  window.setTimeout(tick, every);
})();
