// transduce attention viewer: heatmaps of one translation's attention weights.
// TransduceAttention.render(container, maps) draws controls (kind, layer, head or mean) and
// a table of cells (one per query/key pair) whose shade is the weight; hovering a cell shows
// the weight and its two tokens. `maps` is what POST /attention returns.
(function (global) {
  "use strict";
  var KINDS = {cross: "cross-attention (output \u2192 source)",
               encoder: "encoder self-attention", decoder: "decoder self-attention (causal)"};

  function labels(maps, kind) {
    if (kind === "cross") return [maps.target, maps.source];
    if (kind === "encoder") return [maps.source, maps.source];
    return [maps.target_inputs, maps.target_inputs];
  }

  function mean(heads) {  // heads: [H][Q][K] -> [Q][K]
    return heads[0].map(function (row, q) {
      return row.map(function (_, k) {
        var sum = 0;
        for (var h = 0; h < heads.length; h++) sum += heads[h][q][k];
        return sum / heads.length;
      });
    });
  }

  function option(select, value, text) {
    var o = document.createElement("option");
    o.value = value; o.textContent = text; select.appendChild(o);
  }

  function control(parent, name, label) {
    var wrap = document.createElement("label");
    wrap.textContent = label + " ";
    var select = document.createElement("select");
    select.name = name; select.className = "ta-" + name;
    wrap.appendChild(select); parent.appendChild(wrap);
    return select;
  }

  function shade(w) {  // white (0) to deep blue (1)
    var t = Math.max(0, Math.min(1, w));
    var r = Math.round(255 - 215 * t), g = Math.round(255 - 175 * t), b = Math.round(255 - 75 * t);
    return "rgb(" + r + "," + g + "," + b + ")";
  }

  function table(matrix, rows, cols, info) {
    var t = document.createElement("table");
    t.className = "ta-heatmap";
    var head = t.insertRow();
    head.appendChild(document.createElement("th"));
    cols.forEach(function (c) {
      var th = document.createElement("th"); th.className = "ta-col";
      th.textContent = c; head.appendChild(th);
    });
    matrix.forEach(function (row, q) {
      var tr = t.insertRow();
      var th = document.createElement("th"); th.className = "ta-row";
      th.textContent = rows[q]; tr.appendChild(th);
      row.forEach(function (w, k) {
        var td = tr.insertCell();
        td.className = "ta-cell";
        td.style.background = shade(w);
        td.dataset.weight = w.toFixed(4);
        td.title = rows[q] + " \u2192 " + cols[k] + ": " + w.toFixed(3);
        td.addEventListener("mouseover", function () { info.textContent = td.title; });
      });
    });
    return t;
  }

  function render(container, maps) {
    container.innerHTML = "";
    container.classList.add("ta-viewer");
    var bar = document.createElement("div"); bar.className = "ta-controls";
    container.appendChild(bar);
    var kind = control(bar, "kind", "attention");
    Object.keys(KINDS).forEach(function (k) { option(kind, k, KINDS[k]); });
    var layer = control(bar, "layer", "layer");
    var head = control(bar, "head", "head");
    var info = document.createElement("div"); info.className = "ta-info";
    info.textContent = "hover a cell to read its weight";
    var plot = document.createElement("div"); plot.className = "ta-plot";
    container.appendChild(info); container.appendChild(plot);

    function fill() {  // layer and head choices of the chosen kind
      var layers = maps[kind.value];
      var keepLayer = layer.value, keepHead = head.value;
      layer.innerHTML = ""; head.innerHTML = "";
      layers.forEach(function (_, i) { option(layer, i, String(i + 1)); });
      option(head, "mean", "mean of heads");
      layers[0].forEach(function (_, i) { option(head, i, String(i + 1)); });
      if (keepLayer && keepLayer < layers.length) layer.value = keepLayer;
      if (keepHead) head.value = keepHead;
      if (!head.value) head.value = "mean";
    }
    function draw() {
      var heads = maps[kind.value][Number(layer.value)];
      var matrix = head.value === "mean" ? mean(heads) : heads[Number(head.value)];
      var names = labels(maps, kind.value);
      plot.innerHTML = "";
      plot.appendChild(table(matrix, names[0], names[1], info));
      container.dataset.showing = kind.value + "/" + layer.value + "/" + head.value;
    }
    kind.addEventListener("change", function () { fill(); draw(); });
    layer.addEventListener("change", draw);
    head.addEventListener("change", draw);
    fill(); draw();
  }

  global.TransduceAttention = {render: render, mean: mean};
})(typeof window !== "undefined" ? window : this);
