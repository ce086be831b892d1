"""Defaults shared by ember.distributed's modules (torch.distributed.constants)."""
import datetime

# How long a process group's operations, and its rendezvous, may take.
default_pg_timeout = datetime.timedelta(minutes=30)
