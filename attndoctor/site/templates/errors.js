// Script errors are written into the page, so a headless browser's DOM dump shows them.
(function () {
  function note(text) {
    var box = document.getElementById("page-errors");
    if (!box) { window.__pageErrors = (window.__pageErrors || []).concat([text]); return; }
    box.hidden = false;
    box.textContent += text + "\n";
  }
  window.addEventListener("error", function (ev) { note("error: " + ev.message); });
  window.addEventListener("unhandledrejection", function (ev) { note("rejection: " + ev.reason); });
  var original = console.error;
  console.error = function () { note("console.error: " + Array.prototype.join.call(arguments, " ")); original.apply(console, arguments); };
  document.addEventListener("DOMContentLoaded", function () { (window.__pageErrors || []).forEach(note); });
})();
