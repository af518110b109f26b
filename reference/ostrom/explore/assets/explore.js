// ostrom explore: step through a trace (reference/ostrom/explore/page.py writes the data).
// No network, no library: the page works from file://.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("trace-data").textContent);
  const steps = data.steps;
  const list = document.getElementById("steps");
  let current = 0;

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  steps.forEach(function (s, i) {
    const li = el("li", {"data-index": String(i)});
    if (s.failed) li.classList.add("failed");
    if (data.loop === i) li.classList.add("loop");
    li.appendChild(el("span", {class: "n"}, String(s.index)));
    li.appendChild(el("span", {class: "act"}, s.action));
    li.addEventListener("click", function () { show(i); });
    list.appendChild(li);
  });

  function link(ref) {
    const a = el("a", {href: data.links[ref.file] + (ref.line ? "#L" + ref.line : "")},
                 ref.file + (ref.line ? ":" + ref.line : ""));
    return a;
  }

  function show(i) {
    if (i < 0 || i >= steps.length) return;
    current = i;
    const s = steps[i];
    for (const li of list.children) li.classList.toggle("current", Number(li.dataset.index) === i);
    list.children[i].scrollIntoView({block: "nearest"});
    // one numbering everywhere (the sidebar, `ostrom explain`, the labs): step 0 is the
    // initial state, step k the state after the k-th action, so the last is length - 1
    document.getElementById("position").textContent =
      "step " + s.index + " of " + steps[steps.length - 1].index +
      (i === 0 ? " (the initial state)" : "") +
      (data.loop === i ? " (the loop returns here)" : "");
    const head = document.getElementById("action");
    head.replaceChildren();
    const def = data.definitions[s.action];
    const formals = def && def.tla && def.tla.params ? "(" + def.tla.params + ")" : "";
    head.appendChild(el("h2", {id: "action-name"}, s.action + (s.args ? "(" + s.args + ")" : formals)));
    if (s.args && formals) head.appendChild(el("div", {class: "formals"}, "defined as " + s.action + formals));
    if (s.detail) head.appendChild(el("div", {class: "detail"}, s.detail));
    if (def) {
      const where = el("div", {class: "where"});
      if (def.tla) { where.appendChild(document.createTextNode("TLA+: ")); where.appendChild(link(def.tla)); }
      if (def.python) {
        where.appendChild(document.createTextNode(" Python: " + def.python.name + " "));
        where.appendChild(link(def.python));
      }
      head.appendChild(where);
      if (def.tla && def.tla.text) head.appendChild(el("pre", {class: "def"}, def.tla.text));
    }
    document.getElementById("note").textContent = s.note || "";
    const changes = document.getElementById("changes");
    changes.replaceChildren();
    for (const c of (i === 0 ? [] : s.changes)) changes.appendChild(el("li", {}, c));
    if (i > 0 && s.changes.length === 0) changes.appendChild(el("li", {}, "(no change)"));
    const body = document.getElementById("vars");
    body.replaceChildren();
    for (const [name, text] of Object.entries(s.state)) {
      const tr = el("tr", {"data-var": name});
      if (s.changed.includes(name)) tr.classList.add("changed");
      tr.appendChild(el("td", {class: "name"}, name));
      const td = el("td");
      const pre = el("pre");
      // field-level: in a changed variable, the lines of its laid-out value that the
      // previous step did not have are marked (a record's field, a set's element)
      const before = i > 0 ? (steps[i - 1].state[name] || "").split("\n") : null;
      const left = before ? new Map() : null;
      if (left) before.forEach(function (l) { left.set(l, (left.get(l) || 0) + 1); });
      text.split("\n").forEach(function (line, k) {
        if (k > 0) pre.appendChild(document.createTextNode("\n"));
        if (left && s.changed.includes(name) && !(left.get(line) > 0)) {
          pre.appendChild(el("mark", {}, line));
        } else {
          if (left && left.get(line) > 0) left.set(line, left.get(line) - 1);
          pre.appendChild(document.createTextNode(line));
        }
      });
      td.appendChild(pre);
      tr.appendChild(td);
      body.appendChild(tr);
    }
    // the state diagram: the states the artifacts are in now
    const names = new Set(Object.values(s.states || {}));
    document.querySelectorAll("#diagram g.node").forEach(function (g) {
      const t = g.querySelector("title");
      g.classList.toggle("current", !!t && names.has(t.textContent.trim()));
    });
    const lit = document.querySelector("#diagram g.node.current");
    const figure = document.getElementById("diagram");
    if (lit && figure) {  // bring the current state into the figure's view, sideways only
      const box = lit.getBoundingClientRect(), view = figure.getBoundingClientRect();
      if (box.left < view.left || box.right > view.right)
        figure.scrollLeft += box.left - view.left - (view.width - box.width) / 2;
    }
    const legend = document.getElementById("diagram-states");
    if (legend) legend.textContent = Object.entries(s.states || {}).map(function (e) {
      return e[0] + ": " + e[1]; }).join(" · ") || "no artifact yet";
    // the sequence chart: this step's messages
    document.querySelectorAll("svg.msc [data-step]").forEach(function (g) {
      g.classList.toggle("current", Number(g.dataset.step) === s.index);
    });
    const first = document.querySelector("svg.msc .arrow.current, svg.msc .remark.current");
    if (first && first.scrollIntoView) first.scrollIntoView({block: "nearest"});
    if (history.replaceState) history.replaceState(null, "", "#step-" + i);
  }

  // the chart's lane names stay in view while its rows scroll past (the figure and the
  // detail pane both scroll): move their group down by what has scrolled above the top
  function pinLaneNames() {
    document.querySelectorAll("svg.msc").forEach(function (svg) {
      const head = svg.querySelector("g.lane-names");
      if (!head) return;
      const box = svg.getBoundingClientRect();
      const pane = svg.closest("section.figure") || document.getElementById("detail");
      const top = Math.max(pane.getBoundingClientRect().top,
                           document.getElementById("detail").getBoundingClientRect().top);
      const scale = box.height / (svg.viewBox.baseVal.height || box.height || 1);
      const shift = Math.max(0, Math.min(top - box.top, box.height - 40)) / (scale || 1);
      head.setAttribute("transform", "translate(0," + shift + ")");
    });
  }
  document.getElementById("detail").addEventListener("scroll", pinLaneNames, {passive: true});
  document.querySelectorAll("section.figure").forEach(function (f) {
    f.addEventListener("scroll", pinLaneNames, {passive: true});
  });
  window.addEventListener("resize", pinLaneNames);

  document.addEventListener("keydown", function (e) {
    if (e.target && /input|textarea/i.test(e.target.tagName)) return;
    if (e.key === "ArrowRight" || e.key === "j" || e.key === "n") { show(current + 1); e.preventDefault(); }
    else if (e.key === "ArrowLeft" || e.key === "k" || e.key === "p") { show(current - 1); e.preventDefault(); }
    else if (e.key === "Home") { show(0); e.preventDefault(); }
    else if (e.key === "End") { show(steps.length - 1); e.preventDefault(); }
  });
  document.getElementById("prev").addEventListener("click", function () { show(current - 1); });
  document.getElementById("next").addEventListener("click", function () { show(current + 1); });
  const m = /^#step-(\d+)$/.exec(location.hash);
  const failed = steps.findIndex(function (s) { return s.failed; });
  show(m ? Number(m[1]) : 0);
  window.ostromExplore = {show: show, current: function () { return current; }, failed: failed};
})();
