// gotchas: the filters of an engine's matrix (engines/<engine>/matrix/). Without this file the whole table shows.
(function () {
  "use strict";
  var byId = function (id) { return document.getElementById(id); };
  var form = byId("matrix-filters");
  var table = byId("matrix");
  var severity = byId("matrix-severity");
  var scheme = byId("matrix-scheme");
  if (!form || !table || !table.tBodies.length || !severity || !scheme) return;
  var rows = Array.prototype.slice.call(table.tBodies[0].rows);
  var count = byId("matrix-count");
  // Each filter by its name in the address (?severity=outage&area=ops), so that a filtered view can be linked to.
  var filters = [[severity, "severity"], [scheme, "area"]];

  function choose(select, value) {
    var known = Array.prototype.some.call(select.options, function (o) { return o.value === value; });
    if (value && known) select.value = value;
  }

  function apply() {
    var s = severity.value, a = scheme.value, shown = 0;
    rows.forEach(function (row) {
      var ok = (!s || row.getAttribute("data-severity") === s) && (!a || row.getAttribute("data-scheme") === a);
      row.hidden = !ok;
      if (ok) shown++;
    });
    if (count) count.textContent = shown + " of " + rows.length + " entries shown";
  }

  function remember() {
    if (!window.history || !window.URLSearchParams) return;
    var params = new URLSearchParams(window.location.search);
    filters.forEach(function (f) { if (f[0].value) params.set(f[1], f[0].value); else params.delete(f[1]); });
    var query = params.toString();
    var address = window.location.pathname + (query ? "?" + query : "") + window.location.hash;
    try { window.history.replaceState(null, "", address); } catch (e) { /* a page opened from a file */ }
  }

  if (window.URLSearchParams) {
    var given = new URLSearchParams(window.location.search);
    filters.forEach(function (f) { choose(f[0], given.get(f[1]) || ""); });
  }
  form.hidden = false;
  form.addEventListener("change", function () { apply(); remember(); });
  form.addEventListener("submit", function (event) { event.preventDefault(); });
  apply();
})();
