"""JE-8 (L2): unsupported round-amount entries."""

from jeval_ray.tasks._spec import spec

SPEC = spec(
    "JE-8",
    "L2",
    'Unsupported round-amount entries',
    objective='Find round-amount manual entries with vague descriptions that no document supports.',
    defect='round-amount manual entry with a vague description and no support',
    decoys='round amounts backed by a board resolution or contract',
    required_evidence='the support document (or its absence)',
    sources=('general_ledger', 'board_minutes', 'contracts'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('UNSUPPORTED_ROUND', 'round-amount manual entry with a vague description and no supporting document'),
    ),
    withheld_variant=('search_documents',),
    available=False,
)
