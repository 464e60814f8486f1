"""JE-9 (L3): cut-off."""

from jeval_ray.tasks._spec import spec

SPEC = spec(
    "JE-9",
    "L3",
    'Cut-off',
    objective='Find revenue recorded before the goods shipped and entries recorded after the period was closed; state the misstatement amount.',
    defect='cut-off: revenue recorded before shipment / entry after close',
    decoys='entries legitimately dated at period end',
    required_evidence='close calendar, shipping documents, invoice',
    sources=('general_ledger', 'close_calendar', 'shipping_documents', 'invoices'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('CUTOFF', 'revenue recorded before shipment, or an entry recorded after the period close'),
    ),
    withheld_variant=('search_documents',),
    asks_amount=True,
    available=False,
)
