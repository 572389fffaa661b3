// gotchas: progressive enhancement. Every page works without this file.
(function () {
  "use strict";
  var root = document.documentElement;
  var body = document.body;
  var base = body ? body.getAttribute("data-root") || "" : "";
  var byId = function (id) { return document.getElementById(id); };

  // Theme: follows the system unless the reader chose; the choice is remembered. The button says what it does.
  function storedTheme() { try { return localStorage.getItem("gotchas-theme"); } catch (e) { return null; } }
  function store(theme) { try { localStorage.setItem("gotchas-theme", theme); } catch (e) { /* private mode */ } }
  function systemDark() { return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches; }
  function currentTheme() { return root.getAttribute("data-theme") || (systemDark() ? "dark" : "light"); }
  var saved = storedTheme();
  if (saved === "dark" || saved === "light") root.setAttribute("data-theme", saved);
  var toggle = byId("theme-toggle");
  if (toggle) {
    var sync = function () { toggle.textContent = currentTheme() === "dark" ? "Light theme" : "Dark theme"; };
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
  var filters = byId("filters");
  var table = byId("entries-table");
  if (filters && table) {
    filters.hidden = false;
    var rows = Array.prototype.slice.call(table.tBodies[0].rows);
    var count = byId("filter-count");
    var value = function (id) { var el = byId(id); return el ? el.value : ""; };
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

  // A release as people type it: "vLLM 0.10.0", "vllm==0.10.0", "v0.10.0", or "0.10.0" (every engine that has it).
  var releaseData = byId("release-data");
  var releaseEngines = releaseData ? JSON.parse(releaseData.textContent || "[]") : [];
  var findRelease = function (text) {
    var words = text.toLowerCase().replace(/==|=/g, " ").trim().split(/\s+/);
    var version = (words.pop() || "").replace(/^v(?=\d)/, "");
    var name = words.join(" ");
    var found = [];
    releaseEngines.forEach(function (e) {
      if (name && name !== e.key.toLowerCase() && name !== e.name.toLowerCase()) return;
      if (e.versions.indexOf(version) >= 0) found.push(e);
    });
    return { found: found, version: version };
  };
  var releaseUrl = function (engine, version) {
    return base + "engines/" + encodeURIComponent(engine.key) + "/" + encodeURIComponent(version) + "/";
  };

  // Release form: "vLLM 0.10.0" (or "vllm==0.10.0", or "0.10.0" when one engine has it), then Enter.
  var releaseForm = byId("release-form");
  if (releaseForm && releaseData) {
    var input = byId("release-input");
    var error = byId("release-error");
    var find = findRelease;
    releaseForm.addEventListener("submit", function (event) {
      event.preventDefault();
      var result = find(input.value);
      if (result.found.length === 1) {
        window.location.href = releaseUrl(result.found[0], result.version);
      } else if (result.found.length > 1) {
        error.textContent = result.found.map(function (e) { return e.name; }).join(" and ") + " both have " + result.version + ": type the engine too, e.g. \u201c" + result.found[0].name + " " + result.version + "\u201d.";
      } else {
        error.textContent = "No verified release \u201c" + input.value + "\u201d: pick one from the list below.";
      }
    });
    releaseForm.hidden = false;
  }

  // Search: every word must occur; an identifier as written, or the whole phrase, ranks first.
  var form = byId("search-form");
  if (form && window.MiniSearch) {
    var searchInput = byId("search-input");
    var status = byId("search-status");
    var list = byId("search-results");
    var strip = function (raw) { return raw.replace(/^[("'\[{,;.`]+|[)"'\]},;.:`]+$/g, ""); };
    var tokenize = function (text) {
      var out = [];
      (text || "").split(/\s+/).forEach(function (raw) {
        var word = strip(raw);
        if (!word) return;
        out.push(word);
        var bare = word.replace(/^-+/, "");
        if (bare !== word) out.push(bare);
        bare.split(/[-_:./=,()\[\]]+/).forEach(function (part) { if (part && part !== bare) out.push(part); });
        // what follows a prefix is a word too: `vllm:num_preemptions` is found by `num_preemptions`,
        // `Scheduler.schedule` by `schedule`
        for (var at = 0; at < bare.length; at++) {
          if (":./".indexOf(bare[at]) >= 0 && at + 1 < bare.length) out.push(bare.slice(at + 1));
        }
      });
      return out;
    };
    var queryWords = function (text) {
      return (text || "").split(/\s+/).map(strip).filter(function (w) { return w; });
    };
    var count = function (haystack, needle) {
      if (!needle) return 0;
      var n = 0, at = haystack.indexOf(needle);
      while (at >= 0 && n < 50) { n++; at = haystack.indexOf(needle, at + needle.length); }
      return n;
    };
    // The first query reads search/head.json (titles, the start of each symptom, identifiers: verifier/site/search.py
    // `head`); the whole documents follow, and the query runs again on them.
    var docs = null, index = null, whole = false, wholeLoading = null;
    var indexOf = function (data) {
        docs = {};
        data.forEach(function (d) {
          docs[d.id] = d;
          d.url = d.url || "entries/" + encodeURIComponent(d.id) + "/";
          d.lower = { title: d.title.toLowerCase(), symptom: d.symptom.toLowerCase(), text: (d.text || "").toLowerCase(),
                      code: (d.code || "").toLowerCase() };
          d.idents = d.identifiers.toLowerCase().split(" ");
        });
        index = new window.MiniSearch({
          fields: ["title", "identifiers", "symptom", "concepts", "scheme", "engines", "text", "code"],
          storeFields: ["title", "url"],
          tokenize: tokenize,
          processTerm: function (term) { return term.toLowerCase(); },
          searchOptions: {
            boost: { title: 3, identifiers: 3, symptom: 2 }, combineWith: "AND",
            prefix: function (term) { return term.length > 2; },
            tokenize: queryWords
          }
        });
        index.addAll(data);
        return index;
    };
    var load = function () {
      if (index) return Promise.resolve(index);
      return fetch(base + "search/head.json").then(function (r) { return r.json(); }).then(indexOf);
    };
    var loadWhole = function () {
      if (!wholeLoading) {
        wholeLoading = fetch(base + "search/documents.json").then(function (r) { return r.json(); })
          .then(function (data) { indexOf(data); whole = true; });
      }
      return wholeLoading;
    };
    // A window of the text around the first match, cut at spaces, with every match marked.
    var snippet = function (doc, phrases, words) {
      var fields = ["symptom", "text"];
      var at = -1, field = "symptom";
      for (var i = 0; i < fields.length && at < 0; i++) {
        field = fields[i];
        for (var k = 0; k < phrases.length && at < 0; k++) at = doc.lower[field].indexOf(phrases[k]);
      }
      if (at < 0) {
        for (i = 0; i < fields.length && at < 0; i++) {
          field = fields[i];
          for (var j = 0; j < words.length && at < 0; j++) at = doc.lower[field].indexOf(words[j]);
        }
      }
      var text = doc[field] || doc.symptom;
      if (at < 0) { field = "symptom"; text = doc.symptom; at = 0; }
      var start = Math.max(0, at - 80), end = Math.min(text.length, at + 160);
      if (start > 0) { var space = text.indexOf(" ", start); start = space >= 0 && space < at ? space + 1 : start; }
      if (end < text.length) { var back = text.lastIndexOf(" ", end); end = back > at ? back : end; }
      var piece = text.slice(start, end);
      var p = document.createElement("p");
      p.className = "search-snippet";
      if (start > 0) p.appendChild(document.createTextNode("\u2026 "));
      var needles = phrases.concat(words).filter(function (w) { return w; });
      var lower = piece.toLowerCase(), pos = 0;
      while (pos < piece.length) {
        var best = -1, len = 0;
        needles.forEach(function (n) { var k = lower.indexOf(n, pos); if (k >= 0 && (best < 0 || k < best || (k === best && n.length > len))) { best = k; len = n.length; } });
        if (best < 0) break;
        p.appendChild(document.createTextNode(piece.slice(pos, best)));
        var mark = document.createElement("mark");
        mark.textContent = piece.slice(best, best + len);
        p.appendChild(mark);
        pos = best + len;
      }
      p.appendChild(document.createTextNode(piece.slice(pos) + (end < text.length ? " \u2026" : "")));
      return p;
    };
    var latest = 0;
    var run = function () {
      var raw = searchInput.value.trim();
      var ticket = ++latest;
      if (!raw) { list.textContent = ""; status.textContent = ""; return; }
      var quoted = /^".*"$/.test(raw);
      var query = quoted ? raw.slice(1, -1) : raw;
      load().then(function (idx) {
        if (ticket !== latest) return;  // a newer query is under way; its results win
        var words = queryWords(query).map(function (w) { return w.toLowerCase(); });
        var phrase = words.join(" ");
        // One identifier, however spelled: a flag and its config field (--max-num-seqs, max_num_seqs) are one.
        // Words typed with spaces are that identifier too ("max num seqs"), as well as the words.
        var spellings = [phrase];
        if (words.length === 1 && /[-_]/.test(phrase.replace(/^-+/, ""))) {
          var bare = phrase.replace(/^-+/, "");
          spellings = [bare.replace(/_/g, "-"), bare.replace(/-/g, "_")];
        } else if (words.length > 1 && !quoted && words.every(function (w) { return /^[a-z0-9]+$/.test(w); })) {
          spellings = [words.join("-"), words.join("_"), phrase];
        }
        var found = {};
        spellings.forEach(function (s) {
          idx.search(s === spellings[0] && spellings.length === 1 ? query : s).forEach(function (hit) {
            if (!found[hit.id] || found[hit.id].score < hit.score) found[hit.id] = hit;
          });
        });
        var occurrences = function (doc) {
          return spellings.reduce(function (n, s) {
            return n + count(doc.lower.title, s) * 5 + count(doc.lower.symptom, s) * 3 + count(doc.lower.text, s) + count(doc.lower.code, s);
          }, 0);
        };
        var results = Object.keys(found).map(function (id) {
          var doc = docs[id];
          var exact = spellings.length > 1 || words.length === 1 ? spellings.some(function (s) {
            if (s.indexOf(" ") >= 0) return false;
            return doc.idents.indexOf(s) >= 0 || doc.idents.indexOf("--" + s) >= 0 || doc.idents.some(function (i) {
              return i.length > s.length && i.slice(-s.length) === s && ":./".indexOf(i[i.length - s.length - 1]) >= 0;
            });
          }) : false;
          return { doc: doc, exact: exact, phrase: occurrences(doc), score: found[id].score };
        }).filter(function (r) { return !quoted || r.phrase > 0; });
        results.sort(function (a, b) {
          return (b.exact - a.exact) || (b.phrase - a.phrase) || (b.score - a.score);
        });
        list.textContent = "";
        // a version asked for: its release page first, for each engine that has it
        var release = /\d+\.\d+/.test(query) ? findRelease(query) : { found: [] };
        release.found.forEach(function (engine) {
          var item = document.createElement("li");
          item.className = "search-release";
          var link = document.createElement("a");
          link.href = releaseUrl(engine, release.version);
          link.textContent = engine.name + " " + release.version + ": the release page";
          item.appendChild(link);
          var what = document.createElement("p");
          what.textContent = "Every gotcha of " + engine.name + " " + release.version + ", what bites it and what to do.";
          item.appendChild(what);
          list.appendChild(item);
        });
        status.textContent = results.length + (results.length === 1 ? " entry has" : " entries have") + " every word of \u201c" + query + "\u201d" + (quoted ? " as a phrase" : "") + (whole ? "" : " in its title or symptom; searching the whole text\u2026");
        if (!whole) loadWhole().then(function () { if (ticket === latest) run(); });
        results.slice(0, 50).forEach(function (r) {
          var item = document.createElement("li");
          var link = document.createElement("a");
          link.href = base + r.doc.url;
          link.textContent = r.doc.title;
          item.appendChild(link);
          // where it stands: each engine's status at its newest release, and how bad it is
          var meta = document.createElement("p");
          meta.className = "search-meta";
          meta.textContent = (r.doc.latest || []).map(function (e) {
            return e[0] + (e[1] ? " " + e[1] : "") + ": " + e[2];
          }).concat(r.doc.severity ? ["severity: " + r.doc.severity] : []).join(" \u00b7 ");
          item.appendChild(meta);
          item.appendChild(snippet(r.doc, spellings, words));
          list.appendChild(item);
        });
      });
    };
    form.addEventListener("submit", function (event) { event.preventDefault(); run(); });
    searchInput.addEventListener("input", run);
    var initial = new URLSearchParams(window.location.search).get("q");
    if (initial) { searchInput.value = initial; run(); }
  }

  // Release surface: the filter narrows every table to the rows that hold every word typed (the page has them all).
  var surfaceFilter = byId("surface-filter");
  if (surfaceFilter) {
    var filterInput = byId("surface-filter-input");
    var filterCount = byId("surface-filter-count");
    var tables = Array.prototype.slice.call(document.querySelectorAll(".surface-section")).map(function (section) {
      var table = section.querySelector("table");
      return {
        section: section, count: section.querySelector("h2 .count"),
        rows: table ? Array.prototype.slice.call(table.tBodies[0].rows).map(function (row) {
          return { row: row, text: row.textContent.toLowerCase() };
        }) : []
      };
    });
    var everything = tables.reduce(function (n, t) { return n + t.rows.length; }, 0);
    var narrow = function () {
      var words = filterInput.value.toLowerCase().split(/\s+/).filter(function (w) { return w; });
      var shown = 0;
      tables.forEach(function (t) {
        var n = 0;
        t.rows.forEach(function (r) {
          var ok = words.every(function (w) { return r.text.indexOf(w) >= 0; });
          r.row.hidden = !ok;
          if (ok) n++;
        });
        shown += n;
        if (t.count) t.count.textContent = words.length ? n + " of " + t.rows.length : String(t.rows.length);
        t.section.hidden = words.length > 0 && n === 0;
      });
      filterCount.textContent = words.length ? shown + " of " + everything + " match \u201c" + filterInput.value.trim() + "\u201d" : "";
    };
    filterInput.addEventListener("input", narrow);
    surfaceFilter.addEventListener("submit", function (event) { event.preventDefault(); });
    surfaceFilter.hidden = false;
    var asked = new URLSearchParams(window.location.search).get("q");
    if (asked) { filterInput.value = asked; narrow(); }
  }

  // Release page: the severity and area filters narrow the table of what bites.
  var releaseFilters = byId("release-filters");
  var releaseTable = byId("release-table");
  if (releaseFilters && releaseTable) {
    releaseFilters.hidden = false;
    var releaseRows = Array.prototype.slice.call(releaseTable.tBodies[0].rows);
    var releaseCount = byId("release-count");
    var applyRelease = function () {
      var severity = byId("release-severity").value, scheme = byId("release-scheme").value, shown = 0;
      releaseRows.forEach(function (row) {
        var ok = (!severity || row.getAttribute("data-severity") === severity) &&
          (!scheme || row.getAttribute("data-scheme") === scheme);
        row.hidden = !ok;
        if (ok) shown++;
      });
      releaseCount.textContent = shown === releaseRows.length ? "" : shown + " of " + releaseRows.length + " shown";
    };
    releaseFilters.addEventListener("change", applyRelease);
    releaseFilters.addEventListener("submit", function (event) { event.preventDefault(); });
    // A link to one gotcha (#its-id) opens its row.
    var opened = window.location.hash && byId(decodeURIComponent(window.location.hash.slice(1)));
    if (opened && opened.tagName === "TR") { var d = opened.querySelector("details"); if (d) d.open = true; }
  }

})();
