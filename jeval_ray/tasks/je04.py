"""JE-4 (L1): unauthorised posters."""

from jeval_ray.tasks._spec import spec

SPEC = spec(
    "JE-4",
    "L1",
    'Unauthorised posters',
    objective="Find entries posted by users without posting rights or after the user's termination date.",
    defect='posted by a user without posting rights or after termination',
    decoys='user terminated after the posting date',
    required_evidence='user master',
    sources=('general_ledger', 'user_master'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('UNAUTHORISED_USER', "posted by a user without posting rights or after the user's termination"),
    ),
    withheld_variant=('search_documents',),
    available=False,
)
