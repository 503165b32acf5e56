/* codexmem site: sortable and filterable tables, activity filters, search start-up.
   Every page reads fine without this file; it only adds controls. */
(function () {
  "use strict";

  function rowsOf(table) {
    return Array.prototype.slice.call(table.tBodies[0].rows);
  }

  function showCount(tools, shown, total) {
    var out = tools && tools.querySelector("[data-row-count]");
    if (out) out.textContent = shown === total ? total + " rows" : shown + " of " + total + " rows";
  }

  /* ---------------------------------------------------------- sorting: click a column header */
  function compare(a, b, numeric) {
    if (a === null && b === null) return 0;
    if (a === null) return 1; /* empty cells last, whichever the direction */
    if (b === null) return -1;
    if (numeric) return parseFloat(a) - parseFloat(b);
    return a < b ? -1 : a > b ? 1 : 0;
  }

  function makeSortable(table) {
    var headers = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(headers, function (th, col) {
      var button = document.createElement("button");
      button.type = "button";
      while (th.firstChild) button.appendChild(th.firstChild);
      th.appendChild(button);
      button.addEventListener("click", function () {
        var dir = th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
        Array.prototype.forEach.call(headers, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", dir);
        var numeric = th.getAttribute("data-type") === "num";
        var sign = dir === "ascending" ? 1 : -1;
        var keyed = rowsOf(table).map(function (row, i) {
          var cell = row.cells[col];
          var v = cell && cell.hasAttribute("data-v") ? cell.getAttribute("data-v") : null;
          return { row: row, v: v, i: i };
        });
        keyed.sort(function (a, b) {
          if (a.v === null || b.v === null) return compare(a.v, b.v, numeric) || a.i - b.i;
          return sign * compare(a.v, b.v, numeric) || a.i - b.i;
        });
        var body = table.tBodies[0];
        keyed.forEach(function (k) { body.appendChild(k.row); });
      });
    });
  }

  /* ---------------------------------------------------------- filtering the channel table */
  function makeFilterable(table, tools) {
    var selects = tools.querySelectorAll("select[data-filter]");
    var text = tools.querySelector("[data-filter-text]");
    var rows = rowsOf(table).map(function (row) {
      return { row: row, f: JSON.parse(row.getAttribute("data-f") || "{}"), text: row.textContent.toLowerCase() };
    });
    function apply() {
      var wanted = Array.prototype.map.call(selects, function (s) { return [s.getAttribute("data-filter"), s.value]; });
      var needle = text ? text.value.trim().toLowerCase() : "";
      var shown = 0;
      rows.forEach(function (r) {
        var ok = wanted.every(function (w) { return !w[1] || (r.f[w[0]] || []).indexOf(w[1]) >= 0; });
        ok = ok && (!needle || r.text.indexOf(needle) >= 0);
        r.row.hidden = !ok;
        if (ok) shown += 1;
      });
      showCount(tools, shown, rows.length);
    }
    Array.prototype.forEach.call(selects, function (s) { s.addEventListener("change", apply); });
    if (text) text.addEventListener("input", apply);
    var reset = tools.querySelector("[data-filter-reset]");
    if (reset) reset.addEventListener("click", function () {
      Array.prototype.forEach.call(selects, function (s) { s.value = ""; });
      if (text) text.value = "";
      apply();
    });
    tools.hidden = false;
    apply();
  }

  /* ---------------------------------------------------------- filtering activity by data attributes */
  function makeAttrFilterable(table, tools) {
    var selects = tools.querySelectorAll("select[data-filter-attr]");
    var rows = rowsOf(table);
    function apply() {
      var shown = 0;
      rows.forEach(function (row) {
        var ok = Array.prototype.every.call(selects, function (s) {
          return !s.value || row.getAttribute("data-" + s.getAttribute("data-filter-attr")) === s.value;
        });
        row.hidden = !ok;
        if (ok) shown += 1;
      });
      showCount(tools, shown, rows.length);
    }
    Array.prototype.forEach.call(selects, function (s) { s.addEventListener("change", apply); });
    tools.hidden = false;
    apply();
  }

  /* ---------------------------------------------------------- search page */
  function startSearch(element) {
    if (typeof window.PagefindUI !== "function") return;
    var ui = new window.PagefindUI({ element: element, showSubResults: true, showImages: false });
    var q = new URLSearchParams(window.location.search).get("q");
    if (q) ui.triggerSearch(q);
  }

  document.querySelectorAll("table[data-sortable]").forEach(makeSortable);
  document.querySelectorAll("[data-table-tools]").forEach(function (tools) {
    var table = document.getElementById(tools.getAttribute("data-table-tools"));
    if (!table) return;
    if (tools.querySelector("[data-filter-attr]")) makeAttrFilterable(table, tools);
    else makeFilterable(table, tools);
  });
  var search = document.getElementById("search");
  if (search) startSearch(search);
})();
