"""JE-3 (L1): postings to invalid accounts."""

from jeval_ray.tasks._spec import spec

SPEC = spec(
    "JE-3",
    "L1",
    'Postings to invalid accounts',
    objective='Find entries posted to accounts that were blocked, closed or did not exist in the chart of accounts at the posting date.',
    defect='posting to a blocked, closed or non-existent account',
    decoys='account opened mid-period, active at the posting date',
    required_evidence='chart of accounts',
    sources=('general_ledger', 'chart_of_accounts'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('INVALID_ACCOUNT', 'posting to a blocked, closed or non-existent account at the posting date'),
    ),
    withheld_variant=('search_documents',),
    available=False,
)
