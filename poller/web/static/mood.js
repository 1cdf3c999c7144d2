// The Mood page, live: new posts, replies, silent dots and notices from the event
// stream; who is at work; holds; and the post box (sent with the page's CSRF token).
// Text is only ever set with textContent, so a post is shown as the text it is.
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

  function local(iso) {  // the reader's own clock, for every time on the page alike
    return new Date(iso).toLocaleString([], {day: "2-digit", month: "short", hour: "2-digit", minute: "2-digit"});
  }

  function when(iso) {
    var t = el("time", "", local(iso));
    t.setAttribute("datetime", iso);
    return t;
  }

  document.querySelectorAll("#posts time[datetime]").forEach(function (t) {
    t.textContent = local(t.getAttribute("datetime"));
  });

  function addPost(p) {
    if (document.getElementById("post-" + p.id)) return;
    var li = el("li", "post");
    li.id = "post-" + p.id;
    li.dataset.id = p.id;
    if (p.kind === "silent") {
      li.classList.add("silent");
      li.title = p.sender + " stayed silent: " + p.text;
      var dot = el("span", "dot", "\u00b7");
      dot.setAttribute("aria-label", p.sender + " stayed silent");
      li.appendChild(dot);
    } else if (p.kind === "system" || p.kind === "handoff") {
      li.classList.add("notice", p.kind);
      li.appendChild(el("span", "text", p.text));
      li.appendChild(document.createTextNode(" "));
      li.appendChild(when(p.created_at));
    } else {
      li.classList.add(p.sender_kind);
      var meta = el("div", "meta");
      meta.appendChild(el("span", "sender", p.sender));
      if (p.sender_kind === "agent") {
        meta.appendChild(document.createTextNode(" "));
        meta.appendChild(el("span", "badge", "agent"));
      }
      meta.appendChild(document.createTextNode(" "));
      meta.appendChild(when(p.created_at));
      li.appendChild(meta);
      li.appendChild(el("div", "text", p.text));
    }
    var empty = document.getElementById("empty");
    if (empty) empty.remove();
    posts.appendChild(li);
    li.scrollIntoView({block: "nearest"});
  }

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
