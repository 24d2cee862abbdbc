// Drag to move, and to lengthen (docs/design.md): a card of the day or of a doctor's week dragged to a start of a
// column sends the appointment page's move form (slot: date|time|doctor|center), its lower edge dragged sends its
// length form (minutes), with the session's CSRF token; a refusal brings the card back and says, at the card, the
// words of the page the form would show; a change done reloads the view. On a focused card, m (then the arrows) or
// d (then up and down), Enter sends, Esc leaves it; the line under the timeline says each step. Without the script,
// the forms do it all.
(function () {
  "use strict";
  var grid = document.querySelector(".timeline[data-first]"), news = document.getElementById("drag-news");
  var token = document.querySelector("input[name=csrf]");
  if (!grid || !news || !token) { return; }
  var first = Number(grid.getAttribute("data-first")), drag = null, suppressClick = false;

  function minutes(text) { return Number(text.slice(0, 2)) * 60 + Number(text.slice(3, 5)); }
  function hhmm(minute) {
    return (minute < 600 ? "0" : "") + Math.floor(minute / 60) + ":" + (minute % 60 < 10 ? "0" : "") + minute % 60;
  }
  function gridClass(element, letter) {
    var found = new RegExp("(?:^|\\s)" + letter + "(\\d+)(?:\\s|$)").exec(element.className);
    return found ? Number(found[1]) : 0;
  }
  var columns = Array.prototype.map.call(grid.querySelectorAll(".col-head[data-starts]"), function (head) {
    return {head: head, at: gridClass(head, "c"), doctor: head.getAttribute("data-doctor"),
            date: head.getAttribute("data-date"), step: Number(head.getAttribute("data-step")) || 5,
            name: head.querySelector(".name").textContent,
            starts: expanded(head.getAttribute("data-starts").split("|"))};
  });
  function expanded(runs) {  // center|first|last|step, a run after another: each start of the column's grid
    var starts = [];
    for (var at = 0; at + 3 < runs.length; at += 4) {
      for (var minute = minutes(runs[at + 1]); minute <= minutes(runs[at + 2]); minute += Number(runs[at + 3]) || 1440) {
        starts.push({time: hhmm(minute), center: runs[at], minute: minute});
      }
    }
    return starts;
  }
  function say(key, values) {
    var text = news.getAttribute("data-" + key) || key;
    Object.keys(values || {}).forEach(function (name) { text = text.split("{" + name + "}").join(values[name]); });
    news.textContent = text;
  }

  // where a card is and where the pointer is, in the grid's terms

  function cardOf(card) {  // where and how long, from its grid classes; which, from its link
    var at = gridClass(card, "c"), link = card.querySelector("a.who");
    return {card: card, id: /\/(\d+)$/.exec(link.pathname)[1], from: first + gridClass(card, "r") - 2,
            length: gridClass(card, "h"), column: columns.filter(function (column) { return column.at === at; })[0]};
  }
  function minuteAt(y) {  // the minute of the axis at a height on the screen (a tick spans 15 rows of a minute)
    var tick = grid.querySelector(".tick").getBoundingClientRect();
    return first + (y - tick.top) / (tick.height / 15);
  }
  function columnAt(x, otherwise) {
    return columns.filter(function (column) {
      var box = column.head.getBoundingClientRect();
      return box.left <= x && x < box.right;
    })[0] || otherwise;
  }
  function nearest(column, minute) {  // the start of the column's grid nearest to a minute
    return column.starts.reduce(function (best, start) {
      return !best || Math.abs(start.minute - minute) < Math.abs(best.minute - minute) ? start : best;
    }, null);
  }

  // the outline that shows where the card would go, placed by the grid's own classes (nothing inline)

  function outline(column, from, length) {
    if (!drag.ghost) {
      drag.ghost = document.createElement("div");
      drag.ghost.setAttribute("aria-hidden", "true");
      grid.appendChild(drag.ghost);
    }
    var top = Math.max(from, first);
    drag.ghost.className = "drag-ghost c" + column.at + " r" + (top - first + 2) + " h" + Math.max(1, from + length -
                                                                                                   top);
  }
  function show() {
    if (drag.kind === "length") {
      outline(drag.visit.column, drag.visit.from, drag.length);
      say("length", {minutes: drag.length, ends: hhmm(drag.visit.from + drag.length)});
    } else if (drag.start) {
      outline(drag.column, drag.start.minute, drag.visit.length);
      say("to", {time: drag.start.time, column: drag.column.name});
    }
  }
  function begin(card, kind) {
    document.querySelectorAll(".drag-refusal").forEach(function (old) { old.remove(); });
    var visit = cardOf(card);
    if (!visit.column) { return null; }
    drag = {visit: visit, kind: kind, column: visit.column, start: nearest(visit.column, visit.from),
            length: visit.length, ghost: null};
    card.classList.add("dragging");
    grid.classList.add("dragging-on");  // no text is selected on the way
    window.getSelection().removeAllRanges();
    show();
    return drag;
  }
  function end() {
    if (!drag) { return; }
    if (drag.ghost) { drag.ghost.remove(); }
    drag.visit.card.classList.remove("dragging");
    grid.classList.remove("dragging-on");
    drag = null;
  }

  // the request the form sends, and what its answer says

  function refuse(visit, words) {
    var said = document.createElement("p");
    var row = Math.max(visit.from, first) - first + 6;  // four minutes down: the card's name stays in sight
    said.className = "drag-refusal c" + visit.column.at + " r" + row;
    said.setAttribute("role", "alert");
    said.textContent = words;
    grid.appendChild(said);
    news.textContent = words;
  }
  function send() {
    var visit = drag.visit, fields = new URLSearchParams(), path;
    if (drag.kind === "length") {
      if (drag.length === visit.length) { say("left"); return end(); }
      path = "/length";
      fields.append("minutes", String(drag.length));
    } else {
      if (!drag.start || (drag.column === visit.column && drag.start.minute === visit.from)) { say("left"); return end(); }
      path = "/move";
      fields.append("slot", [drag.column.date, drag.start.time, drag.column.doctor, drag.start.center].join("|"));
    }
    fields.append("csrf", token.value);
    end();
    say("sending");
    var address = visit.card.querySelector("a.who").href;  // the appointment's page, under any prefix
    fetch(address + path, {method: "POST", body: fields, credentials: "same-origin", redirect: "manual"})
      .then(function (answer) {
        if (answer.type === "opaqueredirect" || (answer.status >= 300 && answer.status < 400)) {
          window.location.reload();  // done: the flash on the view says what changed and what the patient is sent
          return null;
        }
        return answer.text().then(function (page) {
          var read = new DOMParser().parseFromString(page, "text/html");
          var found = read.querySelector("p.error") || read.querySelector("main h1");  // a crash's page: its heading
          refuse(visit, found ? found.textContent.replace(/\s+/g, " ").trim() : String(answer.status));
        });
      })
      .catch(function () { refuse(visit, String(news.getAttribute("data-left"))); });
  }

  // the pointer: a card dragged by its body moves, by its lower edge lengthens

  Array.prototype.forEach.call(grid.querySelectorAll(".card:not(.squeezed)"), function (card) {
    var visit = cardOf(card), edge = document.createElement("div");  // the card's last two minutes, above it
    edge.className = "stretch c" + gridClass(card, "c") + " r" + (visit.from + visit.length - first) + " h2";
    edge.setAttribute("data-for", visit.id);
    edge.card = card;
    edge.setAttribute("aria-hidden", "true");
    grid.appendChild(edge);
  });
  grid.addEventListener("pointerdown", function (event) {
    var edge = event.target.classList.contains("stretch") ? event.target : null;
    var card = edge ? edge.card : event.target.closest && event.target.closest(".card");
    if (!card || event.button !== 0 || event.target.closest("button, form, input, select")) { return; }
    var kind = edge ? "length" : "move", visit = cardOf(card);
    drag = null;
    var pending = {x: event.clientX, y: event.clientY, card: card, kind: kind,
                   grab: minuteAt(event.clientY) - visit.from};
    function moved(move) {
      if (!drag) {
        if (Math.abs(move.clientX - pending.x) + Math.abs(move.clientY - pending.y) < 6) { return; }
        if (!begin(pending.card, pending.kind)) { return; }
      }
      move.preventDefault();
      if (drag.kind === "length") {
        var step = drag.visit.column.step, wanted = minuteAt(move.clientY) - drag.visit.from;
        drag.length = Math.max(step, Math.round(wanted / step) * step);
      } else {
        drag.column = columnAt(move.clientX, drag.column);
        drag.start = nearest(drag.column, minuteAt(move.clientY) - pending.grab);
      }
      show();
    }
    function released(up) {
      document.removeEventListener("pointermove", moved);
      document.removeEventListener("pointerup", released);
      document.removeEventListener("pointercancel", released);
      if (drag && up.type === "pointerup") { suppressClick = true; send(); } else { end(); }
    }
    document.addEventListener("pointermove", moved);
    document.addEventListener("pointerup", released);
    document.addEventListener("pointercancel", released);  // a finger that scrolls the timeline instead
  });
  grid.addEventListener("click", function (event) {  // the click that ends a drag opens nothing
    if (suppressClick) { event.preventDefault(); event.stopPropagation(); suppressClick = false; }
  }, true);
  grid.addEventListener("dragstart", function (event) {  // a card's link is not dragged as a link
    if (event.target.closest && event.target.closest(".card")) { event.preventDefault(); }
  });

  // the keys, on a focused card: m moves it (arrows), d changes its length (up and down); Enter sends, Esc leaves

  window.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) { return; }
    var card = document.activeElement && document.activeElement.closest &&
      document.activeElement.closest(".timeline .card");
    var key = event.key, handled = true;
    if (!drag) {
      if (!card || !/^[md]$/.test(key) || (key === "d" && card.classList.contains("squeezed"))) { return; }
      begin(card, key === "m" ? "move" : "length");
    } else if (key === "Escape") {
      say("left");
      end();
    } else if (key === "Enter") {
      send();
    } else if (drag.kind === "length" && /^Arrow(Up|Down)$/.test(key)) {
      drag.length = Math.max(drag.visit.column.step, drag.length + (key === "ArrowUp" ? -1 : 1) *
                             drag.visit.column.step);
      show();
    } else if (drag.kind === "move" && /^Arrow(Up|Down)$/.test(key)) {
      var starts = drag.column.starts, at = starts.indexOf(drag.start) + (key === "ArrowUp" ? -1 : 1);
      drag.start = starts[Math.max(0, Math.min(starts.length - 1, at))] || drag.start;
      show();
    } else if (drag.kind === "move" && /^Arrow(Left|Right)$/.test(key)) {
      var next = columns[columns.indexOf(drag.column) + (key === "ArrowLeft" ? -1 : 1)];
      if (next && next.starts.length) {
        drag.start = nearest(next, drag.start ? drag.start.minute : drag.visit.from);
        drag.column = next;
      }
      show();
    } else {
      handled = false;
    }
    if (handled) { event.preventDefault(); event.stopPropagation(); }
  }, true);
}());
