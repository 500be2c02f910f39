/* The limit editor (apps/limits/admin_forms.py): hide the fields the chosen algorithm does not use, and add
   rows to the key_by attributes and the match table. Without this script every field shows and the server
   refuses the ones that do not apply; hidden inputs are disabled, so they are not sent. */
"use strict";
(function () {
  function fieldRow(name) {
    return document.querySelector(".form-row.field-" + name) || document.querySelector(".field-" + name);
  }

  function applyAlgorithm(select, table) {
    var used = table.used[select.value] || table.dependent;
    table.dependent.forEach(function (name) {
      var row = fieldRow(name);
      if (!row) { return; }
      // A field the server refused stays visible, so its error can be read and the value fixed.
      var show = used.indexOf(name) !== -1 || row.querySelector(".errorlist") !== null;
      row.hidden = !show;
      row.querySelectorAll("input, select, textarea").forEach(function (input) { input.disabled = !show; });
    });
  }

  function addRowButton(container) {
    var button = document.createElement("button");
    button.type = "button";
    button.className = "button add-row";
    button.textContent = "Add a row";
    button.addEventListener("click", function () {
      var rows = container.querySelectorAll(".editor-row");
      var copy = rows[rows.length - 1].cloneNode(true);
      copy.querySelectorAll("input").forEach(function (input) { input.value = ""; });
      rows[rows.length - 1].parentNode.appendChild(copy);
      copy.querySelector("input").focus();
    });
    container.insertAdjacentElement("afterend", button);
  }

  document.addEventListener("DOMContentLoaded", function () {
    var select = document.querySelector("select[data-fields]");
    if (select) {
      var table = JSON.parse(select.getAttribute("data-fields"));
      applyAlgorithm(select, table);
      select.addEventListener("change", function () { applyAlgorithm(select, table); });
    }
    document.querySelectorAll(".editor-rows").forEach(addRowButton);
  });
})();
