"""Experiments: run files, schedules, traffic sources, the runner, campaigns.

``cganalysis experiment`` (commands/experiment.py) and the Snakemake stage
(workflow/rules/experiments.smk) are thin callers of :func:`runner.run_experiment` and
:class:`workflow.WorkflowPlan`.
"""
