"""Dataset acquisition, loading and preparation (SummEdits, RAGTruth)."""
