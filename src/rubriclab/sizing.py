"""What a job asks a cluster for: `mem_mb` and `runtime` (minutes) of every rule.

A cluster executor (slurm, cluster-generic, ...) submits each job with the memory and time its
rule declares; too little and the job is killed, far too much and it waits in the queue. The
numbers below were measured on the reduced rehearsal (each rule's `benchmark:` file, max_rss
and wall seconds; benchmarks/README.md, "Cluster sizes") and given room; where a job's length
depends on the config (a model job's calls), it is read from the config, not guessed.
No job asks for more time than `cluster.max_runtime_min` (a partition refuses a longer one, so
such a rule is refused when the Snakefile is read), and no group job either: Snakemake 9.27
asks for a group job the sum, over the group's layers, of each layer's longest job
(snakemake/resources.py, `GroupResources.basic_layered`, called by `GroupJob.resources` in
snakemake/jobs.py with `additive_resources=["runtime"]`); at worst, one job a layer, the sum of
all its jobs. `group_within` keeps a group only where that sum fits. See docs/cluster.md.
"""

from __future__ import annotations

import math

from rubriclab.llm.providers import provider_for
from rubriclab.llm.settings import LLMConfig

# A job that calls no model: pandas, matplotlib, scipy's bootstraps over tables of at most a
# few hundred thousand rows; each takes seconds to a few minutes. (Most rules' own benchmark
# files measure the model jobs; these are not measured rule by rule.)
SMALL_MEM_MB = 2000
SMALL_RUNTIME_MIN = 30
# A job that calls an API model: litellm, the cache and up to `concurrency` answers in flight
# (the reduced rehearsal's model jobs peak under 500 MB; paper-scale tables are larger); most
# of its time is waiting on the provider.
API_MEM_MB = 2000
# At paper.yaml's Tier 2 rate limits its calls sent outside batches take under an hour (0.9 h
# with every request thinking to its room; docs/paper_scale.md, `make plan-paper`); 6 hours
# leaves room for slower limits. Without batch mode its slowest model would take 6.7 h (Gemini
# 3.8 Flash; 25.5 h thinking to its room): a run without batches should raise this. A model in
# batch mode waits for its batch for at most its `batch_max_wait_s`, then an hour to collect
# and write the answers.
API_RUNTIME_MIN = 360
BATCH_COLLECT_MIN = 60
# The embedded model: llama.cpp holds the GGUF (about 500 MB) and its context beside Python's
# own libraries; one job at a time per machine (the local_llm resource). Its calls run on the
# job's cores, so a run of the default config takes hours on two cores.
LOCAL_MEM_MB = 4000
LOCAL_RUNTIME_MIN = 720
# cluster.max_runtime_min's default (the schema's): 48 hours, a common partition limit that
# paper.yaml's longest job (a batch-mode judge, 27 h) fits; a 24-hour partition refuses it.
DEFAULT_MAX_RUNTIME_MIN = 2880


def model_job_size(llm: LLMConfig, model: str, role: str | None,
                   max_runtime_min: int = DEFAULT_MAX_RUNTIME_MIN) -> dict[str, int]:
    """`mem_mb` and `runtime` of a job whose calls go to `model` in `role`; ValueError where
    the runtime passes `max_runtime_min` (cluster.max_runtime_min)."""
    family = provider_for(model)
    if family.scripted:  # answered by code in the job's own process
        size = {"mem_mb": SMALL_MEM_MB, "runtime": SMALL_RUNTIME_MIN}
    elif family.embedded:
        size = {"mem_mb": LOCAL_MEM_MB, "runtime": LOCAL_RUNTIME_MIN}
    elif llm.batch_for(model, role):
        wait_s = llm.settings_for(model).batch_max_wait_s
        size = {"mem_mb": API_MEM_MB,
                "runtime": math.ceil(wait_s / 60) + BATCH_COLLECT_MIN}
        if size["runtime"] > max_runtime_min:
            fits_s = (max_runtime_min - BATCH_COLLECT_MIN) * 60
            raise ValueError(
                f"config key 'cluster.max_runtime_min' ({max_runtime_min} min): a job of "
                f"{model!r} as {role} in batch mode asks {size['runtime']} min "
                f"(batch_max_wait_s {wait_s:g} s + {BATCH_COLLECT_MIN} min to collect), and a "
                f"partition with that limit refuses it; lower "
                f"llm.per_model['{model}'].batch_max_wait_s to at most {fits_s} s, or raise "
                "cluster.max_runtime_min to your partition's MaxTime")
        return size
    else:
        size = {"mem_mb": API_MEM_MB, "runtime": API_RUNTIME_MIN}
    if size["runtime"] > max_runtime_min:
        raise ValueError(
            f"config key 'cluster.max_runtime_min' ({max_runtime_min} min): a job of {model!r} "
            f"as {role} asks {size['runtime']} min (rubriclab.sizing), and a partition with "
            "that limit refuses it; raise cluster.max_runtime_min to your partition's MaxTime")
    return size


def group_within(group: str, job_runtime_min: int, components: int,
                 max_runtime_min: int = DEFAULT_MAX_RUNTIME_MIN) -> str | None:
    """`group` for jobs of `job_runtime_min` each, where `components` of them (the profile's
    group-components; each of these jobs its own component) fit `max_runtime_min` even one
    after another; else None, no group: each job asks for its own time."""
    if max(components, 1) * job_runtime_min <= max_runtime_min:
        return group
    return None


def small_job_size() -> dict[str, int]:
    """`mem_mb` and `runtime` of a job that calls no model."""
    return {"mem_mb": SMALL_MEM_MB, "runtime": SMALL_RUNTIME_MIN}
