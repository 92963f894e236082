"""transfer: model-free computations of "Evaluating Rubric Generation with Interventional Transfer"."""
