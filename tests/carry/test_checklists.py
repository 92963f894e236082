import pytest

from rubriclab.carry import checklists
from rubriclab.carry.checklists import Check, Checklist, load_generic_checklist

DATASETS = ["summedits", "ragtruth"]


def make_checklist(n: int, name: str = "demo") -> Checklist:
    checks = tuple(Check(id=f"c{i}", text=f"The output does thing {i}.", origin="test")
                   for i in range(1, n + 1))
    return Checklist(name=name, checks=checks, task_description="an answer")


@pytest.mark.parametrize("dataset", DATASETS)
def test_generic_checklist_has_ten_unique_checks(dataset):
    checklist = load_generic_checklist(dataset)
    assert len(checklist.checks) == 10
    assert [check.id for check in checklist.checks] == [f"g{i:02d}" for i in range(1, 11)]
    assert len({check.text for check in checklist.checks}) == 10
    assert all(check.text.strip() for check in checklist.checks)
    assert checklist.task_description
    assert all(check.origin == "generic" for check in checklist.checks)


def test_generic_checklists_differ_between_datasets():
    summedits = load_generic_checklist("summedits")
    ragtruth = load_generic_checklist("ragtruth")
    assert summedits.task_description != ragtruth.task_description
    assert {c.text for c in summedits.checks}.isdisjoint({c.text for c in ragtruth.checks})


def test_missing_dataset_names_available_keys():
    with pytest.raises(KeyError) as error:
        load_generic_checklist("healthbench")
    assert "healthbench" in str(error.value)
    assert "ragtruth" in str(error.value) and "summedits" in str(error.value)


def test_prefix_keeps_first_checks_in_order():
    checklist = make_checklist(10)
    prefix = checklist.prefix(3)
    assert [check.id for check in prefix.checks] == ["c1", "c2", "c3"]
    assert prefix.task_description == checklist.task_description
    assert len(checklist.prefix(10).checks) == 10


@pytest.mark.parametrize("length", [0, 11, -1])
def test_prefix_out_of_range_names_checklist_and_numbers(length):
    with pytest.raises(ValueError) as error:
        make_checklist(10, name="mylist").prefix(length)
    message = str(error.value)
    assert "mylist" in message and "10" in message and str(length) in message


def test_duplicate_check_ids_rejected():
    check = Check(id="a", text="The output is fine.", origin="test")
    with pytest.raises(ValueError, match="duplicate"):
        Checklist(name="dup", checks=(check, check), task_description="x")


def test_checks_given_as_list_become_tuple():
    check = Check(id="a", text="The output is fine.", origin="test")
    assert Checklist(name="l", checks=[check], task_description="x").checks == (check,)


@pytest.mark.parametrize("bad_check", [
    {"id": "g02"},
    {"id": "", "text": "The summary is short."},
    "The summary is short.",
    {"id": "g02", "text": 7},
])
def test_malformed_check_names_dataset_and_index(monkeypatch, bad_check):
    document = {"toy": {
        "task_description": "a summary",
        "origin": "written for tests",
        "checks": [{"id": "g01", "text": "The summary is faithful."}, bad_check],
    }}
    monkeypatch.setattr(checklists, "_read_generic_yaml", lambda: document)
    with pytest.raises(ValueError) as error:
        load_generic_checklist("toy")
    assert "toy" in str(error.value) and "index 1" in str(error.value)


@pytest.mark.parametrize("entry", [
    {"origin": "o", "checks": [{"id": "g01", "text": "t"}]},
    {"task_description": "d", "origin": "o", "checks": []},
    {"task_description": "d", "checks": [{"id": "g01", "text": "t"}]},
    ["not", "a", "mapping"],
])
def test_malformed_entry_names_dataset(monkeypatch, entry):
    monkeypatch.setattr(checklists, "_read_generic_yaml", lambda: {"toy": entry})
    with pytest.raises(ValueError, match="toy"):
        load_generic_checklist("toy")
