// metalog analyze's report.html: draws the charts with uPlot from the JSON block, links them (one cursor and one
// time range per group: a cluster, or the whole fleet when the clusters overlap in time), sorts the tables and
// filters the events. Series are step functions; each chart draws, per pixel, the lowest and the highest value
// in force there (a band where they differ), so a state that lasted one batch is never hidden.
(function () {
  "use strict";
  const DATA = JSON.parse(document.getElementById("metalog-data").textContent);
  const UTC = "Etc/UTC";
  const LANE = 16;  // px per lane
  // the y axes of every chart take the same width, so all plots start at one x: a linked cursor lines up
  const left = Math.min(230, Math.max(72, 14 + 6.5 * Math.max(0, ...DATA.clusters.flatMap(c =>
    [c.lanes, c.brokers && c.brokers.lanes, c.directories && c.directories.lanes, c.growth && c.growth.lanes]
      .filter(Boolean)
      .flatMap(v => v.lanes.map(l => l.label.length))))));
  const groups = new Map();
  // the groups and charts, the envelope (for a test against the Python one), drawAll (for screenshots)
  const report = { groups, charts: [], envelope, ready: false, drawAll: () => report.charts.forEach(update) };
  window.metalogReport = report;  // for the tests, and for anyone curious in the console

  // ---- data -----------------------------------------------------------------------------------------------
  function decode(packed, t0) {  // times come as differences, the first from the cluster's first batch
    const t = new Float64Array(packed.t.length);
    let x = t0;
    for (let i = 0; i < t.length; i++) { x += packed.t[i]; t[i] = x; }
    return { t, v: packed.v };
  }

  function after(t, x) {  // the first index whose time is later than x
    let lo = 0, hi = t.length;
    while (lo < hi) { const m = (lo + hi) >> 1; if (t[m] <= x) lo = m + 1; else hi = m; }
    return lo;
  }

  function before(t, x) {  // the first index whose time is not earlier than x
    let lo = 0, hi = t.length;
    while (lo < hi) { const m = (lo + hi) >> 1; if (t[m] < x) lo = m + 1; else hi = m; }
    return lo;
  }

  // per bucket of [a, b): the lowest and highest value in force (carried in, or changed inside); null before the
  // series begins and after its cluster's last batch (nothing was published there)
  function envelope(s, a, b, n, until) {
    const lo = new Array(n).fill(null), hi = new Array(n).fill(null), t = s.t, v = s.v, w = (b - a) / n;
    let i = before(t, a), cur = i > 0 ? v[i - 1] : null;  // in force just before a
    for (let k = 0; k < n; k++) {
      const start = a + k * w, end = a + (k + 1) * w;
      if (start > until) break;
      // the value carried in holds at the bucket's start unless a change happens right there
      let mn = i === t.length || t[i] > start ? cur : null, mx = mn;
      while (i < t.length && t[i] < end) {
        const x = v[i++];
        if (mn === null || x < mn) mn = x;
        if (mx === null || x > mx) mx = x;
        cur = x;
      }
      lo[k] = mn; hi[k] = mx;
    }
    return { lo, hi };
  }

  // ---- formatting -----------------------------------------------------------------------------------------
  const number = x => x === null || x === undefined ? "-" : Number(x).toLocaleString("en-US");
  function time(ms, span) {
    const text = new Date(Math.round(ms)).toISOString().replace("T", " ");
    return span !== undefined && span < 60000 ? text.slice(0, 23) : text.slice(0, 19);
  }
  function duration(ms) {
    const s = ms / 1000;
    if (s < 1) return `${Math.round(ms)} ms`;
    if (s < 120) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
    if (s < 7200) return `${Math.round(s / 60)} min`;
    if (s < 172800) return `${(s / 3600).toFixed(1)} h`;
    return `${(s / 86400).toFixed(1)} days`;
  }
  function alpha(hex, a) {
    const n = parseInt(hex.slice(1), 16);
    return `rgba(${n >> 16},${(n >> 8) & 255},${n & 255},${a})`;
  }
  function niceMax(mx) {
    if (!(mx > 0)) return 1;
    const top = mx * 1.08, p = Math.pow(10, Math.floor(Math.log10(top)));
    for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= top) return Math.max(m * p, 1);
    return top;
  }
  const INTEGER_INCRS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6,
                         5e6, 1e7];

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // ---- groups: one time range, one cursor -----------------------------------------------------------------
  function group(name, a, b) {
    let g = groups.get(name);
    if (!g) {
      g = { name, full: [a, b], min: a, max: b, charts: [], zoom: (x, y) => setRange(g, x, y) };
      groups.set(name, g);
    } else {
      g.full = [Math.min(g.full[0], a), Math.max(g.full[1], b)];
      g.min = g.full[0]; g.max = g.full[1];
    }
    return g;
  }

  // a new range redraws the charts on screen (or near it) at once; the others when they scroll into view, so
  // a zoom costs the same for a fleet of a hundred clusters as for one
  function setRange(g, a, b) {
    const [f0, f1] = g.full, span = Math.max(Math.min(b - a, f1 - f0), 10);
    a = Math.max(f0, Math.min(a, f1 - span));
    g.min = a; g.max = a + span;
    for (const c of g.charts) {
      if (c.visible) update(c);
      else c.stale = true;
    }
    toolbar(g);
  }

  function update(chart) {
    chart.stale = false;
    chart.refresh();
  }

  const watcher = "IntersectionObserver" in window ? new IntersectionObserver(entries => {
    for (const e of entries) {
      const chart = e.target.chart;
      chart.visible = e.isIntersecting;
      if (chart.visible && chart.stale) update(chart);
    }
  }, { rootMargin: "400px 0px" }) : null;

  function watch(chart) {
    const fig = chart.u.root.closest("figure");
    fig.chart = chart;
    const r = fig.getBoundingClientRect();  // on screen now (the watcher reports later)
    chart.visible = !watcher || (r.bottom > -400 && r.top < window.innerHeight + 400);
    chart.stale = true;
    if (watcher) watcher.observe(fig);
  }

  function toolbar(g) {
    const bar = document.querySelector(`.toolbar[data-group="${g.name}"]`);
    if (!bar) return;
    if (!bar.firstChild) {
      const span = () => g.max - g.min;
      for (const [label, act, title] of [
        ["Reset", () => setRange(g, g.full[0], g.full[1]), "the whole time range (or double-click a chart)"],
        ["Zoom out", () => setRange(g, g.min - span() / 2, g.max + span() / 2), "twice the range"],
        ["◀", () => setRange(g, g.min - span() / 3, g.max - span() / 3), "pan back"],
        ["▶", () => setRange(g, g.min + span() / 3, g.max + span() / 3), "pan forward"]]) {
        const b = el("button", null, label);
        b.type = "button"; b.title = title; b.addEventListener("click", act);
        bar.appendChild(b);
      }
      bar.appendChild(el("span", "range"));
      bar.hidden = false;
    }
    const whole = g.min <= g.full[0] && g.max >= g.full[1];
    bar.querySelector(".range").textContent =
      `${time(g.min, g.max - g.min)} to ${time(g.max, g.max - g.min)} UTC (${duration(g.max - g.min)}` +
      `${whole ? ", everything" : ""}); drag across a chart to zoom`;
  }

  // ---- shared chart options -------------------------------------------------------------------------------
  // tick labels in UTC, 24-hour, the date under the first tick of each day
  function timeTicks(u, splits, axis, space, incr) {
    let day = null;
    return splits.map(ts => {
      const iso = new Date(ts).toISOString(), d = iso.slice(0, 10);
      let text = incr >= 86400000 ? d : incr >= 60000 ? iso.slice(11, 16) : incr >= 1000 ? iso.slice(11, 19) :
        iso.slice(11, 23);
      if (incr < 86400000 && d !== day) text += "\n" + d;
      day = d;
      return text;
    });
  }

  function xAxis() {
    return { stroke: "#333", grid: { stroke: "#e6e6e6", width: 1 }, ticks: { stroke: "#bbb", width: 1 },
             values: timeTicks, label: "time (UTC)", labelSize: 16, labelFont: "11px system-ui, sans-serif",
             font: "11px system-ui, sans-serif", size: 44 };
  }

  function baseOptions(g, width, height, hooks) {
    return {
      width, height, ms: 1, tzDate: ts => uPlot.tzDate(new Date(ts), UTC),
      legend: { show: false },
      // the cursor is shared; a drag is not (the chart dragged on sets the group's range for all)
      cursor: { sync: { key: g.name, setSeries: false, filters: { pub: type => !/^(mousedown|mouseup|dblclick)$/.test(type) } },
                drag: { x: true, y: false, setScale: false },
                points: { show: false }, bind: { dblclick: () => null } },
      scales: { x: { time: true, auto: false, range: () => [g.min, g.max] } },
      hooks,
    };
  }

  function annotations(cluster) {
    const ev = cluster.events, order = ev.t.map((_, i) => i).sort((i, j) => ev.t[i] - ev.t[j]);
    return { t: Float64Array.from(order, i => ev.t[i]), kind: order.map(i => ev.kind[i]),
             detail: order.map(i => ev.detail[i]) };
  }

  function drawAnnotations(u, notes) {
    const ctx = u.ctx, { top, height } = u.bbox, min = u.scales.x.min, max = u.scales.x.max;
    let drawn = 0;
    ctx.save();
    ctx.lineWidth = Math.max(1, devicePixelRatio);
    ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
    for (let i = after(notes.t, min - 1); i < notes.t.length && notes.t[i] <= max; i++) {
      const x = Math.round(u.valToPos(notes.t[i], "x", true)) + 0.5, color = DATA.annotated[notes.kind[i]];
      ctx.strokeStyle = alpha(color, notes.kind[i] === "controller-leader" ? 0.45 : 0.9);
      ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, top + height); ctx.stroke();
      ctx.fillStyle = color;
      const s = 4 * devicePixelRatio;
      ctx.beginPath(); ctx.moveTo(x - s, top); ctx.lineTo(x + s, top); ctx.lineTo(x, top + s * 1.5); ctx.fill();
      drawn++;
    }
    ctx.restore();
    u.notesDrawn = drawn;  // how many events this drawing marks (the tests read it)
  }

  function notesNear(u, notes, t) {  // events within 4 px of the cursor
    const tol = 4 * (u.scales.x.max - u.scales.x.min) / plotPixels(u), out = [];
    for (let i = after(notes.t, t - tol - 1); i < notes.t.length && notes.t[i] <= t + tol; i++)
      if (Math.abs(notes.t[i] - t) <= tol) out.push(`▲ ${notes.kind[i]} at ${time(notes.t[i])}: ${notes.detail[i]}`);
    return out;
  }

  function figure(host, spec, legend) {
    const fig = el("figure", "chart");
    fig.dataset.chart = spec.name;
    const cap = el("figcaption", null, spec.title);
    if (spec.unit) cap.appendChild(el("span", "unit", ` (${spec.unit})`));
    fig.appendChild(cap);
    const keys = el("div", "legend");
    legend.forEach(([label, color], i) => {
      const key = el("span", "key");
      key.dataset.index = i;
      const sw = el("i"); sw.style.background = color;
      key.appendChild(sw); key.appendChild(document.createTextNode(label));
      keys.appendChild(key);
    });
    fig.appendChild(keys);
    const readout = el("div", "readout");
    fig.appendChild(readout);
    const plot = el("div", "plot");
    fig.appendChild(plot);
    host.appendChild(fig);
    return { fig, keys, readout, plot };
  }

  function plotPixels(u) { return Math.max(1, u.bbox.width / devicePixelRatio); }  // the plot area, CSS px

  function plotWidth(host) { return Math.max(320, Math.floor(host.clientWidth || 960)); }

  function linkInput(u, g) {
    u.over.addEventListener("dblclick", () => setRange(g, g.full[0], g.full[1]));
    u.over.addEventListener("wheel", e => {
      if (!(e.ctrlKey || e.shiftKey || e.altKey)) return;  // a plain wheel scrolls the page
      e.preventDefault();
      const span = g.max - g.min, w = plotPixels(u);
      if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
        const d = (e.shiftKey ? e.deltaY || e.deltaX : e.deltaX) / w * span;
        setRange(g, g.min + d, g.max + d);
      } else {
        const t = u.posToVal(e.offsetX, "x"), f = e.deltaY > 0 ? 1.25 : 0.8;
        setRange(g, t - (t - g.min) * f, t + (g.max - t) * f);
      }
    }, { passive: false });
  }

  function onSelect(g) {
    return u => {
      const sel = u.select;
      if (sel.width < 3) return;
      const a = u.posToVal(sel.left, "x"), b = u.posToVal(sel.left + sel.width, "x");
      u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
      setRange(g, a, b);
    };
  }

  // ---- line charts: per series a max line and a min line, the band between them filled --------------------
  function lineChart(host, cluster, spec, g, notes) {
    const series = spec.series.map(s => Object.assign({ label: s.label, color: s.color }, decode(s, cluster.t0)));
    const parts = figure(host, spec, series.map(s => [s.label, s.color]));
    const chart = { name: spec.name, cluster: cluster.name, group: g, series, kind: "line", u: null, n: 0 };
    const compute = () => {
      const n = Math.max(16, Math.round(chart.u ? chart.u.bbox.width / devicePixelRatio : plotWidth(parts.plot) - 70));
      const a = g.min, b = g.max, w = (b - a) / n, xs = new Array(n + 1);
      for (let k = 0; k <= n; k++) xs[k] = a + k * w;
      const out = [xs];
      chart.buckets = { a, b, n, w };
      chart.env = series.map(s => envelope(s, a, b, n, cluster.t1));
      for (const e of chart.env) {  // the last bucket's value repeated at b, so the step reaches the edge
        out.push([...e.hi, e.hi[n - 1]]); out.push([...e.lo, e.lo[n - 1]]);
      }
      return out;
    };
    const readout = u => {
      const left = u.cursor.left, bk = chart.buckets;
      if (!bk || !chart.env) return;
      let k, head;
      if (left === undefined || left < 0) {
        k = -1;
        for (let j = bk.n - 1; j >= 0 && k < 0; j--) if (chart.env.some(e => e.hi[j] !== null)) k = j;
        head = k < 0 ? "no data in range" : `at ${time(bk.a + (k + 1) * bk.w, bk.b - bk.a)} (end of range)`;
      } else {
        const t = u.posToVal(left, "x");
        k = Math.min(bk.n - 1, Math.max(0, Math.floor((t - bk.a) / bk.w)));
        head = `${time(bk.a + k * bk.w, bk.b - bk.a)} UTC`;
      }
      const values = k < 0 ? [] : series.map((s, i) => {
        const lo = chart.env[i].lo[k], hi = chart.env[i].hi[k];
        const v = lo === hi ? number(hi) : `${number(lo)} to ${number(hi)}`;
        return `<span class="v"><i style="background:${s.color}"></i>${escape(s.label)}: <b>${v}</b></span>`;
      });
      const near = left >= 0 ? notesNear(u, notes, u.posToVal(left, "x")) : [];
      parts.readout.innerHTML = `<span class="t">${head}</span> ${values.join(" ")}` +
        near.map(n => `<div class="note">${escape(n)}</div>`).join("");
    };
    const opts = baseOptions(g, plotWidth(parts.plot), 190, {
      setSelect: [onSelect(g)], setCursor: [readout], draw: [u => drawAnnotations(u, notes)],
    });
    opts.scales.y = { auto: true, range: (u, mn, mx) => [0, niceMax(mx)] };
    opts.axes = [xAxis(), { stroke: "#333", grid: { stroke: "#e6e6e6", width: 1 }, ticks: { stroke: "#bbb", width: 1 },
                            incrs: INTEGER_INCRS, values: (u, splits) => splits.map(number), label: spec.unit,
                            labelSize: 16, labelFont: "11px system-ui, sans-serif", font: "11px system-ui, sans-serif",
                            size: left - 16 }];
    const stepped = uPlot.paths.stepped({ align: 1 });
    opts.series = [{}];
    opts.bands = [];
    series.forEach((s, i) => {
      opts.series.push({ label: `${s.label} (highest)`, stroke: s.color, width: 1.5, paths: stepped,
                         points: { show: false }, spanGaps: false });
      opts.series.push({ label: `${s.label} (lowest)`, stroke: s.color, width: 1.5, paths: stepped,
                         points: { show: false }, spanGaps: false });
      opts.bands.push({ series: [1 + 2 * i, 2 + 2 * i], fill: alpha(s.color, 0.35) });
    });
    chart.u = new uPlot(opts, [[g.min, g.max], ...series.flatMap(() => [[null, null], [null, null]])], parts.plot);
    chart.refresh = () => {
      const u = chart.u;
      u.batch(() => { u.setScale("x", { min: g.min, max: g.max }); u.setData(compute()); });
      readout(u);
    };
    parts.keys.addEventListener("click", e => {  // a legend key shows or hides its series
      const key = e.target.closest(".key");
      if (!key) return;
      const i = +key.dataset.index, show = key.classList.toggle("off") === false;
      chart.u.batch(() => { chart.u.setSeries(1 + 2 * i, { show }); chart.u.setSeries(2 + 2 * i, { show }); });
    });
    linkInput(chart.u, g);
    chart.readout = readout;
    return chart;
  }

  // ---- lanes: one row per lane, colored runs; states that matter drawn again on top, a pixel wide at least -
  function laneChart(host, cluster, spec, g, notes) {
    const lanes = spec.lanes.map(l => Object.assign({ label: l.label, title: l.title, codes: l.codes, colors: l.colors,
                                                      named: l.named || l.label === "metadata.version",
                                                      stripe: l.stripe ? Object.assign({ color: l.stripe.color, label: l.stripe.label }, decode(l.stripe, cluster.t0)) : null },
                                                    decode(l, cluster.t0)));
    const parts = figure(host, spec, spec.legend);
    const chart = { name: spec.name, cluster: cluster.name, group: g, lanes, kind: "lanes", u: null };
    const alarms = new Set(["fenced", "controlled-shutdown", "offline"]);
    const n = lanes.length;

    function runsIn(l, a, b) {  // indexes of the runs overlapping [a, b]
      const first = Math.max(0, after(l.t, a) - 1), out = [];
      for (let i = first; i < l.t.length && l.t[i] <= b; i++) out.push(i);
      return out;
    }
    function draw(u) {
      const ctx = u.ctx, min = u.scales.x.min, max = u.scales.x.max, px = devicePixelRatio;
      const until = cluster.t1;
      ctx.save();
      lanes.forEach((l, li) => {
        const y0 = u.valToPos(n - li, "y", true) + px, y1 = u.valToPos(n - li - 1, "y", true) - px;
        const runs = runsIn(l, min, max);
        for (const pass of [0, 1]) {
          for (const i of runs) {
            const code = l.codes[l.v[i]];
            if (pass === 1 && !alarms.has(code)) continue;
            const start = l.t[i], end = i + 1 < l.t.length ? l.t[i + 1] : until;
            if (end < min || start > until) continue;
            const x0 = u.valToPos(Math.max(start, min), "x", true), x1 = u.valToPos(Math.min(end, max), "x", true);
            ctx.fillStyle = l.colors[l.v[i]];
            ctx.fillRect(Math.floor(x0), y0, Math.max(Math.round(x1 - x0), px), y1 - y0);
          }
        }
        if (l.stripe) {
          for (const i of runsIn(l.stripe, min, max)) {
            if (!l.stripe.v[i]) continue;
            const start = l.stripe.t[i], end = i + 1 < l.stripe.t.length ? l.stripe.t[i + 1] : until;
            const x0 = u.valToPos(Math.max(start, min), "x", true), x1 = u.valToPos(Math.min(end, max), "x", true);
            ctx.fillStyle = l.stripe.color;
            ctx.fillRect(Math.floor(x0), y1 - 4 * px, Math.max(Math.round(x1 - x0), px), 4 * px);
          }
        }
        if (l.named) {  // its runs named where they are wide enough (metadata.version, the leader epochs)
          ctx.fillStyle = "#222"; ctx.font = `${10 * px}px system-ui, sans-serif`; ctx.textBaseline = "middle";
          ctx.textAlign = "left";
          for (const i of runs) {
            const start = Math.max(l.t[i], min), end = Math.min(i + 1 < l.t.length ? l.t[i + 1] : until, max);
            const x0 = u.valToPos(start, "x", true), x1 = u.valToPos(end, "x", true), name = l.codes[l.v[i]];
            if (x1 - x0 > ctx.measureText(name).width + 8 * px) ctx.fillText(name, x0 + 4 * px, (y0 + y1) / 2);
          }
        }
      });
      ctx.restore();
      drawAnnotations(u, notes);
    }
    const readout = u => {
      const left = u.cursor.left, min = u.scales.x.min, max = u.scales.x.max;
      const w = (max - min) / plotPixels(u);
      const t = left === undefined || left < 0 ? Math.min(max, cluster.t1) : u.posToVal(left, "x");
      const head = left === undefined || left < 0 ? `at ${time(t, max - min)} (end of range)` : `${time(t, max - min)} UTC`;
      const values = lanes.map(l => {
        const codes = [...new Set(runsIn(l, t, t + w).filter(i => {
          const end = i + 1 < l.t.length ? l.t[i + 1] : cluster.t1;
          return end >= t && l.t[i] <= Math.min(t + w, cluster.t1);
        }).map(i => l.codes[l.v[i]]))];
        let text = codes.length ? codes.join(" and ") : "-";
        if (l.stripe) {
          const zk = runsIn(l.stripe, t, t + w).some(i => l.stripe.v[i] && (i + 1 >= l.stripe.t.length || l.stripe.t[i + 1] >= t));
          if (zk) text += ", on ZooKeeper";
        }
        return `<span class="v" title="${escape(l.title)}">${escape(l.label)}: <b>${escape(text)}</b></span>`;
      });
      const near = left >= 0 ? notesNear(u, notes, t) : [];
      parts.readout.innerHTML = `<span class="t">${head}</span> ${values.join(" ")}` +
        near.map(x => `<div class="note">${escape(x)}</div>`).join("");
    };
    const opts = baseOptions(g, plotWidth(parts.plot), n * LANE + 72, {
      setSelect: [onSelect(g)], setCursor: [readout], draw: [draw],
    });
    opts.scales.y = { auto: false, range: [0, n] };
    opts.axes = [xAxis(), { stroke: "#333", grid: { show: false }, ticks: { show: false }, size: left, gap: 4,
                            splits: () => lanes.map((_, i) => n - i - 0.5), values: () => lanes.map(l => l.label),
                            font: "11px system-ui, sans-serif" }];
    opts.series = [{}, { label: "lanes", stroke: "transparent", points: { show: false } }];
    chart.u = new uPlot(opts, [[g.min, g.max], [null, null]], parts.plot);
    chart.refresh = () => {
      const u = chart.u;
      u.batch(() => { u.setScale("x", { min: g.min, max: g.max }); u.setData([[g.min, g.max], [null, null]]); });
      readout(u);
    };
    linkInput(chart.u, g);
    chart.readout = readout;
    return chart;
  }

  function escape(s) {
    return String(s).replace(/[&<>"]/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
  }

  // ---- build ----------------------------------------------------------------------------------------------
  function build() {
    const fleet = DATA.shared && DATA.clusters.length ?
      group("fleet", Math.min(...DATA.clusters.map(c => c.t0)), Math.max(...DATA.clusters.map(c => c.t1))) : null;
    DATA.clusters.forEach((cluster, i) => {
      const g = fleet || group(`c${i}`, cluster.t0, cluster.t1);
      const notes = annotations(cluster);
      const add = chart => { g.charts.push(chart); report.charts.push(chart); watch(chart); };
      for (const host of document.querySelectorAll(`.charts[data-cluster="${i}"]`)) {
        const view = host.dataset.view;
        if (view === "cluster") {
          add(laneChart(host, cluster, cluster.lanes, g, notes));
          for (const spec of cluster.charts) add(lineChart(host, cluster, spec, g, notes));
        } else if (cluster[view]) {
          add(laneChart(host, cluster, cluster[view].lanes, g, notes));
          // a chart's own marks (the growth view's snapshots) in place of the cluster's events
          for (const spec of cluster[view].charts)
            add(lineChart(host, cluster, spec, g, spec.marks ? annotations({ events: spec.marks }) : notes));
        }
      }
    });
    for (const g of groups.values()) setRange(g, g.full[0], g.full[1]);
    let pending = 0;
    window.addEventListener("resize", () => {
      clearTimeout(pending);
      pending = setTimeout(() => {
        for (const c of report.charts) c.u.setSize({ width: plotWidth(c.u.root.parentNode), height: c.u.height });
        for (const g of groups.values()) setRange(g, g.min, g.max);
      }, 150);
    });
  }

  // ---- tables ---------------------------------------------------------------------------------------------
  function sortable(table) {
    const heads = [...table.tHead.rows[0].cells];
    heads.forEach((th, col) => th.querySelector("button").addEventListener("click", () => {
      const descending = th.getAttribute("aria-sort") === "ascending";
      heads.forEach(h => h.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", descending ? "descending" : "ascending");
      const body = table.tBodies[0], rows = [...body.rows];
      const key = r => r.cells[col].dataset.sort ?? r.cells[col].textContent;
      const numeric = rows.every(r => key(r) !== "" && !isNaN(Number(key(r))));
      rows.sort((x, y) => {
        const a = key(x), b = key(y);
        const c = numeric ? Number(a) - Number(b) : a.localeCompare(b);
        return descending ? -c : c;
      });
      rows.forEach(r => body.appendChild(r));
    }));
  }

  function events() {
    const section = document.getElementById("events");
    if (!section) return;
    const kinds = [...section.querySelectorAll("button.kind")], cluster = section.querySelector(".cluster-filter");
    const text = section.querySelector(".text-filter"), shown = section.querySelector(".shown");
    const apply = () => {
      const on = new Set(kinds.filter(b => b.getAttribute("aria-pressed") === "true").map(b => b.dataset.kind));
      const which = cluster.value, words = text.value.trim().toLowerCase();
      let visible = 0, total = 0;
      const ok = r => on.has(r.dataset.kind) && (!which || r.dataset.cluster === which) &&
        (!words || r.textContent.toLowerCase().includes(words));
      for (const r of section.querySelectorAll("tbody.main tr")) { total++; r.hidden = !ok(r); visible += !r.hidden; }
      for (const fold of section.querySelectorAll("tbody.fold")) {
        const open = fold.querySelector("button").getAttribute("aria-expanded") === "true";
        const headOk = on.has(fold.dataset.kind) && (!which || fold.dataset.cluster === which);
        fold.rows[0].hidden = !headOk;
        for (const r of [...fold.rows].slice(1)) { total++; r.hidden = !(headOk && open && ok(r)); visible += !r.hidden; }
      }
      shown.textContent = `${visible.toLocaleString("en-US")} of ${total.toLocaleString("en-US")} rows shown`;
    };
    kinds.forEach(b => b.addEventListener("click", () => {
      b.setAttribute("aria-pressed", b.getAttribute("aria-pressed") === "true" ? "false" : "true");
      apply();
    }));
    for (const b of section.querySelectorAll("tbody.fold button")) b.addEventListener("click", () => {
      b.setAttribute("aria-expanded", b.getAttribute("aria-expanded") === "true" ? "false" : "true");
      apply();
    });
    cluster.addEventListener("change", apply);
    text.addEventListener("input", apply);
    apply();
  }

  document.querySelectorAll("table.sortable").forEach(sortable);
  events();
  build();
  report.ready = true;
  document.documentElement.dataset.report = "ready";
})();
