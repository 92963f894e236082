"""`rubriclab attribute`, `rubriclab gate`, `rubriclab correct`: the methods on your own tables.

Each reads its tables (CSV, parquet, JSON lines, or ``hf:NAME[@REVISION][:SPLIT]`` for a
Hugging Face dataset), prints a markdown table to stdout and, with ``--out FILE``, writes the
same table as CSV. A malformed table exits with status 2 and a message naming the column.
Registered in rubriclab.cli by `add_commands`; `run` executes a parsed command.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

COMMANDS = ("attribute", "gate", "correct")
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
    gate.add_argument("--rubrics-out", type=Path, metavar="FILE",
                      help="also write the rubric each gate leaves as CSV")
    _common(gate, level=False)

    correct = commands.add_parser(
        "correct", help="the judge's pass rate corrected for its errors (Rogan-Gladen, PPI)",
        description="Rogan-Gladen corrected pass rate, with the Lang-Reiczigel interval and "
                    "its instability flags, and the PPI estimate. JUDGED: item_id, verdict "
                    "(pass/fail). LABELED: item_id, human (pass/fail), optional judge.")
    correct.add_argument("judged", help=f"the judge's verdict on every item: {INPUT_HELP}")
    correct.add_argument("labeled", help=f"the labeled sample: {INPUT_HELP}")
    correct.add_argument("--method", default=None,
                         help="interval of the corrected rate: lang_reiczigel (default), "
                              "jeffreys_bootstrap or labelled_bootstrap")
    correct.add_argument("--ppi-plus-plus", action="store_true",
                         help="power-tuned PPI (PPI++) instead of PPI")
    correct.add_argument("--coverage-check", type=int, default=None, metavar="N",
                         help="simulated studies of the coverage check at these sizes "
                              "(default 2000; 0 skips it)")
    _common(correct)


def _common(parser: argparse.ArgumentParser, level: bool = True) -> None:
    parser.add_argument("--out", type=Path, metavar="FILE", help="also write the table as CSV")
    if level:
        parser.add_argument("--level", type=float, default=0.95,
                            help="confidence level of the intervals (default 0.95)")


def run(args: argparse.Namespace) -> int:
    """Run a parsed subcommand; 2 for a malformed input (the message names the column)."""
    from rubriclab import methods

    result: methods.AttributionResult | methods.GateResult | methods.CorrectionResult
    try:
        if hasattr(args, "level") and not 0 < args.level < 1:
            raise methods.InputError("--level", None, f"must be in (0, 1), got {args.level}")
        if args.group == "attribute":
            result = methods.attribute(methods.read_table(args.verdicts),
                                       methods.read_table(args.labels), level=args.level)
            _write(args.out, result.checks)
            _write(args.rates_out, result.rates)
        elif args.group == "gate":
            result = methods.gate(methods.read_table(args.revision),
                                  methods.read_table(args.verdicts),
                                  methods.read_table(args.labels),
                                  proposed=(methods.read_table(args.proposed)
                                            if args.proposed else None),
                                  gates=args.gates or methods.gates.DEFAULT_GATES)
            _write(args.out, result.decisions)
            _write(args.rubrics_out, result.rubrics)
        else:
            options = {"level": args.level, "power_tuned": args.ppi_plus_plus}
            if args.method is not None:
                options["method"] = args.method
            if args.coverage_check is not None:
                options["check_replicates"] = args.coverage_check
            result = methods.correct(methods.read_table(args.judged),
                                     methods.read_table(args.labeled), **options)
            _write(args.out, result.table)
    except ValueError as exc:  # InputError, and the wrapped code's own checks of its input
        print(f"rubriclab {args.group}: {exc}", file=sys.stderr)
        return 2
    print(result.markdown())
    return 0


def _write(path: Path | None, frame) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        frame.to_csv(path, index=False)
