"""`rubriclab` command line: manage the model-call cache outside the pipeline.

    rubriclab cache export FILE     every cached answer into one .jsonl.gz file
    rubriclab cache import FILE     add the answers of such a file (existing ones are kept)
    rubriclab cache stats           entries per model
    rubriclab plan [--configfile F ...] [--config K=V ...] [--data-mirror DIR]
                                    requests, tokens, dollars and hours of a run, before it
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rubriclab.llm.cache import SQLiteCache
from rubriclab.llm.settings import LLMConfig


def _cache(args: argparse.Namespace) -> SQLiteCache:
    return SQLiteCache(LLMConfig.from_dict({}, cache_dir=args.cache_dir).cache_path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rubriclab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache-dir", default=None,
                        help="cache folder (default: RUBRICLAB_CACHE or .cache/rubriclab)")
    commands = parser.add_subparsers(dest="group", required=True)
    cache = commands.add_parser("cache", help="the model-call cache")
    actions = cache.add_subparsers(dest="action", required=True)
    actions.add_parser("export", help="write every entry to FILE").add_argument("file", type=Path)
    actions.add_parser("import", help="add the entries of FILE").add_argument("file", type=Path)
    actions.add_parser("stats", help="entries per model")
    from rubriclab import plan

    plan.add_arguments(commands.add_parser("plan", help="a run's requests, tokens, dollars "
                                           "and hours, before any model call"))
    args = parser.parse_args(argv)
    if args.group == "plan":
        from rubriclab.plan.report import write_plan

        return plan.run(args, write_plan)

    with _cache(args) as store:
        if args.action == "export":
            count = store.export_to(args.file)
            print(f"exported {count} cached answers from {store.path} to {args.file}")
        elif args.action == "import":
            if not args.file.is_file():
                print(f"rubriclab: no such file: {args.file}", file=sys.stderr)
                return 2
            report = store.import_from(args.file)
            print(f"imported into {store.path}: {report.added} added, "
                  f"{report.already_present} already present, "
                  f"{report.conflicting} conflicting (kept the existing answer)")
        else:
            for model, count in store.counts_by_model():
                print(f"{count:8d}  {model}")
            print(f"{len(store):8d}  total ({store.path})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
