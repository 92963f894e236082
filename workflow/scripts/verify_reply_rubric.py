import pandas as pd

from rubriclab.model_job import job_client
from rubriclab.runtime import configure_logging
from rubriclab.verify.reply_rubric import RUBRIC_CRITERIA, grade_reply

configure_logging(snakemake.log[0])
trials = pd.read_csv(snakemake.input.trials, keep_default_na=False)
rows = []
with job_client(snakemake, "verify_reply_rubric", "judge") as client:
    # Correctness is the gate: only replies of trials the verifier passed are judged. Each
    # trial's reply is its own judgement (the trial as sample index, as its agent's turns), so
    # two trials that wrote the same reply are not answered from one cached verdict.
    for trial in trials[trials["verifier_passed"].astype(str) == "True"].itertuples(index=False):
        grade = grade_reply(client, snakemake.params.judge, trial.final_reply,
                            max_tokens=snakemake.params.max_tokens,
                            sample_index=int(trial.trial_index))
        rows.append({"trial_index": trial.trial_index, **grade.verdicts, "passed": grade.passed})
columns = ["trial_index", *(criterion.id for criterion in RUBRIC_CRITERIA), "passed"]
pd.DataFrame(rows, columns=columns).to_csv(snakemake.output.grades, index=False)
