// The Mood page, live: new posts, replies, silent dots and notices from the event
// stream; who is at work; holds; and the post box (sent with the page's CSRF token).
// A post arrives as the <li> the server rendered for it (markdown rendered, then
// sanitized: no script, no raw HTML), the same a reload shows; every other text is
// only ever set with textContent.
"use strict";
(function () {
  var root = document.getElementById("mood");
  if (!root) return;
  var slug = root.dataset.slug;
  var posts = document.getElementById("posts");
  var working = document.getElementById("working");
  var holds = document.getElementById("holds");
  var status = document.getElementById("status");
  var csrf = (document.querySelector('meta[name="csrf-token"]') || {}).content || "";

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function addPost(p) {
    if (document.getElementById("post-" + p.id)) return;
    var made = document.createElement("template");
    made.innerHTML = p.html;
    var li = made.content.firstElementChild;
    if (!li) return;
    var empty = document.getElementById("empty");
    if (empty) empty.remove();
    posts.appendChild(li);
    li.scrollIntoView({block: "nearest"});
  }

  // A link to a post (#p-12 in a post's text is one to #post-12) that is further back
  // than this page shows opens the Mood's page up to that post.
  posts.addEventListener("click", function (e) {
    var a = e.target.closest ? e.target.closest('a[href^="#post-"]') : null;
    if (!a) return;
    var id = a.getAttribute("href").slice("#post-".length);
    if (!/^[0-9]+$/.test(id) || document.getElementById("post-" + id)) return;
    e.preventDefault();
    location.href = "/m/" + encodeURIComponent(slug) + "?before=" + (Number(id) + 1) + "#post-" + id;
  });

  function showWorking(turns) {
    var names = [], doing = [];
    turns.forEach(function (t) {
      if (names.indexOf(t.agent) < 0) names.push(t.agent);
      if (t.progress) doing.push(t.agent + ": " + t.progress);
    });
    var said = names.length ? names.join(", ") + (names.length > 1 ? " are" : " is") + " at work\u2026" : "";
    working.textContent = said && doing.length ? said + " (" + doing.join("; ") + ")" : said;
  }

  function showHolds(list) {
    holds.textContent = "";
    list.forEach(function (h) {
      holds.appendChild(el("li", "", h.agent + " is holding " + h.owed + " mention(s): " + h.reason));
    });
  }

  if (root.dataset.static) return;  // an earlier page of the conversation: not live

  var source = new EventSource("/api/v1/moods/" + encodeURIComponent(slug) + "/events?after=" + encodeURIComponent(root.dataset.after));
  // "(3 min ago)" beside each time stays true while the page is open (as text.ago says it).
  function ago(seconds) {
    var gap = Math.abs(seconds), units = [[86400, "day"], [3600, "h"], [60, "min"]];
    if (gap < 60) return "just now";
    for (var i = 0; i < units.length; i++) {
      if (gap >= units[i][0]) {
        var n = Math.floor(gap / units[i][0]);
        var said = n + " " + units[i][1] + (units[i][1] === "day" && n !== 1 ? "s" : "");
        return seconds > 0 ? said + " ago" : "in " + said;
      }
    }
  }
  function refreshAgo() {
    var now = Date.now();
    document.querySelectorAll("time[datetime] + .ago").forEach(function (span) {
      var at = Date.parse(span.previousElementSibling.getAttribute("datetime"));
      if (!isNaN(at)) span.textContent = "(" + ago((now - at) / 1000) + ")";
    });
  }
  setInterval(refreshAgo, 30000);

  source.addEventListener("post", function (e) { addPost(JSON.parse(e.data)); });
  source.addEventListener("working", function (e) { showWorking(JSON.parse(e.data)); });
  source.addEventListener("holds", function (e) { showHolds(JSON.parse(e.data)); });
  source.addEventListener("open", function () { root.dataset.live = "1"; });

  var form = document.getElementById("compose");
  if (!form) return;
  form.addEventListener("submit", function (e) {
    e.preventDefault();
    status.textContent = "";
    var body = new FormData(form);
    fetch(form.action, {method: "POST", body: body, credentials: "same-origin",
                        headers: {"Accept": "application/json", "X-CSRF-Token": csrf}})
      .then(function (r) {
        return r.json().then(function (data) {
          if (!r.ok) throw new Error(data.detail || ("HTTP " + r.status));
          form.elements.text.value = "";
          addPost(data);
        });
      })
      .catch(function (err) { status.textContent = err.message; });
  });
  form.elements.text.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); form.requestSubmit(); }
  });
})();
