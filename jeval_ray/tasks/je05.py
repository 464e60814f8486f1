"""JE-5 (L2): approval-limit avoidance."""

from jeval_ray.tasks._spec import spec

SPEC = spec(
    "JE-5",
    "L2",
    'Approval-limit avoidance',
    objective="Find manual entries sized just below the preparer's approval limit, or split into several entries that together exceed it, without supporting contract.",
    defect="amount just below the preparer's approval limit, or a split above it",
    decoys='a routine fixed-price item near the limit backed by a contract',
    required_evidence='approval-limit matrix and the invoice/contract',
    sources=('general_ledger', 'user_master', 'approval_limit_matrix', 'invoices', 'contracts'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('LIMIT_AVOIDANCE', "amount just below the preparer's approval limit, or split entries that together exceed it"),
    ),
    withheld_variant=('search_documents',),
    available=False,
)
