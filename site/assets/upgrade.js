// gotchas: the upgrade picker (engines/<engine>/upgrade/), apart from site.js so that other pages do not load it.
(function () {
  "use strict";
  var base = document.body ? document.body.getAttribute("data-root") || "" : "";
  var byId = function (id) { return document.getElementById(id); };
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
