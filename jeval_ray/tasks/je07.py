"""JE-7 (L2): duplicate postings."""

from jeval_ray.tasks._spec import spec

SPEC = spec(
    "JE-7",
    "L2",
    'Duplicate postings',
    objective='Find vendor invoices posted twice. Recurring charges under a contract are not duplicates.',
    defect='duplicate posting of one invoice',
    decoys='recurring rent of the same amount under a lease',
    required_evidence='the invoices and the lease contract',
    sources=('general_ledger', 'vendor_master', 'invoices', 'lease_contracts'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('DUPLICATE', 'the same vendor invoice posted more than once'),
    ),
    withheld_variant=('search_documents',),
    available=False,
)
