"""`rubriclab attribute | gate | correct | labels-needed | agreement`: the methods on your tables.

Each reads its tables (CSV, parquet, JSON lines, or ``hf:NAME[@REVISION][:SPLIT]`` for a
Hugging Face dataset), prints a markdown table to stdout and, with ``--out FILE``, writes the
same table as CSV. A malformed table exits with status 2 and a message naming the column.
Registered in rubriclab.cli by `add_commands`; `run` executes a parsed command.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

COMMANDS = ("attribute", "gate", "correct", "labels-needed", "agreement")
INPUT_HELP = "a .csv, .parquet or .jsonl file, or hf:NAME[@REVISION][:SPLIT]"


def add_commands(commands: argparse._SubParsersAction) -> None:
    """Add the three subcommands to the `rubriclab` parser's subparsers."""
    attribute = commands.add_parser(
        "attribute", help="Shapley credit, blame and unique catches of every check",
        description="Per-check Shapley catch credit, false-fail blame, unique catches and "
                    "fail counts, and the rubric's correct-passed and flawed-caught rates "
                    "(all-must-pass). VERDICTS: item_id, check_id, verdict (pass/fail). "
                    "LABELS: item_id, label (correct/flawed).")
    attribute.add_argument("verdicts", help=f"the judge's verdicts: {INPUT_HELP}")
    attribute.add_argument("labels", help=f"the items' labels: {INPUT_HELP}")
    attribute.add_argument("--rates-out", type=Path, metavar="FILE",
                           help="also write the rubric's two rates as CSV")
    _log_format(attribute, "VERDICTS")
    _common(attribute)

    gate = commands.add_parser(
        "gate", help="each gate's decision on each change of a proposed revision",
        description="Decide a proposed revision change by change under carry's gates. "
                    "REVISION: check_id, origin, action (keep/edit/delete/add), new_text. "
                    "VERDICTS: item_id, check_id, verdict (pass/fail), optional version "
                    "(current/proposed). LABELS: item_id, label (correct/flawed).")
    gate.add_argument("revision", help=f"the current checks and the proposed steps: {INPUT_HELP}")
    gate.add_argument("verdicts", help=f"the judge on the calibration items: {INPUT_HELP}")
    gate.add_argument("labels", help=f"the calibration items' labels: {INPUT_HELP}")
    gate.add_argument("--proposed", metavar="FILE",
                      help="the judge's verdicts on the proposed texts (item_id, check_id, "
                           "verdict), when VERDICTS holds the current texts' only")
    gate.add_argument("--gate", dest="gates", action="append", metavar="NAME",
                      help="a gate to apply: none, R, P, S or S+P (repeatable; default R, P, "
                           "S and S+P)")
    gate.add_argument("--tolerance", type=float, default=0.0, metavar="SHARE",
                      help="Gate S's tolerance: the unique catches a deletion may lose and the "
                           "false-fail blame an edit or add may carry, as a share of the "
                           "flawed (correct) calibration items (default 0: none)")
    gate.add_argument("--rubrics-out", type=Path, metavar="FILE",
                      help="also write the rubric each gate leaves as CSV")
    _log_format(gate, "VERDICTS and --proposed")
    _common(gate, level=False)

    correct = commands.add_parser(
        "correct", help="the judge's pass rate corrected for its errors (Rogan-Gladen, PPI)",
        description="Rogan-Gladen corrected pass rate, with an exact interval and "
                    "its instability flags, and the PPI estimate. JUDGED: item_id, verdict "
                    "(pass/fail). LABELED: item_id, human (pass/fail), optional judge. "
                    "One file instead of two: JUDGED alone, its human column filled for the "
                    "labelled items only.")
    _judged_and_labels(correct, "the labeled sample")
    _log_format(correct, "JUDGED")
    correct.add_argument("--check", metavar="NAME", default=None,
                         help="with --format: the check (scorer, assertion, metric) of the "
                              "log to correct, where it holds several")
    correct.add_argument("--method", default=None,
                         help="interval of the corrected rate: exact (default; coverage "
                              "guaranteed, wide on few labels), lang_reiczigel, "
                              "jeffreys_bootstrap or labelled_bootstrap")
    correct.add_argument("--ppi-plus-plus", action="store_true",
                         help="power-tuned PPI (PPI++) instead of PPI")
    correct.add_argument("--coverage-check", type=int, default=None, metavar="N",
                         help="simulated studies of the coverage check at these sizes "
                              "(default 2000; 0 skips it)")
    _common(correct)

    needed = commands.add_parser(
        "labels-needed", help="how many more labels of each class reach a target interval width",
        description="From a pilot (the tables `correct` takes, or its one file), the "
                    "human-pass and human-fail "
                    "labels to add so that the corrected rate's interval (correct's default) "
                    "reaches the target width, with the fewest labels in total. Computed at "
                    "the pilot's TPR and TNR: a plan, not a guarantee.")
    _judged_and_labels(needed, "the pilot's labeled sample")
    needed.add_argument("--width", type=float, required=True, metavar="W",
                        help="target width of the interval, in percentage points (e.g. 20)")
    needed.add_argument("--max-labels", type=int, default=None, metavar="N",
                        help="the most labels of either class a plan may add (default 100000)")
    needed.add_argument("--method", default=None,
                        help="interval of the corrected rate, as for correct (default: "
                             "correct's default)")
    _common(needed)

    agree = commands.add_parser(
        "agreement", help="Cohen's kappa and Gwet's AC1 of judge and people, per check",
        description="Agreement of the judge with people on the labeled items: TPR, TNR, "
                    "Cohen's kappa and Gwet's AC1 with intervals, per check and overall. "
                    "LABELED: item_id, human (pass/fail), optional check_id, optional judge. "
                    "JUDGED (when LABELED has no judge column): item_id, verdict, and "
                    "check_id if LABELED has it. One file instead of two: LABELED alone with "
                    "a verdict on every row and its human column filled for the labelled "
                    "rows only.")
    agree.add_argument("labeled", help=f"the labeled items: {INPUT_HELP}")
    agree.add_argument("judged", nargs="?", help=f"the judge's verdicts: {INPUT_HELP}")
    agree.add_argument("--label-column", metavar="NAME", default=None,
                       help="one-file form (LABELED with item_id, optional check_id, verdict on "
                            "every row, JUDGED omitted): the column of people's verdicts, empty "
                            "for unlabelled rows (default human)")
    _common(agree)


