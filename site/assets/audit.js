// gotchas: "Paste your deployment" on the front page. What `gotchas audit --serve "..." --engine ENGINE==VERSION`
// shows, computed in the browser from api/audit.json (verifier/site/audit_data.py: the KB compiled for the CLI,
// packed), which is fetched the first time the box is used. Each function below mirrors the Python function its
// comment names, step for step and word for word; where JavaScript and Python differ (string methods, regular
// expressions, numbers, dicts), the helpers at the top behave as Python does. The page works without this file: the
// box stays hidden and the page says which command to run.
(function () {
  "use strict";

  // --- Python's behaviour, where the functions below rely on it -------------------------------------------------

  // `key in object` of a dict read from JSON
  var own = function (object, key) { return object !== null && typeof object === "object" && Object.prototype.hasOwnProperty.call(object, key); };
  // dict.get(key, fallback) of a JSON object: never a property of Object.prototype (a flag named `constructor`)
  var get = function (object, key, fallback) { return own(object, key) ? object[key] : fallback; };
  // What str.isspace() and re's \s call whitespace (JavaScript's \s adds U+FEFF and leaves out U+001C-U+001F, U+0085).
  var PY_SPACE = "\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
  var STRIP = new RegExp("^[" + PY_SPACE + "]+|[" + PY_SPACE + "]+$", "g");
  // str.strip()
  var pyStrip = function (text) { return text.replace(STRIP, ""); };
  // len(text): code points, not UTF-16 units
  var pyLen = function (text) { return Array.from(text).length; };

  // float(text) of a str, or null where Python raises ValueError. Python reads any Unicode decimal digit (category
  // Nd, as `\p{Nd}` matches): Unicode keeps them in runs of ten, 0 to 9, so a digit's value is its distance from the
  // start of its run of Nd characters, modulo 10.
  var FLOAT = /^[+-]?(?:(?:\p{Nd}(?:_?\p{Nd})*)?\.\p{Nd}(?:_?\p{Nd})*|\p{Nd}(?:_?\p{Nd})*\.?)(?:[eE][+-]?\p{Nd}(?:_?\p{Nd})*)?$/u;
  var FLOAT_WORD = /^[+-]?(?:inf|infinity|nan)$/i;
  var DIGIT = /\p{Nd}/u;
  // each Unicode decimal digit of a text as its ASCII digit (what int() and float() read it as)
  var asciiDigits = function (text) {
    return text.replace(/\p{Nd}/gu, function (digit) {
      var code = digit.codePointAt(0), start = code;
      while (DIGIT.test(String.fromCodePoint(start - 1))) start--;
      return String((code - start) % 10);
    });
  };
  // float(text)
  function pyFloat(text) {
    var trimmed = pyStrip(text);
    if (FLOAT_WORD.test(trimmed)) {
      var negative = trimmed[0] === "-";
      return /nan/i.test(trimmed) ? NaN : negative ? -Infinity : Infinity;
    }
    if (!FLOAT.test(trimmed)) return null;
    return Number(asciiDigits(trimmed).replace(/_/g, ""));
  }

  // repr(number) of a finite float: the shortest digits that read back as it (JavaScript finds the same ones),
  // in fixed notation from 1e-4 up to 1e16 and in exponent notation outside
  function pyFloatRepr(number) {
    if (number === 0) return Object.is(number, -0) ? "-0.0" : "0.0";
    var sign = number < 0 ? "-" : "";
    var parts = Math.abs(number).toExponential().split("e");
    var digits = parts[0].replace(".", "");
    var exponent = Number(parts[1]);
    var point = exponent + 1;  // digits[0:point] before the decimal point
    if (point > -4 && point <= 16) {
      if (point <= 0) return sign + "0." + "0".repeat(-point) + digits;
      if (point >= digits.length) return sign + digits + "0".repeat(point - digits.length) + ".0";
      return sign + digits.slice(0, point) + "." + digits.slice(point);
    }
    var mantissa = digits.length > 1 ? digits[0] + "." + digits.slice(1) : digits;
    return sign + mantissa + "e" + (exponent < 0 ? "-" : "+") + String(Math.abs(exponent)).padStart(2, "0");
  }

  // str(value) of a value read from JSON or a command line (numbers: the KB's values are text and booleans)
  function pyStr(value) {
    if (value === null || value === undefined) return "None";
    if (value === true) return "True";
    if (value === false) return "False";
    if (typeof value === "number") return Number.isInteger(value) ? String(value) : pyFloatRepr(value);
    return String(value);
  }

  // --- PEP 440 versions (packaging.version.Version), as nearest_release and model.within compare them -----------

  var VERSION = new RegExp("^[" + PY_SPACE + "]*v?(?:(?:([0-9]+)!)?([0-9]+(?:\\.[0-9]+)*)" +
    "(?:[._-]?(alpha|a|beta|b|preview|pre|c|rc)[._-]?([0-9]+)?)?" +
    "(?:-([0-9]+)|[._-]?(post|rev|r)[._-]?([0-9]+)?)?" +
    "(?:[._-]?(dev)[._-]?([0-9]+)?)?)" +
    "(?:\\+([a-z0-9]+(?:[._-][a-z0-9]+)*))?[" + PY_SPACE + "]*$", "i");
  var LETTERS = { alpha: "a", beta: "b", c: "rc", pre: "rc", preview: "rc", rev: "post", r: "post" };

  // packaging.version.Version(text), or null where it raises InvalidVersion
  function parseVersion(text) {
    if (typeof text !== "string") return null;
    var m = VERSION.exec(text);
    if (!m) return null;
    var letter = function (word) { word = word.toLowerCase(); return own(LETTERS, word) ? LETTERS[word] : word; };
    var post = m[5] !== undefined ? Number(m[5]) : m[6] !== undefined ? Number(m[7] || 0) : null;
    return {
      epoch: m[1] ? Number(m[1]) : 0,
      release: m[2].split(".").map(Number),
      pre: m[3] !== undefined ? [letter(m[3]), Number(m[4] || 0)] : null,
      post: post,
      dev: m[8] !== undefined ? Number(m[9] || 0) : null,
      local: m[10] !== undefined ? m[10].split(/[._-]/).map(function (part) {
        return /^[0-9]+$/.test(part) ? Number(part) : part.toLowerCase();
      }) : null,
    };
  }

  // str(Version)
  function versionText(v) {
    var text = (v.epoch ? v.epoch + "!" : "") + v.release.join(".");
    if (v.pre) text += v.pre[0] + v.pre[1];
    if (v.post !== null) text += ".post" + v.post;
    if (v.dev !== null) text += ".dev" + v.dev;
    if (v.local) text += "+" + v.local.join(".");
    return text;
  }

  // Version.public and Version.base_version, as Versions
  var publicOf = function (v) { return Object.assign({}, v, { local: null }); };
  var baseOf = function (v) { return { epoch: v.epoch, release: v.release, pre: null, post: null, dev: null, local: null }; };

  // packaging.version._cmpkey, as a list compared item by item
  function versionKey(v) {
    var release = v.release.slice();
    while (release.length && release[release.length - 1] === 0) release.pop();
    var preRank, preN;
    if (v.pre === null && v.post === null && v.dev !== null) { preRank = -1; preN = 0; }
    else if (v.pre === null) { preRank = 3; preN = 0; }
    else { preRank = { a: 0, b: 1, rc: 2 }[v.pre[0]]; preN = v.pre[1]; }
    var key = [v.epoch, release, [preRank, preN, v.post === null ? 0 : 1, v.post === null ? 0 : v.post,
      v.dev === null ? 1 : 0, v.dev === null ? 0 : v.dev]];
    if (v.local !== null) key.push(v.local.map(function (part) { return typeof part === "number" ? [part, ""] : [-1, part]; }));
    return key;
  }

  // Python's comparison of tuples of ints and strs
  function compareTuples(a, b) {
    for (var i = 0; i < Math.min(a.length, b.length); i++) {
      var x = a[i], y = b[i];
      var c = Array.isArray(x) ? compareTuples(x, y) : x < y ? -1 : x > y ? 1 : 0;
      if (c) return c;
    }
    return a.length - b.length;
  }
  // Version's comparisons: -1, 0 or 1
  var compareVersions = function (a, b) { var c = compareTuples(versionKey(a), versionKey(b)); return c < 0 ? -1 : c > 0 ? 1 : 0; };

  // --- verifier/model.py -------------------------------------------------------------------------------------

  var COMPUTED = "computed";
  var BOOL_WORDS = { "true": true, "1": true, "yes": true, "on": true, "false": false, "0": false, "no": false, "off": false };

  // model.release_version
  var releaseVersion = parseVersion;

  // model._without_post
  var withoutPost = function (v) { return Object.assign({}, v, { post: null, local: null }); };

  // model.within
  function within(version, since, until) {
    var v = releaseVersion(version);
    if (v === null) return until === null || until === undefined;
    if (since !== null && since !== undefined) {
      var low = releaseVersion(since);
      if (low !== null && compareVersions(v, low) < 0) return false;
    }
    if (until !== null && until !== undefined) {
      var high = releaseVersion(until);
      if (high !== null && compareVersions(v, high) > 0 && !(high.post === null && compareVersions(withoutPost(v), high) <= 0)) return false;
    }
    return true;
  }

  // model.setting_value
  function settingValue(value) {
    if (typeof value === "boolean") return value;
    var text = pyStrip(pyStr(value));
    var number = pyFloat(text);
    if (number === null) return text;
    if (Number.isNaN(number) || !Number.isFinite(number)) return text;
    var shown = pyFloatRepr(number);
    return shown.endsWith(".0") ? shown.slice(0, -2) : shown;
  }

  // model.setting_word
  var settingWord = function (value) { return typeof value === "boolean" ? String(value) : pyStr(value); };

  // model.Condition: its fields, and the properties and methods audit reads
  function Condition(fields) {
    var defaults = { engine: null, flags: [], env: null, values: [], negated: false, default: null, witness: null,
      since: null, until: null, line: 0, request: null, endpoint: null, fact: null, any: [], given: null };
    Object.keys(defaults).forEach(function (key) { this[key] = own(fields, key) ? fields[key] : defaults[key]; }, this);
  }
  // dataclasses.replace(condition, ...)
  Condition.prototype.replace = function (changes) { return new Condition(Object.assign({}, this, changes)); };
  // Condition.kind
  Condition.prototype.kind = function () {
    return this.any.length ? "any" : this.flags.length ? "flag" : this.env !== null ? "env" : this.request !== null ? "request" :
      this.endpoint !== null ? "endpoint" : "only-if";
  };
  // Condition.undecidable
  Condition.prototype.undecidable = function () { return ["request", "endpoint", "only-if"].indexOf(this.kind()) >= 0; };
  // Condition.setting
  Condition.prototype.setting = function () {
    if (this.any.length) return this.any.map(function (c) { return c.setting(); }).join(" or ");
    return this.flags.length ? this.flags[0] : this.env || this.request || this.endpoint || this.fact || "";
  };
  // Condition.boolean
  Condition.prototype.boolean = function () {
    return this.values.length > 0 && this.values.every(function (v) { return typeof v === "boolean"; });
  };
  // Condition.computed
  Condition.prototype.computed = function () { return this.default === COMPUTED; };
  // Condition.applies
  Condition.prototype.applies = function (version) { return within(version, this.since, this.until); };
  // Condition.met_by
  Condition.prototype.metBy = function (value) {
    var wanted = this.values.map(settingValue);
    var found = settingValue(value);
    return wanted.some(function (w) { return w === found; }) !== this.negated;
  };
  // Condition.describe
  Condition.prototype.describe = function () {
    if (this.any.length) return this.any.map(function (c) { return c.describe(); }).join(" or ");
    if (this.fact !== null) return this.fact;
    if (this.endpoint !== null) return "clients call " + this.endpoint;
    var shown;
    if (this.request !== null) {
      if (!this.values.length) return "requests send " + this.request;
      shown = this.values.map(settingWord).join(" or ");
      return "requests send " + this.request + " " + (this.negated ? "not " : "") + shown;
    }
    if (this.given !== null) return this.setting() + " is " + (this.given ? "given" : "not given");
    if (this.boolean() && this.values.length === 1) {
      var on = this.values[0] !== this.negated;
      return this.flags.length ? this.setting() + " is " + (on ? "set" : "not set") : this.setting() + " is " + (on ? "true" : "false");
    }
    shown = this.values.map(settingWord).join(" or ");
    return this.setting() + " is " + (this.negated ? "not " : "") + shown;
  };

  // --- verifier/compiled.py ----------------------------------------------------------------------------------

  // compiled.condition_from_json
  function conditionFromJson(data) {
    return new Condition({ engine: data.engine, flags: data.flags.slice(), env: data.env, values: data.values.slice(),
      negated: data.negated, default: data.default, witness: data.witness, since: data.since, until: data.until, line: 0,
      request: get(data, "request", null), endpoint: get(data, "endpoint", null), fact: get(data, "only_if", null),
      any: (get(data, "any", null) || []).map(conditionFromJson), given: get(data, "set", null) });
  }

  // compiled.text_at
  function textAt(entry, engine, release) {
    var variants = get(get(entry, "texts", {}), engine, []);
    for (var i = 0; i < variants.length; i++) {
      if (variants[i].releases.indexOf(release) >= 0) {
        return Object.assign({}, entry, { title: variants[i].title, workaround: variants[i].workaround, parts: variants[i].parts });
      }
    }
    return entry;
  }

  // --- verifier/deployment/_settings.py ----------------------------------------------------------------------

  // _settings.UNKNOWN: a logged value that is no Python literal (a serve line never has one)
  var UNKNOWN = { unknown: true };

  // deployment.DeploymentError
  function DeploymentError(message) { this.message = message; }

  // _settings.flag_key
  var flagKey = function (name) {
    // a short flag keeps its case: llama.cpp's -c (--ctx-size) and -C (--cpu-mask) are two flags
    if (/^-[A-Za-z]/.test(name)) return name.slice(1).replace(/-/g, "_");
    return name.replace(/^-+/, "").replace(/-/g, "_").toLowerCase();
  };

  // _settings.Settings: flags and env are Maps (a dict's order, and no key is a property of Object.prototype)
  function Settings(engine, origin, fields) {
    fields = fields || {};
    this.engine = engine;
    this.origin = origin;
    this.flags = fields.flags || new Map();
    this.env = fields.env || new Map();
    this.version = fields.version || null;
    this.logged = fields.logged || false;
    this.notes = fields.notes || [];
  }

  var PROGRAMS = [
    ["vllm", [["vllm", "serve"], ["-m", "vllm.entrypoints.openai.api_server"], ["-m", "vllm.entrypoints.api_server"]]],
    ["sglang", [["-m", "sglang.launch_server"], ["sglang", "serve"], ["-m", "sglang.launch_server_grpc"]]],
  ];
  var NUMBER = /^-\p{Nd}+(\.\p{Nd}*)?([eE][-+]?\p{Nd}+)?$/u;  // _settings._NUMBER, fully matched (\d is Unicode's Nd)

  // pathlib.Path(text).name
  function pathName(text) {
    var parts = text.split("/").filter(function (p) { return p !== "" && p !== "."; });
    return parts.length ? parts[parts.length - 1] : "";
  }

  // _settings.program_of
  function programOf(tokens) {
    for (var p = 0; p < PROGRAMS.length; p++) {
      var key = PROGRAMS[p][0], programs = PROGRAMS[p][1];
      for (var q = 0; q < programs.length; q++) {
        var first = programs[q][0], second = programs[q][1];
        for (var i = 0; i < tokens.length - 1; i++) {
          if ((pathName(tokens[i]) === first || tokens[i] === first) && tokens[i + 1] === second) return [key, i + 2];
        }
      }
    }
    return [null, 0];
  }

  // shlex.split(text, comments) (POSIX mode: shlex.shlex.read_token with whitespace_split, as Python's module has it)
  function shlexSplit(text, comments) {
    var whitespace = " \t\r\n", quotes = "'\"", escape = "\\", escapedQuotes = "\"", commenters = comments ? "#" : "";
    var at = 0, state = " ", tokens = [];
    var read = function () { return at < text.length ? text[at++] : ""; };
    var readline = function () { var end = text.indexOf("\n", at); at = end < 0 ? text.length : end + 1; };
    for (;;) {
      var quoted = false, escapedState = " ", token = "";
      for (;;) {
        var c = read();
        if (state === null) { token = ""; break; }
        if (state === " ") {
          if (!c) { state = null; break; }
          else if (whitespace.indexOf(c) >= 0) { if (token || quoted) break; continue; }
          else if (commenters.indexOf(c) >= 0) readline();
          else if (c === escape) { escapedState = "a"; state = c; }
          else if (quotes.indexOf(c) >= 0) state = c;
          else { token = c; state = "a"; }
        } else if (quotes.indexOf(state) >= 0) {
          quoted = true;
          if (!c) throw new Error("No closing quotation");
          if (c === state) state = "a";
          else if (c === escape && escapedQuotes.indexOf(state) >= 0) { escapedState = state; state = c; }
          else token += c;
        } else if (state === escape) {
          if (!c) throw new Error("No escaped character");
          if (quotes.indexOf(escapedState) >= 0 && c !== state && c !== escapedState) token += state;
          token += c;
          state = escapedState;
        } else {  // "a": in a word
          if (!c) { state = null; break; }
          else if (whitespace.indexOf(c) >= 0) { state = " "; if (token || quoted) break; continue; }
          else if (commenters.indexOf(c) >= 0) { readline(); state = " "; if (token || quoted) break; continue; }
          else if (quotes.indexOf(c) >= 0) state = c;
          else if (c === escape) { escapedState = "a"; state = c; }
          else token += c;
        }
      }
      if (!quoted && token === "") return tokens;  // the end: shlex's None
      tokens.push(token);
    }
  }

  var CONTINUATION = /\\\r?\n/g;
  var PROMPT = new RegExp("^\\$[" + PY_SPACE + "]+");
  var ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=[^\n]*$/;  // Python's `.` is anything but a newline

  // _settings.parse_serve
  function parseServe(command, defaultEngine, origin) {
    origin = origin || "--serve";
    var text = pyStrip(command.replace(CONTINUATION, " "));
    text = text.replace(PROMPT, "");
    var tokens;
    try {
      tokens = shlexSplit(text, true);
    } catch (exc) {
      throw new DeploymentError(origin + ": cannot split the command line: " + exc.message);
    }
    while (tokens.length && ["sudo", "exec", "nohup"].indexOf(tokens[0]) >= 0) tokens.shift();
    var env = new Map();
    while (tokens.length && (tokens[0] === "env" || ASSIGNMENT.test(tokens[0]))) {
      var token = tokens.shift();
      if (token !== "env") {
        var eq = token.indexOf("=");
        env.set(token.slice(0, eq), token.slice(eq + 1));
      }
    }
    // Not ported: _llama (llama-server's flags are read against each release's own declarations, which this
    // box's data does not carry); the CLI reads such a line.
    if (tokens.some(function (t) { return /(^|[\\/])llama-server(\.exe)?$/i.test(t); })) {
      throw new DeploymentError(origin + ": a llama-server line is read by `gotchas audit --serve` (which of its flags " +
        "take a value is each release's own declaration); this box reads vLLM and SGLang lines");
    }
    var found = programOf(tokens), engine = found[0], start = found[1];
    if (engine === null) {
      if (defaultEngine === null || defaultEngine === undefined) {
        throw new DeploymentError(origin + ": cannot tell the engine of " + pyRepr(command) + ": expected `vllm serve ...`, " +
          "`python -m vllm.entrypoints.openai.api_server ...` or `python -m sglang.launch_server ...`");
      }
      engine = defaultEngine;
    }
    return parseTokens(tokens.slice(start), engine, origin, env);
  }

  // repr(text) of a str (for the message above): Python's quotes, and its escapes of what str.isprintable() is not
  var UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;
  function pyRepr(text) {
    var quote = text.indexOf("'") >= 0 && text.indexOf("\"") < 0 ? "\"" : "'";
    var body = Array.from(text).map(function (ch) {
      var code = ch.codePointAt(0);
      if (ch === "\\") return "\\\\";
      if (ch === quote) return "\\" + quote;
      if (ch === "\n") return "\\n";
      if (ch === "\r") return "\\r";
      if (ch === "\t") return "\\t";
      if (ch === " " || !UNPRINTABLE.test(ch)) return ch;
      var hex = code.toString(16);
      return code < 0x100 ? "\\x" + hex.padStart(2, "0") : code < 0x10000 ? "\\u" + hex.padStart(4, "0") : "\\U" + hex.padStart(8, "0");
    }).join("");
    return quote + body + quote;
  }

  // _settings.parse_tokens
  function parseTokens(args, engine, origin, env) {
    var settings = new Settings(engine, origin, { env: new Map(env || []) });
    var i = 0;
    while (i < args.length) {
      var token = args[i];
      if (token.startsWith("-") && !NUMBER.test(token) && token !== "-" && token !== "--") {
        var at = token.indexOf("=");
        var name = at < 0 ? token : token.slice(0, at);
        var value = at < 0 ? "" : token.slice(at + 1);
        if (at < 0) {
          var following = i + 1 < args.length ? args[i + 1] : null;
          if (following !== null && (!following.startsWith("-") || NUMBER.test(following))) {
            value = following;
            i += 1;
          } else {
            value = null;
          }
        }
        var key = flagKey(name);
        settings.flags.set(key, value);
        if (key.startsWith("no_") && value === null && !settings.flags.has(key.slice(3))) settings.flags.set(key.slice(3), false);
        if (key === "config") settings.notes.push(origin + ": the settings in --config " + pyStr(value) + " are not read; give them as flags");
      } else if (i === 0 && engine === "vllm") {
        settings.flags.set("model", token);
      }
      i += 1;
    }
    return settings;
  }

  // _settings.boolean
  function boolean(value) {
    if (value === null) return true;
    if (typeof value === "boolean") return value;
    if (value === UNKNOWN) return null;
    return get(BOOL_WORDS, pyStrip(pyStr(value)).toLowerCase(), true);
  }

  // --- verifier/audit.py ----------------------------------------------------------------------------------------

  var HOLDS = "holds", UNVERIFIED = "unverified", CHANGED = "changed";
  var BITES = "bites", ONLY_IF = "bites only if";
  var GROUPS = [BITES, ONLY_IF, UNVERIFIED];
  var MET = "met", NOT_MET = "not met", UNDECIDED = "undecided";
  var NOTHING_AUDITED = "nothing audited: no engine version was found at a tracked release; point audit at the " +
    "deployment's files or folder, or give --engine ENGINE==VERSION, --python PATH or --serve-log";

  // audit.nearest_release
  function nearestRelease(version, tracked) {
    var wanted = parseVersion(version);
    if (wanted === null) return [null, version + " is not a PEP 440 version: not audited"];
    var byVersion = [];  // [Version, text], the first text of equal versions (dict.setdefault)
    tracked.forEach(function (text) {
      var v = parseVersion(text);
      if (v !== null && !byVersion.some(function (e) { return compareVersions(e[0], v) === 0; })) byVersion.push([v, text]);
    });
    var lookup = function (v) { var e = byVersion.find(function (x) { return compareVersions(x[0], v) === 0; }); return e ? e[1] : null; };
    if (lookup(wanted) !== null && wanted.local === null) return [lookup(wanted), null];
    var pub = publicOf(wanted);
    var what = wanted.local !== null ? version + " is a local build of " + versionText(pub) : null;
    if (lookup(pub) !== null) return [lookup(pub), what ? what + ": audited as " + lookup(pub) : null];
    if (pub.pre !== null && pub.dev === null && lookup(baseOf(pub)) !== null) {
      var final = lookup(baseOf(pub));
      return [final, version + " is a pre-release of " + final + ": audited as " + final];
    }
    var earlier = byVersion.filter(function (e) { return compareVersions(e[0], pub) < 0; });
    var newest = function (list) { return list.reduce(function (a, b) { return compareVersions(b[0], a[0]) > 0 ? b : a; }); };
    if (!earlier.length) {
      if (!byVersion.length) return [null, "no release of this engine is tracked: " + version + " not audited"];
      var oldest = byVersion.reduce(function (a, b) { return compareVersions(b[0], a[0]) < 0 ? b : a; });
      return [null, version + " is older than the oldest tracked release (" + oldest[1] + "): not audited"];
    }
    var chosen = newest(earlier)[1];
    var why;
    if (pub.dev !== null) why = version + " is a development build";
    else if (compareVersions(pub, newest(byVersion)[0]) > 0) why = version + " is newer than the newest tracked release";
    else why = version + " is not a tracked release";
    return [chosen, why + ": audited as " + chosen + ", the nearest tracked release before it"];
  }

  // audit.decide
  function decide(condition, release, confirmed, settings, defaults) {
    var fromCode = get(defaults || {}, release, null);
    var defaultValue, defaultText;
    if (fromCode !== null) {
      var value = fromCode[0], where = fromCode[1];
      var codeDefault = value === COMPUTED;
      defaultValue = codeDefault && !condition.computed() && confirmed.has(release) ? condition.default : value;
      defaultText = defaultValue === COMPUTED ? "the engine computes the default" :
        "default " + settingWord(defaultValue) + " in " + release + ", " + where;
    } else {
      defaultValue = condition.default;
      defaultText = condition.computed() ? "the engine computes the default" : "default " + settingWord(defaultValue);
    }
    var onlyIf = condition.describe() + " (" + defaultText + ")";
    if (settings === null) return [UNDECIDED, onlyIf];
    var found = setting(condition, settings);
    if (found[1]) {
      var given = found[0];
      if (given === UNKNOWN) return [UNDECIDED, onlyIf + "; the logged value cannot be read"];
      if (condition.boolean()) given = boolean(given);
      else if (given === null) return [UNDECIDED, onlyIf + "; " + condition.setting() + " is given without a value"];
      var met = condition.metBy(given);
      return [met ? MET : NOT_MET, condition.setting() + " is " + settingWord(given) + " (" + settings.origin + ")"];
    }
    if (defaultValue === COMPUTED || defaultValue === null) return [UNDECIDED, onlyIf + "; " + settings.origin + " does not set it"];
    if (fromCode === null && !confirmed.has(release)) return [UNDECIDED, onlyIf + "; that default is not verified in this release"];
    var metDefault = condition.metBy(defaultValue);
    return [metDefault ? MET : NOT_MET, condition.setting() + " is not set: " + defaultText];
  }

  // audit.evaluate
  function evaluate(data, release, settings, condition) {
    condition = condition || conditionFromJson(data);
    if (condition.any.length) {
      var outcomes = [];
      data.any.forEach(function (member, i) {
        var alternative = condition.any[i];
        if (alternative.applies(release)) outcomes.push(evaluate(member, release, settings, alternative));
      });
      if (!outcomes.length) return [MET, []];
      if (outcomes.some(function (o) { return o[0] === MET; })) return [MET, []];
      var openWords = outcomes.filter(function (o) { return o[0] === UNDECIDED; }).map(function (o) { return o[1].join(" and "); });
      if (!openWords.length) {
        var all = [];
        outcomes.forEach(function (o) { all.push.apply(all, o[1]); });
        return [NOT_MET, [all.join("; ")]];
      }
      return [UNDECIDED, [openWords.join(" or ")]];
    }
    if (condition.undecidable()) return [UNDECIDED, [condition.describe()]];
    var spellings = get(data, "spellings", null);
    if (spellings && spellings.length) condition = condition.replace({ flags: condition.flags.concat(spellings) });
    if (condition.given !== null) return presence(condition, settings);
    var decided = decide(condition, release, new Set(data.confirmed), settings, get(data, "defaults", null));
    return [decided[0], [decided[1]]];
  }

  // audit._presence
  function presence(condition, settings) {
    var words = condition.describe();
    if (settings === null) return [UNDECIDED, [words]];
    var found = setting(condition, settings), value = found[0];
    var given = found[1] && !(settings.logged && value === null) && value !== false;
    var met = given === condition.given;
    var shown = condition.setting() + " is " + (given ? "given" : "not given") + " (" + settings.origin + ")";
    return [met ? MET : NOT_MET, [shown]];
  }

  // audit._setting
  function setting(condition, settings) {
    if (condition.env !== null) return settings.env.has(condition.env) ? [settings.env.get(condition.env), true] : [null, false];
    for (var i = 0; i < condition.flags.length; i++) {
      var key = flagKey(condition.flags[i]);
      if (settings.flags.has(key)) return [settings.flags.get(key), true];
    }
    return [null, false];
  }

  // audit._within
  var withinRuns = function (runs, index) { return runs.some(function (r) { return r[0] <= index && index <= r[1]; }); };

  // audit.unabbreviated
  function unabbreviated(kb, engine, release, settings) {
    if (settings === null) return null;
    var surface = get(get(kb, "surface", {}), engine, null) || {};
    var releases = kb.engines[engine].releases;
    if (releases.indexOf(release) < 0 || !withinRuns(get(surface, "recorded", []), releases.indexOf(release))) return settings;
    var index = releases.indexOf(release);
    var flags = get(surface, "flags", {});
    var known = Object.keys(flags).filter(function (key) { return withinRuns(flags[key], index); });
    var renamed = new Map();
    settings.flags.forEach(function (_, key) {
      if (known.indexOf(key) >= 0 || key === "model" || key === "model_tag" || pyLen(key) < 2) return;
      var candidates = known.filter(function (k) { return k.startsWith(key); });
      if (candidates.length === 1 && !settings.flags.has(candidates[0])) renamed.set(key, candidates[0]);
    });
    if (!renamed.size) return settings;
    var written = new Map();
    settings.flags.forEach(function (value, key) { written.set(renamed.has(key) ? renamed.get(key) : key, value); });
    return new Settings(settings.engine, settings.origin, { flags: written, env: settings.env, version: settings.version,
      logged: settings.logged, notes: settings.notes });
  }

  // audit.listed
  function listed(kb, engine, release, settings, ignore) {
    ignore = ignore || new Set();
    settings = unabbreviated(kb, engine, release, settings);
    var found = [], dropped = [], changed = [], ignored = [];
    kb.entries.forEach(function (entry) {
      var status = get(get(entry.statuses, engine, {}), release, null);
      if (status !== HOLDS && status !== UNVERIFIED) {
        if (status === CHANGED) changed.push(entry.id);
        return;
      }
      if (entry.withdrawn) return;
      if (ignore.has(entry.id)) { ignored.push(entry.id); return; }
      var outcome = MET, words = [];
      for (var i = 0; i < entry.conditions.length; i++) {
        var data = entry.conditions[i];
        var condition = conditionFromJson(data);
        if (condition.engine !== engine || !condition.applies(release)) continue;
        var decided = evaluate(data, release, settings, condition);
        if (decided[0] === NOT_MET) {
          outcome = NOT_MET;
          dropped.push([entry.id, decided[1].join("; ")]);
          break;
        }
        if (decided[0] === UNDECIDED) {
          outcome = UNDECIDED;
          words.push.apply(words, decided[1]);
        }
      }
      if (outcome === NOT_MET) return;
      var group = status === UNVERIFIED ? UNVERIFIED : outcome === MET ? BITES : ONLY_IF;
      found.push([entry, group, words]);
    });
    return [found, dropped, changed, ignored];
  }

  // audit.rank
  function rank(kb, entry) {
    var order = kb.severities || [];
    var at = order.indexOf(entry.severity);
    return at >= 0 ? at : order.length;
  }

  // audit.audit, for what the box audits: one pinned engine version (`--engine ENGINE==VERSION`, origin "--engine")
  // and the settings of one serve line, by engine (the CLI's ranges and several versions are not asked here)
  function audit(kb, item, settings, ignore) {
    ignore = ignore || new Set();
    var result = { targets: [], findings: [], dropped: [], notes: [], ignored: [] };
    if (own(kb.engines, item.engine)) {
      var engine = kb.engines[item.engine];
      var given = item.settings !== null ? item.settings : get(settings, item.engine, null);
      var near = nearestRelease(item.version, engine.releases), release = near[0], note = near[1];
      var target = { installed: item, release: release, note: note, releases: release ? [release] : [], upgrade: null };
      result.targets.push(target);
      if (note) result.notes.push(engine.name + " " + note + " (" + item.origin + ")");
      if (release !== null) {
        var got = listed(kb, item.engine, release, given, ignore);
        var found = got[0], dropped = got[1], changed = got[2], ignored = got[3];
        var later = engine.releases.slice(engine.releases.indexOf(release) + 1);
        var clear = clears(kb, item.engine, later, given, ignore, new Set(found.map(function (f) { return f[0].id; })));
        found.forEach(function (f) {
          result.findings.push({ engine: item.engine, release: release, installed: item, entry: textAt(f[0], item.engine, release),
            group: f[1], conditions: f[2], releases: [release], fixed_in: get(clear, f[0].id, null) });
        });
        dropped.forEach(function (d) { result.dropped.push({ engine: item.engine, release: release, id: d[0], reason: d[1] }); });
        result.ignored.push.apply(result.ignored, ignored);
        if (later.length) {
          var newest = listed(kb, item.engine, later[later.length - 1], given, ignore)[0];
          var now = found.map(function (f) { return f[0].id; });
          var there = newest.map(function (f) { return f[0].id; });
          target.upgrade = { to: later[later.length - 1], clears: now.filter(function (i) { return there.indexOf(i) < 0; }),
            brings: there.filter(function (i) { return now.indexOf(i) < 0; }) };
        }
        if (changed.length) {
          result.notes.push(engine.name + " " + release + ": " + changed.length + " entr" + (changed.length === 1 ? "y" : "ies") +
            " whose code says otherwise in this release (`changed`) not listed: " + changed.join(", "));
        }
      }
    }
    var order = {}; GROUPS.forEach(function (g, i) { order[g] = i; });
    var position = new Map(); kb.entries.forEach(function (e, i) { position.set(e.id, i); });
    result.findings.sort(function (a, b) {
      return (order[a.group] - order[b.group]) || (rank(kb, a.entry) - rank(kb, b.entry)) ||
        ((position.has(a.entry.id) ? position.get(a.entry.id) : 0) - (position.has(b.entry.id) ? position.get(b.entry.id) : 0));
    });
    result.targets.forEach(function (t) {
      var given = t.installed.settings || get(settings, t.installed.engine, null);
      if (given !== null && t.release !== null) {
        var full = unabbreviated(kb, t.installed.engine, t.release, given);
        result.notes.push.apply(result.notes, unknownSettings(kb, t.installed.engine, t.release, full));
        given.notes.forEach(function (n) { if (result.notes.indexOf(n) < 0) result.notes.push(n); });
      }
    });
    Object.keys(settings).forEach(function (key) {
      var given = settings[key];
      given.notes.forEach(function (n) { if (result.notes.indexOf(n) < 0) result.notes.push(n); });
      if (!result.targets.some(function (t) { return t.installed.engine === key; })) {
        result.notes.push(given.origin + ": settings of " + key + ", which no audited version is of");
      }
    });
    result.notes = result.notes.filter(function (n, i) { return result.notes.indexOf(n) === i; });
    result.audited = result.targets.some(function (t) { return t.release !== null; });
    return result;
  }

  // audit._clears
  function clears(kb, engine, later, settings, ignore, ids) {
    var listedAt = later.map(function (release) {
      return new Set(listed(kb, engine, release, settings, ignore)[0].map(function (f) { return f[0].id; }));
    });
    var found = {};
    ids.forEach(function (id) {
      for (var i = 0; i < later.length; i++) {
        if (listedAt.slice(i).every(function (there) { return !there.has(id); })) { found[id] = later[i]; break; }
      }
    });
    return found;
  }

  // audit.unknown_settings
  function unknownSettings(kb, engine, release, settings) {
    var surface = get(get(kb, "surface", {}), engine, null) || {};
    var releases = kb.engines[engine].releases;
    if (releases.indexOf(release) < 0 || !withinRuns(get(surface, "recorded", []), releases.indexOf(release))) return [];
    var index = releases.indexOf(release);
    var name = kb.engines[engine].name;
    var prefixes = get({ vllm: ["VLLM_"], sglang: ["SGLANG_", "SGL_"] }, engine, [engine.toUpperCase() + "_"]);
    var notes = [];
    settings.flags.forEach(function (value, key) {
      if (key === "model" || key === "model_tag" || (key.startsWith("no_") && settings.flags.has(key.slice(3)))) return;
      var runs = get(get(surface, "flags", {}), key, null);
      if (runs === null || !withinRuns(runs, index)) {
        var spelt = "--" + key.replace(/_/g, "-");
        notes.push(settings.origin + ": " + spelt + " is not a flag of " + name + " " + release + whereElse(runs, releases));
        return;
      }
      var allowed = null;
      var choices = get(get(surface, "choices", {}), key, []);
      for (var i = 0; i < choices.length; i++) { if (withinRuns(choices[i][0], index)) { allowed = choices[i][1]; break; } }
      if (allowed && allowed.length && typeof value === "string" && value.indexOf("$") < 0 && allowed.indexOf(value) < 0) {
        notes.push(settings.origin + ": --" + key.replace(/_/g, "-") + " " + value + " is not one of its choices in " + name + " " +
          release + " (" + allowed.join(", ") + "): the engine refuses to start");
      }
    });
    settings.env.forEach(function (_, variable) {
      if (!prefixes.some(function (p) { return variable.startsWith(p); })) return;
      var runs = get(get(surface, "env", {}), variable, null);
      if (runs === null || !withinRuns(runs, index)) {
        notes.push(settings.origin + ": " + name + " " + release + " does not read " + variable + whereElse(runs, releases));
      }
    });
    return notes;
  }

  // audit._where_else
  function whereElse(runs, releases) {
    if (!runs || !runs.length) return " (nor any tracked release)";
    return " (it is in " + runs.map(function (r) { return r[0] === r[1] ? releases[r[0]] : releases[r[0]] + "-" + releases[r[1]]; }).join(", ") + ")";
  }

  // audit.headline (a pinned version: no range)
  function headline(target, found) {
    var count = found.length ? found.length + " gotcha" + (found.length !== 1 ? "s" : "") : "no gotcha applies";
    var upgrade = target.upgrade;
    if (upgrade !== null) {
      count += "; upgrading to " + upgrade.to + " clears " + upgrade.clears.length + " of " + found.length +
        (upgrade.brings.length ? " and brings " + upgrade.brings.length + " new" : "");
    }
    return count;
  }

  // audit.fixed_words
  function fixedWords(target, finding) {
    if (target.upgrade === null) return null;
    return finding.fixed_in ? "fixed in " + finding.fixed_in : "not fixed in any tracked release";
  }

  // --- api/audit.json, unpacked: verifier/site/audit_data.py `pack` undone, into the shape of its `subset` ----------

  var CONDITION_KEYS = [["engine", null], ["flags", []], ["env", null], ["request", null], ["endpoint", null],
    ["only_if", null], ["values", []], ["negated", false], ["default", null], ["witness", null], ["since", null],
    ["until", null], ["set", null], ["any", []], ["confirmed", []], ["defaults", {}], ["spellings", []]];
  var STATUS_WORDS = { h: "holds", u: "unverified", c: "changed", n: "not-affected" };

  var FORMAT = 1;  // audit_data.FORMAT

  // audit_data.pack, undone
  function unpack(packed) {
    if (packed.format !== FORMAT) throw new Error("api/audit.json is of format " + packed.format + ", not " + FORMAT);
    var releasesOf = function (engine) { return packed.engines[engine].releases; };
    var fromRuns = function (engine, runs) {
      var releases = releasesOf(engine), out = [];
      runs.forEach(function (r) { for (var i = r[0]; i <= r[1]; i++) out.push(releases[i]); });
      return out;
    };
    var condition = function (data) {
      var full = {};
      CONDITION_KEYS.forEach(function (kd) { full[kd[0]] = own(data, kd[0]) ? data[kd[0]] : JSON.parse(JSON.stringify(kd[1])); });
      full.any = full.any.map(condition);
      full.confirmed = own(data, "confirmed") ? fromRuns(full.engine, data.confirmed) : [];
      full.defaults = {};
      if (own(data, "defaults")) {
        var releases = releasesOf(full.engine);
        data.defaults.forEach(function (place) {
          place[2].forEach(function (run) {
            for (var i = run[0]; i <= run[1]; i++) full.defaults[releases[i]] = [place[0], run[2] === null ? place[1] : place[1] + ":" + run[2]];
          });
        });
      }
      return full;
    };
    var entry = function (data) {
      var texts = {};
      Object.keys(data.texts).forEach(function (engine) {
        texts[engine] = data.texts[engine].map(function (t) {
          return { releases: fromRuns(engine, t[0]), title: t[1] === null ? data.title : t[1],
            workaround: t[2] === null ? data.workaround : t[2], parts: t.length > 3 ? t[3] : [] };
        });
      });
      var statuses = {};
      Object.keys(data.statuses).forEach(function (engine) {
        var releases = releasesOf(engine), by = {};
        Array.from(data.statuses[engine]).forEach(function (letter, i) { if (own(STATUS_WORDS, letter)) by[releases[i]] = STATUS_WORDS[letter]; });
        statuses[engine] = by;
      });
      return { id: data.id, title: data.title, severity: data.severity, workaround: data.workaround,
        withdrawn: own(data, "withdrawn") ? data.withdrawn : null, texts: texts, conditions: data.conditions.map(condition),
        statuses: statuses };
    };
    var engines = {};
    Object.keys(packed.engines).forEach(function (key) { engines[key] = { name: packed.engines[key].name, releases: packed.engines[key].releases }; });
    return { format: packed.kb_format, compiled_by: packed.compiled_by, severities: packed.severities, engines: engines,
      surface: packed.surface, entries: packed.entries.map(entry) };
  }

  // --- the box --------------------------------------------------------------------------------------------------

  // `--engine` as the box reads it: "0.10.0" (the engine of the command line), "vllm==0.10.0" (the engine's key or
  // package), "vLLM 0.10.0" (its name). Returns {engine, version} (engine null: take the command line's), or a problem.
  function readVersion(kb, text) {
    var trimmed = pyStrip(text);
    if (!trimmed) return { problem: "Give the engine version you run, e.g. \u201cvllm==0.10.0\u201d or \u201c0.10.0\u201d." };
    var m = /^(.*?)[ \t]*(?:==|[ \t])[ \t]*([^ \t=]+)$/.exec(trimmed);
    if (!m) return { engine: null, version: trimmed };
    var word = m[1].toLowerCase().replace(/[-_.]+/g, "-");
    var engine = Object.keys(kb.engines).find(function (key) {
      return key.toLowerCase().replace(/[-_.]+/g, "-") === word || kb.engines[key].name.toLowerCase() === m[1].toLowerCase();
    });
    if (!engine) {
      return { problem: "No engine \u201c" + m[1] + "\u201d: write ENGINE==VERSION with one of " + Object.keys(kb.engines).join(", ") + " (vllm==0.10.0)." };
    }
    return { engine: engine, version: m[2] };
  }

  // A word of the shell, quoted as a POSIX shell reads it back.
  var shellQuote = function (text) { return /^[A-Za-z0-9_@%+=:,.\/=-]+$/.test(text) ? text : "'" + text.replace(/'/g, "'\"'\"'") + "'"; };

  // Run the box: [result, the CLI command] or throws DeploymentError with what to fix.
  function run(kb, command, versionText) {
    var wanted = readVersion(kb, versionText);
    if (wanted.problem) throw new DeploymentError(wanted.problem);
    var settings = {};
    var given = null;
    if (pyStrip(command)) {
      if (/(^|\s)docker\s+run\s/.test(command.replace(CONTINUATION, " "))) {
        throw new DeploymentError("A docker run line: the box reads serve command lines; run the command below in a terminal, " +
          "which reads the image's version and the settings after it.");
      }
      given = parseServe(command, wanted.engine);
      settings[given.engine] = given;
    }
    var engine = wanted.engine || (given && given.engine);
    if (!engine) throw new DeploymentError("Say which engine: \u201cvllm==" + wanted.version + "\u201d or \u201csglang==" + wanted.version + "\u201d.");
    var item = { engine: engine, version: wanted.version, origin: "--engine", specifier: null, settings: null };
    var cli = "gotchas audit" + (pyStrip(command) ? " --serve " + shellQuote(command.trim()) : "") + " --engine " + shellQuote(engine + "==" + wanted.version);
    return [audit(kb, item, settings), cli];
  }

  var api = { parseServe: parseServe, parseTokens: parseTokens, shlexSplit: shlexSplit, flagKey: flagKey, boolean: boolean,
    settingValue: settingValue, settingWord: settingWord, pyFloatRepr: pyFloatRepr, parseVersion: parseVersion,
    versionText: versionText, compareVersions: compareVersions, within: within, nearestRelease: nearestRelease,
    conditionFromJson: conditionFromJson, evaluate: evaluate, decide: decide, unabbreviated: unabbreviated, listed: listed,
    audit: audit, unpack: unpack, run: run, DeploymentError: DeploymentError };
  window.gotchasAudit = api;  // what tests/test_site_audit.py calls

  // --- the page -------------------------------------------------------------------------------------------------

  var byId = function (id) { return document.getElementById(id); };
  var form = byId("audit-form");
  var out = byId("audit-result");
  if (!form || !out) return;
  var base = document.body.getAttribute("data-root") || "";
  var status = byId("audit-status");
  // The status line: progress, or the problem that keeps the box from answering (then no stale answer is shown).
  var say = function (text, problem) {
    status.textContent = text;
    status.classList.toggle("audit-problem", !!problem);
    if (problem) { out.hidden = true; out.textContent = ""; }
  };
  var loading = null;
  // api/audit.json, fetched once (again after a failure), unpacked
  var load = function () {
    if (!loading) {
      loading = fetch(base + "api/audit.json").then(function (r) {
        if (!r.ok) throw new Error("api/audit.json: HTTP " + r.status);
        return r.json();
      }).then(unpack);
      loading.catch(function () { loading = null; });  // a later submit tries again
    }
    return loading;
  };

  // An element with attributes and children (text is always a text node)
  var el = function (tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    (children || []).forEach(function (c) { node.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
    return node;
  };
  // Text with `code` spans (the workaround's Markdown), as text nodes: nothing of it is markup.
  var withCode = function (text) {
    return text.split("`").map(function (part, i) { return i % 2 ? el("code", {}, [part]) : document.createTextNode(part); });
  };
  var entryLink = function (id, text) { return el("a", { href: base + "entries/" + encodeURIComponent(id) + "/" }, [text]); };

  // audit.text, as the page shows it: the same lines, words and order, entries linked to their pages.
  function render(kb, result, cli) {
    out.textContent = "";
    var target = result.targets.find(function (t) { return t.release !== null; });
    var heading = el("h3", { id: "audit-heading", tabindex: "-1" });
    out.appendChild(heading);
    out.appendChild(el("p", { class: "audit-cli" }, ["In a terminal: ", el("code", {}, [cli])]));
    if (target) {
      var name = kb.engines[target.installed.engine].name;
      var version = target.installed.version;
      var shown = version === target.release ? version : version + " (audited as " + target.release + ")";
      var found = result.findings.filter(function (f) { return f.installed === target.installed; });
      heading.textContent = name + " " + shown + " (" + target.installed.origin + "): " + headline(target, found);
      GROUPS.forEach(function (group, g) {
        var members = found.filter(function (f) { return f.group === group; });
        if (!members.length) return;
        out.appendChild(el("h4", { id: "audit-group-" + g }, [group + " (" + members.length + "):"]));
        var list = el("ul", { class: "audit-list", "data-group": group, "aria-labelledby": "audit-group-" + g });
        members.forEach(function (f) {
          var item = el("li", { "data-entry": f.entry.id }, [
            el("span", { class: "severity severity-" + (f.entry.severity || "unrated") }, [f.entry.severity || "unrated"]), " ",
            el("span", { class: "audit-title" }, [entryLink(f.entry.id, f.entry.title)]), " ", el("code", { class: "audit-id" }, [f.entry.id])]);
          if (f.entry.parts && f.entry.parts.length) item.appendChild(el("p", { class: "audit-parts" }, ["bites " + f.entry.parts.join("; ")]));
          if (f.conditions.length) {
            item.appendChild(el("ul", { class: "audit-only-if" }, f.conditions.map(function (w) { return el("li", {}, ["only if " + w]); })));
          }
          if (f.entry.workaround) item.appendChild(el("p", { class: "audit-workaround" }, ["workaround: "].concat(withCode(f.entry.workaround))));
          var fixed = fixedWords(target, f);
          if (fixed) item.appendChild(el("p", { class: "audit-fixed" }, [fixed]));
          list.appendChild(item);
        });
        out.appendChild(list);
      });
      if (target.upgrade !== null && target.upgrade.brings.length) {
        var brings = el("p", { class: "audit-brings" }, ["upgrading to " + target.upgrade.to + " brings: "]);
        target.upgrade.brings.forEach(function (id, i) { if (i) brings.appendChild(document.createTextNode(", ")); brings.appendChild(entryLink(id, id)); });
        out.appendChild(brings);
      }
    } else {
      heading.textContent = "Nothing audited";
    }
    if (result.dropped.length) {
      out.appendChild(el("h4", { id: "audit-dropped" }, ["not listed, because of the deployment's settings (" + result.dropped.length + "):"]));
      out.appendChild(el("ul", { class: "audit-list", "data-group": "dropped", "aria-labelledby": "audit-dropped" }, result.dropped.map(function (d) {
        return el("li", { "data-entry": d.id }, [entryLink(d.id, d.id), " (" + d.engine + " " + d.release + "): ",
          el("span", { class: "audit-reason" }, [d.reason])]);
      })));
    }
    if (!result.audited) out.appendChild(el("p", { class: "audit-nothing" }, [NOTHING_AUDITED]));
    if (result.notes.length) {
      out.appendChild(el("h4", { id: "audit-notes" }, ["notes (" + result.notes.length + "):"]));
      out.appendChild(el("ul", { class: "audit-notes", "aria-labelledby": "audit-notes" }, result.notes.map(function (n) { return el("li", {}, ["note: " + n]); })));
    }
    out.hidden = false;
    heading.focus();
  }

  var serve = byId("audit-serve"), versionInput = byId("audit-version");
  form.addEventListener("input", function () { load().catch(function () { /* said on submit */ }); }, { once: true });
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    say("Reading the knowledge base\u2026");
    load().then(function (kb) {
      var done;
      try {
        done = run(kb, serve.value, versionInput.value);
      } catch (exc) {
        if (!(exc instanceof DeploymentError)) throw exc;
        say(exc.message, true);
        return;
      }
      say("");
      render(kb, done[0], done[1]);
    }).catch(function (exc) {
      say("The knowledge base could not be read (" + exc.message + "); run the command in a terminal instead.", true);
    });
  });
  form.hidden = false;
  var help = byId("audit-nojs");
  if (help) help.hidden = true;
})();
