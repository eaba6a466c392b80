"""The CDK app (four stacks of constructs, with the function catalog and the state-machine kit) and what
checks it offline: the deploy check's validators, cdk-nag's acknowledgments, a function assembled as Lambda
runs it. Operator-side: never deployed, and imported by nothing of the library or the handlers."""
