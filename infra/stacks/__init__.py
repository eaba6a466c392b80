"""The BenchGen application as four stacks, split by lifetime and concern (see docs/decisions.md).

Deployed in this order, each depending only on the ones before it:
- the data (``DATA_STACK``): what outlives every deployment;
- the pipelines (``PIPELINES_STACK``): the layer, the run-step functions and the state machines;
- the API and the console (``API_STACK``);
- monitoring (``MONITORING_STACK``): alarms and the dashboard over the functions and state machines.
"""

DATA_STACK = "BenchGenData"
PIPELINES_STACK = "BenchGenPipelines"
API_STACK = "BenchGenApi"
MONITORING_STACK = "BenchGenMonitoring"
