// The picker: settings from the URL fragment (#gpu=H100&dtype=bf16&mode=train&hdim=128&feature=none&stack=newest),
// answers looked up in the precomputed tables of data.js (the engine's verdicts; nothing is decided here).
(function () {
  var D = window.SITE_DATA;
  var STATUS = {"supported": "\u2713 runs", "known-bug": "\u26a0 runs, known bug", "wrong-results": "\u26a0 wrong results",
    "unsupported": "\u2717 refused", "api-mismatch": "\u2717 fails at run time", "depends": "? depends",
    "outside-rules": "outside the rules", "not-installed": "not installed"};
  var decoded = {};
  function table(backend) {
    if (!decoded[backend]) {
      var rle = D.tables[backend], n = 0, i, j, k = 0;
      for (i = 1; i < rle.length; i += 2) n += rle[i];
      var out = new Uint32Array(n);
      for (i = 0; i < rle.length; i += 2) for (j = 0; j < rle[i + 1]; j++) out[k++] = rle[i];
      decoded[backend] = out;
    }
    return decoded[backend];
  }
  // normalize_gpu_name's key: lower case, without NVIDIA/GeForce/Tesla and anything not a letter or digit.
  function norm(s) { return String(s).toLowerCase().replace(/\b(nvidia|geforce|tesla)\b/g, " ").replace(/[^a-z0-9]/g, ""); }
  function findGpu(name) {
    var want = norm(name), i;
    for (i = 0; i < D.gpus.length; i++) if (norm(D.gpus[i][0]) === want) return D.gpus[i];
    for (i = 0; i < D.gpus.length; i++) if (D.gpus[i][4].indexOf(want) >= 0) return D.gpus[i];
    var m = /^sm(\d+)$/.exec(want);
    if (m) for (i = 0; i < D.gpus.length; i++) if (D.gpus[i][1] === +m[1]) return D.gpus[i];
    return null;
  }
  var fields = ["gpu", "stack", "dtype", "mode", "hdim", "feature"];
  function defaults() { return {gpu: "H100", stack: D.stacks[0][0], dtype: "bf16", mode: "train", hdim: "128", feature: "none"}; }
  function readHash() {
    var s = defaults();
    location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
      var p = kv.split("=");
      if (p.length === 2 && fields.indexOf(p[0]) >= 0) s[p[0]] = decodeURIComponent(p[1]);
    });
    return s;
  }
  function option(sel, value, label) {
    var o = document.createElement("option"); o.value = value; o.textContent = label; sel.appendChild(o);
  }
  function setup() {
    var g = document.getElementById("f-gpu");
    var byArch = {};
    D.gpus.forEach(function (x) { (byArch[x[2]] = byArch[x[2]] || []).push(x); });
    Object.keys(byArch).forEach(function (arch) {
      var grp = document.createElement("optgroup"); grp.label = arch;
      byArch[arch].forEach(function (x) { option(grp, x[0], x[0] + " (sm" + x[1] + ")"); });
      g.appendChild(grp);
    });
    D.stacks.forEach(function (s) {
      var v = s[2], text = s[1] + ": " + Object.keys(v).map(function (k) { return k + " " + v[k]; }).join(", ");
      option(document.getElementById("f-stack"), s[0], text);
    });
    D.axes.dtype.forEach(function (x) { option(document.getElementById("f-dtype"), x, x); });
    D.axes.mode.forEach(function (x) { option(document.getElementById("f-mode"), x, x); });
    D.axes.hdim.forEach(function (x) { option(document.getElementById("f-hdim"), String(x), String(x)); });
    D.axes.feature.forEach(function (x) { option(document.getElementById("f-feature"), x[0], x[1]); });
    fields.forEach(function (f) {
      document.getElementById("f-" + f).addEventListener("change", function () {
        var parts = fields.map(function (k) { return k + "=" + encodeURIComponent(document.getElementById("f-" + k).value); });
        location.hash = parts.join("&");
      });
    });
    window.addEventListener("hashchange", render);
    render();
  }
  function esc(s) { var d = document.createElement("div"); d.textContent = s; return d.innerHTML; }
  function render() {
    var s = readHash(), gpu = findGpu(s.gpu), note = document.getElementById("setting");
    var out = document.getElementById("verdict-rows");
    out.innerHTML = "";
    if (!gpu) { note.textContent = "unknown GPU: " + s.gpu; return; }
    var ax = D.axes, feats = ax.feature.map(function (f) { return f[0]; });
    var di = ax.dtype.indexOf(s.dtype), mi = ax.mode.indexOf(s.mode), hi = ax.hdim.indexOf(+s.hdim), fi = feats.indexOf(s.feature);
    var si = D.stacks.map(function (x) { return x[0]; }).indexOf(s.stack);
    if (di < 0 || mi < 0 || hi < 0 || fi < 0 || si < 0) { note.textContent = "setting outside the precomputed lattice"; return; }
    document.getElementById("f-gpu").value = gpu[0];
    ["stack", "dtype", "mode", "hdim", "feature"].forEach(function (k) { document.getElementById("f-" + k).value = s[k]; });
    var nConfigs = ax.dtype.length * ax.mode.length * ax.hdim.length * feats.length;
    var config = ((di * ax.mode.length + mi) * ax.hdim.length + hi) * feats.length + fi;
    var index = (gpu[3] * nConfigs + config) * D.stacks.length + si;
    var stack = D.stacks[si][2];
    note.textContent = gpu[0] + " (sm" + gpu[1] + ", " + gpu[2] + "), " + s.dtype + ", " + s.mode + ", head dim " + s.hdim +
      ", " + ax.feature[fi][1] + "; " + Object.keys(stack).map(function (k) { return k + " " + stack[k]; }).join(", ");
    var cmd = document.getElementById("explain-cmd");
    if (cmd) cmd.textContent = explainCommand(gpu[0], s, stack, fi);
    D.backends.forEach(function (b) {
      var v = D.verdicts[table(b[0])[index]];
      var status = D.statuses[v[0]];
      var reasons = v[1].map(function (p) {
        return '<a href="rules/' + esc(D.rules[p[0]]) + '.html">' + esc(D.rules[p[0]]) + "</a>: " + esc(D.messages[p[1]]);
      }).join("<br>");
      var tr = document.createElement("tr");
      tr.className = status; tr.setAttribute("data-backend", b[0]); tr.setAttribute("data-status", status);
      tr.innerHTML = '<td><a href="backends/' + esc(b[0]) + '.html">' + esc(b[0]) + "</a></td>" +
        '<td class="status">' + esc(STATUS[status] || status) + "</td>" +
        '<td class="reason">' + reasons + "</td>" +
        '<td class="fix">' + (v[2] >= 0 ? esc(D.fixes[v[2]]) : "") + "</td>";
      out.appendChild(tr);
    });
  }
  function explainCommand(gpu, s, stack, fi) {
    var c = D.base_config, parts = ["attndoctor explain --gpu '" + gpu + "'"];
    Object.keys(stack).forEach(function (k) { parts.push("--" + k.replace(/_/g, "-") + " " + stack[k]); });
    var extra = D.feature_flags[D.axes.feature[fi][0]];
    if (extra.indexOf("--kv-heads") < 0) parts.push("--kv-heads " + c.kv_heads);
    parts.push("--batch " + c.batch, "--heads " + c.heads, "--seqlen " + c.seqlen, "--layout " + c.layout,
      "--hdim " + s.hdim, "--dtype " + s.dtype, s.mode === "train" ? "--train" : "--infer");
    if (extra.length) parts.push(extra);
    return parts.join(" ");
  }
  document.addEventListener("DOMContentLoaded", setup);
})();
