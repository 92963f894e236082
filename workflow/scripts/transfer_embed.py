import logging

import pandas as pd

from rubriclab.llm import LLMConfig
from rubriclab.llm.embedding import Embedder
from rubriclab.runtime import configure_logging
from rubriclab.transfer.pipeline import embedding_cosines, load_rubrics

configure_logging(snakemake.log[0])
inputs = snakemake.input
examples = pd.read_csv(inputs.examples, keep_default_na=False)
example_ids, rubrics, _ = load_rubrics(examples, inputs.expert, inputs.rubrics)
config = LLMConfig.from_dict(snakemake.config["llm"], cache_dir=snakemake.config["cache_dir"])
with Embedder(snakemake.params.model, config) as embedder:
    cosine = embedding_cosines(embedder, rubrics, example_ids)
    logging.info("embeddings: %s", embedder.stats)
cosine.to_csv(snakemake.output.cosine, index=False)
