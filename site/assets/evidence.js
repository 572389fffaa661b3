// gotchas: the entry page's release picker, apart from site.js so that other pages do not load it.
(function () {
  "use strict";
  var base = document.body ? document.body.getAttribute("data-root") || "" : "";
  var byId = function (id) { return document.getElementById(id); };
  // Evidence at a release: the entry page renders its checks at one release per engine (verifier/site/entry.py,
  // `check_view`); this renders the same parts at the release picked, from `evidence.json` (`evidence_json`),
  // element by element as entry.html and macros.html write them.
  var evidenceForm = byId("evidence-release");
  if (evidenceForm && window.fetch) {
    var evidenceData = null;
    var el = function (tag, attrs, children) {
      var node = document.createElement(tag);
      Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
      (children || []).forEach(function (c) { node.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
      return node;
    };
    var webUrl = function (url) { return /^https?:\/\//i.test(url || ""); };
    var clip = function (line) {  // evidence.py `_clip`, by code point as Python counts
      var points = Array.from(line);
      return points.length <= 240 ? line : points.slice(0, 240).join("") + " …";
    };
    var badge = function (verdict) {  // macros.html `status(..., verdict=True)`
      var t = evidenceData.verdicts[verdict || ""] || evidenceData.verdicts[""];
      return el("a", {"class": "status status-" + t[0], href: base + "legend/#" + t[1]},
                [el("span", {"aria-hidden": "true"}, [t[2]]), " " + t[3]]);
    };
    var where = function (path, lines, symbol) {  // macros.html `where`
      var parts = [el("span", {"class": "path"}, [path])];
      if (lines && lines.length) parts.push(":" + lines[0] + (lines[1] !== lines[0] ? "–" + lines[1] : ""));
      if (symbol) parts.push(" in ", el("code", {}, [symbol]));
      return parts;
    };
    var excerpt = function (lines, start, match, whole, path) {  // evidence.py `excerpt`, macros.html `excerpt`
      var first = Math.min(match[0], match[1]), last = Math.max(match[0], match[1]);
      var end = start + lines.length - 1, scope = null, low, high, hitLow = 1, hitHigh = 0;
      if (whole || last - first + 1 > 8) {
        scope = [Math.max(first, start), last - Math.max(first, start) + 1];
        low = scope[0]; high = scope[0] + 5 - 1;
      } else {
        low = first - 2; high = last + 2; hitLow = first; hitHigh = last;
      }
      low = Math.max(low, start); high = Math.min(high, end);
      var rows = [];
      for (var n = low; n <= high; n++) {
        var hit = n >= hitLow && n <= hitHigh;
        var code = el("code", {}, hit ? [el("span", {"class": "visually-hidden"}, ["matched: "]), clip(lines[n - start]) || " "]
                                      : [clip(lines[n - start]) || " "]);
        rows.push(el("tr", hit ? {"class": "hit"} : {}, [el("th", {scope: "row"}, [String(n)]), el("td", {}, [code])]));
      }
      if (!rows.length) return [];
      var label = path + " lines " + low + " to " + high;
      var out = [];
      if (scope) {
        out.push(el("p", {"class": "scope-note"}, ["The claim covers the whole scope: lines " + scope[0] + " to " +
          (scope[0] + scope[1] - 1) + " (" + scope[1] + " lines) of ", el("span", {"class": "path"}, [path]),
          "; its first " + rows.length + " shown."]));
      }
      var caption = el("caption", {"class": "visually-hidden"}, [label + (scope ? "" : "; matched lines " + first + " to " + last + " are highlighted")]);
      out.push(el("div", {"class": "excerpt-wrap", tabindex: "0", role: "region", "aria-label": label},
                  [el("table", {"class": "excerpt"}, [caption, el("tbody", {}, rows)])]));
      return out;
    };
    var renderCheck = function (item, engine, version) {
      var id = item.getAttribute("data-check"), check = evidenceData.checks[id];
      var info = evidenceData.engines[engine], record = (info.at[version] || {})[id];
      var form = check.forms[record ? record[1] : 0] || check.forms[0];
      var parts = [];
      var matcher = [el("span", {"class": "key"}, [form[0]]), " ", el("code", {}, [form[1]])];
      if (form[2]) matcher.push(" ", el("span", {"class": "key"}, ["in"]), " ", el("code", {}, [form[2]]));
      if (form[3]) {
        matcher.push(" ", el("span", {"class": "key"}, ["after"]), " ", el("code", {}, [form[3]]));
        if (form[4]) matcher.push(" ", el("span", {"class": "key"}, ["(adjacent)"]));
      }
      matcher.push(" ", el("span", {"class": "key"}, ["file"]), " ", el("code", {}, [form[5]]));
      parts.push(el("p", {"class": "matcher"}, matcher));
      if (record) {
        var line = where(record[2], record[3], record[4]).concat([" in " + info.name + " " + version]);
        if (record[1]) line.push(" (form " + record[1] + " of the check)");
        if (webUrl(record[7])) line.push(" · ", el("a", {href: record[7]}, ["view at " + (info.tags[version] || version)]));
        parts.push(el("p", {"class": "where"}, line));
        if (record[0] !== "holds") {
          if (record[5]) parts.push(el("p", {}, ["Reason: ", el("a", {"class": "reason", href: base + "legend/#" + record[8]}, [record[5]]),
                                               ": " + ((evidenceData.verdicts[record[0]] || [])[4] || "")]));
          if (record[6]) parts.push(el("p", {"class": "hint"}, ["Hint: " + record[6]]));
        }
        if (record.length > 10) parts = parts.concat(excerpt(check.windows[record[10]], record[11], record[3], record[9], record[2]));
      } else {
        parts.push(el("p", {"class": "where"}, ["Not checked in " + info.name + " " + version + ": no form of this check applies there."]));
      }
      var holder = item.querySelector(".at-release");
      holder.textContent = "";
      parts.forEach(function (p) { holder.appendChild(p); });
      var verdictHolder = item.querySelector(".at-verdict");
      verdictHolder.textContent = "";
      verdictHolder.appendChild(badge(record ? record[0] : ""));
    };
    var selects = Array.prototype.slice.call(evidenceForm.querySelectorAll("select"));
    var atText = byId("evidence-at");
    var showAt = function () {
      var said = selects.map(function (select) {
        var engine = select.getAttribute("data-engine"), info = evidenceData.engines[engine], version = select.value;
        if (!info) return "";
        Array.prototype.forEach.call(document.querySelectorAll('li.check[data-engine="' + engine + '"]'), function (item) {
          renderCheck(item, engine, version);
        });
        return info.name + " " + version + (version === info.versions[0] ? " (the newest release)"
          : version === info.shown ? " (the last release it bites; not affected from the next)" : "");
      }).filter(Boolean);
      if (atText) atText.textContent = said.join("; ");
    };
    // The title and sections as they read at the release picked (entry.py `evidence_json`: "wordings", HTML the
    // site's Markdown renderer wrote, raw HTML off), for the engine whose release was picked last.
    var wordAt = function (engine, version) {
      var info = evidenceData.engines[engine];
      var wording = info && evidenceData.wordings[info.text[version]];
      if (!wording) return;
      var title = byId("entry-title");
      if (title) title.textContent = wording.title;
      Array.prototype.forEach.call(document.querySelectorAll(".section-text[data-section]"), function (holder) {
        var html = wording.sections[holder.getAttribute("data-section")];
        if (typeof html === "string") holder.innerHTML = html;
      });
      var note = byId("worded-at");
      if (note) {
        note.hidden = false;
        note.textContent = "Worded as it reads in " + info.name + " " + version + ", with the evidence below at that release.";
      }
    };
    var load = function () {
      if (evidenceData) return Promise.resolve(evidenceData);
      return fetch("evidence.json").then(function (r) { if (!r.ok) throw new Error(r.status); return r.json(); })
        .then(function (data) { evidenceData = data; return data; });
    };
    var pick = function (version, engine) {
      var found = false;
      selects.forEach(function (select) {
        if (found || (engine && select.getAttribute("data-engine") !== engine)) return;
        if (Array.prototype.some.call(select.options, function (o) { return o.value === version; })) {
          select.value = version; found = true;
        }
      });
      return found;
    };
    evidenceForm.hidden = false;
    evidenceForm.addEventListener("submit", function (event) { event.preventDefault(); });
    evidenceForm.addEventListener("change", function (event) {
      var changed = event.target;
      load().then(function () {
        showAt();
        if (changed && changed.value) wordAt(changed.getAttribute("data-engine"), changed.value);
        if (window.history && window.history.replaceState && changed && changed.value) {
          var params = new URLSearchParams(window.location.search);
          params.set("release", changed.value);
          if (selects.length > 1) params.set("engine", changed.getAttribute("data-engine"));
          window.history.replaceState(null, "", "?" + params.toString() + window.location.hash);
        }
      }).catch(function () { if (atText) atText.textContent = "The evidence of other releases could not be loaded."; });
    });
    var wanted = new URLSearchParams(window.location.search);
    if (wanted.get("release") && pick(wanted.get("release"), wanted.get("engine"))) {
      load().then(function () {
        showAt();
        var picked = selects.filter(function (select) { return select.value === wanted.get("release"); })[0];
        if (picked) wordAt(picked.getAttribute("data-engine"), picked.value);
        if (window.location.hash) { var target = byId(window.location.hash.slice(1)); if (target) target.scrollIntoView(); }
      }).catch(function () { if (atText) atText.textContent = "The evidence of other releases could not be loaded."; });
    }
  }
})();
