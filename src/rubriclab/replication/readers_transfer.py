"""Readers of transfer's claims (seed 002, resources/replication/claims_transfer.yaml).

Outputs read (rule `replication`'s inputs): `stats` (results/transfer/analysis/stats.csv: every
statistic with its Algorithm 4 paired bootstrap interval), `categories` (Figure 6's shares and
criteria counts), `edit_sizes` (Table A.9), `transfer_examples` and `transfer_left_out` (the
sample and the examples the analysis left out).

The seed's generators are named; a run's are `transfer.generators`, read in the paper's order
(Table A.3: Qwen3.8-27B, Deepseek-V4-Flash, Opus-5), so a claim about Opus-5 reads the third
generator, whatever model it is (the verdict then says "other models"). Q and the other
statistics are fractions in stats.csv; a claim in percent reads them times 100.
"""

from __future__ import annotations

from rubriclab.replication.evidence import Reader
from rubriclab.replication.readers_transfer_common import DEEPSEEK, EXPERT, OPUS, QWEN
from rubriclab.replication.readers_transfer_criteria import (
    REDUNDANT,
    category_rate,
    expert_most_redundant,
    expert_passing_moves_more,
    expert_to_generated_moves_more,
    passing_more_redundant,
    similarity_levels,
    similarity_pass_above_fail,
)
from rubriclab.replication.readers_transfer_existing import (
    existing_mid_range,
    existing_pairwise,
    expert_discrimination,
    framing_sensitive,
    largest_degradation,
    matching_f1_near,
    panel_sensitive,
)
from rubriclab.replication.readers_transfer_interventions import (
    asymmetry_across_response_models,
    differences,
    expert_pass_only_qwen,
    fail_beats_pass,
    fail_edits_more,
    gain_only_opus,
    length_ratio,
    pass_lengthens,
    q_metric,
    qwen_zero_gain,
)

READERS: dict[str, Reader] = {
    "transfer.fig4.mid_range": existing_mid_range,
    "transfer.tableA4.pairwise": existing_pairwise,
    "transfer.figA1.f1_around_half": matching_f1_near("", 0.45, 0.55),
    "transfer.figA1.implies_low": matching_f1_near("implies", 0.05, 0.15),
    "transfer.figA1.framing_sensitive": framing_sensitive,
    "transfer.figA2.panel_sensitive": panel_sensitive,
    "transfer.fig4.expert_discrimination": expert_discrimination,
    "transfer.tableA5.largest_drop": largest_degradation,
    "transfer.fig5.fail_beats_pass": fail_beats_pass,
    **{f"transfer.fig5.generated_lost.{name}": q_metric("Q-(C*->Cg)", place)
       for place, name in enumerate(("qwen", "deepseek", "opus"))},
    **{f"transfer.fig5.expert_lost.{name}": q_metric("Q-(Cg->C*)", place)
       for place, name in enumerate(("qwen", "deepseek", "opus"))},
    "transfer.fig5.opus_gain": q_metric("Q+(Cg->C*)", OPUS),
    "transfer.fig5.gain_only_opus": gain_only_opus,
    "transfer.fig5.qwen_zero_gain": qwen_zero_gain,
    "transfer.fig5.expert_pass_only_qwen": expert_pass_only_qwen,
    "transfer.tableA8.opus_beats_qwen": differences("Q+(Cg->C*)", ((QWEN, OPUS, -1),)),
    "transfer.tableA8.deepseek_detects_degradation": differences(
        "Q-(C*->Cg)", ((DEEPSEEK, QWEN, 1), (DEEPSEEK, OPUS, 1))),
    "transfer.figA4.across_response_models": asymmetry_across_response_models,
    "transfer.tableA6.pass_above_fail": similarity_pass_above_fail,
    "transfer.tableA6.levels": similarity_levels,
    "transfer.fig6.irrelevant_failing": category_rate("gen->expert", "+", ("irrelevant",)),
    "transfer.fig6.irrelevant_passing": category_rate("gen->expert", "-", ("irrelevant",)),
    "transfer.fig6.passing_more_redundant": passing_more_redundant,
    "transfer.fig6.expert_redundancy_passing": category_rate("within", "-", REDUNDANT, EXPERT),
    "transfer.fig6.expert_redundancy_failing": category_rate("within", "+", REDUNDANT, EXPERT),
    "transfer.fig6.expert_most_redundant": expert_most_redundant,
    "transfer.fig6.expert_passing_moves_more": expert_passing_moves_more,
    "transfer.fig6.expert_to_generated_moves_more": expert_to_generated_moves_more,
    "transfer.tableA9.rubric_shortens.generated": length_ratio("rubric", "generated"),
    "transfer.tableA9.rubric_shortens.expert": length_ratio("rubric", "expert"),
    "transfer.tableA9.criterion_shortens.generated": length_ratio("criterion", "generated"),
    "transfer.tableA9.criterion_shortens.expert": length_ratio("criterion", "expert"),
    "transfer.tableA9.fail_edits_more": fail_edits_more,
    "transfer.tableA9.pass_lengthens": pass_lengthens,
}