def _log_format(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--format", default="table",
                        choices=("table", "inspect", "promptfoo", "lm-eval"),
                        help=f"read {what} as a table (default) or as the log of Inspect AI "
                             "(.json/.eval), promptfoo (eval -o results.json) or lm-eval "
                             "(samples_*.jsonl); see docs/api.md")


def _common(parser: argparse.ArgumentParser, level: bool = True) -> None:
    parser.add_argument("--out", type=Path, metavar="FILE", help="also write the table as CSV")
    if level:
        parser.add_argument("--level", type=float, default=0.95,
                            help="confidence level of the intervals (default 0.95)")


def run(args: argparse.Namespace) -> int:
    """Run a parsed subcommand; 2 for a malformed input (the message names the column)."""
    from rubriclab import methods
    from rubriclab.methods import logs

    result: (methods.AttributionResult | methods.GateResult | methods.CorrectionResult
             | methods.LabelsNeededResult | methods.AgreementResult)
    try:
        if hasattr(args, "level") and not 0 < args.level < 1:
            raise methods.InputError("--level", None, f"must be in (0, 1), got {args.level}")
        if args.group == "attribute":
            result = methods.attribute(logs.read_verdicts(args.verdicts, args.format),
                                       methods.read_table(args.labels), level=args.level)
            _write(args.out, result.checks)
            _write(args.rates_out, result.rates)
        elif args.group == "gate":
            result = methods.gate(methods.read_table(args.revision),
                                  logs.read_verdicts(args.verdicts, args.format),
                                  methods.read_table(args.labels),
                                  proposed=(logs.read_verdicts(args.proposed, args.format)
                                            if args.proposed else None),
                                  gates=args.gates or methods.gates.DEFAULT_GATES,
                                  tolerance=args.tolerance)
            _write(args.out, result.decisions)
            _write(args.rubrics_out, result.rubrics)
        elif args.group == "labels-needed":
            extra = {} if args.max_labels is None else {"max_labels": args.max_labels}
            if args.method is not None:
                extra["method"] = args.method
            result = methods.labels_needed(
                methods.read_table(args.judged), _second(args, "labeled", "LABELED"),
                args.width / 100, label_column=args.label_column or "human", level=args.level,
                **extra)
            _write(args.out, result.table)
        elif args.group == "agreement":
            result = methods.agreement(methods.read_table(args.labeled),
                                       _second(args, "judged", "JUDGED"),
                                       label_column=args.label_column or "human",
                                       level=args.level)
            _write(args.out, result.table)
        else:
            options = {"level": args.level, "power_tuned": args.ppi_plus_plus}
            if args.method is not None:
                options["method"] = args.method
            if args.coverage_check is not None:
                options["check_replicates"] = args.coverage_check
            if args.labeled is None and args.format != "table":
                raise methods.InputError(args.judged, None, "a judge log holds no people's "
                                         "labels: give LABELED, a table of item_id, human")
            judged = logs.read_judged(args.judged, args.format, args.check)
            if args.label_column is not None and args.labeled is not None:
                raise methods.InputError("--label-column", None, "names the label column of "
                                         "the one-file form: omit LABELED")
            result = methods.correct(
                judged, None if args.labeled is None else methods.read_table(args.labeled),
                label_column=args.label_column or "human", **options)
            _write(args.out, result.table)
    except ValueError as exc:  # InputError, and the wrapped code's own checks of its input
        print(f"rubriclab {args.group}: {exc}", file=sys.stderr)
        return 2
    print(result.markdown())
    return 0


def _judged_and_labels(parser: argparse.ArgumentParser, labeled: str) -> None:
    """JUDGED, then LABELED or, omitted, the one-file form's --label-column."""
    parser.add_argument("judged", help=f"the judge's verdict on every item: {INPUT_HELP}")
    parser.add_argument("labeled", nargs="?", default=None,
                        help=f"{labeled}: {INPUT_HELP}; omitted, JUDGED holds the labels too "
                             "(see --label-column)")
    parser.add_argument("--label-column", metavar="NAME", default=None,
                        help="one-file form: the column of people's verdicts in JUDGED, "
                             "empty for unlabelled items (default human)")


def _second(args: argparse.Namespace, name: str, shown: str):
    """The second table, read; None in the one-file form, which --label-column implies."""
    from rubriclab import methods

    path = getattr(args, name)
    if path is None:
        return None
    if args.label_column is not None:
        raise methods.InputError("--label-column", None, "names the label column of the "
                                 f"one-file form: omit {shown}")
    return methods.read_table(path)


def _write(path: Path | None, frame) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        frame.to_csv(path, index=False)
