"""`temper report RUN`: one self-contained HTML file for a training run.

    curves        every step metric, in panels: reward and pass rate per domain, KL, entropy,
                  response length, clip fraction, grad norm, learning rate, informative groups,
                  the step's time split and tokens/s, then any other metric the run logged
    evaluation    the before/after table with Wilson CIs of a demo or a pipeline, when there is one
    alerts        a banner per alert the run raised
    rollouts      a viewer: filter by step, domain, task, reward, stop reason; each episode's turns
                  as a transcript (reply, feedback, execution record), its reward and advantage
    sandbox       runs, statuses, limit hits and p50/p95 latency of the runs the verifiers made, attempts
                  the sandbox failed (not trained) and its re-runs (envs/infra.py), env steps per domain

Plotly draws the curves; its bundle is inlined, so the page needs no network and opens from
any folder. Texts are truncated to TEXT_LIMIT characters each and the viewer keeps the
MAX_EPISODES most recent episodes, which bounds the file (about 5 MB of it is Plotly).
Model text reaches the page only through textContent, never as markup.
"""

from __future__ import annotations

import html
import json
import math
import sqlite3
import time
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio
import plotly.offline
from plotly.subplots import make_subplots

from tempering.eval.run_data import MAX_EPISODES, TEXT_LIMIT, decoder, rollout_data, sandbox_stats


PANELS: list[tuple[str, tuple[str, ...]]] = [
    ("reward", ("reward_mean", "reward/")),
    ("pass rate", ("pass_rate", "pass_rate/")),
    ("format rate", ("format_rate", "format_rate/")),
    ("KL to reference", ("kl", "kl_reward")),
    ("entropy", ("entropy",)),
    ("response length (tokens)", ("response_len",)),
    ("clip fraction", ("clip_frac",)),
    ("grad norm", ("grad_norm",)),
    ("learning rate", ("lr",)),
    ("loss", ("loss",)),
    ("informative groups", ("groups_informative", "groups_sampled", "groups_trained")),
    ("infrastructure failures", ("infra/failed", "infra/retried")),
    ("tokens/s", ("tokens_per_s",)),
]
TIME_KEYS = ("time_generate", "time_score", "time_update")


def _matches(key: str, patterns: tuple[str, ...]) -> bool:
    return any(key == p or (p.endswith("/") and key.startswith(p)) for p in patterns)


def _numeric_keys(metrics: list[dict]) -> list[str]:
    keys: dict[str, None] = {}
    for m in metrics:
        for k, v in m.items():
            if k != "step" and isinstance(v, (int, float)) and not isinstance(v, bool):
                keys.setdefault(k, None)
    return list(keys)


def constant_metrics(metrics: list[dict]) -> dict[str, float]:
    """Metrics with one value over the whole run (of more than one step): a table, not a panel."""
    if len(metrics) < 2:
        return {}
    out = {}
    for k in _numeric_keys(metrics):
        values = {m.get(k) for m in metrics}
        if len(values) == 1:
            out[k] = values.pop()
    return out


def curves_figure(metrics: list[dict]) -> go.Figure | None:
    """Small multiples of every numeric metric that varies, against the step; None for a run with no steps."""
    if not metrics:
        return None
    constant = constant_metrics(metrics)
    keys = [k for k in _numeric_keys(metrics) if k not in constant]
    panels = [(title, [k for k in keys if _matches(k, pats)]) for title, pats in PANELS]
    panels = [(t, ks) for t, ks in panels if ks]
    if any(k in keys for k in TIME_KEYS):
        panels.append(("time per step (s)", [k for k in TIME_KEYS if k in keys]))
    used = {k for _, ks in panels for k in ks} | {"time_step"}
    panels += [(k, [k]) for k in keys if k not in used]
    cols = 3
    rows = math.ceil(len(panels) / cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[t for t, _ in panels], vertical_spacing=0.25 / rows)
    steps = [m.get("step", i + 1) for i, m in enumerate(metrics)]
    for i, (title, ks) in enumerate(panels):
        row, col = i // cols + 1, i % cols + 1
        for k in ks:
            ys = [m.get(k) if isinstance(m.get(k), (int, float)) and math.isfinite(m.get(k)) else None for m in metrics]
            if title.startswith("time per step"):
                fig.add_trace(go.Bar(x=steps, y=ys, name=k, legendgroup="time"), row=row, col=col)
            else:
                fig.add_trace(go.Scatter(x=steps, y=ys, name=k, mode="lines+markers", marker={"size": 4}),
                              row=row, col=col)
    fig.update_layout(height=260 * rows, barmode="stack", margin={"t": 40, "b": 30, "l": 40, "r": 20},
                      legend={"orientation": "h", "y": -0.02, "font": {"size": 10}}, template="plotly_white")
    return fig


