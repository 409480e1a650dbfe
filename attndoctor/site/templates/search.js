// Search over rule ids, titles, messages and symptoms (SEARCH_INDEX from search-index.js).
(function () {
  function esc(s) { var d = document.createElement("div"); d.textContent = s; return d.innerHTML; }
  function run() {
    var box = document.getElementById("q"), out = document.getElementById("search-results");
    var words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
    out.innerHTML = "";
    if (!words.length) return;
    var hits = window.SEARCH_INDEX.filter(function (r) {
      var text = (r[0] + "\n" + r[1] + "\n" + r[2] + "\n" + r[3]).toLowerCase();
      return words.every(function (w) { return text.indexOf(w) >= 0; });
    });
    document.getElementById("count").textContent = hits.length + " of " + window.SEARCH_INDEX.length;
    hits.slice(0, 200).forEach(function (r) {
      var li = document.createElement("li");
      li.innerHTML = '<a href="rules/' + esc(r[0]) + '.html">' + esc(r[0]) + "</a> " + esc(r[1]) +
        (r[3] ? '<br><span class="muted">' + esc(r[3].slice(0, 240)) + "</span>" : "");
      out.appendChild(li);
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    var box = document.getElementById("q");
    var m = /[#&]q=([^&]*)/.exec(location.hash);
    if (m) box.value = decodeURIComponent(m[1]);
    box.addEventListener("input", run);
    run();
  });
})();
