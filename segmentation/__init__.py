"""Stage 5: segmentation of full texts (SEOS and baselines), then passage retrieval and reranking."""
