import pandas as pd

from rubriclab.model_job import job_client
from rubriclab.runtime import configure_logging
from rubriclab.verify.refund import run_agent_trial

configure_logging(snakemake.log[0])
params = snakemake.params
with job_client(snakemake, "verify_agent_trials", "agent") as client:
    trials = [
        run_agent_trial(client, params.agent, index, max_steps=params.max_steps,
                        temperature=params.temperature, max_tokens=params.max_tokens).to_record()
        for index in range(params.trials)
    ]
pd.DataFrame(trials).to_csv(snakemake.output.trials, index=False)