def eval_table(run_dir: Path) -> list[dict]:
    """Rows (env, split, point, accuracy, ci, n) from demo.json or the pipeline.json above a stage."""
    rows: list[dict] = []
    demo = run_dir / "demo.json"
    if demo.is_file():
        d = json.loads(demo.read_text())
        for point in ("before", "after"):
            if point in d:
                rows.append({"env": d.get("env", "held-out"), "split": "test", "point": point,
                             "accuracy": d[point]["accuracy"], "ci": d[point]["ci"], "n": d.get("n_eval")})
    for state in (run_dir / "pipeline.json", run_dir.parent / "pipeline.json"):
        if state.is_file():
            results = json.loads(state.read_text()).get("results", {})
            for env, splits in results.items():
                for split, r in splits.items():
                    for point, p in r.get("points", {}).items():
                        rows.append({"env": env, "split": split, "point": point, "accuracy": p["accuracy"],
                                     "ci": p["ci"], "n": p["n"], "paired": r.get("paired", {})})
            break
    return rows


def _table(header: list[str], rows: list[list]) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _json_script(id_: str, data) -> str:
    """Data for the page's script; '</' is escaped so no text can close the script element."""
    text = json.dumps(data).replace("</", "<\\/")
    return f'<script type="application/json" id="{id_}">{text}</script>'


