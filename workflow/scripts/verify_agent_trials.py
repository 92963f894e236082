import pandas as pd

from rubriclab.llm import Ledger, LLMClient, LLMConfig
from rubriclab.runtime import configure_logging
from rubriclab.verify.refund import run_agent_trial

configure_logging(snakemake.log[0])
params = snakemake.params
config = LLMConfig.from_dict(snakemake.config["llm"], cache_dir=snakemake.config["cache_dir"])
with LLMClient(config, ledger=Ledger(snakemake.output.ledger, rule="verify_agent_trials"),
               role="agent") as client:
    trials = [
        run_agent_trial(client, params.agent, index, max_steps=params.max_steps,
                        temperature=params.temperature, max_tokens=params.max_tokens).to_record()
        for index in range(params.trials)
    ]
pd.DataFrame(trials).to_csv(snakemake.output.trials, index=False)
