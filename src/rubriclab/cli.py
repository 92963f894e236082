"""`rubriclab` command line: the model-call cache and a run's plan outside the pipeline, and the
methods on your own tables.

    rubriclab cache export FILE     every cached answer into one .jsonl.gz file, each with the
                                    request and model fingerprint its key is computed from
    rubriclab cache import FILE     add the answers of such a file, all or none: every key and
                                    checksum is recomputed, every field checked
    rubriclab cache keygen FILE     an ed25519 key pair to sign exports with (FILE, FILE.pub);
                                    `export --sign FILE` signs, `import --trust FILE.pub`
                                    requires that signature (docs/cache.md: the trust model)
    rubriclab cache stats           entries per model
                                    (stats and export open the cache read-only and create none)
    rubriclab plan [--configfile F ...] [--config K=V ...] [--data-mirror DIR]
                                    requests, tokens, dollars and hours of a run, before it
    rubriclab preflight [--configfile F ...] [--config K=V ...]
                                    each remote model of the config looked up, for free, on
                                    its provider's models endpoint: known, not retired, the
                                    key taken, the batch API reached (exit 1 if any refused)
    rubriclab attribute VERDICTS LABELS      Shapley credit, blame and unique catches per check
    rubriclab gate REVISION VERDICTS LABELS  each gate's decision on a proposed revision
    rubriclab compare RUN_A RUN_B [-o F]     two runs' outputs and verdicts side by side
    rubriclab correct JUDGED LABELED         the judge's pass rate corrected for its errors
                                    (docs/api.md, docs/tutorial.md)

attribute, gate and correct need only the light install (`pip install rubriclab`); cache, plan
and preflight need the pipeline extra (`pip install 'rubriclab[pipeline]'`, which `make
install` installs).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rubriclab import __version__

# The model layer, Snakemake and their dependencies are imported inside the commands that use
# them: `rubriclab correct` (and --help) loads none of them, and runs without the pipeline extra.
if TYPE_CHECKING:
    from rubriclab.llm.cache import SQLiteCache
    from rubriclab.llm.cache_pg import PostgresCache
    from rubriclab.llm.settings import LLMConfig
    from rubriclab.llm.storage import AnswerCache

PIPELINE_INSTALL = "pip install 'rubriclab[pipeline]'"


def _config(args: argparse.Namespace) -> LLMConfig:
    from rubriclab.llm.settings import LLMConfig

    return LLMConfig.from_dict({}, cache_dir=args.cache_dir)


def _cache(args: argparse.Namespace) -> SQLiteCache | PostgresCache:
    """The cache (a SQLite file, or a PostgreSQL database where --cache-dir or RUBRICLAB_CACHE
    is a postgresql:// URL), opened for writing by `import` and read-only by `stats` and
    `export` (which so never create a cache, nor write to a read-only one)."""
    from rubriclab.llm.storage import open_cache

    return open_cache(_config(args), read_only=args.action != "import")


def _fingerprints(store: AnswerCache, config: LLMConfig, declared: list[str]) -> dict[str, str]:
    """Fingerprints for entries stored before fingerprints were recorded: those named on the
    command line, and those of fake and embedded models, which this machine can compute."""
    from rubriclab.llm.backends import Backends
    from rubriclab.llm.providers import provider_for

    named = {}
    for item in declared:
        model, sep, fingerprint = item.partition("=")
        if not sep or not model:
            raise SystemExit(f"rubriclab: --fingerprint takes MODEL=FINGERPRINT, got {item!r}")
        named[model] = fingerprint
    backends = Backends(config)
    for model in store.models_without_fingerprint():
        if model in named or not provider_for(model).computes_fingerprint:
            continue
        try:
            named[model] = backends.fingerprint(model)
        except Exception as exc:  # noqa: BLE001 - reported; the export then names the entries
            print(f"rubriclab: cannot compute the fingerprint of {model!r}: {exc}",
                  file=sys.stderr)
    return named


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rubriclab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"rubriclab {__version__}")
    parser.add_argument("--cache-dir", default=None,
                        help="cache folder, or a postgresql:// URL (default: RUBRICLAB_CACHE "
                             "or .cache/rubriclab)")
    commands = parser.add_subparsers(dest="group", metavar="COMMAND", required=True)
    cache = commands.add_parser("cache", help="the model-call cache")
    actions = cache.add_subparsers(dest="action", required=True)
    export = actions.add_parser("export", help="write every entry to FILE")
    export.add_argument("file", type=Path)
    export.add_argument("--fingerprint", action="append", default=[], metavar="MODEL=FINGERPRINT",
                        help="the fingerprint of a model whose entries were stored before "
                             "fingerprints were recorded (repeatable)")
    export.add_argument("--sign", type=Path, metavar="KEY",
                        help="sign the export with this ed25519 private key (cache keygen)")
    imports = actions.add_parser("import", help="add the entries of FILE")
    imports.add_argument("file", type=Path)
    imports.add_argument("--trust", action="append", default=[], metavar="PUBKEY",
                         help="require a signature by this public key (a .pub file of cache "
                              "keygen, or the base64 key); repeatable: any one of them")
    actions.add_parser("keygen", help="a key pair to sign exports with").add_argument(
        "file", type=Path)
    actions.add_parser("stats", help="entries per model")
    from rubriclab import plan

    plan.add_arguments(commands.add_parser("plan", help="a run's requests, tokens, dollars "
                                           "and hours, before any model call"))
    preflight = commands.add_parser(
        "preflight", help="each remote model looked up on its provider's models endpoint, "
                          "for free: known, not retired, key taken, batch API reached")
    preflight.add_argument("--configfile", nargs="+", type=Path, default=[],
                           help="config file(s), as for snakemake (default: config/config.yaml)")
    preflight.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE",
                           help="overrides, as for snakemake --config")
    from rubriclab.methods import cli as methods_cli

    methods_cli.add_commands(commands)
    compare = commands.add_parser("compare", help="two runs' outputs, numbers and verdicts, "
                                  "side by side on one page, differences marked")
    compare.add_argument("run_a", metavar="RUN_A", help="a run folder (runs/<name>/, or the "
                         "working folder of a run), or a run's name")
    compare.add_argument("run_b", metavar="RUN_B")
    compare.add_argument("-o", "--output", type=Path, default=None,
                         help="the page, .html or .md (default: markdown on stdout)")
    if not (sys.argv[1:] if argv is None else argv):
        parser.print_help(sys.stderr)
        return 2
    args = parser.parse_args(argv)
    if args.group in methods_cli.COMMANDS:
        return methods_cli.run(args)
    if args.group == "compare":
        return _compare(args)
    try:
        if args.group == "plan":
            from rubriclab.plan.report import write_plan

            return plan.run(args, write_plan)
        if args.group == "preflight":
            return _preflight(args)
        return _cache_command(args)
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] == "rubriclab":
            raise
        # A package of the pipeline extra is missing (the light install has none of them).
        print(f"rubriclab {args.group}: needs the pipeline extra ({exc.name} is not "
              f"installed): {PIPELINE_INSTALL}", file=sys.stderr)
        return 2


def _cache_command(args: argparse.Namespace) -> int:
    """`rubriclab cache export | import | keygen | stats`."""
    import sqlite3

    if args.action == "keygen":
        from rubriclab.llm.signing import generate_key

        try:
            private, public, key_id = generate_key(args.file)
        except FileExistsError as exc:
            print(f"rubriclab: {exc}", file=sys.stderr)
            return 1
        print(f"wrote the private key {private} (keep it secret) and the public key {public} "
              f"(publish it beside your exports); key id {key_id}")
        return 0
    signing = trusted = None
    try:
        if args.action == "export" and args.sign is not None:
            from rubriclab.llm.signing import load_private_key

            signing = load_private_key(args.sign)
        if args.action == "import" and args.trust:
            from rubriclab.llm.signing import load_public_key

            trusted = [load_public_key(value) for value in args.trust]
    except ValueError as exc:
        print(f"rubriclab: {exc}", file=sys.stderr)
        return 2

    try:
        store = _cache(args)
    except FileNotFoundError as exc:
        print(f"rubriclab: {exc} (give --cache-dir, or set RUBRICLAB_CACHE, to read another)",
              file=sys.stderr)
        return 1
    except sqlite3.DatabaseError as exc:
        print(f"rubriclab: cannot read the cache: {exc}", file=sys.stderr)
        return 1
    with store:
        try:
            if args.action == "export":
                count = store.export_to(args.file,
                                        _fingerprints(store, _config(args), args.fingerprint),
                                        sign_with=signing)
                signed = "" if signing is None else " (signed)"
                print(f"exported {count} cached answers from {store.location} to {args.file}"
                      f"{signed}")
            elif args.action == "import":
                if not args.file.is_file():
                    print(f"rubriclab: no such file: {args.file}", file=sys.stderr)
                    return 2
                report = store.import_from(args.file, trusted=trusted)
                if report.signed_by is None:
                    signer = "unsigned"
                elif trusted:
                    signer = f"signed by trusted key {report.signed_by}"
                else:
                    signer = (f"signed by key {report.signed_by}, not checked against a "
                              "trusted key (--trust)")
                print(f"imported into {store.location}: {report.added} added, "
                      f"{report.already_present} already present, "
                      f"{report.conflicting} conflicting (kept the existing answer); {signer}")
            else:
                for model, count in store.counts_by_model():
                    print(f"{count:8d}  {model}")
                print(f"{len(store):8d}  total ({store.location})")
                paid = store.paid_requests()
                if paid is not None:  # a PostgreSQL cache: every host's ledger rows
                    calls, distinct = paid
                    ratio = f"{calls / distinct:.3f}" if distinct else "-"
                    print(f"{calls:8d}  requests paid for by the runs' jobs, {distinct} distinct "
                          f"({ratio} per distinct request)")
        except ValueError as exc:
            what = "nothing was imported" if args.action == "import" else "nothing was written"
            if "were added" in str(exc):  # the file changed during the import: said in exc
                what = "the rest was not imported"
            print(f"rubriclab: {exc}; {what}", file=sys.stderr)
            return 1
    return 0


def _compare(args: argparse.Namespace) -> int:
    """`rubriclab compare RUN_A RUN_B` (rubriclab.replication.compare)."""
    from rubriclab.replication.compare import write_comparison

    try:
        print(write_comparison(args.run_a, args.run_b, args.output))
    except ValueError as exc:
        print(f"rubriclab compare: {exc}", file=sys.stderr)
        return 2
    return 0


def _preflight(args: argparse.Namespace) -> int:
    """`rubriclab preflight`: one line per remote model; 0 if none is refused, 1 if one is,
    2 for a config that cannot be read."""
    from snakemake_interface_common.exceptions import WorkflowError

    from rubriclab.validate import pipeline_config
    from rubriclab.llm.preflight import preflight
    from rubriclab.llm.settings import LLMConfig
    from rubriclab.validate import configured_models, remote_models, run_horizon

    import yaml

    try:
        config = pipeline_config(list(args.configfile), list(args.config))
        llm = LLMConfig.from_dict(config.get("llm"), cache_dir=config.get("cache_dir"))
    except (ValueError, yaml.YAMLError, WorkflowError) as exc:
        print(f"rubriclab preflight: {exc}", file=sys.stderr)
        return 2
    named = configured_models(config)
    remote = remote_models(config)
    hours, _ = run_horizon(config)
    verdicts = preflight({m: llm.settings_for(m) for m in remote}, horizon_hours=hours)
    for verdict in verdicts:
        print(verdict.line(remote[verdict.model]))
    refused = [v for v in verdicts if v.refused]
    looked = sum(v.requests for v in verdicts)
    skipped = len(named) - len(remote)
    print(f"{len(verdicts)} remote models, {looked} free requests (no paid one); "
          f"{len(refused)} refused" + (f"; {skipped} fake/ or local/ models not looked up"
                                       if skipped else ""))
    if refused:
        print("rubriclab preflight: refused " + ", ".join(repr(v.model) for v in refused)
              + ": change each in the config key named beside it (or its llm.per_model "
              "settings) as its line says", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
