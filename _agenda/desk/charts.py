"""The report's charts ("The clinic at a glance"): drawn on the server as SVG by pygal, without its
scripts, and given to the page as images, so they read without JavaScript and print."""

import base64
import re

import pygal
from pygal.style import Style

STYLE = Style(background="white", plot_background="white", foreground="#1b1f24", foreground_strong="#1b1f24",
              foreground_subtle="#8a949e", colors=("#1f4e79", "#2e7d32", "#b26a00", "#8b1a1a", "#6a1b9a"),
              font_family="sans-serif")
OPTIONS = {"style": STYLE, "js": [], "disable_xml_declaration": True, "width": 640, "height": 300,
           "legend_at_bottom": True, "print_values": False, "show_y_guides": True,
           "truncate_legend": -1}


SCRIPTABLE = re.compile(r"^on|href$", re.IGNORECASE)  # event handlers; links (a javascript: one runs)


def without_scripts(root):
    """pygal's tree with nothing that runs: its <script> elements (it always writes one of its config, whatever
    `js` says), event handler attributes and links gone."""
    for parent in list(root.iter()):
        for child in list(parent):
            if isinstance(child.tag, str) and child.tag.rsplit("}", 1)[-1].lower() == "script":
                parent.remove(child)
        for name in [name for name in parent.attrib if SCRIPTABLE.search(name.rsplit("}", 1)[-1])]:
            del parent.attrib[name]
    return root


def data_uri(chart):
    """The chart as a data: URI of its SVG, drawn `without_scripts`."""
    chart.add_xml_filter(without_scripts)
    return "data:image/svg+xml;base64," + base64.b64encode(chart.render(is_unicode=True).encode("utf-8")).decode("ascii")


def filled_chart(report, t):
    chart = pygal.HorizontalBar(title=t("chart_filled"), range=(0, 100), **OPTIONS)
    for doctor in report["doctors"]:
        chart.add(doctor["name"], [doctor["totals"]["filled"]])
    return data_uri(chart)


def weekly_chart(title, weeks, series, labels):
    """Stacked bars, a bar a week: `series` maps each key of `labels` to {monday: count}."""
    chart = pygal.StackedBar(title=title, x_labels=[f"{monday:%d/%m}" for monday in weeks], **OPTIONS)
    for key, label in labels.items():
        chart.add(label, [series[monday][key] for monday in weeks])
    return data_uri(chart)


def lead_chart(report, t):
    chart = pygal.Bar(title=t("chart_lead"), **OPTIONS)
    for bucket, count in report["lead"].items():
        chart.add(t(f"lead_{bucket}"), [count])
    return data_uri(chart)


def report_charts(report, t):
    """{name: data URI} of the report's four charts, titles and legends in the desk's language."""
    return {"filled": filled_chart(report, t),
            "reminders": weekly_chart(t("chart_reminders"), report["weeks"], report["reminders"],
                                      {key: t(f"reminder_{key}") for key in ("confirmed", "declined", "unanswered",
                                                                            "released")}),
            "sources": weekly_chart(t("chart_sources"), report["weeks"], report["sources"],
                                    {"agent": t("by_agent"), "desk": t("by_desk")}),
            "lead": lead_chart(report, t)}
