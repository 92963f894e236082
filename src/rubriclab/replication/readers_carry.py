"""Readers of carry's claims (seed 000, resources/replication/claims_carry.yaml).

Each reader takes the outputs of rule `replication` by name and the run's config and returns
the run's `Evidence`: a value with the pipeline's own interval (the Clopper-Pearson `low` /
`high` the carry tables and figures write, or an exact interval over the items a rate is over)
or, for a qualitative claim, one `Part` per part of its sentence plus parts that check the
claim could be tested at all (a gate that accepted some change, a chain that drifted, no NaN).

Numeric readings of the seed's words, each the seed's own number:
- NEAR = 6 points: "near the starting level", "flat", "a few points", "agree within a few
  points" all read as Table 2's "within 6 points of that judge's own starting value".
- COLLAPSE = 75 points: Table 2's ungated rubric "collapses": in every chain and judge of the
  seed's Table 2 some metric moves at least 75 points from its start (the smallest such move:
  L, Haiku judge, unplanned caught 91.7 -> 16.7).
- NEARLY_EVERY = 5/6: "holds nearly every drifting revision chain": Figure 6 names one
  exception among its 6 reviser x start arms (Sonnet's label-taught chain).

Outputs read: table1, fig1, fig2, fig3, fig4, fig5, fig6, fig6_supplement, table2, table3,
gate_agreement, carry_rates, carry_attribution, carry_deletions and
carry_decisions_<recon|summedits|ragtruth> (the main judge's gate decisions).
"""

from __future__ import annotations

from rubriclab.replication.evidence import Reader
from rubriclab.replication.readers_carry_common import METRICS
from rubriclab.replication.readers_carry_drift import (
    drift_every_reviser,
    fig4_delete_only_flat,
    fig4_hand_strict,
    fig4_label_coverage,
    fig4_opposite_directions,
    fig5a_by_origin,
    fig5b_count,
    fig5b_opposite,
    fig5b_share,
)
from rubriclab.replication.readers_carry_gates import (
    SEED_JUDGES,
    TABLE2_ROWS,
    TABLE3_CHAINS,
    fig6_only_sp,
    fig6_single_signals,
    fig6_sonnet_exception,
    gate_holds_drifting_chains,
    identical_decisions,
    table2_cell,
    table2_within_6_and_collapse,
    table3_cell,
    table3_sp_vs_ungated,
)
from rubriclab.replication.readers_carry_rubrics import (
    content_extreme,
    few_points,
    fig1_clusters,
    fig1_correct_passed,
    fig1_judges_agree,
    fig2_content_effect,
    fig2_nested_change,
    fig2_rate,
    fig2_rendering_only_ragtruth,
    fig2_summedits_trade,
    fig3_balanced_accuracy,
    fig3_crossover,
    fig3_ranking,
    table1_count,
    table1_sum,
    table1_value,
)

# --------------------------------------------------------------------------- READERS

def _table2_readers() -> dict[str, Reader]:
    readers = {}
    for source, chain in (("hand", "h"), ("label", "l")):
        for row in TABLE2_ROWS:
            for family in SEED_JUDGES:
                for metric in METRICS:
                    readers[f"carry.table2.{row}.{chain}.{family}.{metric}"] = \
                        table2_cell(source, row, family, metric)
    return readers


TABLE3_COLUMN_IDS = {"start": "start", "ungated": "ungated", "gate_r": "Gate R",
                     "gate_p": "Gate P", "gate_s": "Gate S", "gate_sp": "Gate S+P"}


def _table3_readers() -> dict[str, Reader]:
    readers = {}
    for column_id, column in TABLE3_COLUMN_IDS.items():
        for chain in TABLE3_CHAINS:
            for metric in ("correct_passed", "flawed_caught"):
                readers[f"carry.table3.{column_id}.summedits.{chain}.{metric}"] = \
                    table3_cell("summedits", chain, column, metric)
    return readers


READERS: dict[str, Reader] = {
    "carry.abstract.content_low": content_extreme(lowest=True),
    "carry.abstract.content_high": content_extreme(lowest=False),
    "carry.abstract.few_points": few_points,
    "carry.abstract.drift_every_reviser": drift_every_reviser,
    "carry.abstract.gate_holds": gate_holds_drifting_chains,
    "carry.abstract.identical_decisions": identical_decisions,
    "carry.table1.credit_A": table1_value("A", "credit"),
    "carry.table1.credit_B": table1_value("B", "credit"),
    "carry.table1.credit_C": table1_value("C", "credit"),
    "carry.table1.credit_D": table1_value("D", "credit"),
    "carry.table1.blame_D": table1_value("D", "blame"),
    "carry.table1.unique_A": table1_value("A", "unique_catches"),
    "carry.table1.unique_B": table1_value("B", "unique_catches"),
    "carry.table1.unique_C": table1_value("C", "unique_catches"),
    "carry.table1.credit_sum": table1_sum("credit"),
    "carry.table1.blame_sum": table1_sum("blame"),
    "carry.table1.checks_with_unique_catch": table1_count("unique_catches"),
    "carry.table1.checks_with_blame": table1_count("blame"),
    "carry.fig1.hand_correct_passed": fig1_correct_passed("hand"),
    "carry.fig1.generated_correct_passed": fig1_correct_passed("generated"),
    "carry.fig1.clusters": fig1_clusters,
    "carry.fig1.judges_agree": fig1_judges_agree,
    "carry.fig2.summedits_trade": fig2_summedits_trade,
    "carry.fig2.ragtruth_cost_3_to_10": fig2_nested_change("ragtruth", "correct_passed"),
    "carry.fig2.ragtruth_catches_3_to_10": fig2_nested_change("ragtruth", "flawed_caught"),
    "carry.fig2.ragtruth_paragraph_10": fig2_rate("ragtruth", "paragraph", 10,
                                                  "correct_passed"),
    "carry.fig2.content_effect": fig2_content_effect,
    "carry.fig2.rendering_only_ragtruth": fig2_rendering_only_ragtruth,
    "carry.fig3.generated_balanced_accuracy": fig3_balanced_accuracy,
    "carry.fig3.crossover": fig3_crossover,
    "carry.fig3.ranking": fig3_ranking,
    "carry.fig4.hand_strict": fig4_hand_strict,
    "carry.fig4.label_coverage": fig4_label_coverage,
    "carry.fig4.delete_only_flat": fig4_delete_only_flat,
    "carry.fig4.opposite_directions": fig4_opposite_directions,
    "carry.fig5a.by_origin": fig5a_by_origin,
    "carry.fig5b.deleted": fig5b_count("deleted"),
    "carry.fig5b.deleted_with_unique_catch": fig5b_count("deleted_with_unique_catch"),
    "carry.fig5b.deleted_with_blame": fig5b_count("deleted_with_blame"),
    "carry.fig5b.share_with_unique_catch": fig5b_share("deleted_with_unique_catch"),
    "carry.fig5b.share_with_blame": fig5b_share("deleted_with_blame"),
    "carry.fig5b.opposite": fig5b_opposite,
    "carry.fig6.only_sp": fig6_only_sp,
    "carry.fig6.single_signals": fig6_single_signals,
    "carry.fig6.sonnet_exception": fig6_sonnet_exception,
    "carry.table2.within_6_and_collapse": table2_within_6_and_collapse,
    **_table2_readers(),
    **_table3_readers(),
    "carry.table3.sp_vs_ungated": table3_sp_vs_ungated,
}
