"""The bottom layer: node ids, records, schemas, errors, storage and the results-folder layout."""
