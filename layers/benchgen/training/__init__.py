"""Training material: preparations (scored runs turned into inspectable examples and a held-out set, with
their coverage, contamination report and Dataset view) and packages (a preparation exported in a trainer's
format, checked to carry no held-out case). Training and evaluating on them are the provider kinds' and
``benchgen.evaluation``'s."""
