"""JE-15 (L4): shell-vendor scheme."""

from jeval_ray.tasks._spec import spec

SPEC = spec(
    "JE-15",
    "L4",
    'Shell-vendor scheme',
    objective='Find a shell-vendor scheme spread over the year and name the user behind it; flag every entry of the scheme.',
    defect='shell-vendor scheme (vendor bank = employee bank, invoices under limit, same approver)',
    decoys='new legitimate vendors',
    required_evidence='vendor change log, employee master, bank statements, approvals',
    sources=('general_ledger', 'vendor_master', 'vendor_change_log', 'employee_master', 'bank_statements', 'approvals'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('SHELL_VENDOR', "payments to a vendor whose bank account matches an employee's, under the limit, one approver"),
    ),
    withheld_variant=('search_documents',),
    available=False,
)
