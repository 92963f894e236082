"""Logic for "Rubrics Carry the Standard" (the carry work).

Checklists and their judge prompts, all-must-pass aggregation of judge verdicts into
per-length pass/catch rates, and the plot of Figure 2 (generic checklists of increasing
length on SummEdits and RAGTruth). Pure logic: no model is called here.
"""
