"""A cluster's page data made field by field: the texts two parts of a cluster read in two (``report.split_parts``)
write of their fields, joined by the driver in the page's order, are the whole cluster's. The parts' reports
themselves (the same report.html and report.png, what they hand over): test_report.py's
``test_a_cluster_heavier_than_a_cores_share_is_read_in_two_parts_and_joined``."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from tests.analysis.test_timeline import jbod_transition


def test_the_page_data_is_its_fields_texts_joined_in_the_pages_order(tmp_path: Path) -> None:
    """``chart_json`` is ``chart_data``'s JSON (``series.json_pieces``: ``json.dumps``'s, its series written where
    they are) without a "<" (a name or an event's detail may hold one), and the same text as each field's
    (``field_pieces``) joined in ``CHART_FIELDS``' order and closed: each field made apart, as a part makes its
    own. The two parts make every field once between them (``PART_FIELDS``)."""
    from metalog.analysis.clusters import cluster_name
    from metalog.analysis.engines.python import PythonEngine
    from metalog.analysis.engines.request import AnalysisRequest
    from metalog.analysis.outputs.report import KEYS, PART_FIELDS, TIMELINE
    from metalog.analysis.outputs.report.data import CHART_END, CHART_FIELDS, chart_data, chart_json, field_pieces
    from metalog.analysis.outputs.report.growth import read_cluster_growth
    from metalog.analysis.outputs.report.reading import read_cluster
    from metalog.analysis.outputs.report.series import json_pieces

    log = jbod_transition(tmp_path / "jbod")
    PythonEngine().analyze(AnalysisRequest.of([str(log)], tmp_path / "out"))
    read = read_cluster(tmp_path / "out", cluster_name(log))
    assert read is not None
    event = {"cluster": "x", "offset": 7, "timestamp": read.start, "event": "phase-change", "detail": "</script>"}
    cluster = replace(read, name="</script><!--", events=[*read.events, event],
                      growth=read_cluster_growth(tmp_path / "out", cluster_name(log)))
    data = chart_data(3, cluster)
    assert [name for name, value in data.items() if value is None] == []  # every view drawn: brokers, growth...
    whole = "".join(json_pieces(data)).replace("<", "\\u003c")
    assert json.loads(whole)["name"] == "</script><!--"
    assert chart_json(3, cluster) == whole
    fields = {name: "".join(field_pieces(name, make(3, cluster))) for name, make in CHART_FIELDS.items()}
    assert "".join(fields[name] for name in CHART_FIELDS) + CHART_END == whole
    assert sorted([*PART_FIELDS[TIMELINE], *PART_FIELDS[KEYS]]) == sorted(CHART_FIELDS)
