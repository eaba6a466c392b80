"""The small interfaces the steps reach the outside world through; the adapters in ``benchgen.aws``
implement them, and the unit tests hand the steps in-memory fakes of them."""
