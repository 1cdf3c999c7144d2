// A sign-in link carries the token after '#', which browsers never send to a server:
// fill the form with it, take it out of the address bar and history, and sign in.
"use strict";
(function () {
  var m = /(?:^#|&)token=([^&]+)/.exec(window.location.hash);
  if (!m) return;
  history.replaceState(null, "", window.location.pathname + window.location.search);
  var form = document.getElementById("signin");
  form.elements.token.value = decodeURIComponent(m[1]);
  form.submit();
})();
