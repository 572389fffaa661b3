// gotchas: progressive enhancement. Every page works without this file.
(function () {
  "use strict";
  var root = document.documentElement;
  var body = document.body;
  var base = body ? body.getAttribute("data-root") || "" : "";

  // Theme: follows the system unless the reader chose; the choice is remembered.
  function storedTheme() { try { return localStorage.getItem("gotchas-theme"); } catch (e) { return null; } }
  function store(theme) { try { localStorage.setItem("gotchas-theme", theme); } catch (e) { /* private mode */ } }
  function systemDark() { return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches; }
  function currentTheme() { return root.getAttribute("data-theme") || (systemDark() ? "dark" : "light"); }
  var saved = storedTheme();
  if (saved === "dark" || saved === "light") root.setAttribute("data-theme", saved);
  var toggle = document.getElementById("theme-toggle");
  if (toggle) {
    var sync = function () {
      var dark = currentTheme() === "dark";
      toggle.setAttribute("aria-pressed", dark ? "true" : "false");
    };
    toggle.hidden = false;
    sync();
    toggle.addEventListener("click", function () {
      var next = currentTheme() === "dark" ? "light" : "dark";
      root.setAttribute("data-theme", next);
      store(next);
      sync();
    });
  }

  // Live filters on the list of entries.
  var filters = document.getElementById("filters");
  var table = document.getElementById("entries-table");
  if (filters && table) {
    filters.hidden = false;
    var rows = Array.prototype.slice.call(table.tBodies[0].rows);
    var count = document.getElementById("filter-count");
    var value = function (id) { var el = document.getElementById(id); return el ? el.value : ""; };
    var apply = function () {
      var engine = value("filter-engine"), scheme = value("filter-scheme"), concept = value("filter-concept"), status = value("filter-status");
      var shown = 0;
      rows.forEach(function (row) {
        var engines = (row.getAttribute("data-engines") || "").split(" ");
        var concepts = (row.getAttribute("data-concepts") || "").split(" ");
        var statuses = (row.getAttribute("data-status") || "").split(" ");
        var ok = (!engine || engines.indexOf(engine) >= 0) &&
          (!scheme || row.getAttribute("data-scheme") === scheme) &&
          (!concept || concepts.indexOf(concept) >= 0) &&
          (!status || statuses.some(function (s) {
            var parts = s.split(":");
            return parts[1] === status && (!engine || parts[0] === engine);
          }));
        row.hidden = !ok;
        if (ok) shown++;
      });
      if (count) count.textContent = shown + " of " + rows.length + " entries shown";
    };
    filters.addEventListener("change", apply);
    filters.addEventListener("submit", function (event) { event.preventDefault(); });
    apply();
  }

  // Version picker: an engine, one of its releases, and off to that release's page.
  var picker = document.getElementById("version-picker");
  var pickerData = document.getElementById("picker-data");
  if (picker && pickerData) {
    var engines = JSON.parse(pickerData.textContent || "[]");
    var engineSelect = document.getElementById("picker-engine");
    var versionSelect = document.getElementById("picker-version");
    engines.forEach(function (item) {
      var option = document.createElement("option");
      option.value = item.engine;
      option.textContent = item.name;
      engineSelect.appendChild(option);
    });
    var fillVersions = function () {
      var item = engines.filter(function (e) { return e.engine === engineSelect.value; })[0];
      versionSelect.textContent = "";
      (item ? item.versions : []).forEach(function (v) {
        var option = document.createElement("option");
        option.value = v;
        option.textContent = v;
        versionSelect.appendChild(option);
      });
    };
    engineSelect.addEventListener("change", fillVersions);
    fillVersions();
    picker.addEventListener("submit", function (event) {
      event.preventDefault();
      if (!engineSelect.value || !versionSelect.value) return;
      window.location.href = base + "engines/" + encodeURIComponent(engineSelect.value) + "/" +
        encodeURIComponent(versionSelect.value) + "/";
    });
    picker.hidden = false;
  }

  // Search with MiniSearch over titles, symptoms, flags and identifiers, each findable as written.
  var form = document.getElementById("search-form");
  if (form && window.MiniSearch) {
    var input = document.getElementById("search-input");
    var status = document.getElementById("search-status");
    var list = document.getElementById("search-results");
    var tokenize = function (text) {
      var out = [];
      (text || "").split(/\s+/).forEach(function (raw) {
        var word = raw.replace(/^[("'\[{,;.]+|[)"'\]},;.:]+$/g, "");
        if (!word) return;
        out.push(word);
        var bare = word.replace(/^-+/, "");
        if (bare !== word) out.push(bare);
        bare.split(/[-_:./=]+/).forEach(function (part) { if (part && part !== bare) out.push(part); });
      });
      return out;
    };
    var index = null;
    var load = function () {
      if (index) return Promise.resolve(index);
      return fetch(base + "search/documents.json").then(function (r) { return r.json(); }).then(function (docs) {
        index = new window.MiniSearch({
          fields: ["title", "identifiers", "symptom", "concepts", "scheme", "engines", "text"],
          storeFields: ["title", "url", "symptom", "engines"],
          tokenize: tokenize,
          processTerm: function (term) { return term.toLowerCase(); },
          searchOptions: { boost: { title: 3, identifiers: 3, symptom: 2 }, prefix: true, combineWith: "OR" }
        });
        index.addAll(docs);
        return index;
      });
    };
    var latest = 0;
    var run = function () {
      var query = input.value.trim();
      var ticket = ++latest;
      if (!query) { list.textContent = ""; status.textContent = ""; return; }
      load().then(function (idx) {
        if (ticket !== latest) return;  // a newer query is under way; its results win
        list.textContent = "";
        var results = idx.search(query);
        status.textContent = results.length + (results.length === 1 ? " result" : " results") + " for \u201c" + query + "\u201d";
        results.slice(0, 50).forEach(function (hit) {
          var item = document.createElement("li");
          var link = document.createElement("a");
          link.href = base + hit.url;
          link.textContent = hit.title;
          item.appendChild(link);
          var text = document.createElement("p");
          text.textContent = (hit.symptom || "").slice(0, 220);
          item.appendChild(text);
          list.appendChild(item);
        });
      });
    };
    form.addEventListener("submit", function (event) { event.preventDefault(); run(); });
    input.addEventListener("input", run);
    var initial = new URLSearchParams(window.location.search).get("q");
    if (initial) { input.value = initial; run(); }
  }
})();
