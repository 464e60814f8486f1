"""Playing hand-built trajectories on a real ``JEEnv``: one tool call, opening an evidence id."""

from jeval_ray.agents import Action


def do(env, tool, **args):
    """Take one tool call on ``env``."""
    env.step(Action(tool, args))


def open_evidence(env, evidence_id):
    """Open an evidence id with the tool that opens it (a document, a master table, the balances, an entry)."""
    if evidence_id == "master:balances":
        do(env, "get_balances")
    elif evidence_id.startswith("master:"):
        do(env, "get_master_data", table=evidence_id.split(":", 1)[1])
    elif evidence_id.startswith("DOC-"):
        do(env, "open_document", doc_id=evidence_id)
    else:
        do(env, "get_entry", entry_id=evidence_id)
