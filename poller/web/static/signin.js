// A sign-in link carries the token after '#', which browsers never send to a server:
// fill the form with it and take it out of the address bar and history.  Signing in
// stays a click: a link alone must not sign anyone in (someone could send you a link
// with their own token, and your posts would go out as theirs).
"use strict";
(function () {
  var m = /(?:^#|&)token=([^&]+)/.exec(window.location.hash);
  if (!m) return;
  history.replaceState(null, "", window.location.pathname + window.location.search);
  var form = document.getElementById("signin");
  form.elements.token.value = decodeURIComponent(m[1]);
  var note = document.getElementById("from-link");
  if (note) note.hidden = false;
  form.querySelector("button[type=submit]").focus();
})();