def build_report(run_dir: Path) -> str:
    """The report's HTML for the run in `run_dir` (a store.sqlite, maybe a demo.json or pipeline.json)."""
    from tempering.scheduler.store import STORE_FILE  # the store's file name; read-only access below

    run_dir = Path(run_dir)
    path = run_dir / STORE_FILE
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        run = db.execute("SELECT name, algorithm, env, model, created FROM runs LIMIT 1").fetchone()
        metrics = [json.loads(d) for (d,) in db.execute("SELECT data FROM metrics ORDER BY step")]
        has_alerts = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'alerts'").fetchone()
        alerts = db.execute("SELECT step, kind, message FROM alerts ORDER BY step").fetchall() if has_alerts else []
        episodes = rollout_data(db, decoder(run[3] if run else None))
        sandbox = sandbox_stats(db)
        counts = db.execute("SELECT COUNT(*), COALESCE(AVG(passed), 0) FROM episodes").fetchone()
        has_incidents = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'incidents'").fetchone()
        incidents = db.execute("SELECT step, round, slot, status, detail, language, wall_s FROM incidents "
                               "ORDER BY step, round, slot, n LIMIT 200").fetchall() if has_incidents else []
    finally:
        db.close()
    name, algorithm, env, model, created = run or (run_dir.name, "?", "?", "?", time.time())
    fig = curves_figure(metrics)
    curves = (pio.to_html(fig, full_html=False, include_plotlyjs=False, config={"displaylogo": False})
              if fig else "<p>No steps logged yet.</p>")
    constant = constant_metrics(metrics)
    if constant:
        curves += "<p>Constant over the run:</p>" + _table(["metric", "value"], [[k, f"{v:g}"] for k, v in constant.items()])
    evals = eval_table(run_dir)
    eval_html = _table(["env", "split", "point", "accuracy", "95% CI", "n"],
                       [[r["env"], r["split"], r["point"], f"{r['accuracy']:.1%}",
                         f"[{r['ci'][0]:.1%}, {r['ci'][1]:.1%}]", r["n"]] for r in evals]) if evals else \
        "<p>This run has no held-out evaluation (a demo or a pipeline adds one).</p>"
    banner = "".join(f'<div class="alert"><b>step {s}: {html.escape(k)}</b> {html.escape(m)}</div>'
                     for s, k, m in alerts)
    sb = sandbox
    retried = sum(m.get("infra/retried", 0) for m in metrics)
    sandbox_html = (_table(["sandbox runs", "statuses", "limit hits", "p50 s", "p95 s",
                            "attempts failed by the sandbox (not trained)", "re-runs after a sandbox failure"],
                           [[sb["runs"], ", ".join(f"{k} {v}" for k, v in sorted(sb["statuses"].items())) or "-",
                             sb["limit_hits"], f"{sb['p50_s']:.3f}", f"{sb['p95_s']:.3f}", sb["infra_failed"],
                             f"{retried:.0f}"]])
                    + _table(["domain", "env steps", "p50 s", "p95 s"],
                             [[d, v["steps"], f"{v['p50_s']:.3f}", f"{v['p95_s']:.3f}"]
                              for d, v in sorted(sb["env_steps"].items())]))
    sandbox_html += (f"<p>Audit log: {len(incidents)} incident(s) (runs that hit a limit, were killed or failed "
                     f"as a sandbox; the first 200 shown; <code>temper runs audit</code> lists all).</p>"
                     + (_table(["step", "round", "slot", "status", "detail", "language", "seconds"],
                               [list(r[:6]) + [f"{r[6]:.2f}"] for r in incidents]) if incidents else ""))
    summary = (f"{html.escape(str(algorithm))} on {html.escape(str(env))}, model {html.escape(str(model))}; "
               f"{len(metrics)} steps, {counts[0]} episodes (pass rate {counts[1]:.1%}); "
               f"started {time.strftime('%Y-%m-%d %H:%M', time.gmtime(created))} UTC")
    shown = f"the {len(episodes)} most recent episodes" if len(episodes) == MAX_EPISODES else f"all {len(episodes)} episodes"
    return TEMPLATE.format(
        title=html.escape(str(name)), plotly=plotly.offline.get_plotlyjs(), style=STYLE, summary=summary,
        banner=banner or '<p class="ok">No alerts.</p>', curves=curves, evals=eval_html, sandbox=sandbox_html,
        shown=shown, text_limit=TEXT_LIMIT, data=_json_script("episodes", episodes), viewer=VIEWER_JS)


def write_report(run_dir: Path, out: Path | None = None) -> Path:
    """Write the report (default <run>/report.html); returns its path."""
    out = Path(out) if out else Path(run_dir) / "report.html"
    text = build_report(run_dir)
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)
    return out


STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { margin-bottom: 0.2em; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; }
td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }
.alert { background: #fde2e1; border: 1px solid #e0a0a0; padding: 6px 10px; margin: 4px 0; }
.ok { color: #2a7a2a; }
#filters label { margin-right: 1em; }
#list { max-height: 24em; overflow-y: auto; }
#list tr { cursor: pointer; } #list tr:hover { background: #eef; } #list tr.sel { background: #dde; }
.turn { border-left: 3px solid #88a; margin: 0.6em 0; padding-left: 0.8em; }
pre { white-space: pre-wrap; word-break: break-word; background: #f6f6f6; padding: 6px; margin: 2px 0; }
.label { font-weight: bold; font-size: 0.85em; color: #555; }
"""

TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}: Tempering run report</title>
<style>{style}</style>
<script>{plotly}</script>
</head><body>
<h1>{title}</h1><p>{summary}</p>
<h2>Alerts</h2>{banner}
<h2>Curves</h2>{curves}
<h2>Evaluation</h2>{evals}
<h2>Rollouts</h2>
<p>Shows {shown}; each text is cut at {text_limit} characters.</p>
<div id="filters">
<label>step <select id="f-step"><option value="">all</option></select></label>
<label>domain <select id="f-domain"><option value="">all</option></select></label>
<label>stop reason <select id="f-stop"><option value="">all</option></select></label>
<label>task <input id="f-task" size="18" placeholder="id contains"></label>
<label>reward &ge; <input id="f-rmin" size="4" value=""></label>
<label>reward &le; <input id="f-rmax" size="4" value=""></label>
<span id="f-count"></span>
</div>
<div id="list"></div>
<div id="episode"></div>
<h2>Sandbox</h2>{sandbox}
{data}
<script>{viewer}</script>
</body></html>
"""

VIEWER_JS = r"""
(function () {
  const episodes = JSON.parse(document.getElementById("episodes").textContent);
  const $ = (id) => document.getElementById(id);
  function el(tag, text, cls) { const e = document.createElement(tag); if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls; return e; }
  function fill(select, values) { [...new Set(values)].sort((a, b) => (a > b) - (a < b)).forEach((v) => {
    const o = el("option", String(v)); o.value = String(v); select.appendChild(o); }); }
  fill($("f-step"), episodes.map((e) => e.step).sort((a, b) => a - b));
  fill($("f-domain"), episodes.map((e) => e.domain));
  fill($("f-stop"), episodes.map((e) => e.stop));
  const num = (x) => (x === null || x === undefined ? "-" : Number(x).toFixed(3));
  function show(ep, row) {
    document.querySelectorAll("#list tr.sel").forEach((r) => r.classList.remove("sel"));
    if (row) row.classList.add("sel");
    const box = $("episode"); box.replaceChildren();
    box.appendChild(el("h3", `step ${ep.step} round ${ep.round} slot ${ep.slot}: ${ep.task}`));
    box.appendChild(el("p", `domain ${ep.domain}, family ${ep.family || "-"}; reward ${num(ep.reward)}` +
      (ep.trained_reward !== null && ep.trained_reward !== ep.reward ? ` (trained on ${num(ep.trained_reward)})` : "") +
      `, advantage ${num(ep.advantage)}, passed ${ep.passed}, ${ep.turns} turn(s), ${ep.tokens} tokens, ` +
      `stop ${ep.stop}, ${num(ep.wall_s)} s`));
    if (ep.prompt) {  // collapsed: long, and the same for a whole group
      const d = el("details", undefined, "prompt"); d.appendChild(el("summary", "prompt"));
      d.appendChild(el("pre", ep.prompt)); box.appendChild(d);
    }
    ep.transcript.forEach((t, i) => {
      const d = el("div", undefined, "turn");
      d.appendChild(el("div", `turn ${i + 1}: reward ${num(t.reward)}, status ${t.status || "-"}, env ${num(t.env_s)} s`, "label"));
      for (const [name, label] of [["reply", "model reply"], ["feedback", "env feedback"], ["info", "execution record"]]) {
        if (t[name]) { d.appendChild(el("div", label, "label")); d.appendChild(el("pre", t[name])); }
      }
      box.appendChild(d);
    });
  }
  function render() {
    const step = $("f-step").value, domain = $("f-domain").value, stop = $("f-stop").value;
    const task = $("f-task").value.trim(), rmin = parseFloat($("f-rmin").value), rmax = parseFloat($("f-rmax").value);
    const hits = episodes.filter((e) => (!step || String(e.step) === step) && (!domain || e.domain === domain) &&
      (!stop || e.stop === stop) && (!task || e.task.includes(task)) && (isNaN(rmin) || e.reward >= rmin) &&
      (isNaN(rmax) || e.reward <= rmax));
    $("f-count").textContent = `${hits.length} of ${episodes.length} episodes`;
    const table = el("table"); const head = el("tr");
    ["step", "slot", "domain", "task", "reward", "advantage", "turns", "stop"].forEach((h) => head.appendChild(el("th", h)));
    table.appendChild(head);
    hits.slice(0, 500).forEach((e) => {
      const tr = el("tr");
      [e.step, e.slot, e.domain, e.task, num(e.reward), num(e.advantage), e.turns, e.stop].forEach((c) => tr.appendChild(el("td", String(c))));
      tr.addEventListener("click", () => show(e, tr));
      table.appendChild(tr);
    });
    $("list").replaceChildren(table);
    if (hits.length) show(hits[0], table.children[1]); else $("episode").replaceChildren();
  }
  ["f-step", "f-domain", "f-stop"].forEach((id) => $(id).addEventListener("change", render));
  ["f-task", "f-rmin", "f-rmax"].forEach((id) => $(id).addEventListener("input", render));
  render();
})();
"""
