"""rubriclab.methods.transfer_q: the Q metrics of a user's own verdict table."""

import numpy as np
import pandas as pd
import pytest

from rubriclab.methods import InputError, transfer_q
from rubriclab.stats.bootstrap import paired_bootstrap
from rubriclab.transfer.metrics import micro_average_statistic, transfer_q as q_of, transfer_records


def verdict_table(seed: int, generator: str = "") -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for example in range(12):
        for target in ("generated", "expert"):
            for direction in ("+", "-"):
                for criterion in range(4):
                    rows.append(dict(example_id=f"e{example}", target=target,
                                     direction=direction, criterion_id=f"c{criterion}",
                                     before=int(rng.random() < 0.5),
                                     after=int(rng.random() < 0.5)))
    frame = pd.DataFrame(rows)
    return frame.assign(generator=generator) if generator else frame


def test_each_metric_is_equation_1_on_its_rows_with_algorithm_4s_interval():
    verdicts = verdict_table(1)
    table = transfer_q(verdicts, B=200, seed=3).set_index("metric")
    assert list(table.index) == ["Q+(Cg->C*)", "Q-(Cg->C*)", "Q+(C*->Cg)", "Q-(C*->Cg)"]
    rows = verdicts[(verdicts.target == "expert") & (verdicts.direction == "-")]
    assert table.at["Q-(C*->Cg)", "estimate"] == pytest.approx(q_of(rows, "-"))
    assert table.at["Q-(C*->Cg)", "task"] == "detecting bad responses"
    examples = [f"e{i}" for i in range(12)]
    records = transfer_records(rows, "-").reindex(examples, fill_value=0)
    alone = paired_bootstrap(12, {"q": micro_average_statistic(records, examples)}, B=200,
                             seed=3)
    # the same draws: the metric's interval does not depend on the other statistics beside it
    assert (table.at["Q-(C*->Cg)", "low"], table.at["Q-(C*->Cg)", "high"]) == \
        pytest.approx((alone.low.item(), alone.high.item()))
    assert (table["n_examples"] == 12).all() and (table["B"] == 200).all()


def test_two_generators_get_their_paired_difference():
    both = pd.concat([verdict_table(1, "model-a"), verdict_table(2, "model-b")],
                     ignore_index=True)
    table = transfer_q(both, B=100)
    plus = table[table.metric == "Q+(Cg->C*)"].set_index(["generator", "generator_b"])
    assert plus.at[("model-a", "model-b"), "estimate"] == pytest.approx(
        plus.at[("model-a", ""), "estimate"] - plus.at[("model-b", ""), "estimate"])


def test_pass_and_fail_read_as_one_and_zero():
    verdicts = verdict_table(4)
    words = verdicts.assign(before=np.where(verdicts.before == 1, "pass", "fail"))
    assert transfer_q(words, B=50).equals(transfer_q(verdicts, B=50))


@pytest.mark.parametrize("change, column", [
    ({"target": "mine"}, "target"), ({"direction": "up"}, "direction"), ({"after": 2}, "after"),
])
def test_a_bad_value_names_its_column(change, column):
    verdicts = verdict_table(1)
    for key, value in change.items():
        verdicts.loc[5, key] = value
    with pytest.raises(InputError) as caught:
        transfer_q(verdicts, B=10)
    assert caught.value.column == column and "row 6" in str(caught.value)


def test_a_repeated_verdict_is_refused():
    verdicts = verdict_table(1)
    with pytest.raises(InputError, match="repeats"):
        transfer_q(pd.concat([verdicts, verdicts.head(1)], ignore_index=True), B=10)
