/* codexmem site: lists that page, sort and filter with their state in the URL; search in the
   header and on the search page; copy buttons on code. Every page reads fine without this file:
   the first page of each list, every record and every link are in the HTML. */
(function () {
  "use strict";

  var body = document.body;
  var root = body.getAttribute("data-root") || "";
  var fromDisk = window.location.protocol === "file:";

  function each(list, fn) { Array.prototype.forEach.call(list, fn); }
  function num(n) { return Number(n).toLocaleString("en-US"); }
  function plural(n, noun) { return num(n) + " " + noun + (n === 1 ? "" : "s"); }

  /* ---------------------------------------------------------- opened from disk */
  if (fromDisk) {
    /* A folder link opens a directory listing from disk: point it at the folder's page. */
    each(document.querySelectorAll("a[href]"), function (a) {
      var href = a.getAttribute("href");
      if (!/^[a-z]+:/i.test(href) && /\/(\?|#|$)/.test(href)) {
        a.setAttribute("href", href.replace(/\/(\?|#|$)/, "/index.html$1"));
      }
    });
    var notice = document.querySelector("[data-file-notice]");
    if (notice) notice.hidden = false;
  }

  /* ---------------------------------------------------------- lists: state in the query string */
  function Table(box) {
    this.box = box;
    this.id = box.getAttribute("data-table");
    this.total = parseInt(box.getAttribute("data-total"), 10);
    this.pageRows = parseInt(box.getAttribute("data-page-rows"), 10);
    this.noun = box.getAttribute("data-noun") || "row";
    this.chunks = JSON.parse(box.getAttribute("data-chunks") || "[]");
    this.table = box.querySelector("table");
    this.tbody = this.table.tBodies[0];
    this.tools = box.querySelector("[data-tools]");
    this.count = box.querySelector("[data-count]");
    this.pager = box.querySelector("[data-pager]");
    this.controls = this.tools ? this.tools.querySelectorAll("[data-param]") : [];
    this.headers = this.table.tHead.rows[0].cells;
    this.rows = null;
    this.loading = null;
    var self = this;
    this.params = {};
    each(this.controls, function (c) { self.params[c.getAttribute("data-param")] = c; });
    this.prefix = document.querySelectorAll("[data-table]").length > 1 ? this.id + "." : "";
    this.setupHeaders();
    this.setupTools();
    this.setupPhoneSort();
  }

  Table.prototype.param = function (name) { return this.prefix + name; };

  Table.prototype.readState = function () {
    var query = new URLSearchParams(window.location.search);
    var state = { filters: {}, q: "", sort: null, desc: false, page: 1 };
    var self = this;
    Object.keys(this.params).forEach(function (name) {
      var value = query.get(self.param(name)) || "";
      var control = self.params[name];
      /* A value no option has (a stale or mistyped link) filters nothing, as its control shows "All". */
      if (value && control.tagName === "SELECT" && !control.querySelector('option[value="' + CSS.escape(value) + '"]')) value = "";
      if (name === "q") state.q = value;
      else if (value) state.filters[name] = value;
    });
    var sort = query.get(this.param("sort"));
    if (sort) {
      var desc = sort.charAt(0) === "-";
      var key = desc ? sort.slice(1) : sort;
      each(this.headers, function (th, col) {
        if (state.sort === null && th.getAttribute("data-key") === key) { state.sort = col; state.desc = desc; }
      });
    }
    var page = parseInt(query.get(this.param("page")) || "1", 10);
    state.page = page > 0 ? page : 1;
    return state;
  };

  Table.prototype.isDefault = function (state) {
    return !state.q && !Object.keys(state.filters).length && state.sort === null && state.page === 1;
  };

  Table.prototype.writeState = function (state, push) {
    var query = new URLSearchParams(window.location.search);
    var self = this;
    Object.keys(this.params).concat(["sort", "page"]).forEach(function (n) { query.delete(self.param(n)); });
    if (state.q) query.set(this.param("q"), state.q);
    Object.keys(state.filters).sort().forEach(function (n) { query.set(self.param(n), state.filters[n]); });
    if (state.sort !== null) query.set(this.param("sort"), (state.desc ? "-" : "") + this.headers[state.sort].getAttribute("data-key"));
    if (state.page > 1) query.set(this.param("page"), String(state.page));
    var text = query.toString();
    var url = window.location.pathname + (text ? "?" + text : "") + window.location.hash;
    if (url === window.location.pathname + window.location.search + window.location.hash) return;
    if (push) window.history.pushState(null, "", url);
    else window.history.replaceState(null, "", url);
  };

  Table.prototype.showControls = function (state) {
    var self = this;
    Object.keys(this.params).forEach(function (name) {
      var control = self.params[name];
      var value = name === "q" ? state.q : state.filters[name] || "";
      if (control.tagName === "SELECT" && value && !control.querySelector('option[value="' + CSS.escape(value) + '"]')) value = "";
      control.value = value;
    });
    each(this.headers, function (th, col) {
      if (state.sort === col) th.setAttribute("aria-sort", state.desc ? "descending" : "ascending");
      else th.removeAttribute("aria-sort");
    });
    if (this.phoneSort) this.phoneSort.value = state.sort === null ? "" : state.sort + (state.desc ? "-" : "+");
  };

  Table.prototype.setupHeaders = function () {
    var self = this;
    each(this.headers, function (th, col) {
      if (!th.hasAttribute("data-col")) return;
      var button = document.createElement("button");
      button.type = "button";
      while (th.firstChild) button.appendChild(th.firstChild);
      th.appendChild(button);
      button.addEventListener("click", function () {
        var state = self.readState();
        state.desc = state.sort === col ? !state.desc : false;
        state.sort = col;
        state.page = 1;
        self.go(state, false);
      });
    });
  };

  /* On a phone the rows are cards and the header, with its sort buttons, is hidden: a select sorts. */
  Table.prototype.setupPhoneSort = function () {
    var self = this;
    var options = [["", "Default order"]];
    each(this.headers, function (th, col) {
      if (!th.hasAttribute("data-col")) return;
      var name = th.textContent.replace(/[↕↑↓]/g, "").trim();
      options.push([col + "+", name + " ↑"], [col + "-", name + " ↓"]);
    });
    if (options.length < 2) return;
    var label = document.createElement("label");
    label.className = "phone-sort";
    label.appendChild(document.createTextNode("Sort "));
    var select = document.createElement("select");
    select.setAttribute("data-phone-sort", "");
    options.forEach(function (o) {
      var option = document.createElement("option");
      option.value = o[0];
      option.textContent = o[1];
      select.appendChild(option);
    });
    label.appendChild(select);
    select.addEventListener("change", function () {
      var state = self.readState();
      state.sort = select.value ? parseInt(select.value, 10) : null;
      state.desc = select.value.slice(-1) === "-";
      state.page = 1;
      self.go(state, false);
    });
    this.count.parentNode.insertBefore(label, this.count);
    this.phoneSort = select;
  };

  Table.prototype.setupTools = function () {
    if (!this.tools) return;
    var self = this;
    var typing = null;
    each(this.controls, function (control) {
      var apply = function () {
        var state = self.stateFromControls();
        self.go(state, false);
      };
      if (control.tagName === "SELECT") control.addEventListener("change", apply);
      else control.addEventListener("input", function () { clearTimeout(typing); typing = setTimeout(apply, 120); });
    });
    this.tools.addEventListener("submit", function (event) { event.preventDefault(); });
    this.tools.addEventListener("reset", function (event) {
      event.preventDefault();
      var state = self.readState();
      self.go({ filters: {}, q: "", sort: state.sort, desc: state.desc, page: 1 }, false);
    });
    this.tools.hidden = false;
  };

  Table.prototype.stateFromControls = function () {
    var state = this.readState();
    var self = this;
    state.filters = {};
    state.q = "";
    Object.keys(this.params).forEach(function (name) {
      var value = self.params[name].value.trim();
      if (name === "q") state.q = value;
      else if (value) state.filters[name] = value;
    });
    state.page = 1;
    return state;
  };

  Table.prototype.load = function () {
    var self = this;
    if (this.rows) return Promise.resolve(this.rows);
    if (this.loading) return this.loading;
    this.loading = Promise.all(this.chunks.map(function (url) {
      return fetch(url).then(function (r) {
        if (!r.ok) throw new Error(r.status + " " + url);
        return r.json();
      });
    })).then(function (parts) {
      var rows = [];
      parts.forEach(function (part) {
        part.rows.forEach(function (r) { rows.push({ order: r[0], keys: r[1], filters: r[2], text: r[3], html: r[4] }); });
      });
      rows.sort(function (a, b) { return a.order - b.order; });
      self.rows = rows;
      return rows;
    });
    return this.loading;
  };

  Table.prototype.go = function (state, push) {
    this.writeState(state, push);
    this.render(state);
  };

  Table.prototype.render = function (state) {
    var self = this;
    this.showControls(state);
    if (this.isDefault(state) && !this.rows) {
      this.showPager(1, Math.ceil(this.total / this.pageRows));
      return Promise.resolve();
    }
    this.box.setAttribute("aria-busy", "true");
    if (!this.rows) this.count.textContent = "Loading " + plural(this.total, this.noun) + "…";
    return this.load().then(function (rows) {
      self.draw(state, rows);
      self.box.removeAttribute("aria-busy");
    }, function (error) {
      self.box.removeAttribute("aria-busy");
      self.count.textContent = fromDisk
        ? "Sorting, filtering and paging need the site served over HTTP (codexmem site --serve)."
        : "Could not load the list (" + error.message + ").";
    });
  };

  function compare(a, b, numeric) {
    if (numeric) return a - b;
    return a < b ? -1 : a > b ? 1 : 0;
  }

  Table.prototype.draw = function (state, rows) {
    var names = Object.keys(state.filters);
    var needle = state.q.toLowerCase();
    var shown = rows.filter(function (r) {
      for (var i = 0; i < names.length; i++) {
        var have = r.filters[names[i]];
        if (!have || have.indexOf(state.filters[names[i]]) < 0) return false;
      }
      return !needle || r.text.indexOf(needle) >= 0;
    });
    if (state.sort !== null) {
      var col = state.sort;
      var numeric = this.headers[col].getAttribute("data-type") === "num";
      var sign = state.desc ? -1 : 1;
      shown = shown.slice().sort(function (a, b) {
        var x = a.keys[col], y = b.keys[col];
        if (x === null || x === undefined) return (y === null || y === undefined) ? a.order - b.order : 1;
        if (y === null || y === undefined) return -1; /* empty cells last, either direction */
        return sign * compare(x, y, numeric) || a.order - b.order;
      });
    }
    var pages = Math.max(1, Math.ceil(shown.length / this.pageRows));
    var page = Math.min(state.page, pages);
    if (page !== state.page) { /* a page past the end (a shared link, fewer rows now): the URL says the one shown */
      this.writeState({ filters: state.filters, q: state.q, sort: state.sort, desc: state.desc, page: page }, false);
    }
    var start = (page - 1) * this.pageRows;
    var slice = shown.slice(start, start + this.pageRows);
    this.tbody.innerHTML = slice.map(function (r) { return r.html; }).join("");
    var filtered = shown.length === rows.length ? "" : " (filtered from " + num(rows.length) + ")";
    if (!shown.length) this.count.textContent = "No " + this.noun + "s match" + filtered + ".";
    else if (shown.length <= this.pageRows) this.count.textContent = plural(shown.length, this.noun) + filtered + ".";
    else this.count.textContent = "Showing " + num(start + 1) + "–" + num(start + slice.length) + " of " + plural(shown.length, this.noun) + filtered + ".";
    this.showPager(page, pages);
    this.box.dispatchEvent(new CustomEvent("table:drawn", { bubbles: true }));
  };

  Table.prototype.showPager = function (page, pages) {
    var pager = this.pager;
    pager.innerHTML = "";
    pager.hidden = pages <= 1;
    if (pages <= 1) return;
    var self = this;
    var wanted = [1, page - 1, page, page + 1, pages].filter(function (p, i, all) {
      return p >= 1 && p <= pages && all.indexOf(p) === i;
    }).sort(function (a, b) { return a - b; });
    function link(p, label, rel) {
      var state = self.readState();
      state.page = p;
      var a = document.createElement("a");
      var query = new URLSearchParams(window.location.search);
      query.set(self.param("page"), String(p));
      a.href = "?" + query.toString();
      a.textContent = label;
      if (rel) a.rel = rel;
      if (p === page && !rel) a.setAttribute("aria-current", "page");
      a.addEventListener("click", function (event) {
        event.preventDefault();
        self.go(state, true);
        self.box.scrollIntoView({ block: "start" });
      });
      pager.appendChild(a);
    }
    if (page > 1) link(page - 1, "← Previous", "prev");
    var last = 0;
    wanted.forEach(function (p) {
      if (p - last > 1) pager.appendChild(document.createTextNode(" … "));
      link(p, String(p));
      last = p;
    });
    if (page < pages) link(page + 1, "Next →", "next");
  };

  var tables = [];
  each(document.querySelectorAll("[data-table]"), function (box) { tables.push(new Table(box)); });
  function restore() { tables.forEach(function (t) { t.render(t.readState()); }); }
  if (tables.length) {
    restore();
    window.addEventListener("popstate", restore);
    /* Load every list's rows once the page is shown, so the first sort or filter is instant. */
    if (!fromDisk) setTimeout(function () { tables.forEach(function (t) { t.load().catch(function () {}); }); }, 50);
  }

  /* ---------------------------------------------------------- a cue when columns are hidden */
  function watchScroll(wrap) {
    function update() {
      var more = wrap.scrollWidth - wrap.clientWidth - wrap.scrollLeft > 2;
      wrap.classList.toggle("more-right", more);
      wrap.classList.toggle("more-left", wrap.scrollLeft > 2);
    }
    wrap.addEventListener("scroll", update, { passive: true });
    window.addEventListener("resize", update);
    document.addEventListener("table:drawn", update);
    update();
  }
  each(document.querySelectorAll(".table-wrap"), watchScroll);

  /* ---------------------------------------------------------- code: a copy button */
  each(document.querySelectorAll(".prose pre"), function (pre) {
    if (!navigator.clipboard) return;
    var button = document.createElement("button");
    button.type = "button";
    button.className = "copy";
    button.textContent = "Copy";
    button.addEventListener("click", function () {
      var code = pre.querySelector("code") || pre;
      navigator.clipboard.writeText(code.innerText).then(function () {
        button.textContent = "Copied";
        setTimeout(function () { button.textContent = "Copy"; }, 1500);
      });
    });
    pre.appendChild(button);
  });

  /* ---------------------------------------------------------- menus close on Escape */
  each(document.querySelectorAll("details.menu"), function (menu) {
    menu.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && menu.open) {
        menu.open = false;
        menu.querySelector("summary").focus();
      }
    });
    document.addEventListener("click", function (event) {
      if (menu.open && !menu.contains(event.target)) menu.open = false;
    });
  });

  /* ---------------------------------------------------------- search (Pagefind, merged parts) */
  var bundle = body.getAttribute("data-search");
  var engine = null;

  function siteBase() { return new URL(root || "./", window.location.href).pathname; }

  function startEngine() {
    if (engine) return engine;
    if (!bundle || fromDisk) return Promise.reject(new Error("unavailable"));
    var base = new URL(bundle, window.location.href).href;
    engine = fetch(base + "parts.json").then(function (r) {
      if (!r.ok) throw new Error("no search index");
      return r.json();
    }).then(function (listing) {
      var parts = listing.parts || [];
      var folders = listing.folders || {};
      /* Each part's URLs are relative to its folder (notes/, channels/bugs/). */
      function partBase(p) { return siteBase() + (folders[p] || ""); }
      if (!parts.length) return null;
      return import(base + parts[0] + "/pagefind.js").then(function (pagefind) {
        return pagefind.options({ baseUrl: partBase(parts[0]), excerptLength: 24 }).then(function () {
          return Promise.all(parts.slice(1).map(function (p) {
            return pagefind.mergeIndex(base + p + "/", { baseUrl: partBase(p) });
          }));
        }).then(function () { return pagefind.init(); }).then(function () { return pagefind; });
      });
    });
    return engine;
  }

  /* Pagefind's excerpt is HTML with <mark>: keep its text and marks, nothing else. */
  function excerptNode(html) {
    var template = document.createElement("template");
    template.innerHTML = html;
    var out = document.createElement("span");
    out.className = "excerpt";
    each(template.content.childNodes, function (node) {
      if (node.nodeType === 3) out.appendChild(document.createTextNode(node.textContent));
      else if (node.nodeName === "MARK") {
        var mark = document.createElement("mark");
        mark.textContent = node.textContent;
        out.appendChild(mark);
      } else out.appendChild(document.createTextNode(node.textContent || ""));
    });
    return out;
  }

  function resultItem(data, withExcerpt) {
    var meta = data.meta || {};
    var li = document.createElement("li");
    li.className = "result";
    var a = document.createElement("a");
    a.href = data.url;
    a.textContent = meta.title || data.url;
    li.appendChild(a);
    var labels = document.createElement("span");
    labels.className = "labels";
    [["kind", meta.kind], ["where", meta.where], ["status", meta.status]].forEach(function (pair) {
      if (!pair[1]) return;
      var span = document.createElement("span");
      span.className = "label label-" + pair[0];
      span.textContent = pair[1];
      labels.appendChild(span);
    });
    li.appendChild(labels);
    if (withExcerpt && data.excerpt) li.appendChild(excerptNode(data.excerpt));
    return li;
  }

  /* Every result of a query, each one's data loaded only when it is shown (a page of them at a time). */
  var SEARCH_PAGE = 50;

  function runSearch(query, limit) {
    return startEngine().then(function (pagefind) {
      if (!pagefind) return { count: 0, items: [], results: [] };
      return pagefind.search(query).then(function (search) {
        return loadResults(search.results, 0, limit).then(function (items) {
          return { count: search.results.length, items: items, results: search.results };
        });
      });
    });
  }

  function loadResults(results, from, limit) {
    return Promise.all(results.slice(from, from + limit).map(function (r) { return r.data(); }));
  }

  var find = document.querySelector("[data-find]");
  var dropdown = document.querySelector("[data-find-results]");
  var page = document.querySelector("[data-search-page]");
  var query = new URLSearchParams(window.location.search).get("q") || "";
  if (find && page) find.value = query; /* the header box keeps the query on the search page */

  function showPage(q) {
    var status = page.querySelector("[data-search-status]");
    var list = page.querySelector("[data-search-results]");
    if (!q.trim()) { status.textContent = "Type in the search box at the top of the page."; list.innerHTML = ""; return; }
    status.textContent = "Searching for “" + q + "”…";
    var more = page.querySelector("[data-search-more]");
    if (more) more.remove();
    runSearch(q, SEARCH_PAGE).then(function (found) {
      list.innerHTML = "";
      var shown = 0;
      function say() {
        status.textContent = found.count
          ? plural(found.count, "result") + " for “" + q + "”" + (found.count > shown ? ", the first " + num(shown) + " shown." : ".")
          : "No results for “" + q + "”.";
      }
      function add(items) {
        items.forEach(function (d) { list.appendChild(resultItem(d, true)); });
        shown += items.length;
        say();
        if (shown < found.count) return;
        var button = page.querySelector("[data-search-more]");
        if (button) button.remove();
      }
      add(found.items);
      if (shown < found.count) {
        /* The rest of the results, a page at a time: past the first page they were out of reach. */
        var button = document.createElement("button");
        button.type = "button";
        button.className = "more";
        button.setAttribute("data-search-more", "");
        button.textContent = "Show more results";
        button.addEventListener("click", function () {
          button.disabled = true;
          loadResults(found.results, shown, SEARCH_PAGE).then(function (items) {
            button.disabled = false;
            add(items);
          });
        });
        list.parentNode.insertBefore(button, list.nextSibling);
      }
    }, function () {
      status.textContent = fromDisk ? "Search needs the site served over HTTP (codexmem site --serve)." : "The search index is missing: build the site without --no-search.";
    });
  }

  if (page) showPage(query);

  if (find && dropdown) {
    var timer = null;
    var active = -1;
    function options() { return dropdown.querySelectorAll("a"); }
    function close() { dropdown.hidden = true; active = -1; find.setAttribute("aria-expanded", "false"); }
    function highlight(n) {
      var links = options();
      each(links, function (a, i) { a.classList.toggle("active", i === n); });
      active = n;
      if (links[n]) links[n].focus();
    }
    find.addEventListener("input", function () {
      clearTimeout(timer);
      var q = find.value;
      if (page) {
        var url = new URL(window.location.href);
        if (q) url.searchParams.set("q", q); else url.searchParams.delete("q");
        window.history.replaceState(null, "", url.pathname + url.search);
        timer = setTimeout(function () { showPage(q); }, 150);
        return;
      }
      if (!q.trim()) { close(); return; }
      timer = setTimeout(function () {
        runSearch(q, 8).then(function (found) {
          if (find.value !== q) return;
          dropdown.innerHTML = "";
          var list = document.createElement("ol");
          found.items.forEach(function (d) { list.appendChild(resultItem(d, false)); });
          dropdown.appendChild(list);
          var more = document.createElement("p");
          more.className = "more";
          more.textContent = found.count ? plural(found.count, "result") + " · Enter shows them all" : "No results";
          dropdown.appendChild(more);
          dropdown.hidden = false;
          find.setAttribute("aria-expanded", "true");
          active = -1;
        }, function () { close(); });
      }, 150);
    });
    function keys(event) {
      var links = options();
      if (dropdown.hidden || !links.length) return;
      if (event.key === "ArrowDown") { event.preventDefault(); highlight(Math.min(active + 1, links.length - 1)); }
      else if (event.key === "ArrowUp") {
        event.preventDefault();
        if (active <= 0) { highlight(-1); find.focus(); } else highlight(active - 1);
      } else if (event.key === "Escape") { close(); find.focus(); }
    }
    find.addEventListener("keydown", keys);
    dropdown.addEventListener("keydown", keys);
    document.addEventListener("click", function (event) {
      if (!find.form.contains(event.target)) close();
    });
  }
})();
