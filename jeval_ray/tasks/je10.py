"""JE-10 (L3): three-way match."""

from jeval_ray.tasks._spec import spec

SPEC = spec(
    "JE-10",
    "L3",
    'Three-way match',
    objective='Vouch vendor invoices: find entries whose invoice, purchase order and vendor master disagree beyond the tolerance in the procurement policy.',
    defect='invoice, PO and vendor master disagree (three-way match)',
    decoys='small price variances tolerated by policy',
    required_evidence='invoice, purchase order, vendor master',
    sources=('general_ledger', 'invoices', 'purchase_orders', 'vendor_master', 'procurement_policy'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('THREE_WAY_MISMATCH', 'invoice, purchase order and vendor master disagree beyond the tolerated variance'),
    ),
    withheld_variant=('search_documents',),
    available=False,
)
