"""The finetune artifact: training data built from what a model got wrong in a run (see ``artifact``)."""
