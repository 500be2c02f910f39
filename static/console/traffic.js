// Keeps the platform traffic page current: fetches its JSON view every data-refresh-s seconds and swaps in the
// live part it renders (`html`), while the range ends now and the box is ticked.
(function () {
  "use strict";
  var status = document.getElementById("traffic-live-status");
  var live = document.getElementById("traffic-live");
  if (!status || !live || status.dataset.live !== "true") {
    return;
  }
  var toggle = document.getElementById("traffic-live-toggle");
  var updated = status.querySelector(".live-updated");
  var every = Number(status.dataset.refreshS) * 1000;

  function refresh() {
    if (toggle && !toggle.checked) {
      window.setTimeout(refresh, every);
      return;
    }
    fetch(status.dataset.url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) {
          throw new Error("the server answered " + response.status);
        }
        return response.json();
      })
      .then(function (data) {
        live.innerHTML = data.html;
        status.dataset.generatedAt = data.generated_at;
        updated.textContent = "updated at " + data.generated_at.slice(11, 19) + " UTC";
        window.setTimeout(refresh, every);
      })
      .catch(function (error) {
        updated.textContent = "could not refresh (" + error.message + "); trying again";
        window.setTimeout(refresh, every);
      });
  }

  window.setTimeout(refresh, every);
})();
