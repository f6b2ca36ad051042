// The page of `transduce serve`: translate and look at attention, or forecast.
(function () {
  "use strict";
  var $ = function (id) { return document.getElementById(id); };

  function post(path, body) {
    return fetch(path, {method: "POST", headers: {"Content-Type": "application/json"},
                        body: JSON.stringify(body)})
      .then(function (r) {
        return r.json().then(function (data) {
          if (!r.ok) throw new Error(data.error || r.statusText);
          return data;
        });
      });
  }

  function showAttention(sentence) {
    $("attention-title").hidden = false;
    $("attention").textContent = "computing attention…";
    post("attention", {sentence: sentence, beam: Number($("beam").value)})
      .then(function (maps) { TransduceAttention.render($("attention"), maps); })
      .catch(function (e) { $("attention").textContent = ""; $("error").textContent = e.message; });
  }

  function translate() {
    var lines = $("sentences").value.split("\n").filter(function (l) { return l.trim(); });
    $("error").textContent = "";
    if (!lines.length) { $("error").textContent = "type a sentence first"; return; }
    $("results").textContent = "translating…";
    var nbest = Number($("nbest").value);
    post("translate", {sentences: lines, beam: Number($("beam").value), nbest: nbest,
                       lenpen: Number($("lenpen").value)})
      .then(function (data) {
        $("results").innerHTML = "";
        data.translations.forEach(function (out, i) {
          var div = document.createElement("div"); div.className = "result";
          var src = document.createElement("div"); src.className = "src";
          src.textContent = lines[i]; div.appendChild(src);
          var hyps = nbest > 1 ? out : [{text: out}];
          hyps.forEach(function (h) {
            var hyp = document.createElement("div"); hyp.className = "hyp";
            hyp.textContent = h.text;
            if (h.score !== undefined) {
              var s = document.createElement("span"); s.className = "score";
              s.textContent = h.score.toFixed(3); hyp.appendChild(s);
            }
            div.appendChild(hyp);
          });
          (data.warnings[i] || []).forEach(function (w) {
            var note = document.createElement("div"); note.className = "warning";
            note.textContent = "⚠ " + w; div.appendChild(note);
          });
          if (data.attention) {
            var b = document.createElement("button"); b.className = "show-attention";
            b.textContent = "attention"; b.onclick = function () { showAttention(lines[i]); };
            div.appendChild(b);
          }
          $("results").appendChild(div);
        });
        if (data.attention && lines.length) showAttention(lines[0]);
      })
      .catch(function (e) { $("results").textContent = ""; $("error").textContent = e.message; });
  }

  function chart(history, forecast, dateKey) {  // one SVG line chart per column
    var host = $("chart"); host.innerHTML = "";
    var keys = Object.keys(forecast[0]);
    var isQuantile = function (k) { return /_q[0-9.]+$/.test(k); };
    var columns = keys.filter(function (k) { return k !== dateKey && !isQuantile(k); });
    columns.forEach(function (col) {
      var all = history.concat(forecast), W = 760, H = 200, P = 40;
      var levels = keys.filter(function (k) { return isQuantile(k) && k.indexOf(col + "_q") === 0; })
        .sort(function (a, b) { return parseFloat(a.split("_q").pop()) - parseFloat(b.split("_q").pop()); });
      var ys = all.map(function (r) { return r[col]; });
      levels.forEach(function (k) { forecast.forEach(function (r) { ys.push(r[k]); }); });
      var lo = Math.min.apply(null, ys), hi = Math.max.apply(null, ys);
      if (hi === lo) { hi += 1; lo -= 1; }
      var x = function (i) { return P + (W - 2 * P) * i / Math.max(all.length - 1, 1); };
      var y = function (v) { return H - P / 2 - (H - P) * (v - lo) / (hi - lo); };
      var line = function (rows, offset) {
        return rows.map(function (r, i) { return x(i + offset) + "," + y(r[col]); }).join(" ");
      };
      var ns = "http://www.w3.org/2000/svg";
      var svg = document.createElementNS(ns, "svg");
      svg.setAttribute("class", "forecast"); svg.setAttribute("width", W);
      svg.setAttribute("height", H);
      function add(tag, attrs, text) {
        var el = document.createElementNS(ns, tag);
        Object.keys(attrs).forEach(function (k) { el.setAttribute(k, attrs[k]); });
        if (text) el.textContent = text;
        svg.appendChild(el); return el;
      }
      if (levels.length >= 2) {  // the band between the lowest and highest quantile
        var low = levels[0], high = levels[levels.length - 1], n = history.length;
        var upper = forecast.map(function (r, i) { return x(i + n) + "," + y(r[high]); });
        var lower = forecast.map(function (r, i) { return x(i + n) + "," + y(r[low]); }).reverse();
        add("polygon", {points: upper.concat(lower).join(" "), fill: "#d9480f",
                        "fill-opacity": 0.18, stroke: "none", "class": "band"});
      }
      add("polyline", {points: line(history, 0), fill: "none", stroke: "#5b6475",
                       "stroke-width": 1.5, "class": "history"});
      add("polyline", {points: line([history[history.length - 1]].concat(forecast),
                       history.length - 1), fill: "none", stroke: "#d9480f",
                       "stroke-width": 2, "class": "prediction"});
      var level = function (k) { return k.split("_q").pop(); };
      add("text", {x: P, y: 14, "class": "legend"}, col + " (grey: history, orange: forecast" +
          (levels.length >= 2 ? ", shaded: quantiles " + level(levels[0]) + "–" +
           level(levels[levels.length - 1]) : "") + ")");
      add("text", {x: P, y: H - 2}, history[0][dateKey]);
      add("text", {x: W - P, y: H - 2, "text-anchor": "end"}, forecast[forecast.length - 1][dateKey]);
      add("text", {x: 2, y: y(hi) + 4}, hi.toPrecision(4));
      add("text", {x: 2, y: y(lo)}, lo.toPrecision(4));
      host.appendChild(svg);
    });
  }

  function predict() {
    $("forecast-error").textContent = "";
    var global = !$("series-pick").hidden;  // a global run: one series of many, by id
    (global ? post("forecast/series", {series: $("series-id").value})
            : post("forecast", {csv: $("rows").value}))
      .then(function (data) { chart(data.history, data.forecast, data.date_column); })
      .catch(function (e) { $("forecast-error").textContent = e.message; });
  }

  // a text run: each line's label, or its words' tags, or its entities
  var textKind = "";
  function label() {
    var lines = $("texts").value.split("\n").filter(function (l) { return l.trim(); });
    $("text-error").textContent = "";
    if (!lines.length) { $("text-error").textContent = "type a sentence first"; return; }
    post(textKind === "classify" ? "classify" : textKind, {texts: lines}).then(function (data) {
      var host = $("text-results"); host.innerHTML = "";
      data.results.forEach(function (found, i) {
        var div = document.createElement("div"); div.className = "result";
        var src = document.createElement("div"); src.className = "src";
        src.textContent = lines[i]; div.appendChild(src);
        var out = document.createElement("div"); out.className = "hyp";
        if (textKind === "classify")
          out.textContent = found.label + " (" +
            (100 * found.probabilities[found.label]).toFixed(1) + "%)";
        else if (textKind === "tag")
          out.textContent = found.map(function (w) { return w.word + "/" + w.tag; }).join(" ");
        else
          out.textContent = found.length ? found.map(function (e) {
            return e.type + ": " + e.text; }).join(" · ") : "no entity";
        div.appendChild(out); host.appendChild(div);
      });
    }).catch(function (e) { $("text-error").textContent = e.message; });
  }

  fetch("info").then(function (r) { return r.json(); }).then(function (info) {
    $("model").textContent = info.description;
    if (info.family === "text") {
      textKind = info.kind;
      $("text").hidden = false;
      $("texts").value = info.example || "";
      $("label").textContent = {classify: "Classify", tag: "Tag", entities: "Find entities"}[
        info.kind] || "";
      if (info.kind === "mlm") {  // a pre-trained encoder: nothing to label
        $("label").hidden = $("texts").hidden = true;
        $("text-hint").textContent = "A pre-trained encoder (masked language model): " +
          "fine-tune it with text train init=RUN to label sentences.";
      }
    } else if (info.kind === "global") {
      $("forecast").hidden = false;
      $("rows").hidden = true;
      $("series-pick").hidden = false;
      $("rows-hint").textContent = "Pick a series: the page shows its recent history and " +
        "the model's forecast of its next steps.";
      info.series.forEach(function (id) {
        var o = document.createElement("option"); o.value = o.textContent = id;
        $("series-id").appendChild(o);
      });
      $("series-id").onchange = predict;
    } else if (info.kind === "forecast") {
      $("forecast").hidden = false;
      $("rows").value = info.example || "";
      if (info.rows_hint) { $("rows-hint").textContent = info.rows_hint; }
    } else {
      $("translate").hidden = false;
      $("sentences").value = info.example || "";
      if (info.decoding) {  // the run's own (decoding.json), else the paper's
        $("beam").value = info.decoding.beam;
        $("lenpen").value = info.decoding.lenpen;
        $("beam").title = $("lenpen").title = "default: " + info.decoding.source;
      }
    }
  });
  $("go").onclick = translate;
  $("predict").onclick = predict;
  $("label").onclick = label;
})();
