// The desk's little script: the page works without it. Opens the day at now, prints it, reloads when the agenda
// changed (a poll of /desk/version that never restarts the session's idle time), "/" jumps to the
// search, the arrows change day.
(function () {
  "use strict";
  var now = document.getElementById("now");
  if (now) {  // the timeline scrolls, never the page: the toolbar stays in sight
    now.parentNode.scrollTop = now.offsetTop - now.parentNode.clientHeight / 3;
  }
  var print = document.getElementById("print");
  if (print) {  // without the script, the link shows the printed day
    print.addEventListener("click", function (event) { event.preventDefault(); window.print(); });
  }
  var version = document.body.getAttribute("data-version");
  function typing() {  // the empty search box, where focus starts, leaves the keys to the page
    var active = document.activeElement;
    if (active && active.id === "q" && active.value === "") { return false; }
    return active && /^(INPUT|SELECT|TEXTAREA)$/.test(active.tagName);
  }
  if (version) {
    window.setInterval(function () {
      if (typing() || document.hidden) { return; }
      fetch("/desk/version", {credentials: "same-origin", cache: "no-store"})
        .then(function (answer) { return answer.ok ? answer.json() : null; })
        .then(function (body) { if (body && String(body.version) !== version) { window.location.reload(); } })
        .catch(function () {});
    }, 20000);
  }
  document.addEventListener("keydown", function (event) {
    if (typing() || event.altKey || event.ctrlKey || event.metaKey) { return; }
    var target = {"/": "q", "ArrowLeft": "previous", "ArrowRight": "following"}[event.key];
    var element = target && document.getElementById(target);
    if (!element) { return; }
    event.preventDefault();
    if (target === "q") { element.focus(); } else { window.location.href = element.href; }
  });
}());
