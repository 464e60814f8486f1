"""JE-14 (L4): estimate releases."""

from jeval_ray.tasks._spec import spec

SPEC = spec(
    "JE-14",
    "L4",
    'Estimate releases',
    objective='Find top-side, post-closing releases of estimates (such as the bad-debt allowance) that the AR aging and the estimate policy contradict; state the misstatement.',
    defect='top-side post-closing release of an estimate that the documents contradict',
    decoys='a documented, supported estimate change',
    required_evidence='management memo, AR aging, estimate policy',
    sources=('general_ledger', 'management_memos', 'ar_aging', 'estimate_policy'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('ESTIMATE_RELEASE', 'top-side post-closing release of an estimate contradicted by the documents'),
    ),
    withheld_variant=('search_documents',),
    asks_amount=True,
    available=False,
)
