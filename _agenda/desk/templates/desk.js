// The desk's little script: the page works without it. Opens the day at now, prints it, reloads when the agenda
// changed (a poll of /desk/version that never restarts the session's idle time), counts the waiting room's
// running waits on, "/" jumps to the search, the arrows change day, and keys reach a free slot (n, p, 1-9,
// and the up and down arrows from the empty search box or a free slot) or a waiting room's row: docs/desk.md.
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
  var poll = new URL("version", document.currentScript.src);  // /desk/version beside this script, prefix and all
  function typing() {  // the empty search box, where focus starts, leaves the keys to the page
    var active = document.activeElement;
    if (active && active.id === "q" && active.value === "") { return false; }
    return active && /^(INPUT|SELECT|TEXTAREA)$/.test(active.tagName);
  }
  if (version) {
    window.setInterval(function () {
      if (typing() || document.hidden) { return; }
      fetch(poll, {credentials: "same-origin", cache: "no-store"})
        .then(function (answer) { return answer.ok ? answer.json() : null; })
        .then(function (body) { if (body && String(body.version) !== version) { window.location.reload(); } })
        .catch(function () {});
    }, 20000);
  }
  var loaded = Date.now(), ticks = document.querySelectorAll(".tick[data-minutes]");
  if (ticks.length) {  // the waiting room's running waits count on between the reloads a change brings
    window.setInterval(function () {
      var passed = Math.floor((Date.now() - loaded) / 60000);
      Array.prototype.forEach.call(ticks, function (tick) {
        tick.textContent = String(Number(tick.getAttribute("data-minutes")) + passed);
      });
    }, 15000);
  }
  function place(element) {  // [column, row] of a timeline block, from its grid classes (cN, rN)
    var column = /(?:^|\s)c(\d+)(?:\s|$)/.exec(element.className), row = /(?:^|\s)r(\d+)(?:\s|$)/.exec(element.className);
    return [column ? Number(column[1]) : 0, row ? Number(row[1]) : 0];
  }
  function freeSlot(key, here) {  // the free slot a key asks for (a cell the server drew free: data-slot): docs/desk.md
    var best = null, slots = document.querySelectorAll(".timeline a[data-slot]");
    var at = here ? place(here) : null, column = /^[1-9]$/.test(key) ? Number(key) + 1 : null;
    var back = key === "p" || key === "ArrowUp";
    Array.prototype.forEach.call(slots, function (slot) {
      var there = place(slot), fits;
      if (column) { fits = there[0] === column; } else if (at) {
        fits = there[0] === at[0] && (back ? there[1] < at[1] : there[1] > at[1]);
      } else { fits = !back; }
      var better = !best || (back ? there[1] > best.at[1] : there[1] < best.at[1] ||
        (there[1] === best.at[1] && there[0] < best.at[0]));
      if (fits && better) { best = {slot: slot, at: there}; }
    });
    return best && best.slot;
  }
  function nextRow(back) {  // the waiting room's rows, each by its first button (data-row), in the page's order
    var rows = Array.prototype.slice.call(document.querySelectorAll("button[data-row]"));
    var at = rows.indexOf(document.activeElement);
    return at < 0 ? (back ? null : rows[0]) : rows[at + (back ? -1 : 1)];
  }
  document.addEventListener("keydown", function (event) {
    if (typing() || event.altKey || event.ctrlKey || event.metaKey) { return; }
    var active = document.activeElement, onSlot = active && active.matches && active.matches(".timeline a[data-slot]");
    var inSearch = active && active.id === "q", key = event.key;
    var onRow = active && active.matches && active.matches("button[data-row]");
    if (/^Arrow(Up|Down)$/.test(key) && (inSearch || onRow) && document.querySelector("button[data-row]")) {
      var row = nextRow(key === "ArrowUp");
      event.preventDefault();
      if (row) { row.focus(); }
      return;
    }
    var slotKey = /^([1-9]|n|p)$/.test(key) ? !inSearch : /^Arrow(Up|Down)$/.test(key) && (inSearch || onSlot);
    var slot = slotKey && freeSlot(key, onSlot ? active : null);
    if (slot) { event.preventDefault(); slot.focus(); return; }
    if (slotKey) { return; }
    var target = {"/": "q", "ArrowLeft": "previous", "ArrowRight": "following"}[event.key];
    var element = target && document.getElementById(target);
    if (!element) { return; }
    event.preventDefault();
    if (target === "q") { element.focus(); } else { window.location.href = element.href; }
  });
}());
