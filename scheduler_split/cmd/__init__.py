"""Console scripts. Importing ``scheduler_split`` already chose the
concurrency mode (see ``scheduler_split.monkey_patch``)."""
