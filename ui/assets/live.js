// bench ui: keeps an experiment's page up to date without reloading it.
// It polls the change feed (/e/ID/changes?since=N) and, when anything
// changed, fetches the page's live part again and swaps it in. Without
// script the page is complete; it just does not update by itself.
(function () {
  "use strict";
  var root = document.getElementById("live");
  if (!root || !window.fetch) return;
  var poll = +root.dataset.poll || 500;
  var seq = root.dataset.seq, version = root.dataset.version;
  function tick() {
    fetch(root.dataset.changes + "?since=" + encodeURIComponent(seq), { cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (c) {
        if (!c || (String(c.version) === String(version) && String(c.seq) === String(seq))) return null;
        return fetch(root.dataset.live + location.search, { cache: "no-store" })
          .then(function (r) { return r.ok ? r.text() : null; })
          .then(function (html) {
            if (html === null) return;
            root.innerHTML = html;
            var st = document.getElementById("livestate");
            seq = st ? st.dataset.seq : c.seq;
            version = st ? st.dataset.version : c.version;
            root.dataset.seq = seq;
            root.dataset.version = version;
            root.dataset.updates = String((+root.dataset.updates || 0) + 1);
          });
      })
      .catch(function () {})
      .then(function () { setTimeout(tick, poll); });
  }
  setTimeout(tick, poll);
})();
