"""`codenib submit`: send a job spec to a Ray cluster through Ray's job submission API."""

from __future__ import annotations

import argparse
import json
import os
import sys

from codenib.commands.command import Command


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", metavar="JOB_SPEC", help="a job spec (jobs/NAME.toml); its repository root is "
                   "uploaded as the job's working_dir")
    p.add_argument("--address", help="the cluster's job API (dashboard URL) (default: $RAY_ADDRESS, else the "
                   "spec's [submit] address, else http://127.0.0.1:8265)")
    p.add_argument("--wait", action="store_true", help="follow the job's logs and exit with its status "
                   "(0 succeeded, 1 failed or stopped)")
    p.add_argument("--dry-run", action="store_true", help="print the submission id, entrypoint and runtime "
                   "environment as JSON; contact nothing")
    p.add_argument("--insecure", action="store_true", help="allow plain http to a host other than this machine "
                   "(the job and the cluster token travel in clear text; a warning says so); without it, "
                   "http is for 127.0.0.1/localhost only and other hosts need https")


def run(args: argparse.Namespace) -> int:
    from codenib.commands.job_client import DEFAULT_ADDRESS, auth_token_from_environment, check_transport, submit
    from codenib.commands.submission_plan import plan_submission

    sub = plan_submission(args.spec)
    # The environment is read here, once, at the command-line edge.
    env_address = os.environ.get("RAY_ADDRESS")
    address, address_from = next((a, f) for a, f in (
        (args.address, "--address"), (env_address, "$RAY_ADDRESS"),
        (sub.address, f"[submit] address in {args.spec}"), (DEFAULT_ADDRESS, "the default")) if a)
    token = auth_token_from_environment(os.environ)
    # Checked before --dry-run too, so a dry run says what a real submit would refuse.
    warning = check_transport(address, address_from, insecure=args.insecure)
    if args.dry_run:
        if warning:
            print(warning, file=sys.stderr)
        view = {**sub.describe(), "address": address, "address_from": address_from,
                "auth": f"token from {token.source}" if token else "none"}
        print(json.dumps(view, indent=2))
        return 0
    return submit(sub, address, token, wait=args.wait, address_from=address_from, insecure=args.insecure)


COMMAND = Command("Submit a job spec to a Ray cluster (once per spec and UTC day); --wait follows its logs.",
                  add_arguments, run)
