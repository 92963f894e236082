"""The wording banks a recon report is written from: titles, openings, count and closing
sentences, the frames a finding's body is set in, headings and the narrative's leads.

A report's style and each stated finding hold indices into these banks
(rubriclab.recon.reports), so a bank's order is part of every generated text.
"""

NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                "ten", "eleven", "twelve")
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth")
REPORT_TITLES = (
    "Security review: {area}",
    "{area} configuration audit — {company}",
    "Findings report for AWS account {account}",
    "{company}: {area} review",
    "Cloud configuration review — {area} ({region})",
)
OPENINGS = (
    "This report sets out the results of our configuration review of the {scope} in AWS account "
    "{account} ({region}). We examined all {n_resources} resources in scope against {company}'s "
    "cloud security baseline and AWS best practice.",
    "We reviewed the {scope} of {company} (account {account}, region {region}). The review covered "
    "the {n_resources} resources listed in the engagement brief and was based on the exported "
    "configuration only; nothing in the environment was changed.",
    "{company} asked us to assess its {scope} in {region} for security misconfigurations. This "
    "report summarises what we found, with the configuration evidence for each item.",
    "Scope: the {scope} in account {account} ({region}), {n_resources} resources in total. "
    "Method: a read-only review of the exported configuration of each resource.",
    "The aim of this engagement was to find security misconfigurations in the {scope} that "
    "{company} runs in {region}. Every resource in scope in account {account} ({n_resources} in "
    "all) was reviewed.",
    "Below are the results of the security review of {company}'s {scope} (AWS account {account}, "
    "{region}).",
)
COUNT_SENTENCES = (
    "In total we identified {n} findings: {breakdown}.",
    "The review produced {n} findings ({breakdown}).",
    "We are reporting {n} issues: {breakdown}.",
    "{N} findings are raised in this report, {breakdown}.",
)
TOP_RISK_SENTENCES = (
    "The most urgent item is \"{title}\" on {rid}, which should be fixed first.",
    "Of these, the {sev} finding on {rid} ({title}) deserves immediate attention.",
    "",
)
CLOSINGS = (
    "The remaining {m} resources in scope were reviewed and no issues were found on them.",
    "No other misconfigurations were identified. We are happy to re-test once the fixes are in place.",
    "All other resources reviewed ({m} in total) were in line with the baseline.",
    "This concludes our findings. We suggest tracking each item to closure in the risk register "
    "and repeating the review after remediation.",
    "We found nothing to report on the other {m} resources.",
    "",
)
# A finding's body when the resource id is part of the sentence.
FRAMES_WITH_ID = (
    "The {noun} {rid} {issue}. The configuration shows that {evidence}.",
    "{rid} {issue}: {evidence}.",
    "We found that the {noun} {rid} {issue}, since {evidence}.",
    "Review of {rid} showed that it {issue}. {Evidence}.",
    "On {rid}, {evidence}, which means the {noun} {issue}.",
    "The {noun} {rid} {issue}. Specifically, {evidence}.",
    "In the exported configuration of {rid}, {evidence}; in other words, the {noun} {issue}.",
)
# A finding's body when the resource id is given next to it (heading, bullet, table cell).
FRAMES_WITHOUT_ID = (
    "The {noun} {issue}; {evidence}.",
    "It {issue}, because {evidence}.",
    "{Evidence}, so the {noun} {issue}.",
    "This {noun} {issue}. {Evidence}.",
    "The {noun} {issue}. Evidence: {evidence}.",
)
REMEDIATION_LEADS = ("Recommendation: {R}", "Remediation: {R}", "Suggested fix: {R}", "To fix this, {r}")
NARRATIVE_REMEDIATIONS = ("We recommend the following: {r}", "To fix this, {r}", "Our recommendation: {r}")
NARRATIVE_FIRST = (
    "The first finding, \"{Title}\", is rated {sev}.",
    "We begin with \"{Title}\" ({sev} severity).",
    "Our first concern, which we rate {sev}, is titled \"{Title}\".",
)
NARRATIVE_MIDDLE = (
    "The {ordinal} finding, \"{Title}\", is rated {sev}.",
    "We also raise \"{Title}\" as a {sev}-severity issue.",
    "Next comes \"{Title}\", which we consider {sev}.",
    "A further issue, rated {sev}, is \"{Title}\".",
)
NARRATIVE_LAST = (
    "Finally, we rate \"{Title}\" as {sev}.",
    "The last finding, rated {sev}, is \"{Title}\".",
    "Lastly, \"{Title}\" is a {sev}-severity finding.",
)
SUMMARY_HEADINGS = ("## Executive summary", "## Summary", "## Overview")
FINDINGS_HEADINGS = ("## Findings", "## Detailed findings", "## Findings and evidence")
CLOSING_HEADINGS = ("## Conclusion", "## Closing remarks", "")
TABLE_INTROS = (
    "The findings are summarised in the table below.",
    "Each finding is listed below with its severity, the affected resource and the evidence.",
    "Findings:",
)
PART_A_HEADINGS = ("## Part A: {span}", "**Part A**", "Part A")
PART_B_HEADINGS = (
    "## Part B: {span} (continued from Part A)",
    "**Part B (continued)**\n\nThis part continues the list of findings from Part A.",
    "Part B — continued from Part A",
)
GROUP_HEADINGS = ("**{Sev}**", "{Sev} severity", "### {Sev}", "{SEV}:")
