"""The known-truth world: scripted `fake/known-*` models that answer from the ground truth the
pipeline itself prepared, so that carry's and verify's outputs can be checked against what they
must show when every model does what the papers' setup assumes.

    fake/known-judge?tpr=0.97&tnr=0.95   a judge with set per-check rates: a check the output
                                         meets is answered Yes with probability tpr, a check
                                         it does not meet No with probability tnr
    fake/known-writer                    writes the generated draft and the label-taught rubric
                                         (rubriclab.known_truth.authors)
    fake/known-reviser?salt=opus&add=..&delete=..&edit=..
                                         revises rubrics blind to meanings and labels: one
                                         change a round drawn with set probabilities
                                         (rubriclab.known_truth.authors)
    fake/known-agent?pass_rate=0.7       verify's refund agent: the correct scripted run with
                                         probability pass_rate, else a run that breaks one
                                         line of the verifier (rubriclab.verify.known_world);
                                         the judge also grades its replies on verify's reply
                                         rubric, by declared meanings of the four criteria

What the truth is. Only what the project generates or reads with its labels: each Recon
report's label, planted flaw type and the finding the flaw touches
(data/prepared/recon/reports_recon108.csv; Recon-72 is a subset), each hand check's `targets`
(data/prepared/recon/rubrics_hand.csv), and the human labels of SummEdits and RAGTruth
(data/prepared/<dataset>.csv).

How the judge reads it (the design). The pipeline passes the scripted judge nothing it does not
pass every judge: its prompt. The judge reads that prompt as a model would: the input and the
output (the "Input:" and "Output:" blocks of carry's judge prompts) and the requirement(s). It
recognises the item by its (input, output) text in the prepared tables under data/prepared/ of
its working directory, which the run wrote before any judging job (every judged item comes from
them); and each requirement by its text, in one of three places: the hand rubrics' table (the
check's targets), carry's generic checklists (`world.GENERIC_FAULTS` says which generic checks
an unfaithful output fails), or the closed vocabulary of `world`, the only words the scripted
writer and reviser use, each text with its meaning declared beside it. A prompt, item or
requirement outside the world stops the call with an error naming it: nothing is guessed.
The truth is then a lookup, not a reading of hidden labels in the prompt: the same prompt with
a real model would be answered from the same text.

What a check means (`world.Meaning`). The faults it fails an output for (Recon flaw types,
limited to named findings for a hand check that names one; "flawed" for a human-labelled
dataset), a marker it requires in the output text (a requirement the task never stated, such
as a CVSS score: the truth is read from the text, and no Recon report has one), or a share of
outputs that do not meet it (a requirement the reviser adds on SummEdits / RAGTruth, met or
not per output by a seeded hash of the requirement and the output; the labels say nothing about
such requirements, so the world must declare it).

How the judge answers. Truth, then noise: each per-check answer draws u in [0, 1) from sha256 of
(model string, sample index, messages, check position), and answers the truth iff u < tpr (met)
or u < tnr (not met). So each check has the fixed false-fail rate 1 - tpr (carry Figure 2), and
the three judges of carry.judges, with their own rates and model strings, draw apart. All checks
in one call (verdict_list_<n>): one draw per check. A paragraph of checks (yes_no): one draw on
whether every check is met. The 1-10 scale: 1 + round(9 x the share of checks judged met, each
with its own draw). Deterministic and offline: same prompt, same answer.

The fingerprint of these models (`world.KNOWN_FINGERPRINT`) is part of every cache key: raise its
version when what the scripted models answer changes, or a cache keeps the old answers.

transfer's world is rubriclab.known_truth.transfer; verify's registers itself here
(rubriclab.verify.known_world, `models.register_world`) when rubriclab.verify is imported.

How the model layer reaches it. rubriclab.llm never imports this package: the entry point
`known = "rubriclab.known_truth:scripted_models"` of the group `rubriclab.scripted_models`
(pyproject.toml) registers `scripted_models` below with the provider registry
(rubriclab.llm.providers), which rubriclab.llm.fake asks for every behaviour it does not answer
itself. Inside, one way: world (the truth, the options) <- judge, authors, transfer <- models
(options checked, calls dispatched) <- this module.
"""

from rubriclab.llm.providers import ScriptedModels

from .models import check_options, known_answer
from .world import BEHAVIOURS, KNOWN_FINGERPRINT

scripted_models = ScriptedModels(behaviours=BEHAVIOURS, fingerprint=KNOWN_FINGERPRINT,
                                 check_options=check_options, answer=known_answer)
