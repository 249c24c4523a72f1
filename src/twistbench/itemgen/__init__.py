"""Item generation: keys built from authored banks and the corpora they apply to."""
