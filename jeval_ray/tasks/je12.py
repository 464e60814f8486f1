"""JE-12 (L3): population outliers."""

from jeval_ray.tasks._spec import spec

SPEC = spec(
    "JE-12",
    "L3",
    'Population outliers',
    objective='Find entries whose amount or user-account flow is far outside its population. Establish a population baseline before any claim that something is unusual.',
    defect='amount or user-account flow far outside its population',
    decoys='large but typical entries in high-variance accounts',
    required_evidence="a population baseline (compute_stats) before any 'unusual' claim",
    sources=('general_ledger', 'population_statistics'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('OUTLIER', 'amount or user-account flow far outside its population'),
    ),
    withheld_variant=('compute_stats',),
    available=False,
)
