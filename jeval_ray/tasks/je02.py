"""JE-2 (L1): self-approved manual entries."""

from jeval_ray.tasks._spec import spec

SPEC = spec(
    "JE-2",
    "L1",
    'Self-approved manual entries',
    objective='Find manual journal entries approved by their own preparer, in breach of segregation of duties.',
    defect='manual entry approved by its own preparer',
    decoys='automated postings by a system user, allowed by policy',
    required_evidence='user master and approval policy',
    sources=('general_ledger', 'user_master', 'approval_policy'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('SELF_APPROVAL', 'a manual entry approved by the user who prepared it'),
    ),
    withheld_variant=('search_documents',),
    available=False,
)
