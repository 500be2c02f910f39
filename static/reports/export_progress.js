// Keeps a usage export job's progress bar and its changing fields current: polls the job's JSON status view until
// it is done or failed.
(function () {
  "use strict";
  var box = document.getElementById("export-progress");
  if (!box || box.dataset.finished === "true") {
    return;
  }
  var bar = box.querySelector("progress");
  var message = box.querySelector(".export-message");
  var download = box.querySelector(".export-download");
  var POLL_MS = 1000;

  function show(status) {
    box.dataset.status = status.status;
    if (status.status === "done") {
      bar.max = 1;
      bar.value = 1;
    } else if (status.rows_total) {
      bar.max = status.rows_total;
      bar.value = Math.min(status.rows_done, status.rows_total);
    }
    bar.textContent = status.percent === null ? "" : status.percent + "%";
    message.textContent = status.message;
    // The job's fields below the bar (status, rows, started, finished, error) say the same as the bar.
    Object.keys(status.fields || {}).forEach(function (name) {
      document.querySelectorAll('[data-job-field="' + name + '"]').forEach(function (field) {
        field.textContent = status.fields[name];
      });
    });
    if (status.download_url) {
      download.href = status.download_url;
      download.hidden = false;
    }
  }

  function poll() {
    fetch(box.dataset.statusUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) {
          throw new Error("The server answered " + response.status + ".");
        }
        return response.json();
      })
      .then(function (status) {
        show(status);
        if (!status.finished) {
          window.setTimeout(poll, POLL_MS);
        }
      })
      .catch(function (error) {
        message.textContent = "Could not read the progress (" + error.message + "); trying again…";
        window.setTimeout(poll, POLL_MS * 5);
      });
  }

  window.setTimeout(poll, POLL_MS);
})();
