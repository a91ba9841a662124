// rpctap export --format html: draws the frame list, the detail pane and
// the transcript from the JSON in #rpctap-data. No network: everything the
// page shows is in the page.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("rpctap-data").textContent);
  var frames = [], turns = [], session = {};
  data.forEach(function (e) {
    if (e.f) frames.push(e.f);
    else if (e.turn) turns.push(e.turn);
    else if (e.session) session = e.session;
  });
  frames.sort(function (a, b) { return a.n - b.n; });
  var byRec = {};
  frames.forEach(function (f) { byRec[f.n] = f; });

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function clock(ns) {
    var ms = ns / 1e6, s = Math.floor(ms / 1000), m = Math.floor(s / 60);
    return String(m).padStart(2, "0") + ":" + String(s % 60).padStart(2, "0") + "." + String(Math.floor(ms % 1000)).padStart(3, "0");
  }
  function dur(ns) {
    if (ns === undefined || ns === null) return "";
    if (ns < 1e6) return (ns / 1e3).toFixed(0) + "µs";
    if (ns < 1e9) return (ns / 1e6).toFixed(1) + "ms";
    return (ns / 1e9).toFixed(2) + "s";
  }
  function parse(p) { try { return JSON.parse(p); } catch (e) { return null; } }
  function words(s, n) { s = String(s || "").replace(/\s+/g, " ").trim(); return s.length > n ? s.slice(0, n) + "…" : s; }

  // summary: what the frame is, beyond its method (ACP update kinds and
  // text, MCP tool names, error codes).
  function summary(f) {
    if (f.err) return f.err;
    var j = parse(f.p);
    if (!j) return "";
    var p = j.params || {};
    if (f.m === "session/update" && p.update) {
      var u = p.update, t = u.sessionUpdate || "";
      if (u.content && u.content.text) return t + " " + words(u.content.text, 60);
      if (u.title) return t + " " + words(u.title, 60) + (u.status ? " (" + u.status + ")" : "");
      if (u.toolCallId) return t + " " + u.toolCallId + (u.status ? " " + u.status : "");
      return t;
    }
    if (f.m === "session/prompt" && Array.isArray(p.prompt)) {
      return words(p.prompt.map(function (c) { return c.text || ""; }).join(" "), 60);
    }
    if (f.m === "tools/call" && p.name) return p.name;
    if (j.result && j.result.isError) return "isError";
    if (j.result && j.result.stopReason) return j.result.stopReason;
    if (typeof j.type === "string") return j.type;
    return "";
  }

  document.getElementById("session").textContent =
    (session.file || "") + " · " + (session.protocol || "") + " · " + (session.created || "") + " · " + frames.length + " frames";

  var tbody = document.getElementById("rows"), rows = [], sel = -1;
  frames.forEach(function (f, i) {
    var tr = el("tr", "frame dir-" + f.d + " " + (f.k || "raw") + (f.err ? " err" : ""));
    tr.dataset.rec = f.n;
    [String(f.n), clock(f.t), f.d === "in" ? "→ in" : "← out", f.k || "", f.m || "", f.id || "", dur(f.lat), summary(f)].forEach(function (v, c) {
      tr.appendChild(el("td", ["n", "t", "dir", "kind", "method", "id", "lat", "sum"][c], v));
    });
    tr.addEventListener("click", function () { select(i); });
    tbody.appendChild(tr);
    rows.push(tr);
  });

  function pretty(p) { var j = parse(p); return j === null ? p : JSON.stringify(j, null, 2); }
  function select(i) {
    if (i < 0 || i >= rows.length) return;
    if (sel >= 0) rows[sel].classList.remove("sel");
    sel = i;
    rows[i].classList.add("sel");
    rows[i].scrollIntoView({ block: "nearest" });
    var f = frames[i], d = document.getElementById("detail");
    d.textContent = "";
    d.appendChild(el("h2", "", "#" + f.n + " " + (f.d === "in" ? "→ in" : "← out") + " " + (f.k || "") + " " + (f.m || "")));
    var facts = "at " + clock(f.t) + (f.id ? " · id " + f.id : "") + (f.lat !== undefined ? " · latency " + dur(f.lat) : "") + (f.err ? " · " + f.err : "");
    d.appendChild(el("div", "facts", facts));
    d.appendChild(el("pre", "payload", pretty(f.p)));
    var o = f.pair && byRec[f.pair];
    if (o) {
      d.appendChild(el("h2", "", (o.k === "response" ? "answer" : "request") + " #" + o.n + " at " + clock(o.t)));
      d.appendChild(el("pre", "payload pair", pretty(o.p)));
    }
  }
  document.addEventListener("keydown", function (e) {
    if (e.target && e.target.id === "filter") return;
    var step = e.key === "ArrowDown" || e.key === "j" ? 1 : e.key === "ArrowUp" || e.key === "k" ? -1 : 0;
    if (e.key === "/") { e.preventDefault(); document.getElementById("filter").focus(); return; }
    if (!step) return;
    e.preventDefault();
    for (var i = sel + step; i >= 0 && i < rows.length; i += step) {
      if (!rows[i].hidden) { select(i); return; }
    }
  });
  document.getElementById("filter").addEventListener("input", function (e) {
    var q = e.target.value.toLowerCase();
    rows.forEach(function (tr, i) {
      tr.hidden = q !== "" && (tr.textContent + " " + frames[i].p).toLowerCase().indexOf(q) < 0;
    });
  });

  var tv = document.getElementById("transcript");
  if (turns.length === 0) tv.appendChild(el("p", "hint", "No transcript: this session has no prompts or streamed text."));
  turns.forEach(function (t) {
    var box = el("div", "turn");
    box.appendChild(el("h3", "", t.n > 0 ? "turn " + t.n + " · " + t.m + " · #" + t.rec + " at " + clock(t.t) + (t.done >= 0 ? " · took " + dur(t.done) : " · open") : "before the first prompt"));
    (t.e || []).forEach(function (x) {
      var p = el("div", "entry " + x.k, x.text + " ");
      var a = el("span", "rec", "#" + x.rec);
      a.addEventListener("click", function () {
        show("frames");
        for (var i = 0; i < frames.length; i++) if (frames[i].n === x.rec) { select(i); break; }
      });
      p.appendChild(a);
      box.appendChild(p);
    });
    tv.appendChild(box);
  });

  function show(which) {
    document.getElementById("frames-view").hidden = which !== "frames";
    document.getElementById("transcript-view").hidden = which !== "transcript";
    document.getElementById("tab-frames").classList.toggle("on", which === "frames");
    document.getElementById("tab-transcript").classList.toggle("on", which === "transcript");
  }
  document.getElementById("tab-frames").addEventListener("click", function () { show("frames"); });
  document.getElementById("tab-transcript").addEventListener("click", function () { show("transcript"); });
  if (location.hash === "#transcript") show("transcript");
  select(0);
  document.body.dataset.rendered = String(rows.length);
})();
