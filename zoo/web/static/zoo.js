// zoo ui: draws the charts of a page from the JSON it embeds (plotly.js), and the curves
// with their smoothing, log axis and, while a run trains, a refresh every few seconds.
(function () {
  "use strict";
  var config = { responsive: true, displaylogo: false };

  function json(id) {
    var node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
  }

  document.querySelectorAll(".chart[data-figure]").forEach(function (div) {
    var figure = json(div.getAttribute("data-figure"));
    if (figure && figure.data.length) Plotly.newPlot(div, figure.data, figure.layout, config);
  });

  // Exponential moving average with bias correction, as zoo plot smooths
  // (zoo.train.curves._smooth); weight 0 draws the raw values.
  function smooth(values, weight) {
    if (!weight) return values;
    var out = [], average = 0, total = 0;
    values.forEach(function (v) {
      average = weight * average + (1 - weight) * v;
      total = weight * total + (1 - weight);
      out.push(average / total);
    });
    return out;
  }

  var chart = document.getElementById("curves-chart");
  if (!chart) return;
  var data = json("curves-data");
  var controls = {
    smoothing: document.getElementById("smoothing"),
    log: document.getElementById("log-axis"),
    metric: document.getElementById("metric"),
    x: document.getElementById("x"),
  };

  // one colour per run, its training and validation curves alike (plotly's own colours)
  var colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                "#7f7f7f", "#bcbd22", "#17becf"];

  function draw() {
    var weight = parseFloat(controls.smoothing.value);
    var runs = data.runs.map(function (r) { return r.id; });
    var traces = data.series.map(function (s) {
      var train = s.kind === "train";
      var color = colors[runs.indexOf(s.run) % colors.length];
      return {
        type: "scatter", mode: train ? "lines" : "lines+markers", x: s.x,
        y: train ? smooth(s.y, weight) : s.y, name: s.label + ": " + s.key,
        line: { dash: train ? "solid" : "dot", color: color }, marker: { color: color },
      };
    });
    var layout = {
      height: 480, title: { text: data.metric + " by " + data.x },
      xaxis: { title: { text: data.x } },
      yaxis: { title: { text: data.metric }, type: controls.log.checked ? "log" : "linear" },
      legend: { orientation: "h", y: -0.2 },
    };
    Plotly.react(chart, traces, layout, config);
    chart.setAttribute("data-traces", String(traces.length));
  }

  function reload() {
    var query = new URLSearchParams();
    data.runs.forEach(function (r) { query.append("run", r.id); });
    query.set("metric", controls.metric ? controls.metric.value : data.metric);
    query.set("x", controls.x ? controls.x.value : data.x);
    fetch("/api/curves?" + query.toString())
      .then(function (answer) { return answer.json(); })
      .then(function (fresh) {
        data = fresh;
        draw();
        if (!data.training) {
          clearInterval(timer);
          document.getElementById("refresh-note").textContent = "";
        }
      });
  }

  controls.smoothing.addEventListener("input", draw);
  controls.log.addEventListener("change", draw);
  if (controls.metric) controls.metric.addEventListener("change", reload);
  if (controls.x) controls.x.addEventListener("change", reload);
  var timer = data.training && controls.metric
    ? setInterval(reload, 1000 * data.refresh_seconds) : null;
  draw();
})();
