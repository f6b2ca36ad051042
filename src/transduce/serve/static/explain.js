// transduce explain: one translation, step by step, drawn from POST /explain and
// POST /explain/head (the same numbers as transduce.load(RUN).explain(...) and .head(...)).
// Every view is an SVG, so every view exports as SVG and as PNG. Nothing is fetched from
// the network but this server.
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var FONT = "12px system-ui, sans-serif";
  var data = null, step = 0, hidden = {}, only = null, encoderQuery = 0;
  var $ = function (id) { return document.getElementById(id); };

  // ------------------------------------------------------------------ small helpers
  function el(tag, attrs, parent, text) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function svgRoot(width, height, parent) {
    parent.textContent = "";
    var s = el("svg", {xmlns: NS, width: width, height: height,
                       viewBox: "0 0 " + width + " " + height, "font-family": "system-ui, sans-serif",
                       "font-size": "12"}, parent);
    el("rect", {x: 0, y: 0, width: width, height: height, fill: "white"}, s);
    return s;
  }
  function text(svg, x, y, s, attrs) {
    var a = {x: x, y: y, "font-size": 12, fill: "#1d2330"};
    for (var k in attrs || {}) a[k] = attrs[k];
    return el("text", a, svg, s);
  }
  function headColour(h, n) { return "hsl(" + Math.round(360 * h / n) + ",70%,45%)"; }
  function shade(w) {  // 0 white → 1 deep blue
    var t = Math.max(0, Math.min(1, w));
    return "rgb(" + Math.round(255 - 215 * t) + "," + Math.round(255 - 175 * t) + "," +
           Math.round(255 - 75 * t) + ")";
  }
  function diverging(v, scale) {  // negative blue, positive red, 0 white
    var t = Math.max(-1, Math.min(1, v / (scale || 1)));
    var a = Math.round(255 * (1 - Math.abs(t)));
    return t < 0 ? "rgb(" + a + "," + a + ",255)" : "rgb(255," + a + "," + a + ")";
  }
  function topOf(matrix) {  // the weight the colour scale ends at for a map of K keys
    var top = 0, K = matrix[0].length;
    matrix.forEach(function (r) { r.forEach(function (w) { top = Math.max(top, w); }); });
    return Math.max(Math.min(top, 1), Math.min(1, 5 / K));
  }
  function rows(kind) {  // [query labels, key labels] as the model's weights index them
    if (kind === "cross") return [data.target, data.source];
    if (kind === "encoder") return [data.source, data.source];
    return [data.target_inputs, data.target_inputs];
  }
  function queryRow(kind) {  // the query of this step: the token being written
    if (kind === "encoder") return encoderQuery;
    return Math.min(step, data.target.length - 1);
  }
  function post(path, body) {
    return fetch(path, {method: "POST", headers: {"Content-Type": "application/json"},
                        body: JSON.stringify(body)}).then(function (r) {
      return r.json().then(function (j) {
        if (!r.ok) throw new Error(j.error || r.statusText);
        return j;
      });
    });
  }

  // ------------------------------------------------------------------ export
  function exportView(id, format) {
    var svg = $(id).querySelector("svg");
    var source = new XMLSerializer().serializeToString(svg);
    if (format === "svg") {
      var href = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(source);
      return Promise.resolve(download(href, id + ".svg", format, source.length));
    }
    return new Promise(function (resolve, reject) {
      var img = new Image();
      img.onload = function () {
        var canvas = document.createElement("canvas");
        canvas.width = svg.width.baseVal.value * 2; canvas.height = svg.height.baseVal.value * 2;
        var ctx = canvas.getContext("2d");
        ctx.scale(2, 2); ctx.drawImage(img, 0, 0);
        var href = canvas.toDataURL("image/png");
        resolve(download(href, id + ".png", format, href.length));
      };
      img.onerror = function () { reject(new Error("the view could not be drawn as PNG")); };
      img.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(source);
    });
  }
  function download(href, name, format, bytes) {
    var a = document.createElement("a");
    a.href = href; a.download = name; a.id = "last-export";
    var old = $("last-export"); if (old) old.remove();
    a.hidden = true; document.body.appendChild(a);
    if (!navigator.webdriver) a.click();  // tests read the link instead of a file
    window.lastExport = {view: name, format: format, bytes: bytes, href: href};
    return window.lastExport;
  }
  window.explainExport = exportView;
  document.querySelectorAll(".export").forEach(function (span) {
    ["svg", "png"].forEach(function (format) {
      var b = document.createElement("button");
      b.type = "button"; b.textContent = format.toUpperCase();
      b.className = "export-" + format; b.title = "save this view as " + format.toUpperCase();
      b.onclick = function () { exportView(span.dataset.view, format); };
      span.appendChild(b);
    });
  });

  // ------------------------------------------------------------------ 1 · decoding
  function drawOutput() {
    var p = $("output"); p.textContent = "output: ";
    data.target.forEach(function (t, i) {
      var s = document.createElement("span");
      s.className = "tok" + (i === step ? " now" : i > step ? " later" : "");
      s.textContent = t; p.appendChild(s);
    });
    if (step >= data.target.length) {
      var note = document.createElement("span");
      note.className = "help";
      note.textContent = "  (the best translation finished at step " + data.target.length +
        "; the beam went on while a live hypothesis could still beat it)";
      p.appendChild(note);
    }
  }

  function drawBeamTable() {
    var s = data.steps[step], box = $("beam-table");
    var html = "<table class='beam'><tr><th>#</th><th>hypothesis so far</th><th>log p</th>" +
               "<th>most probable next tokens</th></tr>";
    s.hypotheses.forEach(function (h, i) {
      html += "<tr><td>" + (i + 1) + "</td><td>" + esc(h.tokens.join(" ") || "<s>") +
              "</td><td>" + h.log_prob.toFixed(3) + "</td><td>" +
              h.next.map(function (n) {
                return esc(n.token) + " <span class='bar' style='width:" +
                       Math.max(1, Math.round(40 * n.prob)) + "px'></span> " + n.prob.toFixed(2);
              }).join(" · ") + "</td></tr>";
    });
    html += "</table><table class='beam candidates'><tr><th>extends #</th><th>token</th>" +
            "<th>log p</th><th>what happens</th></tr>";
    s.candidates.forEach(function (c) {
      var what = c.status === "finished"
        ? "finished: score " + c.score.toFixed(3) + " = log p / " + s.penalty.toFixed(3)
        : c.status === "continues" ? "continues (beam " + (c.slot + 1) + ")" : "falls out";
      html += "<tr class='st-" + c.status + "'><td>" + (c.parent + 1) + "</td><td>" +
              esc(c.token) + "</td><td>" + c.log_prob.toFixed(3) + "</td><td>" + what +
              "</td></tr>";
    });
    box.innerHTML = html + "</table>";
  }

  function drawTree() {
    // nodes: the root, then per step the candidates that continue (row = their beam slot)
    // and those that finish (rows below the beam); an edge joins each to what it extends
    var K = data.beam, upto = Math.min(step, data.steps.length - 1);
    var finishedRows = 0;
    for (var u = 0; u <= upto; u++)
      finishedRows = Math.max(finishedRows, data.steps[u].candidates.filter(function (c) {
        return c.status === "finished"; }).length);
    var colW = 86, rowH = 24, top = 20, left = 40;
    var width = left + (upto + 2) * colW + 60, height = top + (K + finishedRows + 1) * rowH;
    var svg = svgRoot(width, height, $("tree"));
    var prev = [[left, top + rowH / 2]];  // the root's position, as slot 0
    text(svg, 4, top + rowH / 2 + 4, "<s>");
    for (u = 0; u <= upto; u++) {
      var s = data.steps[u], next = [], fin = 0, x = left + (u + 1) * colW;
      text(svg, x - 20, 12, "step " + (u + 1), {"font-size": 10, fill: "#7a8294"});
      s.candidates.forEach(function (c) {
        if (c.status === "dropped") return;
        var row = c.status === "continues" ? c.slot : K + fin++;
        var y = top + row * rowH + rowH / 2;
        var slot = s.hypotheses[c.parent] ? s.hypotheses[c.parent].slot : 0;
        var from = prev[slot] || prev[0];
        var current = u === upto;
        el("line", {x1: from[0] + 30, y1: from[1], x2: x - 22, y2: y,
                    stroke: c.status === "finished" ? "#0b4fa3" : "#8fa0b8",
                    "stroke-width": current ? 2 : 1}, svg);
        var label = c.token + (c.status === "finished" ? " " + c.score.toFixed(2) : "");
        text(svg, x - 20, y + 4, label, {fill: c.status === "finished" ? "#0b4fa3" : "#1d2330",
                                          "font-weight": current ? "bold" : "normal",
                                          "class": "tree-node", "data-status": c.status});
        if (c.status === "continues") next[c.slot] = [x, y];
      });
      prev = next;
    }
  }

  function drawNbest() {
    $("nbest").innerHTML = data.nbest.map(function (h) {
      return "<li>" + esc(h.text) + " <span class='help'>score " + h.score.toFixed(3) +
             " (log p " + h.log_prob.toFixed(3) + ")</span></li>";
    }).join("");
  }

  // ------------------------------------------------------------------ 2 · attention
  function weights(kind) { return data[kind]; }  // [layer][head][query][key]

  function drawLegend() {
    var box = $("legend"); box.textContent = "heads: ";
    for (var h = 0; h < data.heads; h++) (function (h) {
      var s = document.createElement("span");
      s.className = "head-key"; s.dataset.head = h;
      s.innerHTML = "<i style='background:" + headColour(h, data.heads) + "'></i>head " + (h + 1);
      s.style.opacity = hidden[h] ? 0.3 : 1;
      s.onmouseenter = function () { only = h; drawHeadView(); };
      s.onmouseleave = function () { only = null; drawHeadView(); };
      s.onclick = function () { hidden[h] = !hidden[h]; drawLegend(); drawHeadView(); };
      box.appendChild(s);
    })(h);
  }

  function drawHeadView() {
    var kind = $("kind").value, layer = +$("layer").value, labels = rows(kind);
    var q = queryRow(kind), W = weights(kind)[layer], n = Math.max(labels[0].length,
                                                                   labels[1].length);
    var rowH = 18, width = 520, height = 44 + n * rowH, lx = 150, rx = 370;
    var svg = svgRoot(width, height, $("head-view"));
    text(svg, lx, 14, kind === "encoder" ? "query (source)" : "query (output)",
         {"text-anchor": "end", fill: "#7a8294"});
    text(svg, rx, 14, "key", {fill: "#7a8294"});
    labels[0].forEach(function (t, i) {
      var node = text(svg, lx - 6, 30 + i * rowH + 4, t, {"text-anchor": "end",
        "font-weight": i === q ? "bold" : "normal", fill: i === q ? "#d9480f" : "#9aa1ad",
        "class": "query-token", "data-index": i});
      if (kind === "encoder") node.addEventListener("mouseenter", function () {
        encoderQuery = i; drawHeadView(); drawModelView(); });
    });
    labels[1].forEach(function (t, j) { text(svg, rx + 6, 30 + j * rowH + 4, t); });
    var top = Math.max.apply(null, W.map(function (m) { return topOf([m[q]]); }));
    for (var h = 0; h < data.heads; h++) {
      if (hidden[h] || (only !== null && only !== h)) continue;
      W[h][q].forEach(function (w, j) {
        if (w < 0.005) return;
        var s = Math.min(1, w / top);
        el("line", {x1: lx, y1: 30 + q * rowH, x2: rx, y2: 30 + j * rowH,
                    stroke: headColour(h, data.heads), "stroke-opacity": 0.15 + 0.85 * s,
                    "stroke-width": 1 + 4 * s, "class": "attn-line", "data-head": h,
                    "data-key": j, "data-weight": w}, svg);
      });
    }
    text(svg, 4, height - 4, "line strength: weight / " + top.toFixed(2) +
         " (the strongest here, or 5 × an even split)", {"font-size": 10, fill: "#7a8294"});
  }

  function drawModelView() {
    var kind = $("kind").value, W = weights(kind), q = queryRow(kind);
    var labels = rows(kind), Q = labels[0].length, K = labels[1].length;
    var cell = Math.max(1, Math.min(6, Math.floor(84 / Math.max(Q, K))));
    var tw = K * cell, th = Q * cell, pad = 14, left = 60;
    var width = Math.max(left + data.heads * (tw + pad), 560);
    var height = 20 + data.layers * (th + pad) + 40;
    var svg = svgRoot(width, height, $("model-view"));
    for (var h = 0; h < data.heads; h++)
      text(svg, left + h * (tw + pad), 12, "head " + (h + 1), {"font-size": 10});
    for (var l = 0; l < data.layers; l++) {
      text(svg, 4, 20 + l * (th + pad) + th / 2, "layer " + (l + 1), {"font-size": 10});
      for (h = 0; h < data.heads; h++) (function (l, h) {
        var x0 = left + h * (tw + pad), y0 = 20 + l * (th + pad);
        var g = el("g", {"class": "thumb", "data-layer": l, "data-head": h,
                         style: "cursor:pointer"}, svg);
        el("image", {x: x0, y: y0, width: tw, height: th,
                     href: thumbnail(kind, l, h, W[l][h], cell)}, g);
        el("rect", {x: x0, y: y0, width: tw, height: th, fill: "none", stroke: "#ccd"}, g);
        el("rect", {x: x0, y: y0 + q * cell, width: tw, height: cell, fill: "none",
                    stroke: "#d9480f"}, g);
        g.addEventListener("click", function () { openHead(kind, l, h); });
      })(l, h);
    }
    colourScale(svg, left, height - 28, 160, "weight, each map from 0 to its own strongest " +
                "(at least 5 × an even split)", "0", "top");
  }

  var thumbs = {};  // kind/layer/head → its heatmap as a PNG data URL: drawn once a sentence
  function thumbnail(kind, l, h, matrix, cell) {
    var key = kind + "/" + l + "/" + h;
    if (!thumbs[key]) {
      var canvas = document.createElement("canvas");
      canvas.width = matrix[0].length * cell; canvas.height = matrix.length * cell;
      var ctx = canvas.getContext("2d"), top = topOf(matrix);
      matrix.forEach(function (row, i) {
        row.forEach(function (w, j) {
          ctx.fillStyle = shade(w / top); ctx.fillRect(j * cell, i * cell, cell, cell);
        });
      });
      thumbs[key] = canvas.toDataURL();
    }
    return thumbs[key];
  }

  function colourScale(svg, x, y, w, label, low, high) {
    for (var i = 0; i < 20; i++)
      el("rect", {x: x + i * w / 20, y: y, width: w / 20 + 0.5, height: 10,
                  fill: shade(i / 19)}, svg);
    text(svg, x, y + 22, low || "0", {"font-size": 10});
    text(svg, x + w, y + 22, high || "1", {"font-size": 10, "text-anchor": "end"});
    text(svg, x + w + 10, y + 9, label, {"font-size": 10});
  }

  // ------------------------------------------------------------------ 3 · one head
  function fillSelect(select, n, label, value) {
    select.innerHTML = "";
    for (var i = 0; i < n; i++) {
      var o = document.createElement("option");
      o.value = i; o.textContent = label ? label(i) : String(i + 1); select.appendChild(o);
    }
    select.value = value;
  }

  function openHead(kind, layer, head) {
    $("kind").value = kind;
    fillSelect($("head-layer"), data.layers, null, layer);
    fillSelect($("head-head"), data.heads, null, head);
    var labels = rows(kind);
    fillSelect($("head-query"), labels[0].length, function (i) {
      return (i + 1) + ": " + labels[0][i]; }, queryRow(kind));
    return drawHead();
  }

  function drawHead() {
    var kind = $("kind").value, layer = +$("head-layer").value, head = +$("head-head").value;
    var query = +$("head-query").value, labels = rows(kind), W = weights(kind)[layer][head];
    var peak = topOf(W);
    var cell = Math.max(6, Math.min(18, Math.floor(480 / labels[1].length)));
    var left = 120, top = 90, width = left + labels[1].length * cell + 40;
    var height = top + labels[0].length * cell + 50;
    var svg = svgRoot(width, height, $("head-big"));
    text(svg, 4, 14, kind + " attention, layer " + (layer + 1) + ", head " + (head + 1),
         {"font-weight": "bold"});
    labels[1].forEach(function (t, j) {
      text(svg, left + j * cell + cell / 2 + 3, top - 6, t,
           {transform: "rotate(-60 " + (left + j * cell + cell / 2 + 3) + " " + (top - 6) + ")",
            "font-size": 10});
    });
    W.forEach(function (row, i) {
      text(svg, left - 6, top + i * cell + cell / 2 + 4, labels[0][i],
           {"text-anchor": "end", "font-size": 10, fill: i === query ? "#d9480f" : "#1d2330"});
      row.forEach(function (w, j) {
        el("rect", {x: left + j * cell, y: top + i * cell, width: cell, height: cell,
                    fill: shade(w / peak), stroke: "#f4f5f8"}, svg)
          .appendChild(el("title", {}, null, labels[0][i] + " → " + labels[1][j] + ": " +
                          w.toFixed(4)));
      });
    });
    el("rect", {x: left, y: top + query * cell, width: labels[1].length * cell, height: cell,
                fill: "none", stroke: "#d9480f", "stroke-width": 2}, svg);
    colourScale(svg, left, height - 30, 160, "attention weight", "0", peak.toFixed(2));
    return post("explain/head", {sentence: data.sentence, beam: data.beam, lenpen: data.lenpen,
                                 kind: kind, layer: layer, head: head, query: query})
      .then(drawNumbers).catch(showError);
  }

  function strip(svg, x, y, values, cell, scale, title) {
    values.forEach(function (v, i) {
      el("rect", {x: x + i * cell, y: y, width: cell, height: 12, fill: diverging(v, scale),
                  stroke: "#eef"}, svg).appendChild(el("title", {}, null,
                  title + "[" + i + "] = " + v.toFixed(4)));
    });
  }

  function drawNumbers(n) {
    window.lastHead = n;
    var dk = n.d_k, cell = Math.max(3, Math.min(8, Math.floor(260 / dk)));
    var vecW = dk * cell, left = 110, colScore = left + vecW + 20, colMask = colScore + 90;
    var colW = colMask + 70, colV = colW + 130, rowH = 18;
    var width = colV + vecW + 20, height = 130 + n.key_tokens.length * rowH + 60;
    var svg = svgRoot(width, height, $("head-numbers"));
    var all = [].concat(n.q, [].concat.apply([], n.k), [].concat.apply([], n.v));
    var scale = Math.max.apply(null, all.map(Math.abs)) || 1;
    var wmax = Math.max.apply(null, n.weights) || 1;
    var wv = n.v.map(function (row, j) { return row.map(function (x) { return x * n.weights[j]; }); });
    var wvScale = Math.max.apply(null, [].concat.apply([], wv).concat(n.output).map(Math.abs)) || 1;
    text(svg, 4, 16, "query " + (n.query + 1) + ": " + n.query_token + " · d_k = " + dk +
         " · √d_k = " + Math.sqrt(dk).toFixed(3), {"font-weight": "bold"});
    text(svg, 4, 42, "q"); strip(svg, left, 32, n.q, cell, scale, "q");
    var y0 = 80;
    [["key", 4], ["k", left], ["q·k/√d_k", colScore], ["mask", colMask],
     ["softmax", colW], ["weight × v", colV]].forEach(function (h) {
      text(svg, h[1], y0 - 8, h[0], {fill: "#7a8294"}); });
    n.key_tokens.forEach(function (t, j) {
      var y = y0 + j * rowH;
      text(svg, 4, y + 10, t);
      strip(svg, left, y, n.k[j], cell, scale, "k");
      var masked = !n.mask[j];
      text(svg, colScore, y + 10, masked ? n.raw_scores[j].toFixed(3) : n.scores[j].toFixed(3),
           {"class": "score" + (masked ? " masked" : ""), "data-key": j,
            "data-score": n.raw_scores[j], fill: masked ? "#9aa1ad" : "#1d2330",
            "text-decoration": masked ? "line-through" : "none"});
      text(svg, colMask, y + 10, masked ? "−∞ (masked)" : "kept",
           {fill: masked ? "#a40000" : "#1b6e20", "font-size": 11});
      el("rect", {x: colW, y: y + 1, width: Math.max(0.5, 60 * n.weights[j] / wmax), height: 10,
                  fill: "#4b7bd8"}, svg);
      text(svg, colW + 64, y + 10, n.weights[j].toFixed(4),
           {"class": "weight", "data-key": j, "data-weight": n.weights[j], "font-size": 11});
      strip(svg, colV, y, wv[j], cell, wvScale, "weight × v");
    });
    var yEnd = y0 + n.key_tokens.length * rowH + 16;
    text(svg, 4, yEnd + 10, "Σ weight·v", {"font-weight": "bold"});
    strip(svg, colV, yEnd, n.output, cell, wvScale, "output");
    text(svg, 4, yEnd + 40, "colours: blue negative, white 0, red positive; q, k: ±" +
         scale.toFixed(2) + "; weight × v and their sum: ±" + wvScale.toFixed(2) +
         ". Softmax bars: weight / " + wmax.toFixed(3) + ". Hover a cell for its number.",
         {"font-size": 10, fill: "#7a8294"});
  }

  // ------------------------------------------------------------------ 4 · positions
  function drawPositions() {
    var pe = data.positions.table, S = pe.length, D = pe[0].length, labels = data.source;
    var cell = Math.max(2, Math.min(6, Math.floor(640 / D))), rowH = 14, left = 110;
    var width = left + D * cell + 30, height = 30 + S * rowH + 40;
    var svg = svgRoot(width, height, $("pe-table"));
    text(svg, left, 14, "dimension 0 … " + (D - 1) + " →", {"font-size": 10, fill: "#7a8294"});
    pe.forEach(function (row, p) {
      text(svg, left - 6, 30 + p * rowH + 10, p + ": " + labels[p], {"text-anchor": "end",
                                                                     "font-size": 10});
      row.forEach(function (v, d) {
        el("rect", {x: left + d * cell, y: 30 + p * rowH, width: cell, height: rowH - 1,
                    fill: diverging(v, 1)}, svg);
      });
    });
    text(svg, left, height - 12, "blue −1 · white 0 · red +1", {"font-size": 10,
                                                                 fill: "#7a8294"});
    // curves of four dimensions over the sentence's positions
    var dims = [6, 7, 8, 9].filter(function (d) { return d < D; });
    var cw = 520, ch = 200, l2 = 40, t2 = 20;
    var svg2 = svgRoot(cw + 150, ch + 50, $("pe-curves"));
    el("line", {x1: l2, y1: t2 + ch / 2, x2: l2 + cw, y2: t2 + ch / 2, stroke: "#ccd"}, svg2);
    text(svg2, l2 - 6, t2 + 4, "1", {"text-anchor": "end", "font-size": 10});
    text(svg2, l2 - 6, t2 + ch + 4, "−1", {"text-anchor": "end", "font-size": 10});
    text(svg2, l2 + cw / 2, t2 + ch + 28, "position", {"font-size": 10});
    dims.forEach(function (d, i) {
      var pts = pe.map(function (row, p) {
        return (l2 + p * cw / Math.max(1, S - 1)).toFixed(1) + "," +
               (t2 + ch / 2 - row[d] * ch / 2).toFixed(1);
      }).join(" ");
      var colour = headColour(i, dims.length);
      el("polyline", {points: pts, fill: "none", stroke: colour, "stroke-width": 2}, svg2);
      el("line", {x1: l2 + cw + 10, x2: l2 + cw + 26, y1: t2 + 10 + i * 16, y2: t2 + 10 + i * 16,
                  stroke: colour, "stroke-width": 3}, svg2);
      text(svg2, l2 + cw + 30, t2 + 14 + i * 16, "dimension " + d);
    });
  }

  // ------------------------------------------------------------------ a forecaster
  var series = null;
  function attendSeries() {
    $("series-error").textContent = "";
    var global = !$("series-pick").hidden;  // a global run: one of its series, by id
    var sentence = !$("text-pick").hidden;  // a text run: a sentence, at a layer
    (sentence ? post("explain/text", {text: $("explain-text").value,
                                      layer: +$("text-layer").value})
     : global ? post("explain/forecast/series", {series: $("explain-series").value})
     : post("explain/forecast", {csv: $("rows").value})).then(function (d) {
      series = d;
      var heads = d.layout === "patches" ? d.weights[0].length : d.weights.length;
      fillSelect($("series-head"), heads + 1, function (i) {
        return i === 0 ? "mean of " + heads : "head " + i; }, 0);
      $("channel-label").hidden = d.layout !== "patches";
      if (d.layout === "patches")
        fillSelect($("series-channel"), d.channels.length, function (i) {
          return d.channels[i]; }, 0);
      drawSeries();
    }).catch(function (e) { $("series-error").textContent = e.message; });
  }

  function drawSeries() {
    var d = series, choice = +$("series-head").value;
    var stack = d.layout === "patches" ? d.weights[+$("series-channel").value] : d.weights;
    var matrix = choice === 0 ? stack[0].map(function (row, i) {
      return row.map(function (_, j) {
        var s = 0; stack.forEach(function (h) { s += h[i][j]; }); return s / stack.length; });
    }) : stack[choice - 1];
    var R = d.rows.length, C = d.columns.length;
    var cell = Math.max(2, Math.min(16, Math.floor(720 / C)));
    var rowH = Math.max(2, Math.min(16, Math.floor(480 / R)));
    // room above the map for the caption and the column labels, rotated 60°: their height
    // grows with the longest label (a date and time: about 100 px)
    var longest = 0; d.columns.forEach(function (c) { longest = Math.max(longest, String(c).length); });
    var left = 190, top = 50 + Math.ceil(longest * 6.5 * 0.87);
    var width = Math.max(left + C * cell + 40, d.layout === "tokens" ? 760 : 0);
    var height = top + R * rowH + 60;
    var svg = svgRoot(width, height, $("series-map"));
    var top1 = 0; matrix.forEach(function (r) { r.forEach(function (w) { top1 = Math.max(top1, w); }); });
    var every = function (n) { return Math.max(1, Math.ceil(n / 24)); };
    d.columns.forEach(function (c, j) {
      if (j % every(C)) return;
      var x = left + j * cell + cell / 2;
      text(svg, x, top - 6, c, {transform: "rotate(-60 " + x + " " + (top - 6) + ")",
                                "font-size": 10});
    });
    matrix.forEach(function (row, i) {
      if (i % every(R) === 0)
        text(svg, left - 6, top + i * rowH + rowH / 2 + 4, d.rows[i],
             {"text-anchor": "end", "font-size": 10,
              fill: d.layout === "steps" && i >= d.known_rows ? "#d9480f" : "#1d2330"});
      row.forEach(function (w, j) {
        el("rect", {x: left + j * cell, y: top + i * rowH, width: cell, height: rowH,
                    fill: shade(w / (top1 || 1)), "class": "series-cell", "data-row": i,
                    "data-col": j, "data-weight": w}, svg)
          .appendChild(el("title", {}, null, d.rows[i] + " → " + d.columns[j] + ": " +
                          w.toFixed(4)));
      });
    });
    if (d.layout === "steps")
      el("line", {x1: left - 180, x2: left + C * cell, y1: top + d.known_rows * rowH,
                  y2: top + d.known_rows * rowH, stroke: "#d9480f"}, svg);
    if (d.layout === "tokens") {
      text(svg, 4, 16, d.model + ", layer " + (d.layer + 1) + " of " + d.layers + ": rows: " +
           (d.rows.length === 1 ? "the pooled position" : "each word, at the subword its tag is read at") +
           "; columns: the subwords", {"font-weight": "bold"});
      colourScale(svg, left, height - 30, 160, "attention weight (0 to the largest here)", "0",
                  top1.toFixed(3));
      return;
    }
    text(svg, 4, 16, d.model + " model, last layer: " + (d.layout === "steps"
      ? "rows: known steps, then (orange) the forecast's; columns: the input steps"
      : d.layout === "patches" ? "patches of " + d.patch_len + " steps every " + d.stride
      : "channels over channels"), {"font-weight": "bold"});
    colourScale(svg, left, height - 30, 160, "attention weight (0 to the largest here)", "0",
                top1.toFixed(3));
  }

  // ------------------------------------------------------------------ wiring
  function esc(s) {
    return String(s).replace(/[&<>]/g, function (c) {
      return {"&": "&amp;", "<": "&lt;", ">": "&gt;"}[c]; });
  }
  function showError(e) { $("error").textContent = e.message || String(e); }

  function goTo(s) {
    if (!data) return;
    var t0 = performance.now();
    step = Math.max(0, Math.min(data.steps.length - 1, s));
    $("step-label").textContent = "step " + (step + 1) + " of " + data.steps.length;
    drawOutput(); drawBeamTable(); drawTree(); drawHeadView(); drawModelView();
    window.lastStepMs = performance.now() - t0;
    window.stepsDrawn = (window.stepsDrawn || 0) + 1;
  }

  function explain(ev) {
    if (ev) ev.preventDefault();
    $("error").textContent = "";
    var sentence = $("sentence").value.trim();
    if (!sentence) { showError(new Error("type a sentence first")); return; }
    var beam = parseInt($("beam").value, 10);
    $("go").disabled = true;
    post("explain", {sentence: sentence, beam: beam}).then(function (d) {
      data = d; hidden = {}; only = null; encoderQuery = 0; thumbs = {};
      $("views").hidden = false;
      fillSelect($("layer"), d.layers, null, d.layers - 1);
      drawLegend(); drawNbest(); drawPositions();
      goTo(0);
      return openHead("cross", d.layers - 1, 0);
    }).catch(showError).then(function () { $("go").disabled = false; });
  }

  $("ask").addEventListener("submit", explain);
  $("attend").onclick = attendSeries;
  $("series-head").onchange = drawSeries;
  $("series-channel").onchange = drawSeries;
  $("first").onclick = function () { goTo(0); };
  $("back").onclick = function () { goTo(step - 1); };
  $("forward").onclick = function () { goTo(step + 1); };
  $("last").onclick = function () { goTo(data.steps.length - 1); };
  $("kind").onchange = function () { drawHeadView(); drawModelView();
                                     openHead($("kind").value, +$("layer").value, 0); };
  $("layer").onchange = drawHeadView;
  ["head-layer", "head-head", "head-query"].forEach(function (id) {
    $(id).onchange = drawHead; });
  document.addEventListener("keydown", function (e) {
    if (e.target.tagName === "INPUT" || e.target.tagName === "SELECT") return;
    if (e.key === "ArrowRight") goTo(step + 1);
    if (e.key === "ArrowLeft") goTo(step - 1);
  });

  fetch("info").then(function (r) { return r.json(); }).then(function (info) {
    var can = info.attention === true;  // one translation or demo model (not an ensemble)
    $("model").textContent = can
      ? info.description + "; decoding: beam " + info.decoding.beam + ", length penalty " +
        info.decoding.lenpen + " (" + info.decoding.source + ")"
      : "the explainer shows one translation or demo model; this server has " +
        info.description + " (its page is at /)";
    $("ask").hidden = !can;
    if (info.family === "text" && info.kind !== "mlm") {
      $("model").textContent = info.description;
      $("series").hidden = false;
      $("rows").hidden = true;
      $("text-pick").hidden = false;
      $("explain-text").value = info.example || "";
      fillSelect($("text-layer"), info.layers, function (i) { return "layer " + (i + 1); },
                 info.layers - 1);
      $("text-layer").onchange = attendSeries;
      $("series").querySelector("h2").textContent = "Attention over the sentence";
      $("series").querySelector("p.help").textContent = "What the encoder reads: for a " +
        "classifier, the position its label is read from (the [CLS] token, or the mean of " +
        "the tokens); for a tagger, each word at the subword where its tag is read. " +
        "One layer's weights, one head or their mean; the subwords on the columns.";
      $("series").querySelector("h3").firstChild.textContent = "Attention ";
      return;
    }
    if (info.kind === "forecast" || info.kind === "global") {
      $("model").textContent = info.description;
      $("series").hidden = false;
      var global = info.kind === "global";
      $("rows").hidden = global;
      $("series-pick").hidden = !global;
      $(global ? "explain-series" : "rows").value = info.example || "";
      return;
    }
    if (!can) return;
    $("beam").value = info.decoding.beam;
    var q = new URLSearchParams(location.search).get("sentence");
    $("sentence").value = q || info.example || "";
    if (q) explain();
  }).catch(showError);
  window.explainGoTo = goTo;
})();
