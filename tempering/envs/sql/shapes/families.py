"""Every question family of sql/shapes-v1 with its difficulty level (1 to 5): one explicit dict."""

from __future__ import annotations

from tempering.envs.sql.shapes import families_filter as f, families_graph as g, families_group as gr
from tempering.envs.sql.shapes import families_join as j
from tempering.envs.sql.shapes.ask import Family

FAMILIES: dict[str, tuple[int, Family]] = {  # name -> (level, family)
    # 1: one table, one condition
    "count_value": (1, f.count_value), "list_above": (1, f.list_above), "missing": (1, f.missing),
    "flag_count": (1, f.flag_count),
    # 2: two conditions, dates, single aggregates
    "multi_filter": (2, f.multi_filter), "year_stat": (2, f.year_stat), "date_range": (2, f.date_range),
    "extreme": (2, f.extreme), "avg_where": (2, f.avg_where), "distinct_count": (2, f.distinct_count),
    # 3: GROUP BY / HAVING, one join, top-k, NULLs as zero
    "per_value": (3, gr.per_value), "having_count": (3, gr.having_count), "null_as_zero": (3, f.null_as_zero),
    "top_k": (3, gr.top_k), "join_filter": (3, j.join_filter), "join_count": (3, j.join_count),
    "self_reports": (3, g.self_reports), "m2m_with": (3, g.m2m_with),
    # 4: ordered groups, two joins, self-joins with NULLs, many-to-many counts
    "group_avg": (4, gr.group_avg), "monthly": (4, gr.monthly), "parent_having": (4, j.parent_having),
    "join_top": (4, j.join_top), "path_total": (4, j.path_total), "path_filter": (4, j.path_filter),
    "self_pair": (4, g.self_pair), "m2m_more": (4, g.m2m_more),
    # 5: subqueries, anti-joins, two-level self-joins, line totals
    "self_most": (5, g.self_most), "self_two_levels": (5, g.self_two_levels), "m2m_none": (5, g.m2m_none),
    "above_parent_avg": (5, j.above_parent_avg), "anti_join": (5, j.anti_join), "lines_total": (5, j.lines_total),
}
MAX_LEVEL = max(level for level, _ in FAMILIES.values())
