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
    var docs = null, index = null;
    var load = function () {
      if (index) return Promise.resolve(index);
      return fetch(base + "search/documents.json").then(function (r) { return r.json(); }).then(function (data) {
        docs = {};
        data.forEach(function (d) {
          docs[d.id] = d;
          d.lower = { title: d.title.toLowerCase(), symptom: d.symptom.toLowerCase(), text: d.text.toLowerCase(),
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
      });
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
        var spellings = [phrase];
        if (words.length === 1 && /[-_]/.test(phrase.replace(/^-+/, ""))) {
          var bare = phrase.replace(/^-+/, "");
          spellings = [bare.replace(/_/g, "-"), bare.replace(/-/g, "_")];
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
        status.textContent = results.length + (results.length === 1 ? " entry has" : " entries have") + " every word of \u201c" + query + "\u201d" + (quoted ? " as a phrase" : "");
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

  // Upgrades: what `surface.diff.diff` and `history.between` compute (verifier/site/upgrade.py), from the JSON
  // that module writes: item bodies numbered in diff's order, whatever Python compares differently already a number.
  var own = function (object, key) { return Object.prototype.hasOwnProperty.call(object, key); };
  var pyCompare = function (a, b) {  // Python orders strings by code point; JavaScript by UTF-16 unit
    var x = Array.from(a), y = Array.from(b);
    for (var i = 0; i < x.length && i < y.length; i++) {
      if (x[i] !== y[i]) return x[i].codePointAt(0) - y[i].codePointAt(0);
    }
    return x.length - y.length;
  };
  var sameSet = function (a, b) {
    return a.every(function (x) { return b.indexOf(x) >= 0; }) && b.every(function (x) { return a.indexOf(x) >= 0; });
  };
  // An item body: [kind, name, how its default is shown, the text shown, default by meaning, aliases, choices,
  // deprecated, spelling keys, config field, help]; a release's item: [body, file, line(, default's file, line)].
  var renames = function (items, gone, came) {
    var pairs = [], left = gone.slice(), right = came.slice();
    var take = function (match) {
      left.slice().forEach(function (a) {
        var candidates = right.filter(function (b) { return match(items[a[0]], items[b[0]]); });
        if (candidates.length === 1 && left.filter(function (x) {
          return match(items[x[0]], items[candidates[0][0]]);
        }).length === 1) {
          pairs.push([a, candidates[0]]);
          left.splice(left.indexOf(a), 1);
          right.splice(right.indexOf(candidates[0]), 1);
        }
      });
    };
    take(function (a, b) { return a[8].some(function (k) { return b[8].indexOf(k) >= 0; }); });  // one spells the other
    take(function (a, b) { return a[9] !== null && a[9] === b[9]; });  // a flag setting the same config field
    take(function (a, b) { return a[10] !== null && a[10] === b[10]; });  // the same help text
    return pairs;
  };
  var surfaceDiff = function (engine, older, newer) {
    var items = engine.items;
    var fieldsOf = function (a, b) {
      var x = items[a[0]], y = items[b[0]], found = [];
      if (x[4] !== y[4]) found.push("default");
      if (!sameSet(x[6], y[6])) found.push("choices");
      if (!sameSet(x[5], y[5])) found.push("aliases");
      if (x[7] !== y[7]) found.push("deprecated");
      return found;
    };
    var byKind = function (release) {
      var maps = engine.kinds.map(function () { return new Map(); });
      release.items.forEach(function (row) { var body = items[row[0]]; maps[body[0]].set(body[1], row); });
      return maps;
    };
    var before = byKind(older), after = byKind(newer), changes = [];
    var add = function (what, kind, a, b, fields) {
      var named = b || a;
      changes.push({ what: what, kind: kind, name: items[named[0]][1], rank: named[0], before: a, after: b,
                     fields: fields || [] });
    };
    var byRank = function (x, y) { return x[0] - y[0]; };
    engine.kinds.forEach(function (_, kind) {
      var a = before[kind], b = after[kind], gone = [], came = [];
      a.forEach(function (row, name) {
        var other = b.get(name);
        if (!other) { gone.push(row); return; }
        var fields = fieldsOf(row, other);
        if (fields.length) add("changed", kind, row, other, fields);
      });
      b.forEach(function (row, name) { if (!a.has(name)) came.push(row); });
      gone.sort(byRank);
      came.sort(byRank);
      var pairs = renames(items, gone, came);
      pairs.forEach(function (p) { add("renamed", kind, p[0], p[1], fieldsOf(p[0], p[1])); });
      gone.forEach(function (row) { if (!pairs.some(function (p) { return p[0] === row; })) add("removed", kind, row, null); });
      came.forEach(function (row) { if (!pairs.some(function (p) { return p[1] === row; })) add("added", kind, null, row); });
    });
    var order = { removed: 0, renamed: 1, changed: 2, added: 3 };
    changes.sort(function (x, y) { return (x.kind - y.kind) || (order[x.what] - order[y.what]) || (x.rank - y.rank); });
    return changes;
  };
  var between = function (older, newer) {
    var ids = Object.keys(older.entries);
    Object.keys(newer.entries).forEach(function (id) { if (!own(older.entries, id)) ids.push(id); });
    var found = [];
    ids.sort(pyCompare).forEach(function (id) {
      var a = own(older.entries, id) ? older.entries[id] : null, b = own(newer.entries, id) ? newer.entries[id] : null;
      var was = a ? a[0] : null, is = b ? b[0] : null;
      if (was === is || is === null) return;
      var names = Object.keys(b[1]);
      if (a) Object.keys(a[1]).forEach(function (c) { if (!own(b[1], c)) names.push(c); });
      var checks = [];
      names.sort(pyCompare).forEach(function (c) {
        var x = a && own(a[1], c) ? a[1][c] : null, y = own(b[1], c) ? b[1][c] : null;
        if (x && y && (x[0] !== y[0] || x[1] !== y[1])) checks.push({ check: c, before: x, after: y });
      });
      found.push({ entry: id, before: was, after: is, checks: checks });
    });
    return found;
  };
  window.gotchasUpgrade = { diff: surfaceDiff, between: between };

  var upgradeForm = byId("upgrade-form");
  var upgradeData = byId("upgrade-data");
  if (upgradeForm && upgradeData) {
    var config = JSON.parse(upgradeData.textContent || "{}");
    var fromSelect = byId("upgrade-from"), toSelect = byId("upgrade-to");
    var upgradeStatus = byId("upgrade-status"), upgradeResult = byId("upgrade-result");
    var loaded = {};
    var getJSON = function (url) {
      if (!loaded[url]) {
        loaded[url] = fetch(base + url).then(function (r) {
          if (!r.ok) throw new Error(url + ": HTTP " + r.status);
          return r.json();
        });
      }
      return loaded[url];
    };
    var append = function (node, child) {
      if (child === null || child === undefined || child === "") return;
      if (Array.isArray(child)) child.forEach(function (c) { append(node, c); });
      else node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    };
    var h = function (tag, attrs) {  // an element, its attributes, then its children (a string is text)
      var node = document.createElement(tag);
      Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
      for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
      return node;
    };
    var codes = function (list) {
      var out = [];
      list.forEach(function (x, i) { if (i) out.push(", "); out.push(h("code", null, x)); });
      return out;
    };
    // The elements of site/templates/upgrade_diff.html, in the same order with the same text.
    var render = function (engine, older, newer, level) {
      var items = engine.items, words = {};
      engine.words.forEach(function (w) { words[w[0] === null ? "" : w[0]] = w; });
      var badge = function (value, verdict) {
        var w = words[value === null ? "" : value] || [value, String(value), "?", String(value).replace(/ /g, "-")];
        return h("a", { "class": "status status-" + w[3], href: base + "legend/#" + (verdict ? "verdict-" : "status-") + w[3] },
                 h("span", { "aria-hidden": "true" }, w[2]), " " + w[1]);
      };
      var shown = function (mode, text) {
        return mode === 0 ? text : mode === 2 ? ["computed: ", h("code", null, text)] : h("code", null, text);
      };
      var placeOf = function (release, file, line) {
        if (file < 0) return null;
        var path = release.files[file];
        var text = line ? path + ":" + line : path;
        var url = release.blob && release.linked.indexOf(file) >= 0 ?
          release.blob + (own(release.quoted, String(file)) ? release.quoted[file] : path) + (line ? "#L" + line : "") : null;
        return url ? h("a", { href: url }, text) : text;
      };
      var side = function (row, release, fields) {
        if (!row) return "absent";
        var body = items[row[0]], out = [shown(body[2], body[3])];
        if (body[7]) out.push(" (deprecated)");
        var where = placeOf(release, row[1], row[2]);
        if (where) {
          out.push(" \u00b7 ");
          var at = row.length > 3 ? placeOf(release, row[3], row[4]) : null;
          if (at) out.push("default at ", at, ", flag at ");
          out.push(where);
        }
        if (fields.indexOf("aliases") >= 0) out.push(h("br"), "spellings: ", codes([body[1]].concat(body[5])));
        if (fields.indexOf("choices") >= 0) out.push(h("br"), "choices: ", body[6].length ? codes(body[6]) : "none");
        return out;
      };
      var recordWhere = function (r) {  // a check's verdict: [verdict, form, path, lines, symbol, url]
        if (!r[2]) return null;
        var parts = [h("span", { "class": "path" }, r[2])];
        if (r[3]) parts.push(":" + r[3][0] + (r[3][1] !== r[3][0] ? "\u2013" + r[3][1] : ""));
        if (r[4]) parts.push(" in ", h("code", null, r[4]));
        return [" at ", r[5] ? h("a", { href: r[5] }, parts) : parts];
      };
      var surfaces = older.items !== null && newer.items !== null;
      var changes = surfaces ? surfaceDiff(engine, older, newer) : [];
      var groups = { start: [], stop: [], other: [] };
      between(older, newer).forEach(function (c) {
        groups[c.after === "holds" ? "start" : c.before === "holds" ? "stop" : "other"].push(c);
      });
      var out = [];
      var summary = h("p", { "class": "summary" });
      if (surfaces) {
        var counts = { added: 0, removed: 0, renamed: 0, changed: 0 };
        changes.forEach(function (c) { counts[c.what]++; });
        append(summary, "Flags, variables, metrics and request fields: " + Object.keys(counts).map(function (k) {
          return counts[k] + " " + k;
        }).join(", ") + ".");
      } else {
        var missing = [older, newer].filter(function (r) { return r.items === null; }).map(function (r) { return r.version; });
        append(summary, "No release surface of " + missing.join(" or ") + " is recorded: flags, variables, metrics and request fields not compared.");
      }
      append(summary, " Gotchas: ");
      engine.biting.forEach(function (g, i) {
        var n = groups[g[0]].length;
        append(summary, n ? h("a", { href: "#" + g[0] }, n + " " + g[2]) : "0 " + g[2]);
        append(summary, i < engine.biting.length - 1 ? ", " : ".");
      });
      out.push(summary);
      engine.biting.forEach(function (g) {
        var members = groups[g[0]];
        if (g[0] === "other" && !members.length) return;
        var list = h("ul", { "class": "upgrade-entries" });
        members.forEach(function (c) {
          var entry = engine.entries[c.entry];
          var item = h("li", null, h("a", { href: base + entry[1] }, entry[0]), ": ", badge(c.before), " in " + older.version + " \u2192 ",
                       badge(c.after), " in " + newer.version);
          if (c.checks.length) {
            append(item, h("ul", { "class": "checks-brief" }, c.checks.map(function (t) {
              return h("li", null, h("code", null, t.check), ": ", badge(t.before[0], true), recordWhere(t.before), " \u2192 ",
                       badge(t.after[0], true), recordWhere(t.after));
            })));
          }
          append(list, item);
        });
        if (!members.length) append(list, h("li", null, "None."));
        out.push(h("section", { "aria-labelledby": g[0] }, h(level, { id: g[0] }, g[1] + " (" + members.length + ")"), list));
      });
      engine.kinds.forEach(function (k, kind) {
        var rows = changes.filter(function (c) { return c.kind === kind; });
        if (!rows.length) return;
        var body = h("tbody");
        rows.forEach(function (c) {
          var word = c.what + (c.fields.length ? ": " + c.fields.map(function (f) { return engine.field_words[f]; }).join(", ") : "");
          append(body, h("tr", null, h("td", null, word),
                         h("td", null, c.what === "renamed" ? [h("code", null, items[c.before[0]][1]), " \u2192 "] : null, h("code", null, c.name)),
                         h("td", null, side(c.before, older, c.fields)), h("td", null, side(c.after, newer, c.fields))));
        });
        out.push(h("section", { "aria-labelledby": k[2], "class": "surface-section" },
                   h(level, { id: k[2] }, k[1] + " (", h("span", { "class": "count" }, String(rows.length)), ")"),
                   h("table", { "class": "surface upgrade", "aria-labelledby": k[2] },
                     h("thead", null, h("tr", null, h("th", { scope: "col" }, "Change"), h("th", { scope: "col" }, k[3]),
                                        h("th", { scope: "col" }, older.version), h("th", { scope: "col" }, newer.version))),
                     body)));
      });
      if (surfaces && !changes.length) out.push(h("p", null, "No flag, variable, metric or request field differs."));
      return { nodes: out, changes: changes.length, groups: groups };
    };
    var ticket = 0;
    var compare = function () {
      var older = fromSelect.value, newer = toSelect.value, mine = ++ticket;
      if (older === newer) {
        upgradeResult.textContent = "";
        upgradeStatus.textContent = "Pick two different releases.";
        return;
      }
      upgradeStatus.textContent = "Comparing " + older + " and " + newer + "\u2026";
      Promise.all([getJSON(config.json), getJSON(config.release + encodeURIComponent(older) + ".json"),
                   getJSON(config.release + encodeURIComponent(newer) + ".json")]).then(function (got) {
        if (mine !== ticket) return;  // a newer choice is under way; its result wins
        var engine = got[0], versions = engine.versions;
        var i = versions.indexOf(older), j = versions.indexOf(newer);
        var shown = render(engine, got[1], got[2], "h3");
        var page = (config.pages || []).indexOf(older + "..." + newer) >= 0;
        var links = h("p", { "class": "release-nav" });
        if (page) append(links, [h("a", { href: "../" + encodeURIComponent(older + "..." + newer) + "/" }, "The page of this upgrade"), " \u00b7 "]);
        append(links, ["Gotchas in ", h("a", { href: "../" + encodeURIComponent(older) + "/" }, older), " and ",
                       h("a", { href: "../" + encodeURIComponent(newer) + "/" }, newer)]);
        upgradeResult.textContent = "";
        append(upgradeResult, [h("h2", { id: "upgrade-heading" }, engine.name + " " + older + " \u2192 " + newer), links,
                               i > j ? h("p", { "class": "help" }, older + " is newer than " + newer + ": this is what going back changes.") : null,
                               h("div", { "class": "upgrade-diff", id: "upgrade-diff" }, shown.nodes)]);
        upgradeStatus.textContent = engine.name + " " + older + " \u2192 " + newer + ": " + shown.changes +
          " flags, variables, metrics and request fields differ; " + shown.groups.start.length + " gotchas start biting, " +
          shown.groups.stop.length + " stop.";
        if (window.history && window.history.replaceState) {
          window.history.replaceState(null, "", "?from=" + encodeURIComponent(older) + "&to=" + encodeURIComponent(newer));
        }
      }).catch(function (err) {
        if (mine === ticket) upgradeStatus.textContent = "Could not read the releases' data (" + err.message + "): use the pages listed below.";
      });
    };
    var params = new URLSearchParams(window.location.search);
    [[fromSelect, params.get("from")], [toSelect, params.get("to")]].forEach(function (pair) {
      if (pair[1] && Array.prototype.some.call(pair[0].options, function (o) { return o.value === pair[1]; })) pair[0].value = pair[1];
    });
    upgradeForm.addEventListener("submit", function (event) { event.preventDefault(); compare(); });
    fromSelect.addEventListener("change", compare);
    toSelect.addEventListener("change", compare);
    upgradeForm.hidden = false;
    Array.prototype.forEach.call(document.querySelectorAll(".js-only"), function (el) { el.hidden = false; });
    compare();
  }
})();
